//! `manvault-bench cancel`: how soon a cancelled call stops, beside how long the same call
//! takes uncancelled, in the same run.
//!
//! Builds in a temporary folder the vault of the `vault` bench (10,000 Markdown files,
//! 100 MB) and generated manuals (2,000 Markdown files, about 50 MB, a heading every few
//! lines), then for `vault_search`, `vault_find`, `manual_find` (warm index) and
//! `bridge_copy_file` (warm index) measures the uncancelled call (median of three), and
//! for each of `--trials` runs starts the call through `App::call_with` on a thread,
//! raises the call's cancellation flag (what `notifications/cancelled` does) at a point
//! spread over the call's duration, and times the flag to the call's return. A cancelled
//! copy must have written nothing; the bench checks the destination. Prints a Markdown
//! table; docs/benchmarks.md is a copy of one run.

use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::call::CallContext;
use manvault::config::{Config, RootFlags};
use serde_json::{json, Value};

use super::common::{call, Scratch};
use super::vault::{build_vault, XorShift};

const MANUAL_FILES: usize = 2_000;
const MANUAL_FILE_BYTES: usize = 25_000;
const DEFAULT_TRIALS: usize = 10;
/// The bar of issue 13.
const TARGET: Duration = Duration::from_millis(100);

pub fn run(args: &[String]) -> ExitCode {
    let trials = match args {
        [] => DEFAULT_TRIALS,
        [flag, n] if flag == "--trials" => match n.parse() {
            Ok(n) if n > 0 => n,
            _ => return usage(),
        },
        _ => return usage(),
    };
    let scratch = Scratch::new("cancel");
    let started = Instant::now();
    build_vault(&scratch.0.join("vault/notes"));
    build_manuals(&scratch.0.join("manuals/generated"));
    eprintln!(
        "built the vault and the manuals in {:.1?}",
        started.elapsed()
    );
    let flags = RootFlags {
        workspace: Some(scratch.0.clone()),
        manuals: None,
        vault: None,
    };
    let app = App::new(Config::load(&|_| None, &flags).expect("default configuration"));
    // Warm the manual index and the search corpus: their first build is not a call's work.
    call(&app, "manual_find", json!({ "query": "障害対応" }));
    let operations = [
        Operation {
            tool: "vault_search",
            what: "`障害対応`, 100 MB / 10,000 files",
            arguments: |_| json!({ "query": "障害対応" }),
        },
        Operation {
            tool: "vault_find",
            what: "`障害対応 手順`, 100 MB / 10,000 files",
            arguments: |_| json!({ "query": "障害対応 手順" }),
        },
        Operation {
            tool: "manual_find",
            what: "`承認者 不在`, 50 MB / 2,000 files, warm",
            arguments: |_| json!({ "query": "承認者 不在" }),
        },
        Operation {
            tool: "bridge_copy_file",
            what: "a 25 kB file, warm index",
            arguments: |n| json!({ "manual_id": "generated", "path": "m0000.md", "dest_path": format!("copies/c{n}.md"), "mode": "create" }),
        },
    ];
    let mut rows = Vec::new();
    let mut copy = 0;
    for Operation {
        tool,
        what,
        arguments,
    } in operations
    {
        let full = median_of_three(|| {
            copy += 1;
            call(&app, tool, arguments(copy));
        });
        let mut latencies = Vec::new();
        let mut finished_first = 0;
        for trial in 0..trials {
            copy += 1;
            let delay = full.mul_f64((trial + 1) as f64 / (trials + 1) as f64);
            match cancelled_after(&app, tool, arguments(copy), delay) {
                Some(latency) => {
                    if tool == "bridge_copy_file" {
                        let written = scratch.0.join(format!("vault/copies/c{copy}.md"));
                        assert!(!written.exists(), "a cancelled copy wrote {written:?}");
                    }
                    latencies.push(latency);
                }
                None => finished_first += 1,
            }
        }
        latencies.sort();
        rows.push(Row {
            operation: format!("{tool}, {what}"),
            full,
            latencies,
            finished_first,
        });
    }
    let listing = median_of_three(|| {
        call(&app, "vault_ls", json!({ "limit": 1 }));
    });
    print_table(&rows, trials, started.elapsed());
    println!(
        "Both vault searches first list their scope (a directory walk, not interrupted): \
         `vault_ls` of the 10,000-file vault takes {:.1} ms here.",
        listing.as_secs_f64() * 1e3
    );
    ExitCode::SUCCESS
}

