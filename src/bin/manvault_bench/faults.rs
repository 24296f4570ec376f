//! `manvault-bench faults`: the defects of issue 12 measured, so that a fix can be
//! compared with the code before it (check the old files out, rerun) and a regression
//! shows as a number. Each part prints a Markdown table; the README's "Faults and hostile
//! input" section quotes a run.
//!
//! * `glob`: `vault_ls` with `k` repeated `**/` (and `**/d*/`, which cannot be merged)
//!   over a 24-folder-deep vault, beside the same listing with a plain glob in the same
//!   run; a call still running after [`GIVE_UP`] is reported as such and larger `k` are
//!   skipped.
//! * `stats`: the `manvault` binary started on a 1 GiB statistics file of junk lines,
//!   beside a start with no statistics file: time until `initialize` is answered, and
//!   the bytes and lines written to stderr.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::json;

use super::common::Scratch;

const USAGE: &str = "usage: manvault-bench faults [glob] [stats]   (default: all parts)";

/// How long one measured operation may run before the bench stops waiting for it.
const GIVE_UP: Duration = Duration::from_secs(60);

/// Depth of the deep file of the `glob` part (the reproduction).
const GLOB_DEPTH: usize = 24;

/// Size of the junk statistics file of the `stats` part (the reproduction).
const STATS_JUNK_BYTES: u64 = 1 << 30;

pub fn run(args: &[String]) -> ExitCode {
    let all = ["glob", "stats"];
    let parts: Vec<&str> = if args.is_empty() {
        all.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    if let Some(unknown) = parts.iter().find(|part| !all.contains(part)) {
        eprintln!("unknown part {unknown:?}\n{USAGE}");
        return ExitCode::from(2);
    }
    for part in parts {
        match part {
            "glob" => glob_part(),
            _ => stats_part(),
        }
    }
    ExitCode::SUCCESS
}

/// An `App` over a vault in `scratch`.
fn app_over(scratch: &Path) -> App {
    let flags = RootFlags {
        workspace: Some(scratch.to_owned()),
        manuals: None,
        vault: Some(scratch.join("vault")),
    };
    App::new(Config::load(&|_| None, &flags).expect("configuration"))
}

/// Runs `operation` on its own thread; its duration, or `None` when it is still running
/// after [`GIVE_UP`] (the thread is then abandoned; the process exit ends it).
fn timed<T: Send + 'static>(operation: impl FnOnce() -> T + Send + 'static) -> Option<Duration> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let started = Instant::now();
        operation();
        let _ = sender.send(started.elapsed());
    });
    receiver.recv_timeout(GIVE_UP).ok()
}

