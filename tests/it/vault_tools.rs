//! Behaviour of the vault tools that the conformance cases cannot set up: concurrent
//! appends, bytes that are not UTF-8, files larger than
//! memory should hold, and search matches that straddle the blocks a file is read in.

use std::fs;

use serde_json::{json, Value};

use crate::support::workspace::Workspace;

#[test]
fn a_vault_removed_while_serving_is_named_not_recreated() {
    // The vault is created at start only (`workspace::prepare`); one that disappears
    // afterwards was moved or deleted by someone, and an empty new one would hide that.
    let workspace = Workspace::new(None);
    std::fs::remove_dir_all(&workspace.vault).unwrap();
    let error = workspace.call("vault_ls", json!({})).unwrap_err();
    assert_eq!(error["code"], "not_found");
    assert_eq!(error["details"]["setting"], "VAULT_ROOT");
    assert!(!workspace.vault.exists());
    std::fs::create_dir(&workspace.vault).unwrap();
    let listed = workspace.call("vault_ls", json!({})).unwrap();
    assert_eq!(listed["total"], 0);
}

#[test]
fn concurrent_appends_to_a_daily_log_all_land_whole() {
    let workspace = Workspace::new(None);
    let daily = "artifacts/daily/2026-11-25.md";
    workspace
        .call(
            "vault_create",
            json!({ "path": daily, "content": "# log\n" }),
        )
        .unwrap();
    const WRITERS: usize = 4;
    const ENTRIES: usize = 25;
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let workspace = &workspace;
            scope.spawn(move || {
                for entry in 0..ENTRIES {
                    let line = format!("- {writer} {entry} {}\n", "x".repeat(3000));
                    let answer = workspace
                        .call(
                            "vault_write",
                            json!({ "path": daily, "content": line, "mode": "append" }),
                        )
                        .unwrap();
                    assert_eq!(answer["written_bytes"], line.len());
                }
            });
        }
    });
    let log = fs::read_to_string(workspace.vault.join(daily)).unwrap();
    let mut seen: Vec<(usize, usize)> = log
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 4, "a torn or merged entry: {line:.40}");
            assert_eq!(fields[3].len(), 3000, "a torn entry: {line:.40}");
            (fields[1].parse().unwrap(), fields[2].parse().unwrap())
        })
        .collect();
    seen.sort();
    let expected: Vec<(usize, usize)> = (0..WRITERS)
        .flat_map(|writer| (0..ENTRIES).map(move |entry| (writer, entry)))
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn bytes_that_are_not_utf8_are_an_error_naming_the_line() {
    let workspace = Workspace::new(None);
    workspace.write("notes/latin1.md", b"first\nsecond\ncaf\xe9\nlast\n");
    let refused = |tool: &str, arguments: Value| {
        let error = workspace.call(tool, arguments).unwrap_err();
        assert_eq!(error["code"], "invalid_parameter", "{tool}: {error}");
        assert_eq!(error["details"]["line"], 3, "{tool}: {error}");
        assert_eq!(error["details"]["rule"], "utf8", "{tool}: {error}");
    };
    refused(
        "vault_read",
        json!({ "path": "notes/latin1.md", "full": true }),
    );
    refused("vault_scan", json!({ "path": "notes/latin1.md" }));
    refused(
        "vault_replace",
        json!({ "path": "notes/latin1.md", "find": "last", "replace": "final" }),
    );
    // The lines before the bad one, and those after it, are still readable.
    let before = workspace
        .call(
            "vault_scan",
            json!({ "path": "notes/latin1.md", "chunk_lines": 2 }),
        )
        .unwrap();
    assert_eq!(before["text"], "first\nsecond");
    let after = workspace
        .call(
            "vault_read",
            json!({ "path": "notes/latin1.md", "range": { "start_line": 4 } }),
        )
        .unwrap();
    assert_eq!(after["text"], "last");
    // Search leaves files out whose start is not text (not UTF-8, or a NUL byte), and
    // says how many.
    workspace.write("notes/image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR last");
    workspace.write("notes/zero.md", b"last\0\n");
    workspace.write("notes/text.md", "the last word\n");
    let found = workspace
        .call("vault_search", json!({ "query": "last" }))
        .unwrap();
    assert_eq!(found["skipped_files"], 3, "{found}");
    assert_eq!(found["scanned_files"], 1, "{found}");
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["items"][0]["path"], "notes/text.md");
}

