//! `manvault-bench start`: how soon a freshly started server answers, measured as a
//! client sees it: `manvault serve` spawned over a workspace whose caches `manvault
//! index` built, an MCP `initialize` on its stdin, then the first tool calls, each timed
//! from the spawn to its response. Two openings per run: `manual_find` as the very first
//! call, and `manual_list` then `manual_find` (an agent looking around first). The
//! server's peak resident memory comes from `wait4` once it exits at the end of its
//! input. Baselines, same run: `rg -j1 -F -c` of the query over the same corpus, a fresh
//! process that answers from the files alone; and the floor of any start that trusts a
//! cache only for files as it knows them: a walk of the tree that stats every file
//! (walkdir, one thread, in this process), which a start cannot skip (issue 16: the 300
//! ms bar against that walk's cost on the 24-copy tree).
//!
//! Single-call measurements (`manvault call`) miss what only a server does: its
//! background build at `initialize`, and the freshness check of the next call.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{millis, percentile, ripgrep_times, usage_error, Scratch};
use crate::find::{copy_tree, tree_bytes};

const QUERY: &str = "育児休暇の申請方法";
const MANUAL_ID: &str = "handbook-ja";

struct Options {
    bench: PathBuf,
    copies: usize,
    runs: usize,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        bench: PathBuf::from("../shared/bench"),
        copies: 24,
        runs: 5,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or(format!("{name} needs a number"))?;
            match value.parse() {
                Ok(number) if number > 0 => Ok(number),
                _ => Err(format!("{name} needs a number above 0, not {value:?}")),
            }
        };
        match arg.as_str() {
            "--copies" => options.copies = number("--copies")?,
            "--runs" => options.runs = number("--runs")?,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            bench => options.bench = PathBuf::from(bench),
        }
    }
    Ok(options)
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => return usage_error("start", &message),
    };
    let server = match server_binary() {
        Ok(server) => server,
        Err(message) => return usage_error("start", &message),
    };
    let source = options.bench.join("manuals").join(MANUAL_ID);
    if !source.is_dir() {
        return usage_error("start", &format!("no manual at {}", source.display()));
    }
    let workspace = Scratch::new("start");
    let manuals = workspace.0.join("manuals");
    for copy in 1..=options.copies {
        copy_tree(&source, &manuals.join(format!("{MANUAL_ID}-{copy}")));
    }
    std::fs::create_dir_all(workspace.0.join("vault")).expect("vault folder");
    let bytes = tree_bytes(&manuals);
    let cache = workspace.0.join("cache");
    let started = Instant::now();
    let indexed = Command::new(&server)
        .arg("index")
        .arg("--workspace")
        .arg(&workspace.0)
        .env("CACHE_DIR", &cache)
        .env("LOG_LEVEL", "error")
        .stdout(Stdio::null())
        .status()
        .expect("manvault index runs");
    assert!(indexed.success(), "manvault index failed: {indexed}");
    println!(
        "# Server start ({} copies, {:.1} MB), {}\n\n`manvault index`: {:.1} s\n",
        options.copies,
        bytes as f64 / 1e6,
        crate::common::today(),
        started.elapsed().as_secs_f64()
    );

    let mut find_first = Vec::new();
    let mut list_then_find = Vec::new();
    let mut list_first = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..options.runs {
        let mut session = Session::start(&server, &workspace.0, &cache);
        find_first.push(session.call("manual_find", json!({ "query": QUERY })));
        peaks.push(session.finish());

        let mut session = Session::start(&server, &workspace.0, &cache);
        list_first.push(session.call("manual_list", json!({})));
        list_then_find.push(session.call("manual_find", json!({ "query": QUERY })));
        peaks.push(session.finish());
    }
    let rg = ripgrep_times(&manuals, std::iter::repeat_n(QUERY, options.runs));
    let mut walks: Vec<Duration> = (0..options.runs)
        .map(|_| {
            let started = Instant::now();
            assert_eq!(tree_bytes(&manuals), bytes, "the tree changed");
            started.elapsed()
        })
        .collect();
    print_table(
        &mut find_first,
        &mut list_first,
        &mut list_then_find,
        rg,
        &mut walks,
        &peaks,
        bytes,
    );
    ExitCode::SUCCESS
}

