//! A `manvault index` killed while it writes the section index leaves an index that
//! opens and answers: the next run keeps what the killed one committed and indexes only
//! the rest, and a search then finds every file's text.
//!
//! The kill comes between two commits by construction, not by a race with the build
//! (which a fast machine could finish first): `MANVAULT_TEST_INDEX_HOLD` makes the run
//! commit after its first [`HOLD`] files, then write the segments of its next commit
//! after [`HOLD`] more and hold there, `meta.json` still naming the first commit.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Files and their sections: 11 MB.
const FILES: usize = 1200;
const SECTIONS: usize = 40;
/// The files of the first commit; the held one adds as many.
const HOLD: usize = 400;

fn write_manuals(root: &Path) {
    for file in 0..FILES {
        let mut text = format!("# 文書 {file}\n\n");
        for section in 0..SECTIONS {
            text.push_str(&format!("## 節 {section}\n\n"));
            for line in 0..4 {
                text.push_str(&format!(
                    "申請書の提出期限は月末です。marker{file}x{section} keeps line {line} of the rotation policy.\n"
                ));
            }
            text.push('\n');
        }
        std::fs::write(root.join(format!("doc-{file:04}.md")), text).unwrap();
    }
}

fn manvault(workspace: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_manvault"));
    command
        .env("WORKSPACE_ROOT", workspace)
        .env("LOG_LEVEL", "info")
        .env_remove("CACHE_DIR")
        .env_remove("MANUALS_ROOT")
        .env_remove("VAULT_ROOT");
    command
}

/// Whether the index's `meta.json` lists a segment (tantivy rewrites it atomically).
fn has_committed_sections(meta: &Path) -> bool {
    std::fs::read(meta)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|meta| {
            meta["segments"]
                .as_array()
                .map(|segments| !segments.is_empty())
        })
        .unwrap_or(false)
}

/// `manvault index`'s line for the section index step.
fn section_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|line| line.starts_with("section index:"))
        .unwrap_or_else(|| panic!("no section index line in {stdout}"))
}

/// The number before `word` in `line` ("12 files (...)").
fn count_before(line: &str, word: &str) -> usize {
    let at = line
        .find(word)
        .unwrap_or_else(|| panic!("{word} in {line}"));
    line[..at]
        .trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("a number before {word} in {line}"))
}

#[test]
fn a_kill_during_indexing_leaves_a_usable_index() {
    let workspace = tempfile::tempdir().unwrap();
    let manuals = workspace.path().join("manuals/big");
    std::fs::create_dir_all(&manuals).unwrap();
    std::fs::create_dir_all(workspace.path().join("vault")).unwrap();
    write_manuals(&manuals);

    // Kill the first run while it holds its second commit, segments written.
    let meta = workspace
        .path()
        .join("vault/.system/cache/sections/meta.json");
    let mut first = manvault(workspace.path())
        .args(["index", "--commit-every", "3600"])
        .env("MANVAULT_TEST_INDEX_HOLD", HOLD.to_string())
        .env("LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = BufReader::new(first.stderr.take().unwrap());
    let held = log
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("holding a commit whose segments are written"));
    assert!(held, "the run ended without holding its second commit");
    assert!(has_committed_sections(&meta), "the first commit is on disk");
    first.kill().unwrap();
    let killed = first.wait().unwrap();
    assert!(!killed.success(), "a held run ends only when killed");

    // The next run opens what the killed one committed, keeps it and indexes the rest.
    let second = manvault(workspace.path()).arg("index").output().unwrap();
    let stdout = String::from_utf8(second.stdout).unwrap();
    assert!(second.status.success(), "{stdout}");
    let line = section_line(&stdout);
    let (now, kept) = (
        count_before(line, "files ("),
        count_before(line, "were current"),
    );
    assert_eq!(
        (kept, now),
        (HOLD, FILES - HOLD),
        "the first commit kept, the rest indexed: {line}"
    );

    // And a search answers from it: the last file's last section, literally in one.
    let last = FILES - 1;
    let found = manvault(workspace.path())
        .args([
            "call",
            "manual_find",
            &format!(r#"{{"query":"marker{last}x{}"}}"#, SECTIONS - 1),
        ])
        .output()
        .unwrap();
    assert!(found.status.success(), "{found:?}");
    let answer: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(
        answer["summary"]["signal_coverage"]["normalized"], 1,
        "one section holds it: {answer}"
    );
    // The best candidate is it: the title line, a blank, then 7 lines a section.
    let best = &answer["next_actions"][1]["params"]["ref"];
    assert_eq!(best["path"], format!("doc-{last:04}.md"), "{answer}");
    assert_eq!(best["start_line"], 3 + 7 * (SECTIONS - 1), "{answer}");
}
