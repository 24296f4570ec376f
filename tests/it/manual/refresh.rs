//! Changes on disk become visible through `refresh`, and only changes move the generation.

use std::fs;

use manvault::error::ErrorCode;

use super::fixture::{error_code, Fixture};

fn titles(index: &manvault::manual::ManualIndex, manual_id: &str) -> Vec<String> {
    index
        .toc(manual_id)
        .unwrap()
        .map(|(_, node)| node.title.as_str().to_owned())
        .collect()
}

#[test]
fn node_ids_are_stable_for_an_unchanged_file() {
    let fixture = Fixture::new();
    fixture
        .write("m/a.md", "intro\n# A\n## B\n")
        .write("m/b.json", "[]");
    let ids = |index: &manvault::manual::ManualIndex| -> Vec<String> {
        index
            .toc("m")
            .unwrap()
            .map(|(path, node)| node.id(path))
            .collect()
    };
    assert_eq!(
        ids(&fixture.index()),
        ["a.md#L1", "a.md#L2", "a.md#L3", "b.json"]
    );
    assert_eq!(
        ids(&fixture.index()),
        ids(&fixture.index()),
        "a rebuild (restart) gives the same ids"
    );
}

#[test]
fn refresh_without_changes_keeps_the_generation() {
    let fixture = Fixture::new();
    fixture.write("m/a.md", "# A\n");
    let mut index = fixture.index();
    let generation = index.generation();
    assert!(!index.refresh().unwrap());
    assert_eq!(index.generation(), generation);
}

#[test]
fn refresh_sees_edits_additions_and_deletions() {
    let fixture = Fixture::new();
    fixture
        .write("m/a.md", "# A\n")
        .write("m/gone.md", "# Gone\n");
    let mut index = fixture.index();
    let before = index.generation();
    let untouched_generation = index.file("m", "a.md").unwrap().generation();

    fixture
        .write("m/a.md", "# A edited, longer\n")
        .write("m/new.md", "# New\n")
        .write("n/c.json", "{}");
    fs::remove_file(fixture.path("m/gone.md")).unwrap();
    assert!(index.refresh().unwrap());

    assert!(index.generation() > before);
    assert_eq!(titles(&index, "m"), ["A edited, longer", "New"]);
    assert_eq!(error_code(index.file("m", "gone.md")), ErrorCode::NotFound);
    assert_eq!(index.manual_ids().collect::<Vec<_>>(), ["m", "n"]);
    assert!(index.file("m", "a.md").unwrap().generation() > untouched_generation);
}

#[test]
fn refresh_keeps_unchanged_files_and_drops_deleted_manuals() {
    let fixture = Fixture::new();
    fixture
        .write("m/keep.md", "# Keep\n")
        .write("m/edit.md", "# v1\n")
        .write("old/x.md", "# x\n");
    let mut index = fixture.index();
    let kept_generation = index.file("m", "keep.md").unwrap().generation();

    fixture.write("m/edit.md", "# v2 with more\n");
    fs::remove_dir_all(fixture.path("old")).unwrap();
    assert!(index.refresh().unwrap());

    assert_eq!(
        index.file("m", "keep.md").unwrap().generation(),
        kept_generation,
        "not re-read"
    );
    assert_eq!(titles(&index, "m"), ["v2 with more", "Keep"]);
    assert_eq!(error_code(index.toc("old")), ErrorCode::NotFound);
}

#[test]
fn a_deletion_alone_moves_the_generation() {
    let fixture = Fixture::new();
    fixture.write("m/a.md", "# A\n").write("m/b.md", "# B\n");
    let mut index = fixture.index();
    let before = index.generation();
    fs::remove_file(fixture.path("m/b.md")).unwrap();
    assert!(index.refresh().unwrap());
    assert!(index.generation() > before);
    assert_eq!(titles(&index, "m"), ["A"]);
}

/// The change watch may skip the walk only while nothing changed: edits in a nested
/// folder, a new folder, and a file edited inside that new folder are all seen by the
/// very next refresh, however quickly they follow each other.
#[test]
fn changes_anywhere_in_the_tree_show_on_the_next_refresh() {
    let fixture = Fixture::new();
    fixture.write("m/a/deep.md", "# Old\n");
    let mut index = fixture.index();
    while index.refresh().unwrap() {} // settle: the first refreshes arm the watch
    assert!(!index.refresh().unwrap(), "nothing changed");

    fixture.write("m/a/deep.md", "# Newer title\n");
    assert!(index.refresh().unwrap(), "an edit in a nested folder");
    assert_eq!(titles(&index, "m"), ["Newer title"]);

    fixture.write("m/b/c/new.md", "# Fresh\n");
    assert!(index.refresh().unwrap(), "a new folder with a file");
    fixture.write("m/b/c/new.md", "# Fresh, edited at once\n");
    assert!(
        index.refresh().unwrap(),
        "an edit inside the folder just created"
    );
    assert!(titles(&index, "m").contains(&"Fresh, edited at once".to_string()));

    fs::remove_file(fixture.path("m/a/deep.md")).unwrap();
    assert!(index.refresh().unwrap(), "a deletion");
    assert!(!titles(&index, "m").contains(&"Newer title".to_string()));
    while index.refresh().unwrap() {}
    assert!(!index.refresh().unwrap(), "quiet again");
}
