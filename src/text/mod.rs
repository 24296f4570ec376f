//! Text normalisation shared by every search path.
//!
//! Pure functions over `&str`: no I/O, no protocol. Corpus and queries go through the
//! same functions, and every rewritten text keeps a map back to its original so hits
//! can be reported as original lines and snippets.

mod fold;
pub(crate) mod lines;
pub(crate) mod literals;
pub(crate) mod loose;
pub(crate) mod near;
pub(crate) mod normalize;
mod normalized;
mod numerals;
mod offset_map;
pub(crate) mod prefilter;
pub(crate) mod snippet;
pub(crate) mod synonyms;
pub(crate) mod terms;
pub(crate) mod units;
mod variants;

#[cfg(test)]
mod properties;
