//! What several suites share.

pub mod adaptive;
pub mod http_server;
pub mod network;
pub mod outside_watch;
pub mod python;
pub mod stdio_server;
pub mod stdio_session;
pub mod workspace;

use std::path::Path;

/// Sends SIGTERM to `child`.
pub fn send_sigterm(child: &std::process::Child) {
    send_signal(child, "TERM");
}

/// Sends the signal `name` (`TERM`, `INT`) to `child` (with `kill`: no `unsafe` in the
/// tests).
pub fn send_signal(child: &std::process::Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The names in `folder` (not below it), sorted.
pub fn folder_names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asserts that `temp`, the temporary folder (`TMPDIR`) a process was given, is empty
/// after its end: the change watch's barrier folder must not outlive the process.
pub fn assert_temporary_folder_empty(temp: &Path) {
    let left = folder_names(temp);
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
}

/// A manual file of about `bytes` bytes: many short sections (an index slow to build and
/// to drop).
pub fn big_manual(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut section = 0;
    while text.len() < bytes {
        section += 1;
        text.push_str(&format!(
            "## 第{section}節 手続き\n\n申請は所属長の承認を得て行う。期限は翌月末日とする。\n\n"
        ));
    }
    text
}
