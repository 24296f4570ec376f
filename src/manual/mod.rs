//! Manual domain: discovery, section model, reads, exception vocabulary, search.