/// The median duration of three runs of `operation`.
fn median_of_three(mut operation: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let began = Instant::now();
            operation();
            began.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

fn usage() -> ExitCode {
    eprintln!("usage: manvault-bench cancel [--trials N]\n  (build with --release; needs about 200 MB of free disk)");
    ExitCode::from(2)
}

/// Runs `tool` on a thread, raises its cancellation flag after `delay`, and returns how
/// long the call took from then to return; `None` when it finished before the flag.
fn cancelled_after(app: &App, tool: &str, arguments: Value, delay: Duration) -> Option<Duration> {
    let context = CallContext::local();
    let flag = context.cancel_flag();
    std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            let answer = app
                .call_with(tool, arguments, &context)
                .expect("a listed tool");
            (answer, Instant::now())
        });
        std::thread::sleep(delay);
        let raised = Instant::now();
        flag.store(true, Ordering::Relaxed);
        let (answer, returned) = running.join().expect("the call does not panic");
        match answer {
            Ok(_) => None,
            Err(error) => {
                assert_eq!(
                    error.details.as_ref().map(|d| &d["cancelled"]),
                    Some(&json!(true)),
                    "{error}"
                );
                Some(returned.saturating_duration_since(raised))
            }
        }
    })
}

/// `MANUAL_FILES` Markdown files of about `MANUAL_FILE_BYTES`, a heading every few lines.
fn build_manuals(folder: &Path) {
    fs::create_dir_all(folder).unwrap();
    let mut random = XorShift(0x853C_49E6_748F_EA9B);
    for file in 0..MANUAL_FILES {
        let mut text = format!("# Manual page {file}\n\n");
        let mut section = 0;
        while text.len() < MANUAL_FILE_BYTES {
            section += 1;
            text.push_str(&format!("## Section {section}\n\n"));
            for _ in 0..(2 + random.next() % 4) {
                text.push_str(random.sentence());
                text.push(' ');
                text.push_str(random.sentence());
                text.push('\n');
            }
            text.push('\n');
        }
        fs::write(folder.join(format!("m{file:04}.md")), text).unwrap();
    }
}

/// One measured call; `arguments(n)` gives the `n`-th call's arguments (copies need
/// fresh destinations).
struct Operation {
    tool: &'static str,
    what: &'static str,
    arguments: fn(usize) -> Value,
}

struct Row {
    operation: String,
    full: Duration,
    latencies: Vec<Duration>,
    finished_first: usize,
}

fn print_table(rows: &[Row], trials: usize, total: Duration) {
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let at = |latencies: &[Duration], share: f64| {
        latencies
            .get(((latencies.len() as f64 * share).ceil() as usize).saturating_sub(1))
            .copied()
    };
    println!("\n## Cancellation ({trials} trials per operation, flag raised across the call)\n");
    println!("| operation | uncancelled call | stop after the flag p50 | p95 | max | max / call | finished before the flag |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let p50 = at(&row.latencies, 0.5);
        let p95 = at(&row.latencies, 0.95);
        let max = row.latencies.last().copied();
        let show = |d: Option<Duration>| d.map_or("-".to_owned(), ms);
        let ratio = max.map_or("-".to_owned(), |max| {
            format!("{:.3}", max.as_secs_f64() / row.full.as_secs_f64())
        });
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.operation,
            ms(row.full),
            show(p50),
            show(p95),
            show(max),
            ratio,
            row.finished_first
        );
    }
    let worst = rows.iter().filter_map(|row| row.latencies.last()).max();
    println!(
        "\nTarget: a cancelled call stops within {} of the flag; worst measured {}. Total {:.1?}.",
        ms(TARGET),
        worst.map_or("-".to_owned(), |d| ms(*d)),
        total
    );
}
