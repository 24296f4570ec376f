//! The integration tests, one binary (linking one test binary instead of fourteen is most
//! of an incremental `cargo test`). Each module is one suite; `support` holds what several
//! share. Tests that need the network (PyPI, npm) run only with `MANVAULT_NETWORK_TESTS=1`
//! (see `support::network`), which `.ci/run` sets.

mod adaptive_simulation;
mod adaptive_stats_cli;
mod adaptive_stats_file;
mod adaptive_wiring;
mod bridge_tools;
mod cli;
mod conformance;
mod hardening;
mod http_transport;
mod layers;
mod manual;
mod mcp_features;
mod memory_tools;
mod official_conformance;
mod paths_parse;
mod paths_security;
mod python_sdk;
mod schemas;
mod semantic;
mod support;
mod synonym_tables;
mod vault_security;
mod vault_tools;
