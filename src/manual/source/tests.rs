use std::path::Path;

use super::*;
use crate::bridge::Copy;
use crate::contract::types::RefTarget;
use crate::manual::file::TextSource;
use crate::manual::{
    manual_excepts, manual_read, ExceptsRequest, LineSpan, ManualIndex, ManualRef, ReadLimits,
    ReadRequest, ReadScope,
};

const TEXT: &str = "# Leave\n\nalpha: except on holidays\n";
/// As long as [`TEXT`], other words.
const SAME_LENGTH: &str = "# Leave\n\nomega: except on weekends\n";
const OTHER: &str = "# Other\n\nbeta\n";

/// How `m/a.md` changes between the start and a read.
#[derive(Debug, Clone, Copy)]
enum Change {
    SameLength,
    OtherLength,
    Link,
}

const CHANGES: [Change; 3] = [Change::SameLength, Change::OtherLength, Change::Link];

fn apply(root: &Path, change: Change) {
    let path = root.join("m/a.md");
    match change {
        Change::SameLength => std::fs::write(path, SAME_LENGTH).unwrap(),
        Change::OtherLength => std::fs::write(path, format!("{SAME_LENGTH}and more\n")).unwrap(),
        Change::Link => {
            std::fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(root.join("m/b.md"), path).unwrap();
        }
    }
}

/// A reader of a file's text, as what it returned of it.
type Reader = fn(&ManualIndex) -> ToolResult<String>;

/// Every reader of a file's text but the search's and the vectors' (tested with them).
fn readers() -> Vec<(&'static str, Reader)> {
    vec![
        ("manual_read", |index| {
            let request = ReadRequest {
                reference: ManualRef {
                    target: RefTarget::Manual,
                    manual_id: Some("m".into()),
                    path: "a.md".into(),
                    start_line: Some(1),
                },
                scope: Some(ReadScope::Section),
                limits: Default::default(),
                expand: Default::default(),
            };
            manual_read(index, &request, &ReadLimits::default()).map(|read| read.text)
        }),
        ("manual_excepts", |index| {
            let request = ExceptsRequest {
                manual_id: "m",
                node_id: None,
                offset: 0,
                limit: None,
            };
            manual_excepts(index, &request).map(|page| format!("{:?}", page.items))
        }),
        ("copy", |index| {
            let file = index.file("m", "a.md")?;
            let lines = LineSpan {
                start_line: 1,
                end_line: 3,
            };
            Copy::of("m", file, lines).map(|copy| copy.text)
        }),
    ]
}

#[test]
fn every_reader_refuses_a_file_changed_since_the_start_and_reads_it_after_a_refresh() {
    for (reader, read) in readers() {
        for change in CHANGES {
            let dir = crate::test_support::tree(&[("m/a.md", TEXT), ("m/b.md", OTHER)]);
            let mut index = ManualIndex::build(dir.path()).expect("index");
            let before = read(&index).expect("unchanged");
            assert!(before.contains("alpha"), "{reader}: {before}");
            apply(dir.path(), change);
            let error = read(&index).expect_err("changed under the index");
            assert_eq!(error.code, ErrorCode::Conflict, "{reader} {change:?}");
            let details = error.details.expect("details");
            assert_eq!(details["manual_id"], "m");
            assert_eq!(details["path"], "a.md");
            assert!(details["reason"].is_string(), "{reader} {change:?}");
            assert!(index.refresh().unwrap(), "{reader} {change:?}");
            match change {
                Change::Link => assert!(index.file("m", "a.md").is_err()),
                _ => {
                    let after = read(&index).expect("read again after the refresh");
                    assert!(!after.contains("alpha"), "{reader} {change:?}: {after}");
                }
            }
        }
    }
}

#[test]
fn a_failed_read_asks_the_next_refresh_to_walk() {
    let dir = crate::test_support::tree(&[("m/a.md", TEXT)]);
    let index = ManualIndex::build(dir.path()).expect("index");
    let file = index.file("m", "a.md").unwrap();
    let source = ManualsSource::new(dir.path().to_owned());
    assert!(!source.take_stale());
    let read = |version, text_len| source.read_checked("m", "a.md", version, text_len);
    assert_eq!(read(file.version(), TEXT.len()).unwrap(), TEXT);
    assert!(!source.take_stale(), "a good read marks nothing");
    let other_version = read(file.version() ^ 1, TEXT.len()).unwrap_err();
    assert_eq!(other_version.code, ErrorCode::Conflict);
    assert!(source.take_stale());
    assert!(!source.take_stale(), "taken once");
    let other_length = read(file.version(), TEXT.len() + 1).unwrap_err();
    assert!(other_length.details.unwrap()["reason"]
        .as_str()
        .unwrap()
        .contains("bytes"));
    assert!(source.take_stale());
    assert_eq!(source.reads(), 3);
}

#[test]
fn a_snapshot_refuses_a_changed_file_and_the_working_index_walks_again() {
    let dir = crate::test_support::tree(&[("m/a.md", TEXT)]);
    let mut index = ManualIndex::build(dir.path()).expect("index");
    let snapshot = index.snapshot();
    apply(dir.path(), Change::SameLength);
    let error = snapshot.file("m", "a.md").unwrap().read_text().unwrap_err();
    assert_eq!(error.code, ErrorCode::Conflict);
    // Shared with the snapshot: the working index walks even if its watch missed it.
    assert!(index.refresh().unwrap());
    let file = index.file("m", "a.md").unwrap();
    assert_eq!(file.read_text().unwrap().whole(), SAME_LENGTH);
}
