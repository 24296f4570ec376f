//! Vectors: the `Embedder` interface, the built-in lexical vectorizer, and the in-memory
//! index that vector candidates are drawn from.
//!
//! `hashgram-v1-d384` is *lexical*: it hashes the character bigrams of Japanese runs and
//! the character trigrams of all text into 384 signed dimensions, so it finds claims that
//! share spellings with the query (word pieces, inflections, partial katakana words), never
//! synonyms with nothing in common. A semantic model plugs in behind [`Embedder`]; vectors
//! are stored per model id, so switching models re-embeds claims lazily instead of mixing
//! spaces.
//!
//! Vectors are stored and held quantised to `i8` with one scale each (384 + 4 bytes a
//! claim instead of 1,536; the cosine moves by well under 1%, which only reorders claims
//! that tie anyway). The index keeps, for every claim, what the filters need (scope,
//! class, creation time) and that vector, so a query is one pass of integer dot products
//! over memory (100,000 claims: 38 MB) instead of a read of every vector from the
//! database.

use crate::contract::types::{MemoryBoundaryClass, MemoryScope};
use crate::memory::units::is_cjk;
use crate::text::normalize::normalize_str;

/// Which side of a search a text is: some models embed queries and passages differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmbedRole {
    Query,
    Passage,
}

/// Turns texts into vectors of one model. Implementations must return one L2-normalised
/// vector a text, all of the same length.
pub(crate) trait Embedder: Send + Sync {
    /// The model's id; vectors of different ids are never compared.
    fn model_id(&self) -> &str;
    fn embed(&self, texts: &[&str], role: EmbedRole) -> Result<Vec<Vec<f32>>, String>;
}

/// The built-in hashed character n-gram vectorizer (lexical, see the module doc).
pub(crate) struct Hashgram;

impl Hashgram {
    pub(crate) const MODEL_ID: &'static str = "hashgram-v1-d384";
    const DIMENSIONS: usize = 384;

    fn vector(text: &str) -> Vec<f32> {
        let chars: Vec<char> = normalize_str(text).chars().collect();
        let mut counts: std::collections::HashMap<u64, f32> = std::collections::HashMap::new();
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
        normalized(vector)
    }
}

impl Embedder for Hashgram {
    fn model_id(&self) -> &str {
        Self::MODEL_ID
    }

    fn embed(&self, texts: &[&str], _role: EmbedRole) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|text| Self::vector(text)).collect())
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

/// `vector` scaled to length 1 (the zero vector stays zero).
fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

/// A vector scaled so its largest component is 127, and what one unit is worth.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Quantised {
    values: Vec<i8>,
    scale: f32,
}

impl Quantised {
    pub(crate) fn of(vector: &[f32]) -> Quantised {
        let largest = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
        if largest == 0.0 {
            return Quantised {
                values: vec![0; vector.len()],
                scale: 0.0,
            };
        }
        let scale = largest / 127.0;
        Quantised {
            values: vector.iter().map(|x| (x / scale).round() as i8).collect(),
            scale,
        }
    }

    /// The stored form: the scale (little-endian f32), then one byte a dimension.
    pub(crate) fn to_blob(&self) -> Vec<u8> {
        let mut blob = self.scale.to_le_bytes().to_vec();
        blob.extend(self.values.iter().map(|v| *v as u8));
        blob
    }

    /// The stored form read back; `None` for a blob too short to hold a scale.
    pub(crate) fn from_blob(blob: &[u8]) -> Option<Quantised> {
        let (scale, values) = blob.split_first_chunk::<4>()?;
        Some(Quantised {
            scale: f32::from_le_bytes(*scale),
            values: values.iter().map(|v| *v as i8).collect(),
        })
    }

    /// The cosine of two L2-normalised vectors from their quantised forms. Sixteen
    /// lanes at a time: the shape the compiler turns into SIMD on baseline x86-64 (twice
    /// as fast as one running sum on 100,000 claims).
    fn dot(&self, values: &[i8], scale: f32) -> f32 {
        let mut lanes = [0i32; 16];
        let whole = self.values.len() / 16 * 16;
        for (a, b) in self.values[..whole]
            .chunks_exact(16)
            .zip(values[..whole].chunks_exact(16))
        {
            for lane in 0..16 {
                lanes[lane] += i32::from(a[lane]) * i32::from(b[lane]);
            }
        }
        let rest: i32 = self.values[whole..]
            .iter()
            .zip(&values[whole..])
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        (lanes.iter().sum::<i32>() + rest) as f32 * self.scale * scale
    }
}

/// What the filters need to know of one claim, and where its vector sits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedClaim {
    pub seq: i64,
    pub scope: MemoryScope,
    pub class: MemoryBoundaryClass,
    pub created_ms: i64,
}

/// Every claim's filter fields and quantised vector, in `seq` order (claims are never
/// deleted, so the index only grows, from the largest `seq` it has).
#[derive(Default)]
pub(crate) struct ClaimIndex {
    claims: Vec<IndexedClaim>,
    /// `dimensions` i8 values a claim, each vector scaled so its largest component is 127.
    vectors: Vec<i8>,
    /// Per claim, what one unit of its i8 vector is worth.
    scales: Vec<f32>,
    dimensions: usize,
}