/// Peak resident memory of this process (`VmHWM`, Linux only), in bytes.
#[cfg(target_os = "linux")]
fn peak_memory() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Linux only: the peak memory it checks is read from `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn reading_the_start_of_a_2_gb_file_does_not_load_it() {
    const SIZE: u64 = 2 * 1024 * 1024 * 1024;
    let workspace = Workspace::new(None);
    let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
    workspace.write("logs/huge.log", &text);
    // The rest is a hole: 2 GB on paper, nothing on disk.
    fs::File::options()
        .write(true)
        .open(workspace.vault.join("logs/huge.log"))
        .unwrap()
        .set_len(SIZE)
        .unwrap();
    let before = peak_memory();
    let read = workspace
        .call(
            "vault_read",
            json!({ "path": "logs/huge.log", "range": { "start_line": 1, "end_line": 80 } }),
        )
        .unwrap();
    let scan = workspace
        .call(
            "vault_scan",
            json!({ "path": "logs/huge.log", "cursor": { "start_line": 21 } }),
        )
        .unwrap();
    let grown = peak_memory().saturating_sub(before);
    assert_eq!(read["applied_range"]["end_line"], 80);
    assert_eq!(read["next_offset"]["start_line"], 81);
    assert!(read["text"].as_str().unwrap().ends_with("line 80"));
    assert_eq!(scan["applied_range"]["end_line"], 100);
    assert!(
        grown < 64 * 1024 * 1024,
        "peak memory grew by {grown} bytes for a {SIZE}-byte file"
    );
    let listed = workspace.call("vault_ls", json!({})).unwrap();
    assert_eq!(listed["items"][0]["size_bytes"], SIZE);
    assert_eq!(listed["items"][0]["line_count"], Value::Null);
}

/// Lines of a generated file, and the lines where a match starts.
#[derive(Default)]
struct Generated {
    text: String,
    lines: u64,
    matches: Vec<u64>,
}

impl Generated {
    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
    }

    /// A match split over a line break, which the normaliser joins with a space.
    fn split_match(&mut self) {
        self.line("障害");
        self.matches.push(self.lines);
        self.line("対応 follows");
    }
}

#[test]
fn search_finds_every_match_across_block_boundaries() {
    // The search reads 1 MiB blocks, each extended to the end of its line. The file puts
    // the first block's last byte inside a "障害" line, so the match continues in the
    // second block; more matches follow every 37 lines, up to about 3 MB.
    const FIRST_BLOCK: usize = 1024 * 1024;
    let mut file = Generated::default();
    while file.text.len() < FIRST_BLOCK - 100 {
        let n = file.lines;
        file.line(&format!("filler line {n}"));
    }
    let pad = FIRST_BLOCK - 4 - file.text.len() - 1;
    file.line(&"x".repeat(pad));
    assert_eq!(file.text.len(), FIRST_BLOCK - 4);
    file.split_match();
    while file.text.len() < 3 * FIRST_BLOCK {
        if file.lines % 37 == 0 {
            file.split_match();
        } else {
            let n = file.lines;
            file.line(&format!(
                "filler line {n} with some padding to make it longer"
            ));
        }
    }
    let workspace = Workspace::new(None);
    workspace.write("logs/big.md", &file.text);
    let found = workspace
        .call(
            "vault_search",
            json!({ "query": "障害 対応", "limit": 100 }),
        )
        .unwrap();
    assert_eq!(found["total"], file.matches.len());
    let lines: Vec<u64> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["start_line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, file.matches[..100]);
    assert!(found["items"][0]["snippet"]
        .as_str()
        .unwrap()
        .contains("障害 対応"));
    assert!(
        found["items"][0]["snippet"]
            .as_str()
            .unwrap()
            .chars()
            .count()
            <= 160
    );
}
