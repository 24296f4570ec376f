//! manvault: an MCP server for exhaustive, token-frugal search of manuals and a writable vault.
//! See ARCHITECTURE.md for the map of modules and their invariants.

pub mod contract;
pub mod error;
pub mod manual;
pub mod paths;
pub mod text;
