//! The reference graph a sync assembles from kept, stored and newly resolved manuals
//! equals the one resolved from every file, through changes, additions and deletions,
//! in the same process and in a fresh one reading `CACHE_DIR`.

use super::*;
use crate::manual::find::corpus::CorpusCache;
use crate::manual::find::derived::NodeKey;
use crate::manual::find::resolve::ReferenceGraph;

const FILES: &[(&str, &str)] = &[
    (
        "m/guide/a.md",
        "# A\n\n[to b](b.md#second-part), [abs](/guide/c/), [site](https://example.org/guide/c/#deep-id)\n\n[later](new.md) [other manual](../../n/x.md) [out](https://other.example/x) [mail](mailto:x@y.z)\n\n## 申請手続き\n\n「申請手続き」参照。詳細は2.3節と「無い節」を参照。\n",
    ),
    (
        "m/guide/b.md",
        "# B\n\n## Second part\n\nsee who decides, and [back](a.md).\n\n## Who decides\n\nx\n\n## 2.3 申請の手順\n\n[deep](c/#deep-id)\n",
    ),
    ("m/guide/c/_index.md", "# C\n\n## Deep {#deep-id}\n\n第2章を参照\n"),
    ("m/guide/02-chapter.md", "# Chapter two\n\n[page b](../guide/b.html)\n"),
    ("n/x.md", "# X\n\n[home](/x.md) [rules](https://example.org/guide/b.md)\n\n## Y\n\n「X」参照\n"),
];

/// Every reference and link text of `corpus` as text, link texts in key order.
fn graph_of(graph: &ReferenceGraph) -> String {
    let mut link_texts: Vec<_> = graph
        .link_texts()
        .map(|(key, label)| (key, label.text().to_owned(), label.loose().to_owned()))
        .collect();
    link_texts.sort();
    format!("{:?} {link_texts:?}", graph.references())
}

/// Checks `cache`'s graph for `index` against the one resolved from every file, and that
/// it resolved `resolved` manuals to get it; returns the corpus.
fn check(cache: &mut CorpusCache, index: &ManualIndex, resolved: usize, when: &str) -> Arc<Corpus> {
    let before = cache.manuals_resolved;
    let corpus = cache.sync(index);
    let eager = ReferenceGraph::resolve(&corpus.files, &testing::sources(index));
    assert!(!eager.references().is_empty());
    assert_eq!(graph_of(&corpus.references), graph_of(&eager), "{when}");
    assert_eq!(
        cache.manuals_resolved - before,
        resolved,
        "{when}: manuals resolved"
    );
    corpus
}

fn target(
    corpus: &Corpus,
    index: &ManualIndex,
    path: &str,
    line: u32,
    raw: u32,
) -> Option<NodeKey> {
    let from = testing::key(corpus, index, "m", path, line);
    corpus
        .references
        .outbound(from)
        .find(|reference| reference.raw == raw)
        .expect("the reference is in the graph")
        .to
}

#[test]
fn the_graph_from_kept_stored_and_resolved_manuals_equals_the_one_resolved_whole() {
    let (dir, mut index) = testing::index(FILES);
    let cache_dir = tempfile::tempdir().unwrap();
    let stored = || CorpusCache::new(Some(cache_dir.path().to_path_buf()), None);
    let mut server = stored();
    let corpus = check(&mut server, &index, 2, "first start: every manual");
    assert!(cache_dir.path().join("references.bin").is_file());
    assert_eq!(
        target(&corpus, &index, "guide/a.md", 1, 3),
        None,
        "new.md is not there yet"
    );
    check(&mut stored(), &index, 0, "a start over the stored graph");
    check(&mut CorpusCache::default(), &index, 2, "no cache folder");

    let b = dir.path().join("m/guide/b.md");
    let text = std::fs::read_to_string(&b).unwrap();
    std::fs::write(
        &b,
        text.replace("## Who decides", "## Who rules\n\n## Who decides"),
    )
    .unwrap();
    assert!(index.refresh().unwrap());
    check(&mut server, &index, 1, "a changed file: its manual only");
    check(&mut stored(), &index, 0, "a start after the change");

    std::fs::write(dir.path().join("m/guide/new.md"), "# New\n\nnew page\n").unwrap();
    assert!(index.refresh().unwrap());
    let corpus = check(&mut server, &index, 1, "an added file");
    let new = testing::key(&corpus, &index, "m", "guide/new.md", 1);
    assert_eq!(target(&corpus, &index, "guide/a.md", 1, 3), Some(new));
    check(&mut stored(), &index, 0, "a start after the addition");

    std::fs::remove_file(dir.path().join("m/guide/c/_index.md")).unwrap();
    assert!(index.refresh().unwrap());
    let corpus = check(&mut server, &index, 1, "a deleted target");
    assert_eq!(
        target(&corpus, &index, "guide/a.md", 1, 1),
        None,
        "/guide/c/ is gone"
    );
    check(&mut stored(), &index, 0, "a start after the deletion");

    std::fs::write(
        cache_dir.path().join("references.bin"),
        b"MVREFS\0\0damaged",
    )
    .unwrap();
    check(&mut stored(), &index, 2, "a damaged file is resolved again");
    index = ManualIndex::build(dir.path()).expect("index");
    check(
        &mut stored(),
        &index,
        0,
        "rewritten whole after the damaged one",
    );
}

/// Files that cannot be read (the manuals root moved away: no file's stamp changes) are
/// searched blank, and nothing made from them is kept: the next start over the same
/// cache folder reads them, indexes their sections and resolves their manuals again.
#[test]
fn nothing_derived_from_an_unreadable_file_is_kept() {
    let (dir, index) = testing::index(FILES);
    let cache_dir = tempfile::tempdir().unwrap();
    let foreground = || {
        let sections = crate::manual::find::index::SectionIndex::open(Some(cache_dir.path()));
        CorpusCache::with_sections(sections, cache_dir.path(), cache_dir.path())
    };
    let away = dir.path().with_extension("away");
    std::fs::rename(dir.path(), &away).unwrap();
    let blank = foreground().sync(&index);
    std::fs::rename(&away, dir.path()).unwrap();
    assert!(blank.files.iter().all(|file| file.outline.unread));
    assert!(blank.references.references().is_empty());
    assert_eq!(
        blank.unindexed.len(),
        blank.files.len(),
        "no section written"
    );
    let corpus = check(&mut foreground(), &index, 2, "the next start");
    assert!(corpus.files.iter().all(|file| !file.outline.unread));
    assert!(corpus.unindexed.is_empty(), "every section written now");
}
