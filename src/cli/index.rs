//! `manvault index`: builds, ahead of time, the caches a server would otherwise fill in the
//! background while it answers, so that a large manual set is prepared once (with a
//! progress bar and the time left) instead of searched half-prepared for hours.
//!
//! The command reads the manuals once, then runs [`STEPS`] in order over that index. A
//! step is a name and a function; adding a cache is adding a [`Step`]. Each step reports
//! its progress to a [`Meter`] (an indicatif bar on a terminal, a [`ProgressLog`] line
//! every few seconds otherwise) and ends with one line on stdout saying what it did, or a
//! problem (exit 1, the following steps still run: each cache stands on its own).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::manual::find::build_section_index;
use crate::manual::vectors::SectionVectors;
use crate::manual::{CatalogStore, ManualIndex};
use crate::progress::ProgressLog;

/// One cache-building step.
pub(super) struct Step {
    /// What the bar, the log lines and the report call it.
    pub name: &'static str,
    /// Builds the cache from the manuals; answers the report line, or the problem.
    pub run: fn(&Config, &ManualIndex, &mut Meter) -> Result<String, String>,
}

/// The steps, in the order they run.
pub(super) const STEPS: &[Step] = &[
    Step {
        name: "section index",
        run: index_sections,
    },
    Step {
        name: "embed sections",
        run: embed_sections,
    },
];

/// Where a step reports how far it is.
pub(super) struct Meter {
    step: &'static str,
    bar: Option<ProgressBar>,
    log: ProgressLog,
}

impl Meter {
    fn new(step: &'static str, terminal: bool) -> Meter {
        Meter {
            step,
            bar: terminal.then(|| {
                let bar = ProgressBar::new(0);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:30}] {pos}/{len} {wide_msg:.dim} {elapsed} elapsed, ETA {eta}",
                    )
                    .expect("a valid template")
                    .progress_chars("=> "),
                );
                bar.set_message(step);
                bar
            }),
            log: ProgressLog::start(),
        }
    }

    /// `done` of `total` `unit`s are done. The bar's rate counts from the first report,
    /// so work found already done (cached) does not make the time left look short.
    pub(super) fn update(&mut self, done: u64, total: u64, unit: &str) {
        match &self.bar {
            Some(bar) => {
                let first = bar.length() == Some(0);
                bar.set_length(total);
                bar.set_position(done);
                if first {
                    bar.reset_eta();
                }
            }
            None => self.log.step(self.step, unit, done, total),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Runs every step over the manuals of `config`; exit 1 when one of them failed.
pub(super) fn run(config: &Config) -> ExitCode {
    let terminal = std::io::stderr().is_terminal();
    let started = Instant::now();
    let catalog = CatalogStore::open(&config.cache_dir, &config.vault_root);
    let index = match ManualIndex::build_reporting(
        &config.manuals_root,
        config.max_manual_file_bytes,
        catalog,
        &mut |_| {},
    ) {
        Ok(index) => index,
        Err(error) => {
            eprintln!("manvault index: the manuals cannot be read: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "read manuals: {} in {:.1} s",
        super::totals(&index).describe(),
        started.elapsed().as_secs_f64()
    );
    let mut failed = false;
    for step in STEPS {
        let started = Instant::now();
        let mut meter = Meter::new(step.name, terminal);
        let outcome = (step.run)(config, &index, &mut meter);
        meter.finish();
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok(report) => println!("{}: {report} ({seconds:.1} s)", step.name),
            Err(problem) => {
                failed = true;
                println!("{}: FAILED after {seconds:.1} s: {problem}", step.name);
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Indexes every section the section index under `CACHE_DIR` does not hold in its
/// current version (all of them the first time), so a server answers from the index at
/// once instead of building it on its first search.
fn index_sections(
    config: &Config,
    index: &ManualIndex,
    meter: &mut Meter,
) -> Result<String, String> {
    let built = build_section_index(
        &config.cache_dir,
        &config.vault_root,
        index,
        &mut |written| meter.update(written.files, written.total_files, "files"),
    )?;
    Ok(format!(
        "{} files ({} sections, {:.1} MB of text) indexed now, {} were current; {:.1} MB on disk",
        built.files,
        built.sections,
        built.bytes as f64 / 1e6,
        built.current,
        built.disk_bytes as f64 / 1e6
    ))
}

/// Embeds every section not in the vector cache yet (semantic recall); nothing to do
/// without `EMBEDDINGS_URL`.
fn embed_sections(
    config: &Config,
    index: &ManualIndex,
    meter: &mut Meter,
) -> Result<String, String> {
    let Some(vectors) = SectionVectors::from_config(config) else {
        return Ok("nothing to do: EMBEDDINGS_URL is unset, semantic recall is off".to_owned());
    };
    let done = vectors
        .fill(index, &mut |progress| {
            let total = progress.sections as u64;
            meter.update(total - progress.pending as u64, total, "sections");
        })
        .map_err(|error| format!("{error} (what was embedded so far stays cached)"))?;
    let cache = vectors.cache_file_bytes().map_or(
        "in memory only: CACHE_DIR is not usable".to_owned(),
        |bytes| format!("cache {:.2} MB", bytes as f64 / 1e6),
    );
    Ok(format!(
        "{} sections ({} passages embedded now, the others cached or shared); {cache}",
        done.sections, done.embedded
    ))
}
