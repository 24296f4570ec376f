//! What several suites share.

pub mod adaptive;
pub mod network;
pub mod outside_watch;
pub mod python;
pub mod workspace;
