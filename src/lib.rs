//! manvault: an MCP server for exhaustive, token-frugal search of manuals and a writable vault.
//! See ARCHITECTURE.md for the map of modules and their invariants.

// An item is `pub` only when something outside the crate (the tests, the bench, main)
// reaches it; anything else says `pub(crate)` (ARCHITECTURE.md, "Visibility").
#![warn(unreachable_pub)]

pub mod adaptive;
pub mod allocator;
pub mod app;
pub(crate) mod artifact;
pub(crate) mod bridge;
/// What `manvault-bench` times below the tool surface; not an interface for anyone else.
#[doc(hidden)]
pub mod bench_hooks {
    /// Normalises `text` (text and map back) and returns the heap bytes the result holds,
    /// so the work cannot be optimised away.
    pub fn normalize_kept_bytes(text: &str) -> usize {
        crate::text::normalize::normalize(text).heap_bytes()
    }
}
pub mod call;
pub mod cli;
pub mod clock;
pub(crate) mod completion;
pub mod config;
pub mod contract;
pub mod embed;
pub mod error;
pub(crate) mod logging;
pub mod machine;
pub mod manual;
pub(crate) mod memory;
pub mod paths;
pub(crate) mod progress;
pub(crate) mod prompts;
pub(crate) mod proposal;
pub(crate) mod resources;
pub(crate) mod scatter;
pub mod server;
#[cfg(test)]
mod test_support;
pub(crate) mod text;
pub(crate) mod tooling;
pub(crate) mod tools;
pub(crate) mod trace;
pub(crate) mod validate;
pub(crate) mod vault;
pub(crate) mod verdict;
pub(crate) mod workspace;
