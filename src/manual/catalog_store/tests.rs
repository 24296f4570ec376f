use std::path::{Path, PathBuf};

use super::*;
use crate::manual::index::DEFAULT_MAX_FILE_BYTES;
use crate::manual::ManualIndex;

/// Every way the outline or line table of a file can be unusual.
const FIXTURES: &[(&str, &str)] = &[
    (
        "m/plain.md",
        "# Title\n\nText\n\n## Sub {#custom}\n\nMore\n",
    ),
    (
        "m/front.md",
        "---\ntitle: \"Front Title\"\n---\n\nPreamble text\n\n# First\n\nBody\n",
    ),
    (
        "m/crlf.md",
        "# One\r\n\r\nText\r\n## Two\r\nLone\rcarriage\r\n",
    ),
    (
        "m/code.md",
        "# Real\n\n```\n# not a heading\n```\n\n    # indented\n\nSetext\n======\n\n### Deep\n",
    ),
    ("m/nohead.md", "just text\nno heading\n"),
    ("m/empty.md", ""),
    ("m/bom.md", "\u{feff}# Bom\n\ntext"),
    ("m/sub/data.json", "{\n  \"a\": [1, 2]\n}\n"),
    ("m/bad.json", "{ nope"),
    ("n/x.md", "# Only\n"),
];

/// A vault with its cache folder inside, as a default workspace has.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("temporary folder");
        std::fs::create_dir(dir.path().join("vault")).expect("vault");
        Workspace { dir }
    }

    fn vault(&self) -> PathBuf {
        self.dir.path().join("vault")
    }

    fn cache_dir(&self) -> PathBuf {
        self.vault().join(".system").join("cache")
    }

    fn catalog_path(&self) -> PathBuf {
        self.cache_dir().join(FILE_NAME)
    }

    fn store(&self) -> CatalogStore {
        CatalogStore::open(&self.cache_dir(), &self.vault()).expect("a usable cache folder")
    }

    fn build(&self, manuals: &Path) -> ManualIndex {
        ManualIndex::build_reporting(
            manuals,
            DEFAULT_MAX_FILE_BYTES,
            Some(self.store()),
            &mut |_| {},
        )
        .expect("index")
    }
}

/// Everything an index holds of each file, in one comparable value.
fn contents(index: &ManualIndex) -> Vec<String> {
    index
        .files(None)
        .unwrap()
        .iter()
        .map(|listed| {
            let file = listed.file;
            format!(
                "{}/{} {:?} problem={:?} version={} title={:?} lines={:?} code={:?} text={:?} nodes={:?}",
                listed.manual_id,
                file.path(),
                file.file_type(),
                file.problem(),
                file.version(),
                file.page_title(),
                file.line_table().ranges().collect::<Vec<_>>(),
                file.outline().code_blocks,
                file.read_text().expect("unchanged").whole(),
                file.nodes(),
            )
        })
        .collect()
}

/// How many files of `index` a fresh store hands out from the catalog file.
fn stored_files(workspace: &Workspace, index: &ManualIndex) -> usize {
    let mut store = workspace.store();
    index
        .files(None)
        .unwrap()
        .iter()
        .filter(|listed| {
            let file = listed.file;
            store
                .claim(listed.manual_id, file.path(), file.version())
                .is_some()
        })
        .count()
}

fn assert_same_as_a_fresh_parse(manuals: &Path) {
    let workspace = Workspace::new();
    let fresh = ManualIndex::build(manuals).expect("index");
    let first = workspace.build(manuals);
    assert_eq!(contents(&first), contents(&fresh));
    let readable = fresh
        .files(None)
        .unwrap()
        .iter()
        .filter(|listed| listed.file.problem().is_none())
        .count();
    assert!(readable > 0);
    assert_eq!(stored_files(&workspace, &fresh), readable);
    let restored = workspace.build(manuals);
    // The seam for "holds no text": a start from the catalog opens no stored file (a
    // file's text is read when a reader asks, as `contents` does next); only the files
    // with a problem, which the catalog does not keep, are read again.
    let unstored = fresh.files(None).unwrap().len() - readable;
    assert_eq!(
        restored.files_read(),
        unstored,
        "a start from the catalog reads no stored file"
    );
    assert_eq!(contents(&restored), contents(&fresh));
}

#[test]
fn a_start_from_the_catalog_gives_exactly_the_files_of_a_fresh_parse() {
    let manuals = crate::test_support::tree(FIXTURES);
    assert_same_as_a_fresh_parse(manuals.path());
}

#[test]
fn the_example_workspace_starts_from_the_catalog_as_from_a_fresh_parse() {
    let manuals = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace/manuals");
    assert!(
        manuals.is_dir(),
        "the bundled example workspace is part of the repository"
    );
    assert_same_as_a_fresh_parse(&manuals);
}

#[test]
fn changed_added_and_deleted_files_are_read_again() {
    let manuals = crate::test_support::tree(FIXTURES);
    let workspace = Workspace::new();
    workspace.build(manuals.path());
    let root = manuals.path();
    std::fs::write(root.join("m/plain.md"), "# Changed\n\n## Also\n").unwrap();
    std::fs::write(root.join("m/added.md"), "# Added\n").unwrap();
    std::fs::remove_file(root.join("n/x.md")).unwrap();
    let restarted = workspace.build(root);
    assert_eq!(
        contents(&restarted),
        contents(&ManualIndex::build(root).unwrap())
    );
    let titles: Vec<&str> = restarted
        .file("m", "plain.md")
        .unwrap()
        .nodes()
        .iter()
        .map(|node| node.title.as_str())
        .collect();
    assert_eq!(titles, ["Changed", "Also"]);
    // The catalog was rewritten for the new files, without the deleted one.
    let mut store = workspace.store();
    let added = restarted.file("m", "added.md").unwrap();
    assert!(store.claim("m", "added.md", added.version()).is_some());
    assert!(store.claim("n", "x.md", 0).is_none());
    assert!(store.drop_unclaimed(), "the other files are still stored");
}

