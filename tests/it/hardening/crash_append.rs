//! Appends are all or nothing when the server is killed in the middle of one: a daily
//! log (which nothing but appends may change) never keeps a line cut in half.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::json;

use crate::support::folder_names;
use crate::support::stdio_server::{empty_workspace, RawServer};

const DAILY: &str = "artifacts/daily/2026-11-25.md";
/// Large enough that the write takes long enough to be caught in the middle.
const BLOCK_BYTES: usize = 15 * 1024 * 1024;
/// Kills at most; the test stops early once enough landed mid-write.
const MAX_KILLS: usize = 10;
const ENOUGH_MID_WRITE: usize = 3;
const TIME_LIMIT: Duration = Duration::from_secs(120);

fn block(run: usize) -> String {
    let line = format!("run {run}: a line of the daily log that must never be cut\n");
    line.repeat(BLOCK_BYTES / line.len())
}

fn app_over(workspace: &Path) -> App {
    let flags = RootFlags {
        workspace: Some(workspace.to_owned()),
        manuals: None,
        vault: Some(workspace.join("vault")),
    };
    App::new(Config::load(&|_| None, &flags).unwrap())
}

/// Kills the server once the daily log has grown but not by the whole block; whether
/// it did land in the middle.
fn kill_during_the_append(server: &mut RawServer, file: &Path, before: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let size = fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        if size > before {
            server.kill();
            return size < before + BLOCK_BYTES as u64;
        }
    }
    server.kill();
    false
}

#[test]
fn a_server_killed_during_an_append_leaves_the_log_whole() {
    let workspace = empty_workspace();
    let file = workspace.path().join("vault").join(DAILY);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "# log\n").unwrap();
    let started = Instant::now();
    let (mut kills, mut mid_write) = (0, 0);
    while kills < MAX_KILLS && mid_write < ENOUGH_MID_WRITE && started.elapsed() < TIME_LIMIT {
        let before_text = fs::read_to_string(&file).unwrap();
        let before = before_text.len() as u64;
        let appended = block(kills);
        let mut server = RawServer::start(workspace.path(), &[]);
        server.initialize(1);
        server.send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "vault_write",
            "arguments": {"path": DAILY, "content": appended, "mode": "append"}}}),
        );
        if kill_during_the_append(&mut server, &file, before) {
            mid_write += 1;
        }
        kills += 1;
        // The next writer of the file settles what the killed one left.
        let marker = format!("after kill {kills}\n");
        let app = app_over(workspace.path());
        let answer = app
            .call(
                "vault_write",
                json!({"path": DAILY, "content": marker, "mode": "append"}),
            )
            .unwrap()
            .unwrap();
        assert_eq!(answer["written_bytes"], marker.len());
        let after = fs::read_to_string(&file).unwrap();
        let nothing = format!("{before_text}{marker}");
        let everything = format!("{before_text}{appended}{marker}");
        assert!(
            after == nothing || after == everything,
            "kill {kills}: the log is neither without nor with the whole append ({} bytes, \
             expected {} or {})",
            after.len(),
            nothing.len(),
            everything.len()
        );
    }
    assert!(
        mid_write >= 1,
        "no kill landed during an append in {kills} tries; the test proved nothing"
    );
    let names = folder_names(file.parent().unwrap());
    assert!(
        names
            .iter()
            .all(|name| !name.starts_with(".manvault-tmp-append-")),
        "a journal was left: {names:?}"
    );
}
