//! What several suites share.

pub mod adaptive;
pub mod http_server;
pub mod network;
pub mod outside_watch;
pub mod python;
pub mod stdio_server;
pub mod stdio_session;
pub mod workspace;

/// Sends SIGTERM to `child` (with `kill`: no `unsafe` in the tests).
pub fn send_sigterm(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
