//! Text normalisation shared by every search path.
//!
//! Pure functions over `&str`: no I/O, no protocol. Corpus and queries go through the
//! same functions, and every rewritten text keeps a map back to its original so hits
//! can be reported as original lines and snippets.

mod fold;
pub mod lines;
pub(crate) mod literals;
pub mod loose;
pub(crate) mod near;
pub mod normalize;
mod normalized;
mod numerals;
mod offset_map;
pub(crate) mod prefilter;
pub mod snippet;
pub mod synonyms;
pub(crate) mod terms;
pub(crate) mod units;
mod variants;

#[cfg(test)]
mod properties;
