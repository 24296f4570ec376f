use super::literal::IndexPattern;
use super::*;
use crate::manual::find::corpus::{Corpus, CorpusCache};
use crate::manual::find::derived::NodeKey;
use crate::manual::find::testing::index;
use crate::manual::ManualIndex;
use crate::text::normalize::normalize_str;
use crate::text::units::{units, UnitKind};

const FILES: &[(&str, &str)] = &[
    (
        "m/logs.md",
        "# Logs\n\nThe syslog daemon and logrotate.\n\n## Rotation\n\nLogs are rotated weekly; rotation keeps 4.\n",
    ),
    (
        "m/money.md",
        "# 経費\n\n請求・書は月末まで。\n\n## 別\n\n請求\n書を出す。zipリクエストも。\n",
    ),
];

/// The sections (file path, node) holding `text` as a literal, with how often.
fn literal(corpus: &Corpus, text: &str) -> Vec<(String, u32, u32)> {
    let view = &corpus.sections;
    let pattern = IndexPattern::literal(&normalize_str(text), &view.fields, view.vocabulary());
    shown(corpus, pattern)
}

fn unit(corpus: &Corpus, text: &str, kind: UnitKind) -> Vec<(String, u32, u32)> {
    let unit = units(&normalize_str(text))
        .into_iter()
        .find(|unit| unit.kind == kind)
        .expect("the text has such a unit");
    shown(corpus, IndexPattern::unit(&unit, &corpus.sections.fields))
}

fn shown(corpus: &Corpus, pattern: IndexPattern) -> Vec<(String, u32, u32)> {
    let view = &corpus.sections;
    let mut found: Vec<(String, u32, u32)> = Vec::new();
    let mut add = |key: NodeKey, count| {
        let path = corpus.files[key.file as usize].path.to_string();
        found.push((path, key.node, count));
    };
    pattern
        .sections(&view.searcher, &view.keys, &|_| true, &mut add)
        .expect("readable");
    found.sort();
    found
}

fn at(path: &str, node: u32, count: u32) -> (String, u32, u32) {
    (path.to_owned(), node, count)
}

#[test]
fn latin_literals_are_found_inside_longer_words_as_the_scan_finds_them() {
    let (_dir, index) = index(FILES);
    let corpus = CorpusCache::default().sync(&index);
    assert_eq!(
        literal(&corpus, "log"),
        [at("logs.md", 0, 3), at("logs.md", 1, 1)]
    );
    assert_eq!(
        literal(&corpus, "rotate"),
        [at("logs.md", 0, 1), at("logs.md", 1, 1)]
    );
    assert_eq!(literal(&corpus, "syslog daemon"), [at("logs.md", 0, 1)]);
    assert_eq!(
        literal(&corpus, "log daemon"),
        [at("logs.md", 0, 1)],
        "sys|log"
    );
    assert_eq!(
        literal(&corpus, "daemon and log"),
        [at("logs.md", 0, 1)],
        "log|rotate"
    );
    assert!(
        literal(&corpus, "daemon logrotate").is_empty(),
        "and is between"
    );
    assert!(literal(&corpus, "zeppelin").is_empty());
}

#[test]
fn japanese_literals_are_found_loosely_across_separators_and_lines() {
    let (_dir, index) = index(FILES);
    let corpus = CorpusCache::default().sync(&index);
    assert_eq!(
        literal(&corpus, "請求書"),
        [at("money.md", 0, 1), at("money.md", 1, 1)]
    );
    assert_eq!(literal(&corpus, "zipリクエスト"), [at("money.md", 1, 1)]);
    assert_eq!(literal(&corpus, "リクエスト"), [at("money.md", 1, 1)]);
    assert!(literal(&corpus, "請求額").is_empty());
    let view = &corpus.sections;
    assert!(matches!(
        IndexPattern::literal("、。!", &view.fields, view.vocabulary()),
        IndexPattern::Inexpressible
    ));
}

#[test]
fn units_are_found_exactly_where_the_scan_finds_them() {
    let (_dir, index) = index(FILES);
    let corpus = CorpusCache::default().sync(&index);
    assert_eq!(
        unit(&corpus, "rotating", UnitKind::Word),
        [at("logs.md", 1, 3)],
        "rotation twice and rotated, not logrotate"
    );
    assert_eq!(
        unit(&corpus, "請求", UnitKind::KanjiRun),
        [at("money.md", 0, 1), at("money.md", 1, 1)]
    );
    assert_eq!(
        unit(&corpus, "リクエスト", UnitKind::Kana),
        [at("money.md", 1, 1)]
    );
}

/// The corpus of a server's cache once its background update has landed.
fn synced(cache: &mut CorpusCache, index: &ManualIndex) -> Arc<Corpus> {
    cache.sync(index);
    cache.wait_for_sections();
    cache.sync(index)
}

