//! The `semantic` signal in whole searches, with the stub embedder placing texts by the
//! concepts they name: what only meaning finds, thin evidence, a provider that is down or
//! slow, and sections not embedded yet.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::embed::stub::StubEmbedder;
use crate::embed::{EmbedErrorKind, Embedder};
use crate::manual::find::integrate::THIN_SUFFICIENCY;
use crate::manual::vectors::{SectionSettings, SectionVectors, DEFAULT_PASSAGE};

const TERMINAL: &str = "# Terminal

## Clipboard

Select text with the mouse; the middle button inserts it elsewhere.

## Fonts

Change the font size in the preferences.

## Shutdown

Switch the machine off with poweroff.
";

const MANUALS: &[(&str, &str)] = &[("ops/terminal.md", TERMINAL), ("rules/leave.md", LEAVE)];

/// Words that mean one thing, as a multilingual model would see them.
const CONCEPTS: &[&[&str]] = &[
    &["clipboard", "コピペ", "copy and paste"],
    &["shutdown", "電源を切る", "poweroff"],
];

const QUERY_TIMEOUT: Duration = Duration::from_millis(300);

fn stub() -> Arc<StubEmbedder> {
    Arc::new(StubEmbedder::with_concepts(CONCEPTS))
}

/// Section vectors through `stub`, filled for `index`.
fn vectors(stub: &Arc<StubEmbedder>, index: &ManualIndex) -> Arc<SectionVectors> {
    let settings = SectionSettings {
        passage: DEFAULT_PASSAGE,
        batch_size: 2,
        query_timeout: QUERY_TIMEOUT,
        cache_dir: None,
        prefixes: "input_type".to_owned(),
    };
    let vectors = SectionVectors::new(Arc::clone(stub) as Arc<dyn Embedder>, settings);
    vectors.fill(index, &mut |_| {}).expect("fill");
    Arc::new(vectors)
}

fn semantic_finder(stub: &Arc<StubEmbedder>, index: &ManualIndex) -> Finder {
    Finder::with_vectors(settings(), Some(vectors(stub, index)))
}

/// `finder` after one search, so that a timed search does not include the first one's
/// derivation of the corpus and synonyms (seconds in a debug build on a loaded machine).
fn warmed(finder: Finder, index: &ManualIndex) -> Finder {
    finder
        .find(index, &request("fonts"), &CallContext::local())
        .expect("warm-up search");
    finder
}

#[test]
fn a_section_worded_unlike_the_query_is_found_by_meaning_alone() {
    let (_dir, index) = index(MANUALS);
    let query = request("端末でコピペする");

    let lexical = Finder::new(settings());
    let without = lexical.find(&index, &query, &CallContext::local()).unwrap();
    assert_eq!(without.summary.candidates, 0);
    assert_eq!(without.summary.semantic, None);
    assert_eq!(without.summary.signal_coverage.semantic, None);

    let finder = semantic_finder(&stub(), &index);
    let outcome = finder.find(&index, &query, &CallContext::local()).unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "terminal.md:3", "{candidates:?}");
    assert_eq!(signals_of(&candidates, "terminal.md:3"), ["semantic"]);
    let summary = &outcome.summary;
    assert!(summary.signal_coverage.semantic >= Some(1));
    assert_eq!(
        summary.semantic,
        Some(SemanticReport {
            used: true,
            pending_sections: 0,
            warning: None
        })
    );
    // Thin evidence: Stage 4 still looked for words, and the verdict is not ready.
    assert_eq!(summary.max_stage_applied, 4);
    assert_eq!(summary.integration_status, IntegrationStatus::NeedsFollowup);
    assert!(summary.sufficiency_score <= THIN_SUFFICIENCY);
    assert_eq!(summary.warnings, 0);
}

#[test]
fn a_candidate_found_by_words_and_meaning_carries_both_signals() {
    let (_dir, index) = index(MANUALS);
    let finder = semantic_finder(&stub(), &index);
    let outcome = finder
        .find(&index, &request("clipboard"), &CallContext::local())
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "terminal.md:3");
    let signals = signals_of(&candidates, "terminal.md:3");
    assert!(
        signals.contains(&"heading") && signals.contains(&"semantic"),
        "{signals:?}"
    );
    // Evidence of the query's words: an ordinary verdict.
    assert_ne!(outcome.summary.sufficiency_score, 0.0);
}

#[test]
fn a_provider_that_is_down_leaves_a_lexical_answer_with_a_warning() {
    let (_dir, index) = index(MANUALS);
    let stub = stub();
    let finder = warmed(semantic_finder(&stub, &index), &index);
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Unreachable);
    let started = Instant::now();
    let outcome = finder
        .find(&index, &request("clipboard コピペ"), &CallContext::local())
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    let report = outcome
        .summary
        .semantic
        .clone()
        .expect("semantic recall is on");
    assert!(!report.used);
    assert!(
        report
            .warning
            .is_some_and(|w| w.contains("cannot be reached")),
        "{report:?}"
    );
    assert_eq!(outcome.summary.warnings, 1);
    assert!(outcome.warnings[0].contains("semantic"));
    assert_eq!(outcome.summary.signal_coverage.semantic, Some(0));
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(
        places(&candidates),
        ["terminal.md:3"],
        "words still find it"
    );
}