impl ClaimIndex {
    /// Claims indexed.
    pub(crate) fn len(&self) -> usize {
        self.claims.len()
    }

    /// The largest `seq` indexed (0 when empty).
    pub(crate) fn last_seq(&self) -> i64 {
        self.claims.last().map_or(0, |claim| claim.seq)
    }

    /// Adds a claim newer than every indexed one (a vector of another length than the
    /// first one's, which no model produces, counts as no vector).
    pub(crate) fn push(&mut self, claim: IndexedClaim, vector: Quantised) {
        debug_assert!(claim.seq > self.last_seq());
        if self.dimensions == 0 {
            self.dimensions = vector.values.len();
        }
        if vector.values.len() == self.dimensions {
            self.vectors.extend(vector.values);
            self.scales.push(vector.scale);
        } else {
            self.vectors.extend(std::iter::repeat_n(0, self.dimensions));
            self.scales.push(0.0);
        }
        self.claims.push(claim);
    }

    /// The filter fields of claim `seq`, if indexed.
    pub(crate) fn get(&self, seq: i64) -> Option<&IndexedClaim> {
        self.claims
            .binary_search_by_key(&seq, |claim| claim.seq)
            .ok()
            .map(|at| &self.claims[at])
    }

    /// The `k` claims `keep` accepts whose vectors are most similar to `query` (cosine,
    /// positive only), best first.
    pub(crate) fn nearest(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(&IndexedClaim) -> bool,
    ) -> Vec<(i64, f32)> {
        if k == 0 || self.dimensions == 0 || query.len() != self.dimensions {
            return Vec::new();
        }
        let query = Quantised::of(query);
        let mut best: Vec<(i64, f32)> = Vec::with_capacity(k + 1);
        let mut floor = 0f32;
        for (at, claim) in self.claims.iter().enumerate() {
            if !keep(claim) {
                continue;
            }
            let values = &self.vectors[at * self.dimensions..(at + 1) * self.dimensions];
            let cosine = query.dot(values, self.scales[at]);
            if cosine <= floor {
                continue;
            }
            let place = best.partition_point(|(_, score)| *score >= cosine);
            best.insert(place, (claim.seq, cosine.min(1.0)));
            if best.len() > k {
                best.pop();
                floor = best.last().map_or(0.0, |(_, score)| *score);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &str, b: &str) -> f32 {
        let vectors = Hashgram.embed(&[a, b], EmbedRole::Passage).unwrap();
        vectors[0].iter().zip(&vectors[1]).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn hashgram_is_normalised_and_lexical() {
        let vector = &Hashgram.embed(&["解約"], EmbedRole::Query).unwrap()[0];
        assert!((vector.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
        let shared_word = cosine("サブスクリプションの解約", "解約の手続き");
        let nothing_shared = cosine("サブスクリプションの解約", "webhook retries");
        assert!(
            shared_word > 0.05 && shared_word > nothing_shared + 0.05,
            "{shared_word} vs {nothing_shared}"
        );
        assert!(cosine("cancel the subscription", "subscription cancellation") > 0.4);
        assert!(nothing_shared.abs() < 0.1, "{nothing_shared}");
        assert_eq!(
            Hashgram.embed(&[""], EmbedRole::Query).unwrap()[0],
            vec![0.0; 384]
        );
    }

    #[test]
    fn quantised_vectors_round_trip_and_keep_the_cosine() {
        let vectors = Hashgram
            .embed(
                &["解約の手続きは非同期", "解約 API の命名"],
                EmbedRole::Passage,
            )
            .unwrap();
        let exact: f32 = vectors[0].iter().zip(&vectors[1]).map(|(a, b)| a * b).sum();
        let (a, b) = (Quantised::of(&vectors[0]), Quantised::of(&vectors[1]));
        assert_eq!(Quantised::from_blob(&a.to_blob()), Some(a.clone()));
        assert_eq!(a.to_blob().len(), 4 + 384);
        assert!((a.dot(&b.values, b.scale) - exact).abs() < 0.01, "{exact}");
        assert_eq!(Quantised::from_blob(&[1, 2]), None);
    }

    #[test]
    fn nearest_filters_before_taking_k() {
        let mut index = ClaimIndex::default();
        let texts = ["解約の手順", "解約は非同期", "webhook retries", "解約 API"];
        for (n, text) in texts.iter().enumerate() {
            let vector = &Hashgram.embed(&[text], EmbedRole::Passage).unwrap()[0];
            let class = if n == 1 {
                MemoryBoundaryClass::Pii
            } else {
                MemoryBoundaryClass::Internal
            };
            let claim = IndexedClaim {
                seq: n as i64 + 1,
                scope: MemoryScope::Project,
                class,
                created_ms: 0,
            };
            index.push(claim, Quantised::of(vector));
        }
        let query = &Hashgram.embed(&["解約"], EmbedRole::Query).unwrap()[0];
        let found = index.nearest(query, 2, |claim| claim.class != MemoryBoundaryClass::Pii);
        let seqs: Vec<i64> = found.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs.len(), 2);
        assert!(!seqs.contains(&2) && !seqs.contains(&3), "{found:?}");
        assert!(found[0].1 >= found[1].1);
        assert_eq!(index.get(3).map(|claim| claim.seq), Some(3));
    }
}
