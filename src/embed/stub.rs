//! A deterministic embedder for unit tests: texts sharing characters get close vectors
//! (a hashed bag of character bigrams), so top-K orders are predictable, and the switches
//! make the provider go down, slow down or change its model between two calls. With
//! *concepts* (groups of words meaning one thing), texts naming the same concept in any
//! of its words are close and all others far, as a real model places "copy and paste"
//! near コピペ: what a search by meaning finds and a search by words cannot.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::{EmbedError, EmbedErrorKind, Embedder, Embeddings, Role};

pub(crate) const STUB_DIMS: usize = 64;

pub(crate) struct StubEmbedder {
    /// The error every call fails with while set (as a down or misconfigured server).
    pub down: Mutex<Option<EmbedErrorKind>>,
    /// Milliseconds each call takes (a timeout shorter than that fails).
    pub(crate) delay_ms: AtomicU64,
    pub model: Mutex<String>,
    /// Texts embedded as passages so far (to see what was re-embedded).
    pub passages: AtomicUsize,
    pub calls: AtomicUsize,
    /// Groups of words, one dimension each (empty: bigram vectors).
    pub(crate) concepts: Vec<&'static [&'static str]>,
}

impl Default for StubEmbedder {
    fn default() -> Self {
        StubEmbedder {
            down: Mutex::new(None),
            delay_ms: AtomicU64::new(0),
            model: Mutex::new("stub".to_owned()),
            passages: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            concepts: Vec::new(),
        }
    }
}

impl StubEmbedder {
    /// A stub placing texts by the `concepts` they name (see the module documentation).
    pub(crate) fn with_concepts(concepts: &[&'static [&'static str]]) -> StubEmbedder {
        StubEmbedder {
            concepts: concepts.to_vec(),
            ..StubEmbedder::default()
        }
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        if self.concepts.is_empty() {
            return stub_vector(text);
        }
        let text = text.to_lowercase();
        // The last dimension keeps a text naming no concept from being a zero vector.
        let mut vector: Vec<f32> = self
            .concepts
            .iter()
            .map(|words| f32::from(u8::from(words.iter().any(|word| text.contains(word)))))
            .collect();
        vector.push(0.1);
        vector
    }
}

/// The stub's vector of `text`: every bigram of its characters (lower-cased) adds 1 to a
/// hashed dimension.
pub(crate) fn stub_vector(text: &str) -> Vec<f32> {
    let chars: Vec<char> = text.to_lowercase().chars().collect();
    let mut vector = vec![0.0; STUB_DIMS];
    for pair in chars.windows(2) {
        let hash = (pair[0] as u64)
            .wrapping_mul(31)
            .wrapping_add(pair[1] as u64);
        vector[(hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % STUB_DIMS] += 1.0;
    }
    vector
}

impl Embedder for StubEmbedder {
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        timeout: Duration,
    ) -> Result<Embeddings, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let delay = Duration::from_millis(self.delay_ms.load(Ordering::SeqCst));
        if delay > timeout {
            std::thread::sleep(timeout);
            return Err(EmbedError::new(EmbedErrorKind::Timeout, "stub: too slow"));
        }
        std::thread::sleep(delay);
        if let Some(kind) = *self.down.lock().unwrap() {
            return Err(EmbedError::new(kind, "stub: down; check EMBEDDINGS_URL"));
        }
        if role == Role::Passage {
            self.passages.fetch_add(texts.len(), Ordering::SeqCst);
        }
        Ok(Embeddings {
            model: self.model.lock().unwrap().clone(),
            vectors: texts.iter().map(|text| self.vector(text)).collect(),
        })
    }
}