#[test]
fn a_slow_provider_costs_a_search_at_most_the_query_timeout() {
    let (_dir, index) = index(MANUALS);
    let stub = stub();
    let finder = warmed(semantic_finder(&stub, &index), &index);
    stub.delay_ms.store(5_000, Ordering::SeqCst);
    let started = Instant::now();
    let outcome = finder
        .find(&index, &request("clipboard"), &CallContext::local())
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= QUERY_TIMEOUT && elapsed < QUERY_TIMEOUT * 4,
        "{elapsed:?}"
    );
    let warning = outcome.summary.semantic.unwrap().warning.unwrap();
    assert!(warning.contains("EMBEDDINGS_TIMEOUT_MS"), "{warning}");
    // Then queries leave the provider alone for a while: no wait at all.
    let started = Instant::now();
    let again = finder
        .find(&index, &request("clipboard"), &CallContext::local())
        .unwrap();
    assert!(started.elapsed() < QUERY_TIMEOUT);
    assert!(again
        .summary
        .semantic
        .unwrap()
        .warning
        .unwrap()
        .contains("recently"));
}

#[test]
fn a_cancelled_search_does_not_wait_for_the_query_vector() {
    let (_dir, index) = index(MANUALS);
    let stub = stub();
    let finder = warmed(semantic_finder(&stub, &index), &index);
    stub.delay_ms.store(5_000, Ordering::SeqCst);
    let call = CallContext::local();
    call.cancel_flag().store(true, Ordering::Relaxed);
    let started = Instant::now();
    let error = finder
        .find(&index, &request("clipboard"), &call)
        .unwrap_err();
    assert_eq!(error.details.unwrap()["cancelled"], true);
    assert!(
        started.elapsed() < QUERY_TIMEOUT / 2,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn sections_not_embedded_yet_are_counted_and_the_rest_are_searched() {
    let (dir, mut index) = index(MANUALS);
    let stub = stub();
    let vectors = vectors(&stub, &index);
    let new = "# Power\n\n## Turning it off\n\nUse poweroff.\n";
    std::fs::write(dir.path().join("ops/power.md"), new).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(index.refresh().unwrap());
    // The provider refuses the new sections (and is not retried): they stay pending.
    *stub.down.lock().unwrap() = Some(EmbedErrorKind::Rejected);
    assert!(vectors.fill(&index, &mut |_| {}).is_err());
    *stub.down.lock().unwrap() = None;
    let finder = Finder::with_vectors(settings(), Some(vectors));
    let outcome = finder
        .find(&index, &request("電源を切る"), &CallContext::local())
        .unwrap();
    let report = outcome.summary.semantic.clone().unwrap();
    assert!(report.used && report.pending_sections == 2, "{report:?}");
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "terminal.md:11");
    assert!(!places(&candidates).contains(&"power.md:3".to_owned()));
}

#[test]
fn a_search_in_one_manual_lists_no_section_of_another() {
    let (_dir, index) = index(MANUALS);
    let finder = semantic_finder(&stub(), &index);
    let outcome = finder
        .find(
            &index,
            &with("コピペ", |request| {
                request.manual_id = Some("rules".to_owned());
                request.max_stage = Some(3);
            }),
            &CallContext::local(),
        )
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert!(
        candidates
            .iter()
            .all(|item| item.place.as_ref().unwrap().manual_id.as_ref() == "rules"),
        "{candidates:?}"
    );
}

const PRINTER: &str = "# Printer

## Toner cartridge

The toner cartridge lasts two thousand pages; keep it away from sunlight, heat, dust and water.

## Toner cartridge return

Send an empty toner cartridge back in its box.

## Drum unit

Swap out the drum unit when the lamp blinks twice.

## Fuser

Swap out the fuser once a year.
";

/// Words that mean one thing to the stub. The first section names four things besides
/// the cartridge, which moves its vector away from a query about the cartridge: the
/// return section is closer in meaning, as a real model may find a neighbour closer
/// than the section a query names.
const PRINTING: &[&[&str]] = &[
    &["cartridge", "kartusche"],
    &["replace", "swap out", "交換"],
    &["pages"],
    &["sunlight"],
    &["heat"],
    &["water"],
    &["dust"],
];

fn printer_search(query: &str) -> Vec<HitItem> {
    let (_dir, index) = index(&[("printer/printer.md", PRINTER)]);
    let stub = Arc::new(StubEmbedder::with_concepts(PRINTING));
    let finder = semantic_finder(&stub, &index);
    let outcome = finder
        .find(&index, &request(query), &CallContext::local())
        .unwrap();
    hits(&finder, &outcome, HitKind::Candidates)
}

#[test]
fn closeness_in_meaning_does_not_displace_a_strong_lexical_first_hit() {
    // The query is the first section's heading: strong lexical evidence. The return
    // section holds the words too, less strongly, and is closer in meaning: its fused
    // score would be higher, but the lexical first hit keeps the first rank.
    let candidates = printer_search("toner cartridge");
    assert_eq!(
        places(&candidates)[..2],
        ["printer.md:3", "printer.md:7"],
        "{candidates:?}"
    );
    assert!(signals_of(&candidates, "printer.md:7").contains(&"semantic"));
    // Sections found by meaning alone still join the candidates, below those the
    // query's words found.
    let candidates = printer_search("toner cartridge 交換");
    let alone: Vec<bool> = candidates
        .iter()
        .map(|item| item.signals == ["semantic"])
        .collect();
    assert!(alone.contains(&true), "{candidates:?}");
    assert!(alone.is_sorted(), "{candidates:?}");
}

#[test]
fn a_section_found_by_meaning_alone_ranks_first_over_weak_lexical_evidence() {
    // "light" is only a piece of "sunlight" in the first section: weak evidence. The
    // sections about swapping parts out name nothing the query wrote, and rank first.
    let candidates = printer_search("交換 light");
    assert_eq!(places(&candidates)[0], "printer.md:11", "{candidates:?}");
    assert_eq!(signals_of(&candidates, "printer.md:11"), ["semantic"]);
    assert!(places(&candidates).contains(&"printer.md:3".to_owned()));
    assert!(!signals_of(&candidates, "printer.md:3").contains(&"semantic"));
}
