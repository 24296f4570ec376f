//! `manvault stats`: what the tuning did, one row a UTC day, from the statistics file, so
//! an operator can see whether Stage 4 fires more or less, whether recall held, what the
//! searches cost, and which thresholds were in force.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::history::{History, Observation, Summary};
use super::record::Record;
use super::thresholds::Thresholds;
use crate::clock;

const LEGEND: &str = "\
stage4: share of searches where Stage 4 widened the scope; recall: mean |C∩U|/|U| over
the searches whose trace was used afterwards (n of them); cutoff: share of searches cut
off; est_tokens: mean per search; stage4_tokens: mean tokens Stage 4 added; thresholds:
in force at the day's first search, then its last if they differ.";

/// One day's figures.
struct Day {
    summary: Summary,
    first: Thresholds,
    last: Thresholds,
}

/// The report for `records` (as read from the statistics file).
pub(crate) fn render(records: &[Record]) -> String {
    let history = History::replay(records);
    let mut days: BTreeMap<String, Day> = BTreeMap::new();
    for observation in history.iter() {
        add(&mut days, observation);
    }
    if days.is_empty() {
        return "no searches recorded yet\n".to_string();
    }
    let mut out = format!("{LEGEND}\n\n");
    writeln!(
        out,
        "{:<10}  {:>8}  {:>6}  {:>6}  {:>5}  {:>6}  {:>10}  {:>13}  {:>13}  {:>11}",
        "day",
        "searches",
        "stage4",
        "recall",
        "n",
        "cutoff",
        "est_tokens",
        "stage4_tokens",
        "candidate_low",
        "file_bias"
    )
    .expect("writing to a String");
    for (day, figures) in &days {
        write_day(&mut out, day, figures);
    }
    write_changes(&mut out, records);
    out
}

fn add(days: &mut BTreeMap<String, Day>, observation: &Observation) {
    let thresholds = observation.find.summary.thresholds;
    let day = days
        .entry(clock::date(observation.find.ts))
        .or_insert_with(|| Day {
            summary: Summary::default(),
            first: thresholds,
            last: thresholds,
        });
    day.summary.add(observation);
    day.last = thresholds;
}

fn write_day(out: &mut String, day: &str, figures: &Day) {
    let summary = &figures.summary;
    let percent = |rate: Option<f64>| rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0));
    let mean = |value: Option<f64>| value.map_or("-".into(), |v| format!("{v:.1}"));
    let span = |first: String, last: String| {
        if first == last {
            first
        } else {
            format!("{first}->{last}")
        }
    };
    writeln!(
        out,
        "{:<10}  {:>8}  {:>6}  {:>6}  {:>5}  {:>6}  {:>10}  {:>13}  {:>13}  {:>11}",
        day,
        summary.searches,
        percent(summary.stage4_rate()),
        summary.recall().map_or("-".into(), |r| format!("{r:.3}")),
        summary.recall_samples,
        percent(summary.cutoff_rate()),
        mean(summary.mean_est_tokens()),
        mean(summary.mean_added_est_tokens()),
        span(
            figures.first.candidate_low.to_string(),
            figures.last.candidate_low.to_string()
        ),
        span(
            format!("{:.2}", figures.first.file_bias),
            format!("{:.2}", figures.last.file_bias)
        ),
    )
    .expect("writing to a String");
}

/// The tuning records, each with the thresholds it set and why.
fn write_changes(out: &mut String, records: &[Record]) {
    let changes: Vec<_> = records
        .iter()
        .filter_map(|record| match record {
            Record::Tuning(tuning) => Some(tuning),
            _ => None,
        })
        .collect();
    if changes.is_empty() {
        out.push_str("\nno threshold changes recorded\n");
        return;
    }
    out.push_str("\nthreshold changes\n");
    for change in changes {
        let reason = serde_json::to_value(change.reason).expect("reasons serialise");
        writeln!(
            out,
            "  {}  {:<12}  candidate_low={}  file_bias={:.2}",
            clock::rfc3339(change.ts),
            reason.as_str().unwrap_or_default(),
            change.state.thresholds.candidate_low,
            change.state.thresholds.file_bias
        )
        .expect("writing to a String");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::record::{TuningReason, TuningRecord};
    use crate::adaptive::test_support::{facts, find, usage, DEFAULTS};
    use crate::adaptive::tuning::TuningState;
    use crate::trace::CutoffReason;

    const DAY: u64 = 86_400;
    /// 2026-11-20T00:00:00Z
    const START: u64 = 1_795_132_800;

    #[test]
    fn one_row_a_day_with_rates_recall_and_thresholds() {
        let mut records = Vec::new();
        for n in 0..4u64 {
            let trace_id = format!("d1-{n}");
            let mut search = facts(&trace_id);
            search.summary.scope_expanded = n == 0;
            search.added_est_tokens = if n == 0 { 40 } else { 0 };
            search.summary.cutoff_reason = (n == 1).then_some(CutoffReason::CandidateCap);
            records.push(find(START + n, search));
            records.push(usage(START + n, &trace_id, 4, n.min(3) + 1));
        }
        let looser = Thresholds {
            candidate_low: 2,
            ..DEFAULTS
        };
        records.push(Record::Tuning(TuningRecord {
            ts: START + DAY,
            reason: TuningReason::Policy,
            state: TuningState {
                thresholds: looser,
                candidate_low_changed_at: Some(START + DAY),
                file_bias_changed_at: None,
                rolled_back_at: None,
                rolled_back_from: None,
            },
        }));
        let mut search = facts("d2");
        search.summary.thresholds = looser;
        records.push(find(START + DAY + 5, search));

        let report = render(&records);
        let rows: Vec<&str> = report.lines().filter(|l| l.starts_with("2026-")).collect();
        assert_eq!(rows.len(), 2, "{report}");
        let day1: Vec<&str> = rows[0].split_whitespace().collect();
        // 4 searches, 1 with Stage 4, recall (1/4 + 2/4 + 3/4 + 4/4) / 4, 1 cut off,
        // 200 tokens each, 40 added once.
        assert_eq!(
            day1,
            [
                "2026-11-20",
                "4",
                "25.0%",
                "0.625",
                "4",
                "25.0%",
                "200.0",
                "10.0",
                "3",
                "0.80"
            ]
        );
        let day2: Vec<&str> = rows[1].split_whitespace().collect();
        assert_eq!(&day2[..5], ["2026-11-21", "1", "0.0%", "-", "0"]);
        assert_eq!(&day2[8..], ["2", "0.80"]);
        assert!(report
            .contains("  2026-11-21T00:00:00Z  policy        candidate_low=2  file_bias=0.80"));
    }

    #[test]
    fn an_empty_file_says_so() {
        assert_eq!(render(&[]), "no searches recorded yet\n");
    }
}
