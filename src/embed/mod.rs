//! Text embeddings: the provider interface, the OpenAI-compatible client, compact vectors
//! and their on-disk cache. Knows no manual, vault or memory type, so every domain can
//! embed its own texts with it (the manual sections' vectors are
//! [`crate::manual::vectors`]).
//!
//! Lexical search cannot find a section whose words the question does not share
//! ("switch the computer off" for "How to shutdown the system"); a vector of each section
//! and of the question can. Embedding is slow (hundreds of milliseconds for a section on
//! one core) and the provider may be down, so vectors are computed once per distinct
//! passage text and cached on disk, filled in the background, and every reader degrades
//! to "no semantic signal" instead of waiting.
//!
//! Layers, each usable without the ones below it:
//!
//! * [`Embedder`] (this file): texts in, vectors out; knows no manual, so the memory domain
//!   and `vault_find` can reuse it. [`OpenAiEmbedder`] is the one semantic provider;
//!   [`hashgram`] is a built-in lexical one (hashed character n-grams, no model, no
//!   network) that the memory domain uses when no embeddings server is configured.
//! * [`quantized`]: 8-bit vectors and the arena that holds them.
//! * [`store`]: vectors by content hash, in memory and in an append-only file under
//!   `CACHE_DIR` written through [`crate::paths::Root`].
//! * [`crate::manual::vectors`] (outside this module): which text stands for a manual
//!   section, the background worker that embeds what is missing, and the top-K a search
//!   asks for.
//!
//! Architecture invariant: no manual, vault or memory text is ever logged; errors name the
//! `EMBEDDINGS_*` variable to fix, never a passage.

pub(crate) mod hashgram;
mod openai;
pub(crate) mod provider;
pub(crate) mod quantized;
pub(crate) mod store;
#[cfg(test)]
pub(crate) mod stub;

use std::fmt;
use std::time::Duration;

pub use openai::OpenAiEmbedder;

/// How a text is used: e5-style models embed the two sides differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Query,
    Passage,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Query => "query",
            Role::Passage => "passage",
        }
    }
}

/// The vectors of one request, in input order, with the model that made them (as the
/// server names it, or as configured), which identifies the vector space.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub model: String,
    pub vectors: Vec<Vec<f32>>,
}

/// A source of embeddings. Implementations must return within `timeout` (plus a small
/// constant), never retry on their own (callers decide: a search does not retry, the
/// background worker backs off), and return one vector per text, all of one length.
pub trait Embedder: Send + Sync {
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        timeout: Duration,
    ) -> Result<Embeddings, EmbedError>;
}

/// What went wrong, and whether trying again later can help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedErrorKind {
    /// Nothing answers at the address (refused, unknown host, network down).
    Unreachable,
    /// The server did not answer in time.
    Timeout,
    /// The server refused the request as configured (wrong path, model, key): retrying
    /// the same request cannot help until the operator changes a variable.
    Rejected,
    /// The server failed (5xx) or answered something that is not an embeddings answer.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedError {
    pub kind: EmbedErrorKind,
    /// Names the variable to check; never contains input text.
    pub message: String,
}

impl EmbedError {
    pub fn new(kind: EmbedErrorKind, message: impl Into<String>) -> EmbedError {
        EmbedError {
            kind,
            message: message.into(),
        }
    }

    /// Worth another try after a pause (the server may come up or recover).
    pub fn retryable(&self) -> bool {
        self.kind != EmbedErrorKind::Rejected
    }
}

impl fmt::Display for EmbedError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for EmbedError {}