#[test]
fn a_refresh_that_changes_a_file_rewrites_the_catalog() {
    let manuals = crate::test_support::tree(FIXTURES);
    let workspace = Workspace::new();
    let mut index = workspace.build(manuals.path());
    std::fs::write(manuals.path().join("n/x.md"), "# Edited\n").unwrap();
    assert!(index.refresh().unwrap());
    let edited = index.file("n", "x.md").unwrap();
    let stored = workspace
        .store()
        .claim("n", "x.md", edited.version())
        .expect("stored after the refresh");
    assert_eq!(stored.outline.nodes, edited.nodes());
}

#[test]
fn a_damaged_or_foreign_catalog_is_rebuilt_never_read() {
    let manuals = crate::test_support::tree(FIXTURES);
    let fresh = contents(&ManualIndex::build(manuals.path()).unwrap());
    let workspace = Workspace::new();
    workspace.build(manuals.path());
    let good = std::fs::read(workspace.catalog_path()).unwrap();
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 0x20; // a title's letter case: only the CRC tells
    let mut old_format = good.clone();
    old_format[8..12].copy_from_slice(&(FORMAT_VERSION - 1).to_le_bytes());
    let damaged: [&[u8]; 5] = [
        &good[..good.len() / 2],
        &good[..5],
        &flipped,
        &old_format,
        b"not a catalog at all",
    ];
    for bytes in damaged {
        std::fs::write(workspace.catalog_path(), bytes).unwrap();
        let mut store = workspace.store();
        assert!(
            !store.drop_unclaimed(),
            "nothing is read from a damaged file"
        );
        assert_eq!(contents(&workspace.build(manuals.path())), fresh);
        assert_eq!(std::fs::read(workspace.catalog_path()).unwrap(), good);
    }
}

#[test]
fn a_link_on_the_way_to_the_cache_is_not_followed() {
    let manuals = crate::test_support::tree(FIXTURES);
    let workspace = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), workspace.vault().join(".system")).unwrap();
    std::fs::create_dir(elsewhere.path().join("cache")).unwrap();
    let index = workspace.build(manuals.path());
    assert_eq!(
        contents(&index),
        contents(&ManualIndex::build(manuals.path()).unwrap())
    );
    assert!(!elsewhere.path().join("cache").join(FILE_NAME).exists());
}

#[test]
fn the_folders_are_every_folder_above_a_stored_file_once_in_order() {
    let manuals = crate::test_support::tree(&[
        ("m/a.md", "# A\n"),
        ("m/x/y/b.md", "# B\n"),
        ("m/x/c.md", "# C\n"),
        ("m/x/y/z/d.md", "# D\n"),
        ("n/e.md", "# E\n"),
    ]);
    let workspace = Workspace::new();
    workspace.build(manuals.path());
    assert_eq!(
        workspace.store().take_folders(),
        ["m", "m/x", "m/x/y", "m/x/y/z", "n"]
    );
}

#[test]
fn decoded_on_a_thread_of_its_own_the_catalog_hands_out_what_a_decode_in_place_does() {
    let manuals = crate::test_support::tree(FIXTURES);
    let workspace = Workspace::new();
    let index = workspace.build(manuals.path());
    let mut store = workspace.store();
    let in_place = decode(
        CacheFile::locate(
            &workspace.cache_dir(),
            &workspace.vault(),
            FILE_NAME,
            envelope(),
        )
        .unwrap()
        .read_payload()
        .expect("a payload")
        .bytes(),
    )
    .expect("a well-formed payload");
    assert!(
        matches!(store.decoding, Some(Decoding::Thread(_))),
        "decoded on a thread of its own"
    );
    let mut claimed = 0;
    for listed in index.files(None).unwrap() {
        let (manual_id, file) = (listed.manual_id, listed.file);
        let stored = store.claim(manual_id, file.path(), file.version());
        let expected = in_place
            .get(manual_id)
            .and_then(|files| files.get(file.path()));
        assert_eq!(
            stored.map(|stored| stored.outline.nodes),
            expected.map(|(_, parse)| parse.outline.nodes.clone()),
            "{}",
            file.path()
        );
        claimed += usize::from(expected.is_some());
    }
    assert!(claimed > 0);
    assert!(
        store.decoding.is_none(),
        "the thread joined, the bytes dropped"
    );
    assert!(!store.drop_unclaimed(), "every stored file was claimed");
}

#[test]
fn the_names_of_a_payload_read_without_its_bodies_even_a_malformed_one() {
    let mut out = Writer::default();
    out.u32(2);
    for (manual_id, path) in [("m", "x/y/a.md"), ("n", "b.md")] {
        out.str(manual_id);
        out.str(path);
        out.u64(1);
        out.u32(3);
        out.bytes.extend_from_slice(b"bad");
    }
    let payload = &out.bytes[..];
    assert_eq!(
        stored_names(payload),
        Some(vec![("m", "x/y/a.md"), ("n", "b.md")])
    );
    assert!(decode(payload).is_none(), "a malformed body is not read");
    assert_eq!(stored_names(&payload[..payload.len() - 1]), None);
}
