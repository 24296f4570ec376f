//! Drives the built server with the official Python MCP SDK (`mcp` from PyPI), so the
//! contract is checked by a client we did not write. The virtualenv is created on first
//! use under `target/py-venv` (CI starts from nothing; `cargo test` is the whole recipe).

use std::path::{Path, PathBuf};
use std::process::Command;

const MCP_SDK: &str = "mcp==2.3.0";

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}

/// The venv's python, creating the venv and installing the SDK when missing.
fn python() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = repo.join("target/py-venv");
    let python = venv.join("bin/python");
    let marker = venv.join(format!(".installed-{MCP_SDK}"));
    if !marker.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            MCP_SDK,
        ]));
        std::fs::write(&marker, "").unwrap();
    }
    python
}

#[test]
fn python_sdk_lists_and_calls_every_tool() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo.join("examples/workspace/."))
        .arg(workspace.path())
        .status()
        .unwrap();
    assert!(status.success());
    run(Command::new(python())
        .arg(repo.join("conformance/python_sdk_check.py"))
        .arg(env!("CARGO_BIN_EXE_manvault"))
        .arg(workspace.path())
        .arg(repo.join("conformance/cases")));
}
