//! `manvault-bench normalize`: the normaliser's throughput on one core, beside ripgrep's
//! one-thread scan of the same files in the same run.
//!
//! Normalisation (NFKC, case, look-alikes, whitespace, numerals, and the map back) is the
//! cost of an index build, of a server's vault cache fill and of a warm search's
//! verification, so its MB/s is what those paths can reach. Each folder named is read into
//! memory once (every UTF-8 file under it, symlinks not followed); `--vault-notes` adds
//! the vault bench's generated notes (100 MB) in a scratch folder, `--vault-notes-in DIR`
//! in `DIR`, kept (built there unless `DIR` exists), e.g. for
//! docs/checks/normalize-oracle/run.sh. Every file is normalised `--runs` times
//! (median shown); the ripgrep row is `rg -j1 -F -c LITERAL` over the same folder.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::common::{percentile, ripgrep_times, ripgrep_version, usage_error, Scratch};
use super::vault::{build_vault, load_average};

const USAGE: &str = "[DIR...] [--vault-notes | --vault-notes-in DIR] [--runs N] [--literal TEXT]";
/// One literal that occurs in all three corpora now and then, so ripgrep does its usual
/// work of scanning and counting.
const DEFAULT_LITERAL: &str = "error";

struct Options {
    folders: Vec<PathBuf>,
    vault_notes: bool,
    vault_notes_in: Option<PathBuf>,
    runs: usize,
    literal: String,
}

/// Runs the normaliser bench.
pub fn run(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => return usage_error("normalize", &format!("{message}\nusage: {USAGE}")),
    };
    let scratch = options.vault_notes.then(|| Scratch::new("normalize"));
    let mut folders = options.folders.clone();
    if let Some(scratch) = &scratch {
        let notes = scratch.0.join("notes");
        build_vault(&notes);
        folders.push(notes);
    }
    if let Some(notes) = &options.vault_notes_in {
        if !notes.exists() {
            build_vault(notes);
        }
        folders.push(notes.clone());
    }
    println!(
        "| corpus | files | MB | manvault normalize MB/s | rg -j1 -c MB/s | manvault / rg time |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for folder in &folders {
        bench_folder(folder, &options);
    }
    println!();
    println!(
        "{} runs each, median; one thread; files in memory for manvault, page cache warm for rg \
         (its times include starting the process); {}; load average {}.",
        options.runs,
        ripgrep_version().unwrap_or_else(|| "ripgrep absent".into()),
        load_average()
    );
    ExitCode::SUCCESS
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        folders: Vec::new(),
        vault_notes: false,
        vault_notes_in: None,
        runs: 5,
        literal: DEFAULT_LITERAL.into(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--vault-notes" => options.vault_notes = true,
            "--vault-notes-in" => {
                let folder = args.next().ok_or("--vault-notes-in needs a folder")?;
                options.vault_notes_in = Some(PathBuf::from(folder));
            }
            "--runs" => {
                let runs = args.next().ok_or("--runs needs a number")?;
                options.runs = runs
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("--runs needs a positive number")?;
            }
            "--literal" => options.literal = args.next().ok_or("--literal needs text")?.clone(),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            folder => options.folders.push(PathBuf::from(folder)),
        }
    }
    if options.folders.is_empty() && !options.vault_notes && options.vault_notes_in.is_none() {
        return Err("name a folder, --vault-notes or --vault-notes-in".into());
    }
    Ok(options)
}

fn bench_folder(folder: &Path, options: &Options) {
    let mut texts = Vec::new();
    read_texts(folder, &mut texts);
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut times: Vec<Duration> = (0..options.runs)
        .map(|_| {
            let started = Instant::now();
            let kept: usize = texts
                .iter()
                .map(|text| manvault::bench_hooks::normalize_kept_bytes(text))
                .sum();
            std::hint::black_box(kept);
            started.elapsed()
        })
        .collect();
    let ours = percentile(&mut times, 50);
    let theirs = ripgrep_times(
        folder,
        std::iter::repeat_n(options.literal.as_str(), options.runs),
    )
    .map(|mut times| percentile(&mut times, 50));
    let mb = bytes as f64 / 1e6;
    let rate = |time: Duration| format!("{:.0}", mb / time.as_secs_f64());
    let (rg_rate, ratio) = match theirs {
        Some(theirs) => (
            rate(theirs),
            format!("{:.1}x", ours.as_secs_f64() / theirs.as_secs_f64()),
        ),
        None => ("n/a".into(), "n/a".into()),
    };
    println!(
        "| {} | {} | {mb:.1} | {} | {rg_rate} | {ratio} |",
        folder.display(),
        texts.len(),
        rate(ours)
    );
}

/// Every UTF-8 regular file under `folder`, in path order; symlinks are not followed.
fn read_texts(folder: &Path, texts: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            read_texts(&path, texts);
        } else if meta.is_file() {
            if let Ok(text) = fs::read_to_string(&path) {
                texts.push(text);
            }
        }
    }
}
