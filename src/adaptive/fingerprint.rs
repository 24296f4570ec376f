//! Fingerprints for the statistics file: enough to tell that two searches asked the same
//! thing, or two audits looked at the same file, without keeping what was asked or where.
//!
//! 64-bit FNV-1a, because a fingerprint written today has to match one written after an
//! upgrade, and the standard library's hasher promises no stable output across releases.
//! It is a grouping key, not a secret: a short query can be found again by hashing
//! guesses, which is why the statistics file stays in the vault's `.system/` folder that
//! no tool reads.

use serde::{Deserialize, Serialize};

use crate::text::normalize::normalize_str;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A fingerprint, written as 16 lowercase hexadecimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Fingerprint(u64);

impl Fingerprint {
    /// The fingerprint of a query after the search normalisation, so that spellings the
    /// search treats as the same query (width, case, spacing) count as one.
    pub fn of_query(query: &str) -> Fingerprint {
        Fingerprint::of(normalize_str(query).trim())
    }

    /// The fingerprint of a vault path as a tool reported it (relative, `/`-separated).
    pub fn of_path(path: &str) -> Fingerprint {
        Fingerprint::of(path)
    }

    fn of(text: &str) -> Fingerprint {
        let hash = text.bytes().fold(FNV_OFFSET_BASIS, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
        });
        Fingerprint(hash)
    }
}

impl From<Fingerprint> for String {
    fn from(fingerprint: Fingerprint) -> String {
        format!("{:016x}", fingerprint.0)
    }
}

impl TryFrom<String> for Fingerprint {
    type Error = String;

    fn try_from(hex: String) -> Result<Fingerprint, String> {
        match u64::from_str_radix(&hex, 16) {
            Ok(value) if hex.len() == 16 => Ok(Fingerprint(value)),
            _ => Err("a fingerprint is 16 hexadecimal digits".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_fnv1a_vectors() {
        assert_eq!(String::from(Fingerprint::of("")), "cbf29ce484222325");
        assert_eq!(String::from(Fingerprint::of("a")), "af63dc4c8601ec8c");
        assert_eq!(String::from(Fingerprint::of("foobar")), "85944171f73967e8");
    }

    #[test]
    fn queries_the_search_treats_alike_share_a_fingerprint() {
        assert_eq!(
            Fingerprint::of_query("ＶＰＮ  設定"),
            Fingerprint::of_query("vpn 設定 ")
        );
        assert_ne!(Fingerprint::of_query("vpn"), Fingerprint::of_query("proxy"));
    }

    #[test]
    fn round_trips_through_its_text_form() {
        let fingerprint = Fingerprint::of_path("notes/a.md");
        let json = serde_json::to_string(&fingerprint).unwrap();
        assert_eq!(
            serde_json::from_str::<Fingerprint>(&json).unwrap(),
            fingerprint
        );
        assert!(serde_json::from_str::<Fingerprint>("\"12\"").is_err());
    }
}
