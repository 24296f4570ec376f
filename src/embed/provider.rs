//! What every user of an embeddings provider needs to know about it between calls: whether
//! it answered last time, and how long to wait before asking a provider that did not. The
//! section vectors and the memory domain share these, so a provider that is down is
//! reported, and retried, the same way in both.

use std::time::Duration;

use super::EmbedError;

/// The longest pause between two attempts while the provider is failing.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Whether the provider answered last time it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProviderState {
    /// Not asked yet.
    Unknown,
    Ready,
    Down(EmbedError),
}

/// The pause before attempt `attempt + 1`: 1 s, 2 s, 4 s, … up to [`MAX_BACKOFF`].
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(6)).min(MAX_BACKOFF)
}
