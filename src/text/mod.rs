//! Text normalisation shared by every search path.
//!
//! Pure functions over `&str`: no I/O, no protocol. Corpus and queries go through the
//! same functions, and every rewritten text keeps a map back to its original so hits
//! can be reported as original lines and snippets.

mod bmp;
mod clean;
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
pub(crate) mod shared;
pub(crate) mod snippet;
pub(crate) mod synonyms;
pub(crate) mod terms;
pub(crate) mod units;
mod variants;

#[cfg(test)]
mod properties;

/// A stable 64-bit digest of `parts` (SHA-256, first eight bytes): the same in every
/// process and build, unlike `std`'s hashers, so it can be stored.
pub(crate) fn fingerprint(parts: &[&[u8]]) -> u64 {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("eight bytes"))
}
