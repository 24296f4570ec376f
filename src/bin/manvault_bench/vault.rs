//! `manvault-bench vault`: how the vault tools compare with ripgrep on the same data, in
//! the same run, and how much memory they hold.
//!
//! Builds in a temporary folder a vault of 10,000 Markdown files (100 MB of mixed Japanese
//! and English text) and one 1 GB log, then times, through `App::call` as a client would
//! reach them, `vault_search` and `vault_find` over the vault and `vault_scan` of a chunk
//! at the start, middle and end of the log, each beside the `rg` command that does the
//! same work (for `vault_find`, the `rg` search of its term: a baseline, not its twin). Peak
//! memory is the process's `VmHWM`, reset before each operation (`/proc/self/clear_refs`).
//! Last, a new server's first two `vault_search` calls, the second after a pause an agent
//! would take (what the cache's background fill hides). Prints a Markdown table;
//! docs/benchmarks.md is a copy of one run.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::json;

use super::common::{call, peak_memory, reset_peak_memory, ripgrep_version, Scratch};

const FILES: usize = 10_000;
const FILE_BYTES: usize = 10_000;
const LOG_BYTES: u64 = 1 << 30;
const SCAN_CHUNK: u64 = 80;
/// A term in many lines, and one in a few files only.
const COMMON_QUERY: &str = "障害対応";
const RARE_QUERY: &str = "incident-4711";
/// Runs per measurement; the median (p50) counts, so one run slowed by the other work of
/// a shared machine moves neither side of a ratio (the data is in the page cache after
/// the first).
const RUNS: usize = 5;

const JAPANESE: &[&str] = &[
    "障害対応の手順を確認する。",
    "有給休暇の申請は五日前までに行う。",
    "経費精算は月末締めとする。",
    "承認者が不在の場合は代理承認とする。",
    "ただし、緊急時はこの限りではない。",
    "ロールバックは十分以内に判断する。",
    "本番環境への反映は金曜日を避ける。",
    "監視ダッシュボードでエラー率を確認する。",
    "新入社員の研修は四月に実施する。",
    "情報セキュリティ規程に従うこと。",
];

const ENGLISH: &[&str] = &[
    "Deployments need a reviewed merge request.",
    "Watch the error-rate dashboard for thirty minutes.",
    "Roll back unless the error rate returns to baseline.",
    "Database migrations are deployed separately.",
    "The on-call engineer owns the incident until handover.",
    "Expense reports are due at the end of the month.",
    "Canary releases take ten percent of traffic first.",
    "Secrets never go into the repository.",
];

/// Runs the vault bench; it takes no arguments.
pub fn run(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("usage: manvault-bench vault\n  (build with --release; needs about 1.2 GB of free disk in the temporary folder)");
        return ExitCode::from(2);
    }
    run_vault_bench();
    ExitCode::SUCCESS
}

/// A small deterministic generator, so every run measures the same data.
pub(super) struct XorShift(pub(super) u64);

impl XorShift {
    pub(super) fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }

    pub(super) fn sentence(&mut self) -> &'static str {
        if self.next().is_multiple_of(2) {
            JAPANESE[self.next() % JAPANESE.len()]
        } else {
            ENGLISH[self.next() % ENGLISH.len()]
        }
    }
}

