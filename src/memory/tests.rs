//! The invariants of the reference implementation (its TLA+/Alloy models and property
//! tests, `pce_memory_reference.md` §2) as properties of this implementation: scores in
//! [0, 1], nothing outside the requested scopes or reachable classes and secret never,
//! the boundary applied before top_k, pages that never repeat and cover the ranking, one
//! claim from concurrent upserts of one text, no lost feedback, expired contexts gone.
//! Each case runs on a fresh database in a temporary folder; time is a parameter.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::config::{Config, RootFlags};
use crate::contract::types::{
    MemoryBoundaryClass, MemoryKind, MemoryProvenance, PceMemoryFeedbackInputSignal,
};
use crate::embed::provider::ProviderState;
use crate::embed::stub::StubEmbedder;
use crate::embed::EmbedErrorKind;
use crate::error::ErrorCode;
use vector::VectorSettings;

/// 2026-11-20T00:00:00Z
const NOW: i64 = 1_795_132_800_000;
const POLICY: &str = include_str!("../../examples/workspace/memory-policy.yaml");

fn config(folder: &Path) -> Config {
    let workspace = folder.display().to_string();
    Config::load(
        &|name| (name == "WORKSPACE_ROOT").then(|| workspace.clone()),
        &RootFlags::default(),
    )
    .unwrap()
}

/// A memory on a fresh workspace under the example policy.
fn open(folder: &Path) -> Memory {
    std::fs::write(folder.join("memory-policy.yaml"), POLICY).unwrap();
    std::fs::create_dir_all(folder.join("vault")).unwrap();
    let config = config(folder);
    Memory::open(
        &config.memory,
        Provider::builtin(),
        &config.vault_root,
        20_000,
    )
    .unwrap()
}

fn provenance() -> MemoryProvenance {
    serde_json::from_value(serde_json::json!({ "at": "2026-11-19T00:00:00Z" })).unwrap()
}

/// An upsert of a fact with no graph, evidence or hash.
fn request<'a>(
    text: &'a str,
    scope: MemoryScope,
    class: MemoryBoundaryClass,
    provenance: &'a MemoryProvenance,
) -> UpsertRequest<'a> {
    UpsertRequest {
        text,
        kind: MemoryKind::Fact,
        scope,
        class,
        provenance,
        entities: &[],
        relations: &[],
        evidence: &[],
        content_hash: None,
    }
}

fn upsert(
    memory: &Memory,
    text: &str,
    scope: MemoryScope,
    class: MemoryBoundaryClass,
    now_ms: i64,
) -> ToolResult<String> {
    let provenance = provenance();
    memory
        .upsert(
            &mut Call::new("test", now_ms),
            request(text, scope, class, &provenance),
        )
        .map(|outcome| outcome.id)
}

/// Stores each text as a project claim of `class`, now.
fn upsert_project(
    memory: &Memory,
    texts: impl IntoIterator<Item = String>,
    class: MemoryBoundaryClass,
) {
    for text in texts {
        upsert(memory, &text, MemoryScope::Project, class, NOW).unwrap();
    }
}

fn ask<'a>(
    query: &'a str,
    scopes: &'a [MemoryScope],
    allow: &'a [String],
    top_k: usize,
    cursor: Option<&'a str>,
    keep_context: bool,
) -> RecallRequest<'a> {
    RecallRequest {
        query,
        scopes: Some(scopes),
        allow,
        page_size: Some(top_k),
        cursor,
        keep_context,
        include_meta: false,
    }
}

fn recall(memory: &Memory, request: RecallRequest, now_ms: i64) -> ToolResult<Page> {
    memory.recall(&mut Call::new("test", now_ms), request)
}

const WORDS: [&str; 8] = [
    "解約", "webhook", "規約", "invoice", "返金", "retry", "命名", "deploy",
];
const SCOPES: [MemoryScope; 3] = [
    MemoryScope::Session,
    MemoryScope::Project,
    MemoryScope::Principle,
];
const CLASSES: [MemoryBoundaryClass; 3] = [
    MemoryBoundaryClass::Public,
    MemoryBoundaryClass::Internal,
    MemoryBoundaryClass::Pii,
];

