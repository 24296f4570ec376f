//! Text normalisation shared by every search path.
pub mod synonyms;
