use std::sync::atomic::Ordering;

use super::*;
use crate::embed::stub::StubEmbedder;
use crate::test_support::tree;

const GUIDE: &str = "# Guide\n\nIntro text.\n\n## Shutdown\n\nSwitch the machine off with poweroff.\n\n## Clipboard\n\nCopy and paste between terminals.\n";
const OTHER: &str = "# Other\n\nUnrelated words about quotas.\n";

struct Source(RwLock<ManualIndex>);

impl IndexSource for Source {
    fn with_index(&self, visit: &mut dyn FnMut(&ManualIndex)) {
        visit(&self.0.read().unwrap());
    }
}

fn settings(cache: Option<&std::path::Path>) -> SectionSettings {
    SectionSettings {
        passage: DEFAULT_PASSAGE,
        batch_size: 2,
        query_timeout: Duration::from_millis(300),
        cache_dir: cache.map(std::path::Path::to_path_buf),
        prefixes: "input_type".to_owned(),
    }
}

fn manuals() -> tempfile::TempDir {
    tree(&[
        ("m/guide.md", GUIDE),
        ("m/other.md", OTHER),
        ("n/guide.md", GUIDE),
    ])
}

fn vectors(stub: &Arc<StubEmbedder>, cache: Option<&std::path::Path>) -> SectionVectors {
    SectionVectors::new(Arc::clone(stub) as Arc<dyn Embedder>, settings(cache))
}

fn source(root: &tempfile::TempDir) -> Arc<Source> {
    Arc::new(Source(RwLock::new(
        ManualIndex::build(root.path()).unwrap(),
    )))
}

/// Whether the worker has seen `sections` sections and embedded them all.
fn settled(vectors: &SectionVectors, sections: usize) -> bool {
    let status = vectors.status();
    status.sections == sections && status.pending == 0
}

fn fill(vectors: &SectionVectors, index: &ManualIndex) -> FillProgress {
    vectors.fill(index, &mut |_| {}).expect("fill")
}

/// Polls until `done` holds (the worker runs on its own thread), failing after 10 s.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn fill_embeds_each_distinct_passage_once_and_a_restart_reuses_the_cache() {
    let root = manuals();
    let cache = tempfile::tempdir().unwrap();
    let index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    let mut seen = Vec::new();
    let done = vectors(&stub, Some(cache.path()))
        .fill(&index, &mut |progress| seen.push(progress))
        .unwrap();
    // 3 + 1 + 3 nodes, but n/guide.md repeats m/guide.md: 4 distinct passages.
    assert_eq!((done.sections, done.pending, done.embedded), (7, 0, 4));
    assert_eq!(
        stub.passages.load(Ordering::SeqCst),
        4 + 1,
        "4 passages and the probe"
    );
    assert_eq!(seen.last(), Some(&done));
    assert!(seen
        .windows(2)
        .all(|pair| pair[0].pending >= pair[1].pending));

    let again = Arc::new(StubEmbedder::default());
    let restarted = vectors(&again, Some(cache.path()));
    let done = fill(&restarted, &index);
    assert_eq!((done.pending, done.embedded), (0, 0));
    assert_eq!(again.passages.load(Ordering::SeqCst), 1, "only the probe");
    assert!(restarted.cache_file_bytes().unwrap() > 0);
}

/// `manvault index` computes the time left from the first report on: after a restart,
/// cached sections must never be reported as pending (they would look embedded at once).
#[test]
fn fill_after_a_restart_never_reports_cached_sections_as_pending() {
    let root = manuals();
    let cache = tempfile::tempdir().unwrap();
    let mut index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    fill(&vectors(&stub, Some(cache.path())), &index);
    std::fs::write(root.path().join("m/new.md"), "# New\n\nFresh words.\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(index.refresh().unwrap());
    let mut seen = Vec::new();
    let done = vectors(&stub, Some(cache.path()))
        .fill(&index, &mut |progress| seen.push(progress))
        .unwrap();
    assert_eq!((done.sections, done.embedded), (8, 1));
    assert!(
        seen.iter().all(|progress| progress.pending <= 1),
        "{seen:?}"
    );
}

#[test]
fn an_edited_section_alone_is_embedded_again() {
    let root = manuals();
    let mut index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    let vectors = vectors(&stub, None);
    fill(&vectors, &index);
    let before = stub.passages.load(Ordering::SeqCst);
    let edited = GUIDE.replace("poweroff", "shutdown -h now");
    std::fs::write(root.path().join("m/guide.md"), edited).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(index.refresh().unwrap());
    let done = fill(&vectors, &index);
    assert_eq!(done.embedded, 1);
    assert_eq!(stub.passages.load(Ordering::SeqCst), before + 1);
    assert_eq!(vectors.status().sections, 7);
}

#[test]
fn top_k_ranks_the_closest_sections_per_manual() {
    let root = manuals();
    let index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    let vectors = vectors(&stub, None);
    fill(&vectors, &index);
    let query = vectors
        .query_vector("Copy and paste between terminals")
        .unwrap();
    let hits = vectors.top_k(&query, &["m", "n"], 1);
    let places: Vec<(&str, &str, LineNo)> = hits
        .iter()
        .map(|hit| (&*hit.manual_id, &*hit.path, hit.line_start))
        .collect();
    assert_eq!(places, [("m", "guide.md", 9), ("n", "guide.md", 9)]);
    assert!(hits[0].score > 0.9 && (hits[0].score - hits[1].score).abs() < 1e-6);
    let all = vectors.top_k(&query, &["m"], 10);
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|pair| pair[0].score >= pair[1].score));
    assert!(vectors.top_k(&query, &["unknown"], 5).is_empty());
}

