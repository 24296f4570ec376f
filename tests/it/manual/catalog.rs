//! Discovery and lookups: which manuals and files exist, and what a bad name gets.

use std::os::unix::fs::symlink;

use manvault::error::ErrorCode;
use manvault::manual::FileType;

use super::fixture::{error_code, Fixture};

fn listing(fixture: &Fixture, manual_id: Option<&str>) -> Vec<String> {
    let index = fixture.index();
    let files = index.files(manual_id).expect("manual exists");
    files
        .iter()
        .map(|listed| {
            let problem = listed
                .file
                .problem()
                .map(|problem| format!(" ({problem})"))
                .unwrap_or_default();
            format!(
                "{}:{} {}{problem}",
                listed.manual_id,
                listed.file.path(),
                listed.file.file_type().as_str()
            )
        })
        .collect()
}

#[test]
fn manuals_are_top_level_folders_and_files_are_md_or_json_in_any_case() {
    let fixture = Fixture::new();
    fixture
        .write("zeta/a.md", "# a")
        .write("alpha/sub/deep/B.MD", "# b")
        .write("alpha/c.Json", "{}")
        .write("alpha/image.png", "x")
        .write("alpha/notes.txt", "x")
        .write("stray.md", "# not in a manual");
    let index = fixture.index();
    assert_eq!(index.manual_ids().collect::<Vec<_>>(), ["alpha", "zeta"]);
    assert_eq!(
        listing(&fixture, None),
        [
            "alpha:c.Json json",
            "alpha:sub/deep/B.MD md",
            "zeta:a.md md"
        ]
    );
    assert_eq!(listing(&fixture, Some("zeta")), ["zeta:a.md md"]);
    assert_eq!(
        index.file("alpha", "c.Json").unwrap().file_type(),
        FileType::Json
    );
}

#[test]
fn malformed_files_are_listed_with_their_problem_and_no_nodes() {
    let fixture = Fixture::new();
    fixture
        .write("m/bad.md", b"ok\n\xff\xfe")
        .write("m/bad.json", "{\n  \"a\": 1,\n}")
        .write("m/good.md", "# g");
    assert_eq!(
        listing(&fixture, Some("m")),
        [
            "m:bad.json json (invalid JSON: line 3 column 1)",
            "m:bad.md md (invalid UTF-8 at byte 3)",
            "m:good.md md",
        ]
    );
    let index = fixture.index();
    assert!(index.file("m", "bad.md").unwrap().nodes().is_empty());
    assert_eq!(index.toc("m").unwrap().count(), 1);
}

#[test]
fn a_byte_order_mark_is_not_content() {
    let fixture = Fixture::new();
    fixture
        .write("m/a.json", "\u{feff}{\"a\": 1}")
        .write("m/b.md", "\u{feff}# Title\n");
    let index = fixture.index();
    assert_eq!(index.file("m", "a.json").unwrap().problem(), None);
    assert_eq!(index.file("m", "b.md").unwrap().nodes()[0].title, "Title");
}

#[test]
fn symlinks_are_skipped_and_refused_as_forbidden() {
    let fixture = Fixture::new();
    fixture
        .write("m/real.md", "# r")
        .write("outside/secret.md", "# s");
    symlink(fixture.path("m/real.md"), fixture.path("m/link.md")).unwrap();
    symlink(fixture.path("outside"), fixture.path("m/linked_dir")).unwrap();
    symlink(fixture.path("outside"), fixture.path("linked_manual")).unwrap();
    let index = fixture.index();
    assert_eq!(listing(&fixture, Some("m")), ["m:real.md md"]);
    assert_eq!(index.manual_ids().collect::<Vec<_>>(), ["m", "outside"]);

    assert_eq!(error_code(index.file("m", "link.md")), ErrorCode::Forbidden);
    let through_dir = index.file("m", "linked_dir/secret.md").unwrap_err();
    assert_eq!(through_dir.code, ErrorCode::Forbidden);
    assert_eq!(through_dir.details.unwrap()["component"], "linked_dir");
    assert_eq!(error_code(index.toc("linked_manual")), ErrorCode::Forbidden);
}

#[test]
fn unknown_names_are_not_found_and_escaping_paths_are_out_of_scope() {
    let fixture = Fixture::new();
    fixture.write("m/a.md", "# a").write("n/b.md", "# b");
    let index = fixture.index();

    let unknown = index.toc("nope").err().unwrap();
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert_eq!(
        unknown.details.unwrap()["known"],
        serde_json::json!(["m", "n"])
    );
    assert_eq!(
        error_code(index.file("m", "missing.md")),
        ErrorCode::NotFound
    );
    assert_eq!(error_code(index.files(Some("../m"))), ErrorCode::OutOfScope);
    assert_eq!(
        error_code(index.file("m", "../n/b.md")),
        ErrorCode::OutOfScope
    );
    assert_eq!(
        error_code(index.file("m", "/etc/passwd")),
        ErrorCode::OutOfScope
    );
}

#[test]
fn error_details_never_show_the_server_root() {
    let fixture = Fixture::new();
    fixture.write("m/a.md", "# a");
    let index = fixture.index();
    let root = fixture.root().to_string_lossy().into_owned();
    for error in [
        index.file("m", "x.md").unwrap_err(),
        index.toc("x").err().unwrap(),
    ] {
        let body = error.to_json().to_string();
        assert!(!body.contains(&root), "{body}");
    }
}

#[test]
fn nodes_are_found_by_id() {
    let fixture = Fixture::new();
    fixture
        .write("m/a#L1.md", "intro\n# A\n")
        .write("m/d.json", "{}");
    let index = fixture.index();
    assert_eq!(index.node("m", "a#L1.md#L2").unwrap().1.title, "A");
    assert_eq!(index.node("m", "d.json").unwrap().1.title, "d.json");
    for unknown in ["a#L1.md#L3", "a#L1.md", "d.json#L1", "zzz"] {
        assert_eq!(
            error_code(index.node("m", unknown)),
            ErrorCode::NotFound,
            "{unknown}"
        );
    }
}

#[test]
fn skipped_symlinks_are_logged_by_relative_path_only() {
    let fixture = Fixture::new();
    fixture.write("m/real.md", "# r");
    symlink(fixture.path("m/real.md"), fixture.path("m/link.md")).unwrap();
    let log = LogBuffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || fixture.index());
    let logged = log.contents();
    assert!(
        logged.contains("skipped symlink") && logged.contains("link.md"),
        "{logged}"
    );
    assert!(
        !logged.contains(&*fixture.root().to_string_lossy()),
        "{logged}"
    );
}

/// Collects what a test subscriber writes.
#[derive(Clone, Default)]
struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl LogBuffer {
    fn contents(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogBuffer {
    type Writer = LogBuffer;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
