//! A corrupt or huge statistics file costs one warning and a bounded read at start, and
//! is compacted by the next record.

use std::fs;
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::stdio_server::{empty_workspace, RawServer};

/// Sparse, so the test costs no disk: only the junk lines at both ends are written.
const HUGE_BYTES: u64 = 256 * 1024 * 1024;
const JUNK_LINES: usize = 100_000;

#[test]
fn a_huge_corrupt_statistics_file_costs_one_warning_and_is_compacted() {
    let workspace = empty_workspace();
    let stats = workspace.path().join("vault/.system/adaptive_stats.jsonl");
    fs::create_dir_all(stats.parent().unwrap()).unwrap();
    let mut file = fs::File::create(&stats).unwrap();
    for n in 0..JUNK_LINES {
        writeln!(file, "junk line {n}").unwrap();
    }
    file.set_len(HUGE_BYTES).unwrap();
    let mut file = fs::OpenOptions::new().append(true).open(&stats).unwrap();
    for n in 0..JUNK_LINES {
        writeln!(file, "junk line {n}").unwrap();
    }
    drop(file);
    fs::create_dir_all(workspace.path().join("vault/notes")).unwrap();
    fs::write(workspace.path().join("vault/notes/a.md"), "evidence\n").unwrap();

    let started = Instant::now();
    let mut server = RawServer::start(workspace.path(), &[]);
    server.initialize(1);
    let initialized_after = started.elapsed();
    let coverage = server.call(2, "vault_coverage", json!({"path": "notes/a.md"}));
    assert_eq!(coverage["result"]["isError"], false, "{coverage}");
    let (_, stderr) = server.finish(Duration::from_secs(10));

    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("adaptive statistics"))
        .collect();
    assert!(
        warnings.len() <= 2,
        "{} warnings about the statistics file, {} bytes of stderr",
        warnings.len(),
        stderr.len()
    );
    assert!(
        initialized_after < Duration::from_secs(10),
        "initialize answered after {initialized_after:?}"
    );
    let size = fs::metadata(&stats).unwrap().len();
    assert!(
        size < 4 * 1024 * 1024,
        "the file was not compacted: {size} bytes"
    );
    let records: Vec<serde_json::Value> = fs::read_to_string(&stats)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "only the new record is left");
    assert_eq!(records[0]["kind"], "vault_coverage");
}