#[test]
fn a_provider_that_is_down_fails_fill_and_queries_without_waiting() {
    let root = manuals();
    let index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Rejected);
    let vectors = vectors(&stub, None);
    let error = vectors.fill(&index, &mut |_| {}).unwrap_err();
    assert!(error.message.contains("EMBEDDINGS_URL"));
    let status = vectors.status();
    assert_eq!((status.sections, status.pending), (7, 7));
    assert!(matches!(status.provider, ProviderState::Down(_)));
    let started = Instant::now();
    assert!(matches!(
        vectors.query_vector("anything").unwrap_err(),
        Unavailable::Provider(error) if error.kind == EmbedErrorKind::Rejected
    ));
    assert!(started.elapsed() < Duration::from_millis(100));
    // Once it answers, what was given back is embedded.
    *stub.down.lock().unwrap() = None;
    assert_eq!(fill(&vectors, &index).pending, 0);
    assert_eq!(vectors.status().provider, ProviderState::Ready);
}

#[test]
fn a_query_that_times_out_pauses_query_embedding() {
    let root = manuals();
    let index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    let vectors = vectors(&stub, None);
    fill(&vectors, &index);
    stub.delay_ms.store(2_000, Ordering::SeqCst);
    let started = Instant::now();
    let error = vectors.query_vector("slow").unwrap_err();
    assert!(matches!(error, Unavailable::Provider(ref e) if e.kind == EmbedErrorKind::Timeout));
    assert!(started.elapsed() < Duration::from_millis(1_000));
    let calls = stub.calls.load(Ordering::SeqCst);
    assert_eq!(
        vectors.query_vector("slow").unwrap_err(),
        Unavailable::Paused
    );
    assert_eq!(
        stub.calls.load(Ordering::SeqCst),
        calls,
        "no call while paused"
    );
}