/// A claim of two to four vocabulary words, a scope and a class.
fn claims() -> impl Strategy<Value = Vec<(Vec<usize>, usize, usize)>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(0..WORDS.len(), 2..5),
            0..3usize,
            0..3usize,
        ),
        4..30,
    )
}

fn text_of(words: &[usize], n: usize) -> String {
    let mut text: Vec<&str> = words.iter().map(|w| WORDS[*w]).collect();
    text.push(["の件", "について", "を確認"][n % 3]);
    format!("{} #{n}", text.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn rankings_respect_scope_and_boundary_before_top_k(
        claims in claims(),
        query in 0..WORDS.len(),
        scope_mask in 1..8usize,
        tags in prop_oneof![Just(vec![]), Just(vec!["answer:task".to_string()]), Just(vec!["tool:contact-lookup".to_string()])],
        top_k in 1..6usize,
        keep in any::<bool>(),
    ) {
        let folder = tempfile::tempdir().unwrap();
        let memory = open(folder.path());
        for (n, (words, scope, class)) in claims.iter().enumerate() {
            upsert(&memory, &text_of(words, n), SCOPES[*scope], CLASSES[*class], NOW).unwrap();
        }
        // A secret row written behind the tools' back must still never come out.
        memory.store.write(|t| {
            t.execute("INSERT INTO claims (id, content_hash, text, kind, scope, boundary_class, created_ms, updated_ms, recency_anchor_ms, provenance, actor) \
                       VALUES ('clm_secret', 'sha256:x', ?1, 'fact', 'project', 'secret', ?2, ?2, ?2, '{}', 'test')", rusqlite::params![WORDS[query], NOW]).map_err(store::internal)?;
            let seq = t.last_insert_rowid();
            t.execute("INSERT INTO claim_units (rowid, units) VALUES (?1, ?2)", rusqlite::params![seq, units::document(WORDS[query])]).map_err(store::internal)?;
            Ok(())
        }).unwrap();
        let scopes: Vec<MemoryScope> = (0..3).filter(|i| scope_mask & (1 << i) != 0).map(|i| SCOPES[i]).collect();
        let policy = memory.policy().unwrap();
        let reachable = policy.boundary.reachable(&tags);
        let page = recall(&memory, ask(WORDS[query], &scopes, &tags, top_k, None, keep), NOW).unwrap();
        let eligible = claims.iter().filter(|(words, scope, class)| {
            words.contains(&query) && scopes.contains(&SCOPES[*scope]) && reachable.contains(&CLASSES[*class])
        }).count();
        // Boundary and scope before top_k: the page is full whenever enough allowed claims match.
        prop_assert!(page.items.len() >= top_k.min(eligible), "{} items, {} eligible", page.items.len(), eligible);
        let mut previous = f64::INFINITY;
        for item in &page.items {
            prop_assert!(scopes.contains(&item.claim.scope));
            prop_assert!(reachable.contains(&item.claim.class));
            prop_assert!(item.claim.class != MemoryBoundaryClass::Secret);
            prop_assert!((0.0..=1.0).contains(&item.score));
            for part in [item.scores.text, item.scores.vector, item.scores.combined, item.scores.utility,
                         item.scores.confidence, item.scores.quality, item.scores.recency, item.scores.g] {
                prop_assert!((0.0..=1.0).contains(&part));
            }
            prop_assert!(item.score <= previous);
            previous = item.score;
        }
    }

    #[test]
    fn pages_never_repeat_and_cover_the_ranking(claims in claims(), query in 0..WORDS.len(), top_k in 1..5usize, keep in any::<bool>()) {
        let folder = tempfile::tempdir().unwrap();
        let memory = open(folder.path());
        for (n, (words, scope, class)) in claims.iter().enumerate() {
            upsert(&memory, &text_of(words, n), SCOPES[*scope], CLASSES[*class], NOW).unwrap();
        }
        let tags = vec!["tool:contact-lookup".to_string()];
        let whole = recall(&memory, ask(WORDS[query], &SCOPES, &tags, 50, None, keep), NOW).unwrap();
        prop_assert!(whole.next_cursor.is_none());
        let expected: Vec<String> = whole.items.iter().map(|item| item.claim.id.clone()).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = recall(&memory, ask(WORDS[query], &SCOPES, &tags, top_k, cursor.as_deref(), keep), NOW).unwrap();
            prop_assert!(page.items.len() <= top_k);
            seen.extend(page.items.iter().map(|item| item.claim.id.clone()));
            prop_assert_eq!(page.total, expected.len());
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        prop_assert_eq!(seen, expected);
    }
}

#[test]
fn an_expired_context_is_gone_and_deleted() {
    let folder = tempfile::tempdir().unwrap();
    let memory = open(folder.path());
    upsert_project(
        &memory,
        (0..3).map(|n| format!("webhook retry rule {n}")),
        MemoryBoundaryClass::Internal,
    );
    let tags = vec!["answer:task".to_string()];
    let page = recall(
        &memory,
        ask("webhook", &[MemoryScope::Project], &tags, 1, None, true),
        NOW,
    )
    .unwrap();
    let context = page.context.unwrap();
    assert_eq!(
        context.expires_ms,
        NOW + 3_600_000,
        "MEMORY_CONTEXT_MAX_TTL_SEC caps the project TTL"
    );
    let cursor = page.next_cursor.unwrap();
    let later = recall(
        &memory,
        ask(
            "webhook",
            &[MemoryScope::Project],
            &tags,
            1,
            Some(&cursor),
            true,
        ),
        NOW + 1000,
    )
    .unwrap();
    assert_eq!(later.items.len(), 1);
    let error = recall(
        &memory,
        ask(
            "webhook",
            &[MemoryScope::Project],
            &tags,
            1,
            Some(&cursor),
            true,
        ),
        context.expires_ms,
    )
    .err()
    .unwrap();
    assert_eq!(error.code, ErrorCode::Memory(MemoryCode::Gone));
    recall(
        &memory,
        ask("retry", &[MemoryScope::Project], &tags, 1, None, true),
        context.expires_ms,
    )
    .unwrap();
    let items: i64 = memory
        .store
        .read(|c| {
            c.query_row(
                "SELECT count(*) FROM active_context_items WHERE context_id = ?1",
                [&context.id],
                |r| r.get(0),
            )
            .map_err(store::internal)
        })
        .unwrap();
    assert_eq!(items, 0, "an expired context holds no claims");
}

#[test]
fn claims_past_their_scope_ttl_are_not_recalled() {
    let folder = tempfile::tempdir().unwrap();
    let memory = open(folder.path());
    upsert(
        &memory,
        "session note about webhook",
        MemoryScope::Session,
        MemoryBoundaryClass::Internal,
        NOW,
    )
    .unwrap();
    let tags = vec!["answer:task".to_string()];
    let fresh = recall(
        &memory,
        ask("webhook", &[MemoryScope::Session], &tags, 5, None, false),
        NOW + 86_400_000,
    )
    .unwrap();
    assert_eq!(fresh.items.len(), 1);
    let stale = recall(
        &memory,
        ask("webhook", &[MemoryScope::Session], &tags, 5, None, false),
        NOW + 8 * 86_400_000,
    )
    .unwrap();
    assert!(
        stale.items.is_empty(),
        "the example policy gives session claims 7 days"
    );
}

/// Two servers (two connections) with ten threads each upsert one text at once.
#[test]
fn twenty_concurrent_upserts_of_one_text_give_one_claim() {
    let folder = tempfile::tempdir().unwrap();
    let servers = [Arc::new(open(folder.path())), Arc::new(open(folder.path()))];
    let handles: Vec<_> = (0..20)
        .map(|n| {
            let memory = servers[n % 2].clone();
            std::thread::spawn(move || {
                let provenance = provenance();
                let request = request(
                    "  同じ主張は一度だけ保存される ",
                    MemoryScope::Project,
                    MemoryBoundaryClass::Internal,
                    &provenance,
                );
                memory.upsert(&mut Call::new("test", NOW), request).unwrap()
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|o| o.is_new).count(), 1);
    assert!(outcomes.iter().all(|o| o.id == outcomes[0].id));
    let (claims, units_rows, project): (i64, i64, i64) = servers[0]
        .store
        .read(|c| {
            c.query_row(
                "SELECT (SELECT count(*) FROM claims), (SELECT count(*) FROM claim_units), (SELECT claims FROM scope_utility WHERE scope = 'project')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(store::internal)
        })
        .unwrap();
    assert_eq!((claims, units_rows, project), (1, 1, 1));
}

/// Two servers with ten threads each rate one claim, each in its own time bucket.
#[test]
fn concurrent_feedback_loses_no_update() {
    let folder = tempfile::tempdir().unwrap();
    let servers = [Arc::new(open(folder.path())), Arc::new(open(folder.path()))];
    let id = upsert(
        &servers[0],
        "rated by many",
        MemoryScope::Project,
        MemoryBoundaryClass::Internal,
        NOW,
    )
    .unwrap();
    let handles: Vec<_> = (0..20)
        .map(|n| {
            let memory = servers[n % 2].clone();
            let id = id.clone();
            std::thread::spawn(move || {
                let now = NOW + n as i64 * 60_000;
                memory
                    .feedback(
                        &mut Call::new("test", now),
                        &id,
                        PceMemoryFeedbackInputSignal::Helpful,
                        1.0,
                    )
                    .unwrap()
                    .0
            })
        })
        .collect();
    for handle in handles {
        assert!(handle.join().unwrap().applied);
    }
    let (utility, confidence, helpful, sum): (f64, f64, i64, f64) = servers[1]
        .store
        .read(|c| {
            c.query_row(
                "SELECT utility, confidence, helpful, (SELECT sum FROM scope_utility WHERE scope = 'project') FROM claims",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .map_err(store::internal)
        })
        .unwrap();
    assert_eq!(helpful, 20);
    assert!((utility - 2.0).abs() < 1e-9, "{utility}");
    assert!(
        (confidence - 1.0).abs() < 1e-9,
        "0.5 + 20 x 0.05, clamped: {confidence}"
    );
    assert!(
        (sum - utility).abs() < 1e-9,
        "the scope's utility sum follows"
    );
    // A repeat in the same bucket is recorded once.
    let again = servers[0]
        .feedback(
            &mut Call::new("test", NOW),
            &id,
            PceMemoryFeedbackInputSignal::Helpful,
            1.0,
        )
        .unwrap()
        .0;
    assert!(!again.applied);
}

#[test]
fn feedback_changes_the_ranking() {
    let folder = tempfile::tempdir().unwrap();
    let memory = open(folder.path());
    let first = upsert(
        &memory,
        "webhook signature check A",
        MemoryScope::Project,
        MemoryBoundaryClass::Internal,
        NOW,
    )
    .unwrap();
    let second = upsert(
        &memory,
        "webhook signature check B",
        MemoryScope::Project,
        MemoryBoundaryClass::Internal,
        NOW + 1,
    )
    .unwrap();
    let tags = vec!["answer:task".to_string()];
    let order = |now| -> Vec<String> {
        recall(
            &memory,
            ask(
                "webhook signature",
                &[MemoryScope::Project],
                &tags,
                5,
                None,
                false,
            ),
            now,
        )
        .unwrap()
        .items
        .into_iter()
        .map(|item| item.claim.id)
        .collect()
    };
    assert_eq!(
        order(NOW + 2),
        vec![second.clone(), first.clone()],
        "ties: newest first"
    );
    memory
        .feedback(
            &mut Call::new("test", NOW + 2),
            &second,
            PceMemoryFeedbackInputSignal::Harmful,
            1.0,
        )
        .unwrap();
    assert_eq!(order(NOW + 3), vec![first, second]);
}

#[test]
fn request_ids_are_unique() {
    let ids: std::collections::HashSet<String> = (0..10_000)
        .map(|_| Call::new("a", NOW).request_id)
        .collect();
    assert_eq!(ids.len(), 10_000);
}

#[test]
fn the_audit_log_has_no_text() {
    let folder = tempfile::tempdir().unwrap();
    let memory = open(folder.path());
    let mut call = Call::new("auditor-test", NOW);
    let provenance = provenance();
    let request = request(
        "Contact hanako@example.com about the secret merger",
        MemoryScope::Project,
        MemoryBoundaryClass::Pii,
        &provenance,
    );
    memory.upsert(&mut call, request).unwrap();
    memory.finish(&call, "pce_memory_upsert", None);
    let tags = vec!["tool:contact-lookup".to_string()];
    let mut call = Call::new("auditor-test", NOW);
    let page = memory
        .recall(
            &mut call,
            RecallRequest {
                query: "merger",
                scopes: None,
                allow: &tags,
                page_size: None,
                cursor: None,
                keep_context: true,
                include_meta: true,
            },
        )
        .unwrap();
    assert!(page.items[0].claim.text.contains("[REDACTED:email]"));
    memory.finish(&call, "pce_memory_activate", None);
    let log =
        std::fs::read_to_string(folder.path().join("vault/.system/memory_audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["decision"], "store");
    assert_eq!(lines[1]["redacted_count"], 1);
    assert_eq!(lines[1]["actor"], "auditor-test");
    assert!(lines[1]["content_hashes"][0]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    for word in ["hanako", "merger", "Contact"] {
        assert!(!log.contains(word), "the audit log holds {word}");
    }
}

/// Text candidates are cut at k_txt only after filtering: twenty unreachable claims that
/// match better cannot take the two places.
#[test]
fn the_text_candidate_cut_comes_after_the_boundary() {
    let folder = tempfile::tempdir().unwrap();
    let memory = open(folder.path());
    let narrow = POLICY
        .replace("k_txt: 48", "k_txt: 2")
        .replace("k_vec: 96", "k_vec: 0");
    let mut call = Call::new("test", NOW);
    let request = ApplyRequest {
        yaml: &narrow,
        dry_run: false,
        validate_only: false,
        expected_version: None,
        signature: None,
        approver: None,
    };
    memory.apply_policy(&mut call, request).unwrap();
    upsert_project(
        &memory,
        (0..20).map(|n| format!("webhook webhook webhook {n}")),
        MemoryBoundaryClass::Pii,
    );
    upsert_project(
        &memory,
        (0..3).map(|n| format!("webhook and many other words that dilute the match {n}")),
        MemoryBoundaryClass::Internal,
    );
    let tags = vec!["answer:task".to_string()];
    let page = recall(
        &memory,
        ask("webhook", &[MemoryScope::Project], &tags, 10, None, false),
        NOW,
    )
    .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page
        .items
        .iter()
        .all(|item| item.claim.class == MemoryBoundaryClass::Internal));
}

/// A memory on a fresh workspace whose vectors come from the stub embedder (as from an
/// embeddings server: it can go down, slow down or change its model).
fn open_with_stub(folder: &Path, call_timeout_ms: u64) -> (Memory, Arc<StubEmbedder>) {
    std::fs::write(folder.join("memory-policy.yaml"), POLICY).unwrap();
    std::fs::create_dir_all(folder.join("vault")).unwrap();
    let config = config(folder);
    let stub = Arc::new(StubEmbedder::default());
    let provider = Provider::new(
        stub.clone(),
        VectorSettings {
            call_timeout: Duration::from_millis(call_timeout_ms),
            batch_size: 2,
            batch_timeout: Duration::from_secs(5),
        },
    );
    let memory = Memory::open(&config.memory, provider, &config.vault_root, 20_000).unwrap();
    (memory, stub)
}

fn search(memory: &Memory, query: &str) -> Page {
    let tags = vec!["answer:task".to_string()];
    recall(
        memory,
        ask(query, &[MemoryScope::Project], &tags, 10, None, false),
        NOW,
    )
    .unwrap()
}

/// Waits (at most 30 s) until the worker has given every claim a vector.
fn until_embedded(memory: &Memory) {
    let started = Instant::now();
    while memory.current_index().unwrap().pending() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the worker left claims without vectors"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stored_vectors(memory: &Memory, model: &str) -> i64 {
    memory
        .store
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM claim_vectors WHERE model = ?1",
                [model],
                |r| r.get(0),
            )
            .unwrap())
        })
        .unwrap()
}

#[test]
fn a_provider_that_is_down_fails_no_call_and_its_vectors_are_filled_later() {
    let folder = tempfile::tempdir().unwrap();
    let (memory, stub) = open_with_stub(folder.path(), 1000);
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Unreachable);
    let provenance = provenance();
    let outcome = memory
        .upsert(
            &mut Call::new("test", NOW),
            request(
                "解約の手続きは非同期",
                MemoryScope::Project,
                MemoryBoundaryClass::Internal,
                &provenance,
            ),
        )
        .unwrap();
    match outcome.vectors {
        Some(VectorNote::Unavailable { reason, pending }) => {
            assert!(reason.contains("EMBEDDINGS_URL"), "{reason}");
            assert_eq!(pending, 1);
        }
        other => panic!("{other:?}"),
    }
    upsert_project(
        &memory,
        ["解約の承認は CS チーム".to_string()],
        MemoryBoundaryClass::Internal,
    );
    let page = search(&memory, "解約");
    assert_eq!(page.items.len(), 2, "ranked by text alone");
    assert!(page.items.iter().all(|item| item.scores.vector == 0.0));
    assert!(
        matches!(
            &page.vectors,
            Some(VectorNote::Unavailable { pending: 2, .. })
        ),
        "{:?}",
        page.vectors
    );
    let state = memory.state(&mut Call::new("test", NOW)).unwrap();
    assert!(!state.vectors.builtin);
    assert!(matches!(state.vectors.provider, ProviderState::Down(_)));
    assert_eq!((state.vectors.embedded, state.vectors.pending), (0, 2));
    assert_eq!(state.vector_model, "unknown");

    *stub.down.lock().unwrap() = None;
    until_embedded(&memory);
    assert_eq!(stored_vectors(&memory, "stub"), 2);
    let page = search(&memory, "解約");
    assert_eq!(page.vectors, None);
    assert!(page.items.iter().all(|item| item.scores.vector > 0.0));
    let state = memory.state(&mut Call::new("test", NOW)).unwrap();
    assert_eq!(state.vectors.provider, ProviderState::Ready);
    assert_eq!((state.vectors.embedded, state.vectors.pending), (2, 0));
    assert_eq!(state.vector_model, "stub");
    assert_eq!(state.vectors.dims, Some(crate::embed::stub::STUB_DIMS));
}

#[test]
fn a_slow_provider_costs_one_call_its_deadline_and_then_nothing() {
    let folder = tempfile::tempdir().unwrap();
    let (memory, stub) = open_with_stub(folder.path(), 200);
    stub.delay_ms.store(10_000, Ordering::SeqCst);
    let started = Instant::now();
    upsert_project(
        &memory,
        ["webhook retries are capped".to_string()],
        MemoryBoundaryClass::Internal,
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    upsert_project(
        &memory,
        (0..5).map(|n| format!("webhook rule {n}")),
        MemoryBoundaryClass::Internal,
    );
    let page = search(&memory, "webhook");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "calls skip a provider that timed out: {:?}",
        started.elapsed()
    );
    assert_eq!(page.items.len(), 6);
    match &page.vectors {
        Some(VectorNote::Unavailable { reason, .. }) => {
            assert!(reason.contains("skip"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let state = memory.state(&mut Call::new("test", NOW)).unwrap();
    assert!(state.vectors.paused);
}

/// A policy without vector candidates (`k_vec: 0`) never asks the provider for a query
/// vector: a down provider costs its searches nothing and they carry no vectors note.
#[test]
fn a_policy_without_vector_candidates_embeds_no_query() {
    let folder = tempfile::tempdir().unwrap();
    let (memory, stub) = open_with_stub(folder.path(), 1000);
    let request = ApplyRequest {
        yaml: &POLICY.replace("k_vec: 96", "k_vec: 0"),
        dry_run: false,
        validate_only: false,
        expected_version: None,
        signature: None,
        approver: None,
    };
    memory
        .apply_policy(&mut Call::new("test", NOW), request)
        .unwrap();
    upsert_project(
        &memory,
        ["解約の承認は CS チーム".to_string()],
        MemoryBoundaryClass::Internal,
    );
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Unreachable);
    let calls = stub.calls.load(Ordering::SeqCst);
    let page = search(&memory, "解約");
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.vectors, None);
    assert_eq!(stub.calls.load(Ordering::SeqCst), calls);
}

#[test]
fn a_model_change_re_embeds_every_claim_in_the_background() {
    let folder = tempfile::tempdir().unwrap();
    let (memory, stub) = open_with_stub(folder.path(), 1000);
    upsert_project(
        &memory,
        (0..5).map(|n| format!("invoice retention rule {n}")),
        MemoryBoundaryClass::Internal,
    );
    let page = search(&memory, "invoice retention");
    assert_eq!(page.vectors, None);
    assert!(page.items.iter().all(|item| item.scores.vector > 0.0));
    assert_eq!(stored_vectors(&memory, "stub"), 5);
    let embedded = stub.passages.load(Ordering::SeqCst);
    assert_eq!(embedded, 5);

    *stub.model.lock().unwrap() = "stub-2".to_string();
    let page = search(&memory, "invoice retention");
    assert_eq!(
        page.items.len(),
        5,
        "found by text while vectors are redone"
    );
    assert!(
        matches!(page.vectors, Some(VectorNote::Pending { .. })),
        "{:?}",
        page.vectors
    );
    until_embedded(&memory);
    assert_eq!(stored_vectors(&memory, "stub-2"), 5);
    assert_eq!(
        stored_vectors(&memory, "stub"),
        5,
        "each model keeps its own"
    );
    assert_eq!(stub.passages.load(Ordering::SeqCst), embedded + 5);
    let page = search(&memory, "invoice retention");
    assert_eq!(page.vectors, None);
    assert!(page.items.iter().all(|item| item.scores.vector > 0.0));

    // Back to the first model: its stored vectors are used again, nothing is re-embedded.
    *stub.model.lock().unwrap() = "stub".to_string();
    let page = search(&memory, "invoice retention");
    assert_eq!(page.vectors, None);
    assert_eq!(stub.passages.load(Ordering::SeqCst), embedded + 5);
}

/// A claim stored again keeps its vector; the provider is not asked for it.
#[test]
fn an_existing_text_is_not_embedded_again() {
    let folder = tempfile::tempdir().unwrap();
    let (memory, stub) = open_with_stub(folder.path(), 1000);
    for _ in 0..3 {
        upsert_project(
            &memory,
            ["deploys happen on Tuesdays".to_string()],
            MemoryBoundaryClass::Internal,
        );
    }
    assert_eq!(stub.passages.load(Ordering::SeqCst), 1);
}

/// Vectors are embedded from redacted text: an embeddings server never sees what a
/// redact rule catches.
#[test]
fn what_is_embedded_is_redacted() {
    let policy = Policy::parse(POLICY, 1).unwrap();
    let sent = vector::passage(&policy, "owner hanako@example.com", &["Billing"]);
    assert!(!sent.contains("hanako"), "{sent}");
    assert!(sent.contains("Billing"), "{sent}");
}
