//! `manvault-bench faults`: the defects of issue 12 measured, so that a fix can be
//! compared with the code before it (check the old files out, rerun) and a regression
//! shows as a number. Each part prints a Markdown table; docs/faults.md ("Faults and hostile
//! input") quotes a run.
//!
//! * `glob`: `vault_ls` with `k` repeated `**/` (and `**/d*/`, which cannot be merged)
//!   over a 24-folder-deep vault, beside the same listing with a plain glob in the same
//!   run; a call still running after [`GIVE_UP`] is reported as such and larger `k` are
//!   skipped.
//! * `stats`: the `manvault` binary started on a 1 GiB statistics file of junk lines,
//!   beside a start with no statistics file: time until `initialize` is answered, and
//!   the bytes and lines written to stderr.
//! * `replace`: `vault_replace` in a loop while another process (this binary, part
//!   `editor-loop`) saves the same file by rename every 20-60 ms: editor saves later
//!   found overwritten by older content (lost), and conflicts answered.
//! * `append`: the `manvault` binary killed (SIGKILL) while it appends 15 MiB to a daily
//!   log, then the file checked after the next append: cut appends left in the log; and
//!   the time of a 1 KiB append, the price of making it all or nothing.
//! * `snapshot`: `manual_toc` timed while other threads run `manual_find` back to back on
//!   the handbook bench copied six times (about 55 MB), beside `manual_toc` alone in the
//!   same run: a search must not hold up the other manual tools (item 10).

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

use super::common::{app_for, call, percentile, Scratch};
use super::find::copy_tree;

const USAGE: &str =
    "usage: manvault-bench faults [glob] [stats] [replace] [append] [snapshot]   (default: all parts)";

/// How long one measured operation may run before the bench stops waiting for it.
const GIVE_UP: Duration = Duration::from_secs(60);

/// Depth of the deep file of the `glob` part (the reproduction).
const GLOB_DEPTH: usize = 24;

/// Size of the junk statistics file of the `stats` part (the reproduction).
const STATS_JUNK_BYTES: u64 = 1 << 30;

/// How long the `replace` part races the editor.
const RACE: Duration = Duration::from_secs(15);

/// The `append` part's kills, and the size of each killed append.
const APPEND_KILLS: usize = 30;
const KILLED_APPEND_BYTES: usize = 15 * 1024 * 1024;

