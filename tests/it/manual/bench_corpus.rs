//! Smoke test on the shared benchmark corpus (8.8 MB of Japanese Markdown) at
//! `../shared/bench/manuals` beside the repository. Skipped, with a loud notice, when that
//! folder is absent, so the suite still runs anywhere.

use std::path::Path;
use std::time::Instant;

use manvault::manual::{manual_excepts, ExceptsRequest, ManualIndex};

#[test]
fn bench_corpus_sections_match_the_source() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/manuals");
    if !corpus.is_dir() {
        eprintln!(
            "SKIPPED bench_corpus_sections_match_the_source: ../shared/bench/manuals is absent"
        );
        return;
    }
    let started = Instant::now();
    let mut index = ManualIndex::build(&corpus).expect("corpus indexes");
    let built = started.elapsed();
    let started = Instant::now();
    assert!(!index.refresh().unwrap(), "the corpus is read-only");
    eprintln!("no-op refresh in {:?}", started.elapsed());
    let files = index.files(None).unwrap();
    let nodes: usize = files.iter().map(|listed| listed.file.nodes().len()).sum();
    eprintln!("indexed {} files, {nodes} nodes in {built:?}", files.len());
    assert!(files.iter().all(|listed| listed.file.problem().is_none()));

    let path = "handbook/finance/accounting/_index.md";
    let node = index
        .node_at("handbook-ja", path, 610)
        .unwrap()
        .expect("a node holds line 610");
    assert_eq!(node.title, "固定資産台帳と資産追跡");
    assert_eq!(
        node.anchor.as_deref(),
        Some("fixed-asset-register-and-asset-tracking")
    );
    assert_eq!((node.line_start, node.line_end), (605, 618));

    let started = Instant::now();
    let request = ExceptsRequest {
        manual_id: "handbook-ja",
        node_id: None,
        offset: 0,
        limit: None,
    };
    let excepts = manual_excepts(&index, &request).unwrap();
    eprintln!(
        "{} exception lines in {:?}",
        excepts.total,
        started.elapsed()
    );
    assert!(excepts.total > 0);
}
