//! `hashgram-v1-d384`: the built-in provider, used by the memory domain when no
//! embeddings server is configured. It needs no model, no network and no thread, and
//! embeds a claim in microseconds, so it never fails and never waits.
//!
//! It is **lexical**, not semantic: it hashes the character bigrams of Han/kana runs and
//! the character trigrams of all (normalised) text into 384 signed dimensions, so it
//! finds texts that share spellings with the query (word pieces, inflections, partial
//! katakana words) and never a synonym or a translation that shares none. A question
//! asked in the other language finds nothing through it (docs/benchmarks.md, memory).
//!
//! The vectors are a pure function of the text under this model id: changing the
//! n-grams, the hash or the dimensions needs a new id, or stored vectors would mix two
//! spaces.

use std::collections::HashMap;
use std::time::Duration;

use super::{EmbedError, Embedder, Embeddings, Role};
use crate::text::normalize::normalize_str;
use crate::text::units::is_cjk;

pub(crate) struct Hashgram;

impl Hashgram {
    pub(crate) const MODEL_ID: &'static str = "hashgram-v1-d384";
    pub(crate) const DIMENSIONS: usize = 384;

    /// The L2-normalised vector of `text` (the zero vector when it has no n-gram).
    pub(crate) fn vector(text: &str) -> Vec<f32> {
        let chars: Vec<char> = normalize_str(text).chars().collect();
        let mut counts: HashMap<u64, f32> = HashMap::new();
        let mut add = |gram: &[char]| {
            if gram.iter().all(|c| !c.is_alphanumeric()) {
                return;
            }
            *counts.entry(fnv1a(gram)).or_default() += 1.0;
        };
        for pair in chars.windows(2) {
            if is_cjk(pair[0]) && is_cjk(pair[1]) {
                add(pair);
            }
        }
        for triple in chars.windows(3) {
            add(triple);
        }
        if chars.len() == 1 {
            add(&chars);
        }
        let mut vector = vec![0f32; Self::DIMENSIONS];
        for (hash, count) in counts {
            let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
            vector[(hash % Self::DIMENSIONS as u64) as usize] += sign * (1.0 + count.ln());
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

/// Lexical vectors embed both roles alike, and in far less time than any deadline.
impl Embedder for Hashgram {
    fn embed(
        &self,
        texts: &[&str],
        _role: Role,
        _timeout: Duration,
    ) -> Result<Embeddings, EmbedError> {
        Ok(Embeddings {
            model: Self::MODEL_ID.to_owned(),
            vectors: texts.iter().map(|text| Self::vector(text)).collect(),
        })
    }
}

/// FNV-1a over the characters of an n-gram (length mixed in, so a bigram and a trigram
/// never share a bucket by construction).
fn fnv1a(gram: &[char]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ gram.len() as u64;
    for c in gram {
        for byte in (*c as u32).to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &str, b: &str) -> f32 {
        let (a, b) = (Hashgram::vector(a), Hashgram::vector(b));
        a.iter().zip(&b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn hashgram_is_normalised_and_lexical() {
        let vector = Hashgram::vector("解約");
        assert!((vector.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
        let shared_word = cosine("サブスクリプションの解約", "解約の手続き");
        let nothing_shared = cosine("サブスクリプションの解約", "webhook retries");
        assert!(
            shared_word > 0.05 && shared_word > nothing_shared + 0.05,
            "{shared_word} vs {nothing_shared}"
        );
        assert!(cosine("cancel the subscription", "subscription cancellation") > 0.4);
        assert!(nothing_shared.abs() < 0.1, "{nothing_shared}");
        // Lexical: a translation shares no n-gram.
        assert!(cosine("解約の手続き", "cancellation procedure").abs() < 0.1);
        assert_eq!(Hashgram::vector(""), vec![0.0; 384]);
    }

    #[test]
    fn embeds_as_the_shared_trait_says() {
        let answer = Hashgram
            .embed(&["解約", "refund"], Role::Query, Duration::ZERO)
            .unwrap();
        assert_eq!(answer.model, Hashgram::MODEL_ID);
        assert_eq!(answer.vectors.len(), 2);
        assert_eq!(answer.vectors[1], Hashgram::vector("refund"));
        let passage = Hashgram
            .embed(&["解約"], Role::Passage, Duration::ZERO)
            .unwrap();
        assert_eq!(passage.vectors[0], answer.vectors[0]);
    }
}