pub fn run(args: &[String]) -> ExitCode {
    if let [part, file, millis] = args {
        if part == "editor-loop" {
            let millis = millis.parse().expect("milliseconds");
            editor_loop(Path::new(file), Duration::from_millis(millis));
            return ExitCode::SUCCESS;
        }
    }
    let all = ["glob", "stats", "replace", "append", "snapshot"];
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
            "stats" => stats_part(),
            "replace" => replace_part(),
            "append" => append_part(),
            _ => snapshot_part(),
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

/// Writes `content` at `relative` in the vault of `scratch`; its path.
fn vault_file(scratch: &Scratch, relative: &str, content: &str) -> PathBuf {
    let file = scratch.0.join("vault").join(relative);
    fs::create_dir_all(file.parent().expect("a folder")).expect("folder");
    fs::write(&file, content).expect("vault file");
    file
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

/// `manvault serve` on `workspace`, stdin and stdout piped.
fn spawn_server(workspace: &Path, log_level: &str, stderr: Stdio) -> std::process::Child {
    Command::new(server_binary())
        .arg("serve")
        .env("WORKSPACE_ROOT", workspace)
        .env("LOG_LEVEL", log_level)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start manvault (build it with the bench: cargo build --release)")
}

fn initialize_request() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
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
    let mut child = spawn_server(workspace, "warn", Stdio::piped());
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
    writeln!(stdin, "{}", initialize_request()).expect("write initialize");
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

/// The number after `key: ` on its line of `text`.
fn counter(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(": "))
        .and_then(|value| value.trim().parse().ok())
}

/// The editor of the `replace` part, run as its own process for `duration`: every 20-60
/// ms it reads the file, counts a lost save when its own last counter is not there,
/// bumps the counter and saves by rename as editors do. Prints `saves lost`.
fn editor_loop(file: &Path, duration: Duration) {
    let temporary = file.with_file_name(".editor-save");
    let (mut saved, mut lost, mut saves) = (0u64, 0u64, 0u64);
    let mut random = 0x2545_f491_4f6c_dd1d_u64;
    let started = Instant::now();
    while started.elapsed() < duration {
        let text = fs::read_to_string(file).expect("read the shared file");
        if counter(&text, "editor") != Some(saved) {
            lost += 1;
        }
        saved += 1;
        let agent = counter(&text, "agent").unwrap_or(0);
        let mut save = File::create(&temporary).expect("editor's temporary file");
        write!(save, "editor: {saved}\nagent: {agent}\n").expect("write the save");
        save.sync_all().expect("sync the save");
        fs::rename(&temporary, file).expect("rename the save");
        saves += 1;
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        std::thread::sleep(Duration::from_millis(20 + random % 41));
    }
    let text = fs::read_to_string(file).expect("read the shared file");
    if counter(&text, "editor") != Some(saved) {
        lost += 1;
    }
    println!("{saves} {lost}");
}

fn replace_part() {
    let scratch = Scratch::new("faults-replace");
    let relative = "notes/shared.md";
    let file = vault_file(&scratch, relative, "editor: 0\nagent: 0\n");
    let app = app_over(&scratch.0);
    let editor = Command::new(std::env::current_exe().expect("own path"))
        .args(["faults", "editor-loop"])
        .arg(&file)
        .arg(RACE.as_millis().to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the editor");
    let (mut replaced, mut conflicts, mut other_errors) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    while started.elapsed() < RACE {
        let Some(Ok(read)) = app.call("vault_read", json!({"path": relative, "full": true})) else {
            continue;
        };
        let agent = counter(read["text"].as_str().unwrap_or(""), "agent").unwrap_or(0);
        let arguments = json!({"path": relative, "find": format!("agent: {agent}\n"),
                               "replace": format!("agent: {}\n", agent + 1)});
        match app.call("vault_replace", arguments).expect("a listed tool") {
            Ok(_) => replaced += 1,
            Err(error) if error.code.as_str() == "conflict" => conflicts += 1,
            Err(_) => other_errors += 1,
        }
    }
    let output = editor.wait_with_output().expect("the editor ends");
    let report = String::from_utf8_lossy(&output.stdout);
    let mut numbers = report
        .split_whitespace()
        .map(|n| n.parse::<u64>().unwrap_or(0));
    let (saves, lost) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    println!(
        "\n### replace: vault_replace racing an editor that saves every 20-60 ms for {} s\n",
        RACE.as_secs()
    );
    println!("| editor saves | lost (overwritten by older content) | replaces | conflicts | other errors |");
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {saves} | {lost} ({:.1}%) | {replaced} | {conflicts} | {other_errors} |",
        100.0 * lost as f64 / saves.max(1) as f64
    );
}

/// The `manvault` binary started on `workspace`, initialized, with a pipe to its stdin.
fn serve(workspace: &Path) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = spawn_server(workspace, "error", Stdio::null());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    writeln!(stdin, "{}", initialize_request()).expect("write initialize");
    let mut reply = String::new();
    stdout.read_line(&mut reply).expect("initialize reply");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write initialized");
    // Nothing more is read: the answer to the append may never come.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    (child, stdin)
}

