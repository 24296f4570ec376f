//! Shared by the adaptive tests: a workspace in a temporary folder, and synthetic search
//! traffic whose recall depends on the thresholds in a known way.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use manvault::adaptive::{Adaptive, FindFacts, FindSummary, Fingerprint, RefKey, Thresholds};
use manvault::config::{Config, RootFlags};
use manvault::contract::types::CutoffReason;
use serde_json::Value;

pub const HOUR: u64 = 3600;
pub const DAY: u64 = 24 * HOUR;
/// 2026-11-20T00:00:00Z
pub const START: u64 = 1_795_132_800;

pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub config: Config,
}

impl Workspace {
    /// An empty vault; `vars` are extra environment variables.
    pub fn new(vars: &[(&str, &str)]) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("vault")).unwrap();
        let config = config_for(dir.path(), vars);
        Workspace { dir, config }
    }

    /// The configuration of a server on this workspace started with other `vars`.
    pub fn config_with(&self, vars: &[(&str, &str)]) -> Config {
        config_for(self.dir.path(), vars)
    }

    pub fn stats_path(&self) -> PathBuf {
        self.config.adaptive_stats_path.clone()
    }

    /// Every line of the statistics file that is JSON.
    pub fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(self.stats_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

fn config_for(workspace: &Path, vars: &[(&str, &str)]) -> Config {
    let mut env: HashMap<String, String> = vars
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    env.insert("WORKSPACE_ROOT".into(), workspace.display().to_string());
    Config::load(&|name| env.get(name).cloned(), &RootFlags::default()).unwrap()
}

/// Search traffic in which search `n` finds `n % 64` candidates, its largest file holding
/// a share of 0.60 to 1.00 in steps of 0.01 (spread evenly over consecutive searches),
/// and the agent then uses one ref. A search *needs* Stage 4 when it has fewer than
/// `needs_candidates_below` candidates, or (one in four) five or more with a share of at
/// least `needs_bias_at_least`: the ref used is then one only Stage 4 finds, so without
/// Stage 4 its recall is 0. Stage 4 adds 300 tokens. Every value is a function of `n`, so
/// each run is the same.
pub struct Traffic {
    pub needs_candidates_below: u64,
    pub needs_bias_at_least: f64,
    /// One search in this many is cut off (0: none).
    pub cut_off_one_in: u64,
}

/// The thresholds a fresh server starts with.
pub const DEFAULTS: Thresholds = Thresholds {
    candidate_low: 3,
    file_bias: 0.8,
};

/// Tokens Stage 4 adds to a search in [`Traffic`].
pub const STAGE4_TOKENS: u64 = 300;

impl Traffic {
    /// Traffic in which nothing but an empty result needs Stage 4: both thresholds can
    /// loosen as far as they go.
    pub const EASY: Traffic = Traffic {
        needs_candidates_below: 1,
        needs_bias_at_least: 2.0,
        cut_off_one_in: 0,
    };

    /// Runs search `n` at `now` through `adaptive` with the thresholds it hands out, and
    /// the use that follows; returns the thresholds.
    pub fn search(&self, adaptive: &Adaptive, n: u64, now: u64) -> Thresholds {
        let thresholds = adaptive.thresholds(now);
        let candidates = n % 64;
        let bias = 0.6 + 0.01 * ((n * 17) % 41) as f64;
        let biased = candidates >= 5;
        let fired = candidates < u64::from(thresholds.candidate_low)
            || (biased && bias >= thresholds.file_bias - 1e-9);
        let needed = candidates < self.needs_candidates_below
            || (biased && n.is_multiple_of(4) && bias >= self.needs_bias_at_least - 1e-9);
        let trace_id = format!("trace-{n}");
        let mut refs: HashSet<RefKey> = (0..candidates)
            .map(|line| key(n, line as u32 + 1))
            .collect();
        let only_stage4_finds = key(n, 1000);
        if fired {
            refs.insert(only_stage4_finds.clone());
        }
        let facts = FindFacts {
            summary: FindSummary {
                trace_id: trace_id.clone(),
                query_hash: Fingerprint::of_query(&format!("query {n}")),
                thresholds,
                max_stage_allowed: 4,
                max_stage_applied: if fired { 4 } else { 3 },
                scope_expanded: fired,
                scanned_files: 20,
                candidates,
                file_bias_ratio: if candidates > 0 { bias } else { 0.0 },
                warnings: 0,
                cutoff_reason: (self.cut_off_one_in > 0 && n.is_multiple_of(self.cut_off_one_in))
                    .then_some(CutoffReason::TimeBudget),
                unscanned_sections_count: 0,
            },
            chars_in: 120,
            chars_out: 680,
            added_evidence_count: u64::from(fired),
            added_est_tokens: if fired { STAGE4_TOKENS } else { 0 },
        };
        adaptive.record_find(facts, refs, now);
        let used = if needed || candidates == 0 {
            only_stage4_finds
        } else {
            key(n, 1)
        };
        adaptive.record_use(&trace_id, used, now + 60);
        thresholds
    }
}

fn key(n: u64, line: u32) -> RefKey {
    RefKey {
        manual_id: "handbook".into(),
        path: format!("chapter-{}.md", n % 7),
        start_line: Some(line),
    }
}
