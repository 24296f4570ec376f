//! The watch through the `notify` crate (FSEvents on macOS), where the kernel's own
//! interface is not used directly.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use super::Reports;

/// Dropping it ends the watch.
#[derive(Debug)]
pub(super) struct Watcher {
    /// Held for its thread, never read.
    _watcher: RecommendedWatcher,
}

impl Watcher {
    pub(super) fn start(
        barriers: &Path,
        folders: &[PathBuf],
        reports: Arc<Reports>,
    ) -> io::Result<Watcher> {
        let barriers_seen = barriers.to_path_buf();
        let mut watcher = notify::recommended_watcher(move |event| {
            record(&reports, event, &barriers_seen);
        })
        .map_err(io::Error::other)?;
        // All at once: FSEvents restarts its stream for every separate `watch`.
        let mut paths = watcher.paths_mut();
        paths
            .add(barriers, RecursiveMode::NonRecursive)
            .map_err(io::Error::other)?;
        for folder in folders {
            paths
                .add(folder, RecursiveMode::NonRecursive)
                .map_err(io::Error::other)?;
        }
        paths.commit().map_err(io::Error::other)?;
        Ok(Watcher { _watcher: watcher })
    }
}

/// Runs on the watcher's thread for every event.
fn record(reports: &Reports, event: notify::Result<Event>, barriers: &Path) {
    match event {
        Ok(event) if !event.need_rescan() && is_only_below(&event, barriers) => {
            let numbers = event.paths.iter().filter_map(|path| barrier_number(path));
            if let Some(number) = numbers.max() {
                reports.barrier(number);
            }
        }
        Ok(event) if is_read(&event.kind) => {}
        // A change, a lost event (`need_rescan`) or an error.
        _ => reports.change(),
    }
}

fn is_only_below(event: &Event, folder: &Path) -> bool {
    !event.paths.is_empty() && event.paths.iter().all(|path| path.starts_with(folder))
}

fn barrier_number(path: &Path) -> Option<u64> {
    path.file_name()?.to_str()?.parse().ok()
}

/// Reads change nothing the index holds (and the index's own loading opens every file
/// it reads).
fn is_read(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(
            AccessKind::Open(_) | AccessKind::Read | AccessKind::Close(AccessMode::Read)
        )
    )
}
