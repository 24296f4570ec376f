//! Progress of the manual index build, for the person waiting on it.
//!
//! Indexing tens of megabytes of manuals takes seconds; without a word in the log the
//! server looks hung. A build reports what it has done so far by calling a
//! [`ProgressFn`] after each file (cheap: it only compares a clock), and [`ProgressLog`]
//! turns those calls into one log line every few seconds and one line when the index is
//! ready. Counts only: never a path or a file's text.

use std::time::{Duration, Instant};

/// How often a running build writes a progress line.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// What an index build has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexProgress {
    pub manuals: u64,
    pub files: u64,
    pub sections: u64,
    pub bytes: u64,
}

impl IndexProgress {
    /// `3 manuals, 42 files, 120 sections, 1.2 MB` (kB below a megabyte).
    pub fn describe(&self) -> String {
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
pub type ProgressFn<'a> = dyn FnMut(IndexProgress) + 'a;

/// Turns a build's progress calls into a log line every [`PROGRESS_EVERY`].
#[derive(Debug)]
pub struct ProgressLog {
    started: Instant,
    last_line: Instant,
}

impl ProgressLog {
    pub fn start() -> ProgressLog {
        Self::start_at(Instant::now())
    }

    fn start_at(now: Instant) -> ProgressLog {
        ProgressLog {
            started: now,
            last_line: now,
        }
    }

    /// Logs `progress` when the last line is [`PROGRESS_EVERY`] old; use it as the build's
    /// [`ProgressFn`]: `&mut |progress| log.update(progress)`.
    pub fn update(&mut self, progress: IndexProgress) {
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
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
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
    fn progress_reads_as_counts_and_megabytes() {
        let progress = IndexProgress {
            manuals: 2,
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