fn run_vault_bench() {
    let load_at_start = load_average();
    let scratch = Scratch::new("vault");
    let vault = scratch.0.join("vault");
    let started = Instant::now();
    let rare_files = build_vault(&vault.join("notes"));
    let log_lines = build_log(&vault.join("logs/big.log"));
    eprintln!(
        "built {FILES} files and a {} MiB log ({log_lines} lines) in {:.1?}",
        LOG_BYTES >> 20,
        started.elapsed()
    );
    let flags = RootFlags {
        workspace: Some(scratch.0.clone()),
        manuals: None,
        vault: Some(vault.clone()),
    };
    let app = App::new(Config::load(&|_| None, &flags).expect("default configuration"));
    let rg = ripgrep_version();
    if rg.is_none() {
        eprintln!("ripgrep (rg) is not installed: ratios are skipped (apt-get install ripgrep)");
    }
    let mut rows = Vec::new();
    let mut common_rg = None;
    for (name, query) in [("common", COMMON_QUERY), ("rare", RARE_QUERY)] {
        let mut hits = 0;
        let (ours, memory) = measure(|| {
            let answer = call(
                &app,
                "vault_search",
                json!({ "query": query, "scope": { "relative_dir": "notes" } }),
            );
            hits = answer["total"].as_u64().unwrap();
        });
        let theirs = rg.as_ref().map(|_| {
            let mut rg_hits = 0;
            let (time, _) = measure(|| rg_hits = rg_count_lines(query, &vault.join("notes")));
            assert_eq!(rg_hits, hits, "rg and vault_search disagree on {query:?}");
            time
        });
        if name == "rare" {
            assert_eq!(hits as usize, rare_files);
        } else {
            common_rg = theirs;
        }
        rows.push(Row {
            operation: format!(
                "vault_search, {name} term `{query}` ({hits} lines), 100 MB / {FILES} files"
            ),
            ours,
            theirs,
            memory,
        });
        let mut candidates = 0;
        let (ours, memory) = measure(|| {
            let answer = call(
                &app,
                "vault_find",
                json!({ "query": query, "scope": { "relative_dir": "notes" } }),
            );
            candidates = answer["summary"]["candidates"].as_u64().unwrap_or(0);
        });
        rows.push(Row {
            operation: format!(
                "vault_find, {name} term `{query}` ({candidates} candidates), 100 MB / {FILES} files"
            ),
            ours,
            theirs,
            memory,
        });
    }
    for (name, start_line) in [
        ("start", 1),
        ("middle", log_lines / 2),
        ("end", log_lines - SCAN_CHUNK + 1),
    ] {
        let (ours, memory) = measure(|| {
            let answer = call(
                &app,
                "vault_scan",
                json!({ "path": "logs/big.log", "cursor": { "start_line": start_line }, "chunk_lines": SCAN_CHUNK }),
            );
            assert_eq!(
                answer["applied_range"]["end_line"],
                start_line + SCAN_CHUNK - 1
            );
            assert!(answer["text"]
                .as_str()
                .unwrap()
                .starts_with(&marker(start_line)));
        });
        let theirs = rg.as_ref().map(|_| {
            let (time, _) =
                measure(|| rg_first_line(&marker(start_line), &vault.join("logs/big.log")));
            time
        });
        rows.push(Row {
            operation: format!(
                "vault_scan, {SCAN_CHUNK} lines at the {name} (line {start_line}) of a 1 GiB file"
            ),
            ours,
            theirs,
            memory,
        });
    }
    // The forms the warm runs built are let go, so the new server's peak is its own.
    drop(app);
    rows.extend(a_new_servers_first_searches(&flags, common_rg));
    print_table(&rows, rg.as_deref(), started.elapsed(), &load_at_start);
}

/// How long an agent takes between two calls, at least, in the bench's second search.
const PAUSE: Duration = Duration::from_secs(5);

/// A new server's first `vault_search` of the common term and its second, `PAUSE` later:
/// the first reads every file by windows, the second finds the forms the background fill
/// built in the pause (`vault::forms`), which it would otherwise build itself.
fn a_new_servers_first_searches(flags: &RootFlags, rg: Option<Duration>) -> Vec<Row> {
    let app = App::new(Config::load(&|_| None, flags).expect("default configuration"));
    let search = || {
        reset_peak_memory();
        let started = Instant::now();
        call(
            &app,
            "vault_search",
            json!({ "query": COMMON_QUERY, "scope": { "relative_dir": "notes" } }),
        );
        (started.elapsed(), peak_memory())
    };
    let (first, first_memory) = search();
    std::thread::sleep(PAUSE);
    let (second, second_memory) = search();
    let operation = |which: &str| format!("vault_search, common term, a new server's {which}");
    vec![
        Row {
            operation: operation("first call (one run)"),
            ours: first,
            theirs: rg,
            memory: first_memory,
        },
        Row {
            operation: operation(&format!("second call, {PAUSE:?} after it (one run)")),
            ours: second,
            theirs: rg,
            memory: second_memory,
        },
    ]
}

