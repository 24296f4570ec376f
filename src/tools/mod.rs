//! The tool layer: implements the generated domain traits by calling the domains.
