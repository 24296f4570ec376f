//! Text normalisation shared by every search path.
