//! What several suites share.

pub mod adaptive;
pub mod http_server;
pub mod network;
pub mod outside_watch;
pub mod python;
pub mod stdio_server;
pub mod stdio_session;
pub mod workspace;