#[test]
fn the_worker_fills_in_the_background_and_readers_never_wait() {
    let root = manuals();
    let source = source(&root);
    let stub = Arc::new(StubEmbedder::default());
    stub.delay_ms.store(150, Ordering::SeqCst);
    let vectors = vectors(&stub, None);
    vectors.start(Arc::clone(&source) as Arc<dyn IndexSource>);
    eventually("some but not all sections embedded", || {
        let status = vectors.status();
        status.sections == 7 && status.pending > 0 && status.pending < 7
    });
    // Partial: ranking uses what is there, and answers while a batch is in flight.
    let started = Instant::now();
    let query = QueryVector {
        vector: Quantized::new(&crate::embed::stub::stub_vector("Switch the machine off")),
    };
    let partial = vectors.top_k(&query, &["m", "n"], 10);
    assert!(started.elapsed() < Duration::from_millis(100));
    assert!(partial.len() < 7);
    eventually("everything embedded", || vectors.pending() == 0);
    assert_eq!(vectors.top_k(&query, &["m", "n"], 10).len(), 7);

    // A new file is picked up after a nudge.
    std::fs::write(root.path().join("n/new.md"), "# New\n\nFresh words.\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(source.0.write().unwrap().refresh().unwrap());
    vectors.nudge();
    eventually("the new file embedded", || settled(&vectors, 8));
}

/// A server starting with a full cache learns the vector space before it has read the
/// manuals; the cache must survive that moment (compaction keeps only keys in use, and
/// none is known yet).
#[test]
fn a_worker_that_has_not_seen_the_manuals_yet_keeps_the_cache() {
    struct NoIndexYet;
    impl IndexSource for NoIndexYet {
        fn with_index(&self, _visit: &mut dyn FnMut(&ManualIndex)) {}
    }
    // More records than compaction tolerates as slack.
    let text: String = (0..1100)
        .map(|n| format!("# Section {n}\n\nBody {n}.\n\n"))
        .collect();
    let root = tree(&[("m/big.md", &text)]);
    let cache = tempfile::tempdir().unwrap();
    let index = ManualIndex::build(root.path()).unwrap();
    let stub = Arc::new(StubEmbedder::default());
    let filled = vectors(&stub, Some(cache.path()));
    assert_eq!(fill(&filled, &index).embedded, 1100);
    let bytes = filled.cache_file_bytes().unwrap();
    let restarted = vectors(&stub, Some(cache.path()));
    restarted.start(Arc::new(NoIndexYet));
    eventually("the space learnt", || {
        restarted.status().provider == ProviderState::Ready
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(restarted.cache_file_bytes(), Some(bytes));
}

#[test]
fn the_worker_waits_out_a_provider_that_is_down_and_resumes() {
    let root = manuals();
    let source = source(&root);
    let stub = Arc::new(StubEmbedder::default());
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Unreachable);
    let vectors = vectors(&stub, None);
    vectors.start(source);
    eventually("the provider reported down", || {
        matches!(vectors.status().provider, ProviderState::Down(_))
    });
    assert_eq!(vectors.pending(), 7);
    *stub.down.lock().unwrap() = None;
    eventually("filled after the back-off", || vectors.pending() == 0);
}

#[test]
fn another_model_means_every_section_is_embedded_again() {
    let root = manuals();
    let source = source(&root);
    let stub = Arc::new(StubEmbedder::default());
    let vectors = vectors(&stub, None);
    vectors.start(source);
    eventually("filled", || settled(&vectors, 7));
    let before = stub.passages.load(Ordering::SeqCst);
    *stub.model.lock().unwrap() = "stub-2".to_owned();
    assert_eq!(
        vectors.query_vector("x").unwrap_err(),
        Unavailable::ModelChanged
    );
    eventually("filled again under the new model", || {
        vectors.query_vector("x").is_ok() && vectors.pending() == 0
    });
    assert!(stub.passages.load(Ordering::SeqCst) >= before + 4);
}

#[test]
fn passages_are_the_heading_and_the_start_of_the_plain_body() {
    let text = "# Top\n\n## Links\n\n> **CAUTION** see [the `guide`](guide.md#top) and ![x](i.png)\n\n- item *one* | cell\n\n```sh\nls -l\n```\n\nSetext\n------\n\nLast <br/> line.\n";
    let root = tree(&[("m/a.md", text), ("m/data.json", "{\"key\": [1, 2]}")]);
    let index = ManualIndex::build(root.path()).unwrap();
    let file = index.file("m", "a.md").unwrap();
    let shape = PassageShape {
        body_chars: 1000,
        ancestors: false,
    };
    let passage = |file: &ManualFile, at: usize, shape: PassageShape| {
        passage(file, &file.read_text().expect("unchanged"), at, shape)
    };
    assert_eq!(passage(file, 0, shape), "Top");
    assert_eq!(
        passage(file, 1, shape),
        "Links\nCAUTION see the guide and x item one cell ls -l"
    );
    assert_eq!(
        passage(
            file,
            1,
            PassageShape {
                body_chars: 11,
                ancestors: true
            }
        ),
        "Top > Links\nCAUTION see"
    );
    assert_eq!(passage(file, 2, shape), "Setext\nLast line.");
    let json = index.file("m", "data.json").unwrap();
    assert_eq!(passage(json, 0, shape), "data.json\n{\"key\": 1, 2}");
    assert_eq!(
        passage(
            file,
            1,
            PassageShape {
                body_chars: 0,
                ancestors: false
            }
        ),
        "Links"
    );
}

#[test]
fn a_file_changed_under_the_index_has_no_passages_until_the_refresh() {
    let root = tree(&[("m/a.md", "# Top\n\nalpha\n")]);
    let mut index = ManualIndex::build(root.path()).unwrap();
    std::fs::write(root.path().join("m/a.md"), "# Top\n\nomega\n").unwrap();
    let shape = PassageShape {
        body_chars: 1000,
        ancestors: false,
    };
    let file = index.file("m", "a.md").unwrap();
    let mut store = VectorStore::default();
    assert!(derive_sections(file, shape, &mut store).is_empty());
    assert_eq!(passage_at(file, 1, shape), None);
    assert!(index.refresh().unwrap());
    let file = index.file("m", "a.md").unwrap();
    assert_eq!(derive_sections(file, shape, &mut store).len(), 1);
    assert_eq!(passage_at(file, 1, shape).as_deref(), Some("Top\nomega"));
}
