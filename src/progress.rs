//! Progress of long builds (the manual index, the steps of `manvault index`), for the
//! person waiting on them.
//!
//! Indexing tens of megabytes of manuals takes seconds, embedding them hours; without a
//! word in the log the program looks hung. A build reports what it has done so far as
//! often as it likes (cheap: it only compares a clock), and [`ProgressLog`] turns those
//! calls into one log line every few seconds: an index build's totals
//! ([`ProgressLog::update`]), or a step's `done of total` with the time left
//! ([`ProgressLog::step`]; a terminal gets an indicatif bar instead, see `cli::index`).
//! Counts only: never a path or a file's text.

use std::time::{Duration, Instant};

/// How often a running build writes a progress line.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// What an index build has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IndexProgress {
    pub manuals: u64,
    /// Files found (within `MAX_MANUAL_FILE_BYTES`); `files` counts up to it.
    pub files_found: u64,
    pub files: u64,
    pub sections: u64,
    pub bytes: u64,
}

impl IndexProgress {
    /// `3 manuals, 42 files, 120 sections, 1.2 MB` (kB below a megabyte).
    pub(crate) fn describe(&self) -> String {
        let size = if self.bytes < 1_000_000 {
            format!("{:.0} kB", self.bytes as f64 / 1_000.0)
        } else {
            format!("{:.1} MB", self.bytes as f64 / 1_000_000.0)
        };
        format!(
            "{} manuals, {} files, {} sections, {size}",
            self.manuals, self.files, self.sections
        )
    }
}

/// What a build calls with its running totals, as often as it likes.
pub(crate) type ProgressFn<'a> = dyn FnMut(IndexProgress) + 'a;

/// Turns a build's progress calls into a log line every [`PROGRESS_EVERY`].
#[derive(Debug)]
pub(crate) struct ProgressLog {
    started: Instant,
    last_line: Instant,
    /// A step's `done` at its first report, and when.
    first_done: Option<(u64, Instant)>,
}

impl ProgressLog {
    pub(crate) fn start() -> ProgressLog {
        Self::start_at(Instant::now())
    }

    fn start_at(now: Instant) -> ProgressLog {
        ProgressLog {
            started: now,
            last_line: now,
            first_done: None,
        }
    }

    /// Logs `progress` when the last line is [`PROGRESS_EVERY`] old; use it as the build's
    /// [`ProgressFn`]: `&mut |progress| log.update(progress)`.
    pub(crate) fn update(&mut self, progress: IndexProgress) {
        if let Some(elapsed) = self.due(Instant::now()) {
            tracing::info!(
                files = progress.files,
                sections = progress.sections,
                mb = progress.bytes as f64 / 1_000_000.0,
                elapsed_s = elapsed.as_secs_f64(),
                "indexing manuals: {} so far, {:.0} s",
                progress.describe(),
                elapsed.as_secs_f64()
            );
        }
    }

    /// Logs a step's progress, `done` of `total` `unit`s, with the time left at the rate
    /// since the first call (work found already done, such as cached vectors, does not
    /// count as speed), when the last line is [`PROGRESS_EVERY`] old.
    pub(crate) fn step(&mut self, step: &str, unit: &str, done: u64, total: u64) {
        let now = Instant::now();
        let first = *self.first_done.get_or_insert((done, now));
        if let Some(elapsed) = self.due(now) {
            let left = time_left(first, (done, now), total);
            tracing::info!(
                step,
                done,
                total,
                elapsed_s = elapsed.as_secs_f64(),
                left_s = left.map(|left| left.as_secs_f64()),
                "{step}: {done} of {total} {unit}, {:.0} s, {}",
                elapsed.as_secs_f64(),
                left.map_or("time left unknown".to_owned(), |left| format!(
                    "about {:.0} s left",
                    left.as_secs_f64()
                ))
            );
        }
    }

    /// How long the build has run, when a line is due at `now` (and then counts it as
    /// written).
    fn due(&mut self, now: Instant) -> Option<Duration> {
        if now.duration_since(self.last_line) < PROGRESS_EVERY {
            return None;
        }
        self.last_line = now;
        Some(now.duration_since(self.started))
    }

    /// Time since the build started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The time `total` takes at the rate from `first` to `now` (each a `done` count and an
/// instant); `None` before anything was done.
fn time_left(first: (u64, Instant), now: (u64, Instant), total: u64) -> Option<Duration> {
    let done = now.0.saturating_sub(first.0);
    if done == 0 {
        return None;
    }
    let per_unit = now.1.duration_since(first.1).as_secs_f64() / done as f64;
    Some(Duration::from_secs_f64(
        per_unit * total.saturating_sub(now.0) as f64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_due_every_few_seconds_not_on_every_call() {
        let start = Instant::now();
        let mut log = ProgressLog::start_at(start);
        assert_eq!(log.due(start + Duration::from_millis(10)), None);
        assert_eq!(log.due(start + PROGRESS_EVERY / 2), None);
        assert_eq!(log.due(start + PROGRESS_EVERY), Some(PROGRESS_EVERY));
        assert_eq!(log.due(start + PROGRESS_EVERY + PROGRESS_EVERY / 2), None);
        assert_eq!(
            log.due(start + PROGRESS_EVERY * 2),
            Some(PROGRESS_EVERY * 2)
        );
    }

    #[test]
    fn time_left_follows_the_rate_since_the_first_report() {
        let start = Instant::now();
        // 100 found done (cached), then 50 more in 10 s: 850 left take 170 s.
        let left = time_left((100, start), (150, start + Duration::from_secs(10)), 1000);
        assert_eq!(left.map(|left| left.as_secs()), Some(170));
        assert_eq!(time_left((100, start), (100, start), 1000), None);
        let done = time_left((0, start), (10, start + Duration::from_secs(1)), 10);
        assert_eq!(done, Some(Duration::ZERO));
    }

    #[test]
    fn progress_reads_as_counts_and_megabytes() {
        let progress = IndexProgress {
            manuals: 2,
            files_found: 40,
            files: 40,
            sections: 900,
            bytes: 12_345_678,
        };
        assert_eq!(
            progress.describe(),
            "2 manuals, 40 files, 900 sections, 12.3 MB"
        );
        let small = IndexProgress {
            bytes: 45_600,
            ..progress
        };
        assert_eq!(small.describe(), "2 manuals, 40 files, 900 sections, 46 kB");
    }
}