/// `FILES` Markdown files of about `FILE_BYTES`, every 100th with the rare term once.
/// Returns how many files hold the rare term.
pub(super) fn build_vault(folder: &Path) -> usize {
    let mut random = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut rare = 0;
    for file in 0..FILES {
        let dir = folder.join(format!("{:03}", file / 100));
        fs::create_dir_all(&dir).unwrap();
        let mut text = format!("# Note {file}\n\n");
        if file % 100 == 0 {
            text.push_str(&format!("See {RARE_QUERY} for the post-mortem.\n"));
            rare += 1;
        }
        while text.len() < FILE_BYTES {
            for _ in 0..(1 + random.next() % 3) {
                text.push_str(random.sentence());
                text.push(' ');
            }
            text.push('\n');
        }
        fs::write(dir.join(format!("note-{file:05}.md")), text).unwrap();
    }
    rare
}

/// The line that starts a scan chunk: unique, so ripgrep can be asked to find it.
fn marker(line: u64) -> String {
    format!("MARK-{line:09}")
}

/// A log of `LOG_BYTES` whose lines each begin with their marker; returns its line count.
fn build_log(path: &Path) -> u64 {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    let mut random = XorShift(0x2545_F491_4F6C_DD1D);
    let (mut written, mut line) = (0u64, 0u64);
    while written < LOG_BYTES {
        line += 1;
        let text = format!(
            "{} {} {}\n",
            marker(line),
            random.sentence(),
            random.sentence()
        );
        out.write_all(text.as_bytes()).unwrap();
        written += text.len() as u64;
    }
    out.flush().unwrap();
    line
}

/// The median (p50) of `RUNS` runs, and the peak resident memory any of them reached.
fn measure(mut operation: impl FnMut()) -> (Duration, u64) {
    let mut times = Vec::with_capacity(RUNS);
    let mut peak = 0;
    for _ in 0..RUNS {
        reset_peak_memory();
        let started = Instant::now();
        operation();
        times.push(started.elapsed());
        peak = peak.max(peak_memory());
    }
    times.sort_unstable();
    (times[RUNS / 2], peak)
}

/// The machine's load averages (1, 5, 15 minutes) as `/proc/loadavg` writes them: the
/// other work of a shared machine moves every time, so a table names it.
pub(super) fn load_average() -> String {
    let line = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    line.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Matching lines of a fixed-string, case-insensitive search over `folder`, as
/// `vault_search` counts them (one per line).
fn rg_count_lines(query: &str, folder: &Path) -> u64 {
    let output = Command::new("rg")
        .args([
            "--fixed-strings",
            "--ignore-case",
            "--count",
            "--no-filename",
            "--no-ignore",
        ])
        .arg(query)
        .arg(folder)
        .output()
        .expect("run rg");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|count| count.trim().parse::<u64>().unwrap())
        .sum()
}

/// ripgrep's way to the same chunk: find its first line and stop.
fn rg_first_line(marker: &str, file: &Path) {
    let output = Command::new("rg")
        .args(["--fixed-strings", "--line-number", "--max-count", "1"])
        .arg(marker)
        .arg(file)
        .output()
        .expect("run rg");
    assert!(output.status.success(), "rg did not find {marker}");
}

struct Row {
    operation: String,
    ours: Duration,
    theirs: Option<Duration>,
    memory: u64,
}

fn print_table(rows: &[Row], rg: Option<&str>, total: Duration, load_at_start: &str) {
    let ms = |d: Duration| match d.as_secs_f64() * 1000.0 {
        small if small < 10.0 => format!("{small:.2} ms"),
        large => format!("{large:.0} ms"),
    };
    println!("| operation | manvault | ripgrep | manvault / ripgrep | manvault peak RSS |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        let (theirs, ratio) = match row.theirs {
            Some(theirs) => (
                ms(theirs),
                format!("{:.2}x", row.ours.as_secs_f64() / theirs.as_secs_f64()),
            ),
            None => ("n/a".into(), "n/a".into()),
        };
        println!(
            "| {} | {} | {theirs} | {ratio} | {} MiB |",
            row.operation,
            ms(row.ours),
            row.memory >> 20
        );
    }
    println!();
    println!(
        "{} runs each, p50 (median) shown; page cache warm; ripgrep times include starting the rg process; \
         peak RSS is manvault's (VmHWM, reset before each operation); {}; {} CPU cores; whole bench {:.0?}; \
         load average {load_at_start} at the start, {} at the end.",
        RUNS,
        rg.unwrap_or("ripgrep absent"),
        manvault::machine::cores(),
        total,
        load_average()
    );
}