/// `manvault` beside this binary (cargo builds both into one folder).
fn server_binary() -> Result<PathBuf, String> {
    let here = std::env::current_exe().map_err(|error| error.to_string())?;
    let server = here.with_file_name("manvault");
    if server.is_file() {
        Ok(server)
    } else {
        Err(format!(
            "no manvault binary beside this one at {} (cargo build --release --bins)",
            server.display()
        ))
    }
}

/// One server process on stdio, timed from its spawn.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    spawned: Instant,
    next_id: u64,
}

impl Session {
    fn start(server: &Path, workspace: &Path, cache: &Path) -> Session {
        let spawned = Instant::now();
        let mut child = Command::new(server)
            .arg("serve")
            .arg("--workspace")
            .arg(workspace)
            .env("CACHE_DIR", cache)
            .env("LOG_LEVEL", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("manvault serve starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut session = Session {
            child,
            stdin,
            stdout,
            spawned,
            next_id: 0,
        };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "manvault-bench", "version": "1"}}),
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    /// Calls `tool`; the time from the spawn to its answer.
    fn call(&mut self, tool: &str, arguments: Value) -> Duration {
        let answer = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        assert_ne!(
            answer["result"]["isError"],
            json!(true),
            "{tool} failed: {answer}"
        );
        self.spawned.elapsed()
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("server output");
            assert!(read > 0, "the server ended before answering {method}");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message;
            }
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("server input");
        self.stdin.flush().expect("server input");
    }

    /// Closes the server's input (it exits) and returns its peak resident memory in bytes.
    fn finish(self) -> u64 {
        let Session { child, stdin, .. } = self;
        drop(stdin);
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: `rusage` is plain data, zeroed before the call; the pid is our child,
        // not waited for yet (`Child` is dropped without a wait).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(waited, pid, "wait4 on the server");
        drop(child);
        // Linux reports ru_maxrss in kilobytes.
        usage.ru_maxrss as u64 * 1024
    }
}

fn print_table(
    find_first: &mut [Duration],
    list_first: &mut [Duration],
    list_then_find: &mut [Duration],
    rg: Option<Vec<Duration>>,
    walks: &mut [Duration],
    peaks: &[u64],
    bytes: u64,
) {
    let runs = find_first.len();
    println!("| from the spawn to the answer of | p50 ms | min ms | max ms |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, times: &mut [Duration]| {
        let min = times.iter().min().copied().unwrap_or_default();
        let max = times.iter().max().copied().unwrap_or_default();
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} |",
            millis(percentile(times, 50)),
            millis(min),
            millis(max)
        );
    };
    row("manual_find, the first call", find_first);
    row("manual_list, the first call", list_first);
    row("manual_find after manual_list", list_then_find);
    let find_p50 = millis(percentile(find_first, 50));
    let rg_p50 = rg.map(|mut rg| {
        row("rg -j1 -F -c (baseline)", &mut rg);
        millis(percentile(&mut rg, 50))
    });
    row("walk, a stat per file (floor)", walks);
    let walk_p50 = millis(percentile(walks, 50));
    match rg_p50 {
        Some(rg_p50) => println!(
            "\nfirst manual_find / rg p50 = {:.2} (bar: under 300 ms at 220 MB)",
            find_p50 / rg_p50
        ),
        None => println!("\nrg not found: baseline skipped (apt-get install -y ripgrep)"),
    }
    println!(
        "first manual_find / walk p50 = {:.2} (a start checks every file against its cache)",
        find_p50 / walk_p50
    );
    let peak = peaks.iter().copied().max().unwrap_or(0);
    println!(
        "server peak memory (ru_maxrss, {} processes, largest): {:.0} MB = {:.2}x the corpus (bar <= 1.5x)",
        runs * 2,
        peak as f64 / 1e6,
        peak as f64 / bytes as f64
    );
}
