//! Drives the built server with the official Python MCP SDK (`mcp` from PyPI), so the
//! contract is checked by a client we did not write: every tool once, the end-to-end
//! workflow of issue 5, and the memory workflow of issue 11. The virtualenv is created on first use under `target/py-venv`
//! (CI starts from nothing; `cargo test` is the whole recipe).

use std::path::Path;
use std::process::Command;

use crate::support::python::{run, venv_python};

const MCP_SDK: &str = "mcp==2.3.0";

fn python() -> std::path::PathBuf {
    venv_python(MCP_SDK)
}

#[test]
fn python_sdk_lists_and_calls_every_tool() {
    if !crate::support::network::enabled("python_sdk_lists_and_calls_every_tool") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate::support::workspace::example_copy();
    run(Command::new(python())
        .arg(repo.join("conformance/python_sdk_check.py"))
        .arg(env!("CARGO_BIN_EXE_manvault"))
        .arg(workspace.path())
        .arg(repo.join("conformance/cases")));
}

#[test]
fn python_sdk_runs_the_find_copy_audit_coverage_workflow() {
    if !crate::support::network::enabled("python_sdk_runs_the_find_copy_audit_coverage_workflow") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate::support::workspace::example_copy();
    run(Command::new(python())
        .arg(repo.join("conformance/workflow_check.py"))
        .arg(env!("CARGO_BIN_EXE_manvault"))
        .arg(workspace.path()));
}

#[test]
fn python_sdk_runs_the_memory_workflow() {
    if !crate::support::network::enabled("python_sdk_runs_the_memory_workflow") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate::support::workspace::example_copy();
    run(Command::new(python())
        .arg(repo.join("conformance/memory_check.py"))
        .arg(env!("CARGO_BIN_EXE_manvault"))
        .arg(workspace.path()));
}