#[test]
fn an_index_on_disk_is_reopened_and_an_index_of_another_format_rebuilt() {
    let (_dir, index) = index(FILES);
    let cache = tempfile::tempdir().unwrap();
    let mut first = CorpusCache::new(Some(cache.path().to_path_buf()), None);
    let corpus = synced(&mut first, &index);
    assert!(corpus.unindexed.is_empty());
    assert_eq!(first.last_update().files, 2);
    drop(first);
    let mut again = CorpusCache::new(Some(cache.path().to_path_buf()), None);
    let corpus = synced(&mut again, &index);
    assert_eq!(again.last_update().files, 0, "nothing to index again");
    assert_eq!(literal(&corpus, "syslog"), [at("logs.md", 0, 1)]);
    drop(again);
    // An index of another layout in the folder is replaced, not read.
    let folder = cache.path().join(FOLDER);
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    let mut other = Schema::builder();
    other.add_text_field("other", tantivy::schema::STRING);
    Index::create_in_dir(&folder, other.build()).unwrap();
    let mut rebuilt = CorpusCache::new(Some(cache.path().to_path_buf()), None);
    let corpus = synced(&mut rebuilt, &index);
    assert_eq!(rebuilt.last_update().files, 2);
    assert_eq!(literal(&corpus, "syslog"), [at("logs.md", 0, 1)]);
}

#[test]
fn an_edited_file_replaces_its_sections_and_a_deleted_one_leaves() {
    let (dir, mut index) = index(FILES);
    let mut cache = CorpusCache::default();
    cache.sync(&index);
    std::fs::write(dir.path().join("m/logs.md"), "# Logs\n\nJournald only.\n").unwrap();
    std::fs::remove_file(dir.path().join("m/money.md")).unwrap();
    assert!(index.refresh().unwrap());
    let corpus = cache.sync(&index);
    assert_eq!(cache.last_update().files, 1);
    assert!(literal(&corpus, "syslog").is_empty());
    assert_eq!(literal(&corpus, "journald"), [at("logs.md", 0, 1)]);
    assert!(literal(&corpus, "請求書").is_empty());
    assert_eq!(cache.sections().unwrap().indexed_files().count(), 1);
}

#[test]
fn a_file_edited_while_a_background_build_runs_is_scanned_then_indexed_in_its_new_version() {
    let (dir, mut index) = index(FILES);
    let mut cache = CorpusCache::new(None, None);
    let release = cache.hold_next_update();
    let corpus = cache.sync(&index);
    assert_eq!(
        corpus.unindexed,
        [0, 1],
        "nothing is indexed before the build lands"
    );
    assert!(literal(&corpus, "syslog").is_empty());

    std::fs::write(dir.path().join("m/logs.md"), "# Logs\n\nJournald only.\n").unwrap();
    assert!(index.refresh().unwrap());
    let corpus = cache.sync(&index);
    assert_eq!(
        corpus.unindexed,
        [0, 1],
        "the build has the index: scan all"
    );

    drop(release);
    cache.wait_for_sections();
    let corpus = cache.sync(&index);
    assert_eq!(
        corpus.unindexed,
        [0],
        "the build wrote the old logs.md: it is scanned, and indexed again"
    );
    assert_eq!(
        literal(&corpus, "請求書"),
        [at("money.md", 0, 1), at("money.md", 1, 1)]
    );

    let corpus = synced(&mut cache, &index);
    assert!(corpus.unindexed.is_empty());
    assert!(literal(&corpus, "syslog").is_empty());
    assert_eq!(literal(&corpus, "journald"), [at("logs.md", 0, 1)]);
}

#[test]
fn an_index_of_an_older_format_version_is_rebuilt_with_the_stored_outlines() {
    let (_dir, index) = index(FILES);
    let cache = tempfile::tempdir().unwrap();
    synced(
        &mut CorpusCache::new(Some(cache.path().to_path_buf()), None),
        &index,
    );
    // The same documents committed as an older version: before the stored outlines, an
    // index held no outline, so reading one would derive every file at each start.
    let folder = cache.path().join(FOLDER);
    let old = Index::open_in_dir(&folder).unwrap();
    let mut writer: IndexWriter<TantivyDocument> =
        old.writer_with_num_threads(1, 15 << 20).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload(&format!(
        "manvault sections format {} tokens {INDEX_TOKENS_VERSION}",
        FORMAT_VERSION - 1
    ));
    prepared.commit().unwrap();
    drop((writer, old));

    let mut rebuilt = CorpusCache::new(Some(cache.path().to_path_buf()), None);
    let corpus = synced(&mut rebuilt, &index);
    assert_eq!(rebuilt.last_update().files, 2, "rebuilt");
    assert_eq!(literal(&corpus, "syslog"), [at("logs.md", 0, 1)]);
    let sections = rebuilt.sections().expect("landed");
    let wanted: HashSet<u64> = sections.indexed_files().collect();
    assert_eq!(sections.stored_outlines(&wanted).unwrap().len(), 2);
}