fn append_part() {
    let scratch = Scratch::new("faults-append");
    let daily = "artifacts/daily/2026-11-25.md";
    let file = vault_file(&scratch, daily, "# log\n");
    let (mut mid_write, mut cut_left) = (0usize, 0usize);
    for kill in 0..APPEND_KILLS {
        let before = fs::read(&file).expect("read the log");
        let line = format!("kill {kill}: a line of the daily log that must never be cut\n");
        let block = line.repeat(KILLED_APPEND_BYTES / line.len());
        let (mut child, mut stdin) = serve(&scratch.0);
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "vault_write", "arguments": {"path": daily, "content": block, "mode": "append"}}});
        writeln!(stdin, "{call}").expect("write the append");
        let deadline = Instant::now() + GIVE_UP;
        let mut size = before.len() as u64;
        while size == before.len() as u64 && Instant::now() < deadline {
            size = fs::metadata(&file).map_or(size, |metadata| metadata.len());
        }
        let _ = child.kill();
        let _ = child.wait();
        if size < (before.len() + block.len()) as u64 {
            mid_write += 1;
        }
        // The next append settles what the killed one left, as the next start would.
        let app = app_over(&scratch.0);
        let marker = format!("after kill {kill}\n");
        let _ = app.call(
            "vault_write",
            json!({"path": daily, "content": marker, "mode": "append"}),
        );
        let after = fs::read(&file).expect("read the log");
        let whole = [before.as_slice(), block.as_bytes(), marker.as_bytes()].concat();
        let nothing = [before.as_slice(), marker.as_bytes()].concat();
        if after != whole && after != nothing {
            cut_left += 1;
            // Start the next run from a log that ends with a whole line.
            let mut repaired = after;
            repaired.truncate(before.len());
            fs::write(&file, repaired).expect("repair the log");
        }
    }
    // The append's price, beside what an append is at the least (open, write, sync the
    // data), interleaved so both see the same load.
    let app = app_over(&scratch.0);
    let (mut tool, mut plain) = (Vec::new(), Vec::new());
    for n in 0..200 {
        let content = format!("{n:>1023}\n");
        let started = Instant::now();
        let _ = app.call(
            "vault_write",
            json!({"path": daily, "content": content, "mode": "append"}),
        );
        tool.push(started.elapsed());
        let started = Instant::now();
        let mut log = fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open the log");
        log.write_all(content.as_bytes())
            .and_then(|()| log.sync_data())
            .expect("append to the log");
        plain.push(started.elapsed());
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (tool, plain) = (median(&mut tool), median(&mut plain));
    println!("\n### append: SIGKILL during a 15 MiB append to a daily log, {APPEND_KILLS} times\n");
    println!("| kills | landed mid-write | logs left with a cut append | 1 KiB `vault_write` append, median of 200 | open + write + fdatasync, same run | ratio |");
    println!("|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {APPEND_KILLS} | {mid_write} | {cut_left} | {} | {} | {:.2}x |",
        millis(tool),
        millis(plain),
        tool.as_secs_f64() / plain.as_secs_f64()
    );
}

/// Copies of the handbook bench the `snapshot` part searches (as `manvault-bench find`).
const SNAPSHOT_COPIES: usize = 6;
/// `manual_toc` calls timed in each condition of the `snapshot` part.
const SNAPSHOT_TOCS: usize = 40;

fn snapshot_part() {
    let handbook =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/manuals/handbook-ja");
    if !handbook.is_dir() {
        println!("snapshot: SKIPPED, {} is absent", handbook.display());
        return;
    }
    let scratch = Scratch::new("snapshot");
    let manuals = scratch.0.join("manuals");
    for copy in 1..=SNAPSHOT_COPIES {
        copy_tree(&handbook, &manuals.join(format!("handbook-{copy}")));
    }
    let app = Arc::new(app_for(
        &manuals,
        &scratch.0,
        Some(&scratch.0.join("vault")),
        &[],
    ));
    let toc = || {
        let started = Instant::now();
        call(&app, "manual_toc", json!({ "manual_id": "handbook-1" }));
        started.elapsed()
    };
    // The first call builds the index; neither condition should pay for it.
    call(&app, "manual_find", json!({ "query": "有給休暇の繰越し" }));
    let mut alone: Vec<Duration> = (0..SNAPSHOT_TOCS).map(|_| toc()).collect();
    let searching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let searches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let finders: Vec<_> = [
        "有給休暇の繰越し",
        "経費精算の締め日と例外",
        "在宅勤務の申請手順",
    ]
    .into_iter()
    .map(|query| {
        let (app, searching, searches) = (
            Arc::clone(&app),
            Arc::clone(&searching),
            Arc::clone(&searches),
        );
        std::thread::spawn(move || {
            while searching.load(std::sync::atomic::Ordering::Relaxed) {
                call(&app, "manual_find", json!({ "query": query }));
                searches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    })
    .collect();
    let mut during: Vec<Duration> = (0..SNAPSHOT_TOCS).map(|_| toc()).collect();
    searching.store(false, std::sync::atomic::Ordering::Relaxed);
    for finder in finders {
        finder.join().expect("finder thread");
    }
    println!("\n### snapshot: manual_toc while manual_find runs ({SNAPSHOT_COPIES} copies of the handbook)\n");
    println!("| manual_toc | p50 | max |");
    println!("|---|---:|---:|");
    let max = |times: &[Duration]| times.iter().max().copied().unwrap_or_default();
    let alone_max = max(&alone);
    let during_max = max(&during);
    println!(
        "| alone | {} | {} |",
        millis(percentile(&mut alone, 50)),
        millis(alone_max)
    );
    println!(
        "| while 3 threads search ({} searches) | {} | {} |",
        searches.load(std::sync::atomic::Ordering::Relaxed),
        millis(percentile(&mut during, 50)),
        millis(during_max)
    );
}