fn glob_part() {
    let scratch = Scratch::new("faults-glob");
    let deep: Vec<String> = (0..GLOB_DEPTH).map(|level| format!("d{level}")).collect();
    let deep_folder = scratch.0.join("vault").join(deep.join("/"));
    fs::create_dir_all(&deep_folder).expect("deep folder");
    fs::write(deep_folder.join("x.md"), "deep\n").expect("deep file");
    fs::create_dir_all(scratch.0.join("vault/top")).expect("folder");
    fs::write(scratch.0.join("vault/top/y.md"), "top\n").expect("file");
    let app = Arc::new(app_over(&scratch.0));
    let list = |glob: String| {
        let app = Arc::clone(&app);
        timed(move || app.call("vault_ls", json!({ "glob": glob })))
    };
    // The fastest of three, so the first call's vault opening is not counted.
    let baseline = (0..3)
        .filter_map(|_| list("y.md".into()))
        .min()
        .expect("the plain listing answers");
    println!("\n### glob: vault_ls over a {GLOB_DEPTH}-folder-deep file\n");
    println!("| glob | time | / plain glob `y.md` |");
    println!("|---|---:|---:|");
    println!("| `y.md` | {} | 1.0x |", millis(baseline));
    // Repeated `**` alone (merged into one since the fix), and `**` between components
    // that cannot merge.
    for repeated in ["**/", "**/d*/"] {
        for stars in [1, 2, 4, 6, 8, 10, 12, 16, 24] {
            let glob = format!("{}y.md", repeated.repeat(stars));
            let shown = format!("`{repeated}` × {stars} + `y.md`");
            match list(glob) {
                Some(took) => println!(
                    "| {shown} | {} | {:.1}x |",
                    millis(took),
                    took.as_secs_f64() / baseline.as_secs_f64()
                ),
                None => {
                    println!("| {shown} | gave up after {} s | |", GIVE_UP.as_secs());
                    break;
                }
            }
        }
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

/// The `manvault` binary built beside this one.
fn server_binary() -> PathBuf {
    let bench = std::env::current_exe().expect("own path");
    bench.with_file_name("manvault")
}

/// What one server start cost.
struct Start {
    /// Until the `initialize` reply; `None` when it did not come within [`GIVE_UP`].
    initialize: Option<Duration>,
    stderr_bytes: u64,
    stderr_lines: u64,
}

/// Starts the server on `workspace`, sends `initialize`, closes stdin once answered (or
/// given up on), and counts what it wrote to stderr until it exits (at most
/// [`GIVE_UP`] more, then it is killed).
fn start_server(workspace: &Path) -> Start {
    let mut child = Command::new(server_binary())
        .arg("serve")
        .env("WORKSPACE_ROOT", workspace)
        .env("LOG_LEVEL", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start manvault (build it with the bench: cargo build --release)");
    let mut stderr = child.stderr.take().expect("stderr");
    let counted = std::thread::spawn(move || {
        let (mut bytes, mut lines, mut buffer) = (0u64, 0u64, vec![0u8; 1 << 16]);
        while let Ok(read) = stderr.read(&mut buffer) {
            if read == 0 {
                break;
            }
            bytes += read as u64;
            lines += memchr::memchr_iter(b'\n', &buffer[..read]).count() as u64;
        }
        (bytes, lines)
    });
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let started = Instant::now();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}});
    writeln!(stdin, "{request}").expect("write initialize");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        if let Some(Ok(_reply)) = stdout.lines().next() {
            let _ = sender.send(started.elapsed());
        }
    });
    let initialize = receiver.recv_timeout(GIVE_UP).ok();
    drop(stdin);
    let deadline = Instant::now() + GIVE_UP;
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let (stderr_bytes, stderr_lines) = counted.join().unwrap_or_default();
    Start {
        initialize,
        stderr_bytes,
        stderr_lines,
    }
}

fn stats_part() {
    let scratch = Scratch::new("faults-stats");
    let stats = scratch.0.join("vault/.system/adaptive_stats.jsonl");
    fs::create_dir_all(stats.parent().expect("folder")).expect("folder");
    let without = start_server(&scratch.0);
    let mut junk = BufWriter::new(File::create(&stats).expect("statistics file"));
    let (mut written, mut line) = (0u64, 0u64);
    while written < STATS_JUNK_BYTES {
        let text = format!("junk line {line}\n");
        junk.write_all(text.as_bytes()).expect("write junk");
        written += text.len() as u64;
        line += 1;
    }
    junk.flush().expect("write junk");
    drop(junk);
    let with = start_server(&scratch.0);
    println!("\n### stats: server start on a 1 GiB statistics file of {line} junk lines\n");
    println!("| statistics file | initialize answered after | stderr | stderr lines |");
    println!("|---|---:|---:|---:|");
    for (name, start) in [("none", &without), ("1 GiB of junk", &with)] {
        let initialize = start
            .initialize
            .map_or_else(|| format!("not within {} s", GIVE_UP.as_secs()), millis);
        println!(
            "| {name} | {initialize} | {} | {} |",
            bytes(start.stderr_bytes),
            start.stderr_lines
        );
    }
}

fn bytes(count: u64) -> String {
    match count {
        0..1024 => format!("{count} B"),
        1024..1_048_576 => format!("{:.1} KiB", count as f64 / 1024.0),
        _ => format!("{:.1} MiB", count as f64 / 1_048_576.0),
    }
}
