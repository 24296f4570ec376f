//! manvault: an MCP server for exhaustive, token-frugal search of manuals and a writable vault.
//! See ARCHITECTURE.md for the map of modules and their invariants.

pub mod adaptive;
pub mod app;
pub mod artifact;
pub mod bridge;
pub mod call;
pub mod cli;
pub mod clock;
pub(crate) mod completion;
pub mod config;
pub mod contract;
pub mod embed;
pub mod error;
pub mod logging;
pub mod manual;
pub mod memory;
pub mod paths;
pub mod progress;
pub(crate) mod prompts;
pub mod proposal;
pub(crate) mod resources;
pub mod server;
#[cfg(test)]
mod test_support;
pub mod text;
pub mod tooling;
pub mod tools;
pub mod trace;
pub mod validate;
pub mod vault;
pub mod verdict;
pub mod workspace;
