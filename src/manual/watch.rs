//! Cheap change detection for the manuals tree, so that the freshness check every tool
//! call makes costs a file creation and a wake-up instead of a walk with a `stat` per file
//! (about 50 ms on 5,800 files, more than a third of a warm `manual_find`).
//!
//! The operating system's watcher watches every folder of the tree: inotify directly on
//! Linux (`watch/inotify.rs`, asking only for events that change something), the
//! `notify` crate elsewhere (FSEvents on macOS; `watch/notify.rs`). Any event — or
//! anything the watch cannot vouch for (no watcher, a watch limit reached, a queue
//! overflow, an error, folders that a scan found but that were not watched when it
//! ran) — answers "maybe changed", and
//! the index falls back to the full walk it always did. So the watch can only save work,
//! never hide a change.
//!
//! The watcher delivers events on its own thread, a little after the change, so "no event
//! yet" alone would not mean "no change": an edit made just before the check could still
//! be on its way. Each check therefore sends a barrier through the same watcher: it
//! creates a numbered file in a private folder watched beside the manuals and waits until
//! that file's event comes back. Events arrive in the order the changes happened (one
//! inotify queue; FSEvents' increasing event ids), so once the barrier is back, every
//! change made before the check has been seen. A barrier that does not come back in time
//! answers "maybe changed"; one that never came back on this system turns the watch off
//! for good (every call walks), so a platform whose watcher does not deliver costs a
//! single wait.
//!
//! Only reads are ignored (the index's own opens of the files it loads: inotify is not
//! asked for them, `notify`'s are dropped); a folder swapped for a link after a scan is
//! not watched through it on Linux (`IN_DONT_FOLLOW`), and may be elsewhere, which can
//! only add events.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once, PoisonError};
use std::time::Duration;

#[cfg(target_os = "linux")]
#[path = "watch/inotify.rs"]
mod backend;
#[cfg(not(target_os = "linux"))]
#[path = "watch/notify.rs"]
mod backend;

/// How long a check waits for its barrier before it walks instead. Delivery takes well
/// under a millisecond; this is about the cost of the walk the check would save.
const BARRIER_TIMEOUT: Duration = Duration::from_millis(50);

/// How long the first barrier of a process may take before the watch is judged not to
/// deliver on this system.
const FIRST_BARRIER_TIMEOUT: Duration = Duration::from_secs(1);

/// Distinguishes the barrier folders of the indexes in one process.
static BARRIER_FOLDER_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A barrier folder's name is this, the process id, `-` and the counter.
const BARRIER_FOLDER_PREFIX: &str = "manvault-watch-";

/// The barrier folders of gone processes are removed once per process.
static DEAD_FOLDERS_REMOVED: Once = Once::new();

#[derive(Debug, Default)]
pub(crate) struct ChangeWatch {
    /// The watcher and the folders it watches; `None` when nothing is armed.
    armed: Option<Armed>,
    /// Set when the last scan saw folders the watch did not cover while it ran.
    stale: bool,
    /// Whether a barrier ever came back in this process.
    delivers: bool,
    /// Set when the first barrier did not come back: the watch stays off.
    given_up: bool,
}

impl ChangeWatch {
    /// True unless the watch is armed and has seen nothing (but its barrier) since it was
    /// armed.
    pub(crate) fn maybe_changed(&mut self) -> bool {
        let Some(armed) = &mut self.armed else {
            return true;
        };
        if self.stale {
            return true;
        }
        let timeout = if self.delivers {
            BARRIER_TIMEOUT
        } else {
            FIRST_BARRIER_TIMEOUT
        };
        match armed.changed_until_barrier(timeout) {
            Some(changed) => {
                self.delivers = true;
                changed
            }
            None => {
                if !self.delivers {
                    tracing::debug!(
                        "manual change watch delivers no events; every call walks the tree"
                    );
                    self.given_up = true;
                }
                self.armed = None;
                true
            }
        }
    }

    /// Watches `folders` (the root first) before a scan, so that a change made while the
    /// scan runs shows as an event on the next call. On any failure the watch disarms and
    /// every call walks.
    pub(crate) fn arm(&mut self, folders: &[PathBuf]) {
        self.armed = None;
        self.stale = false;
        if self.given_up {
            return;
        }
        match Armed::watch(folders) {
            Ok(armed) => self.armed = Some(armed),
            Err(error) => {
                tracing::debug!(%error, "manual change watch unavailable; every call walks the tree");
            }
        }
    }

    /// After a scan: if it found folders the watch did not cover, the next call walks
    /// again (and re-arms with them).
    pub(crate) fn scanned(&mut self, folders: &[PathBuf]) {
        if let Some(armed) = &self.armed {
            self.stale = folders.iter().any(|folder| !armed.folders.contains(folder));
        }
    }
}

/// The root and every manual folder below it that a scan walked, for the next arm.
pub(crate) fn folders_of(root: &Path, relative: impl Iterator<Item = String>) -> Vec<PathBuf> {
    std::iter::once(root.to_path_buf())
        .chain(relative.map(|folder| root.join(folder)))
        .collect()
}

/// What the watcher's thread has reported since the watch was armed.
#[derive(Debug, Default)]
struct Seen {
    changed: bool,
    /// The highest barrier number that came back.
    barrier: u64,
}

#[derive(Debug, Default)]
struct Reports {
    seen: Mutex<Seen>,
    arrived: Condvar,
}

impl Reports {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A change, a lost event or an error of the watcher: the next check walks.
    fn change(&self) {
        self.seen().changed = true;
        self.arrived.notify_all();
    }

    /// Barrier `number` came back.
    fn barrier(&self, number: u64) {
        let mut seen = self.seen();
        seen.barrier = seen.barrier.max(number);
        drop(seen);
        self.arrived.notify_all();
    }
}

/// An armed watch. Fields drop in order: the watcher stops before its barrier folder goes.
#[derive(Debug)]
struct Armed {
    /// Held for its thread: dropping it ends the watch.
    _watcher: backend::Watcher,
    reports: Arc<Reports>,
    barriers: BarrierFolder,
    next_barrier: u64,
    /// A set: `scanned` looks up every folder of a scan (thousands in a large tree).
    folders: HashSet<PathBuf>,
}

impl Armed {
    fn watch(folders: &[PathBuf]) -> io::Result<Armed> {
        let barriers = BarrierFolder::create()?;
        let reports = Arc::new(Reports::default());
        let watcher = backend::Watcher::start(&barriers.path, folders, Arc::clone(&reports))?;
        Ok(Armed {
            _watcher: watcher,
            reports,
            barriers,
            next_barrier: 0,
            folders: folders.iter().cloned().collect(),
        })
    }

    /// Whether anything changed since the watch was armed, as seen once every change made
    /// before this call has been delivered; `None` when that could not be established
    /// within `timeout`.
    fn changed_until_barrier(&mut self, timeout: Duration) -> Option<bool> {
        if self.reports.seen().changed {
            return Some(true);
        }
        self.next_barrier += 1;
        let number = self.next_barrier;
        self.barriers.pass(number).ok()?;
        let seen = self.reports.seen();
        let (seen, _) = self
            .reports
            .arrived
            .wait_timeout_while(seen, timeout, |seen| !seen.changed && seen.barrier < number)
            .unwrap_or_else(PoisonError::into_inner);
        if seen.changed {
            Some(true)
        } else if seen.barrier >= number {
            Some(false)
        } else {
            None
        }
    }
}

/// A private folder in the system's temporary folder, watched beside the manuals, where
/// each check creates (and at once removes) a file named by its barrier number.
#[derive(Debug)]
struct BarrierFolder {
    /// Canonical, as watchers report it (on macOS the temporary folder is behind a link).
    path: PathBuf,
}

impl BarrierFolder {
    fn create() -> io::Result<BarrierFolder> {
        let temp = std::env::temp_dir();
        DEAD_FOLDERS_REMOVED.call_once(|| remove_dead_barrier_folders(&temp));
        let mut last_error = None;
        for _ in 0..16 {
            let counter = BARRIER_FOLDER_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{BARRIER_FOLDER_PREFIX}{}-{counter}", std::process::id());
            let path = temp.join(name);
            // Exclusive, and only ours to write in.
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    // Removed again (on drop) if it cannot be resolved.
                    let mut folder = BarrierFolder { path };
                    folder.path = fs::canonicalize(&folder.path)?;
                    return Ok(folder);
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    last_error = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no free barrier folder name")))
    }

    fn pass(&self, number: u64) -> io::Result<()> {
        let path = self.path.join(number.to_string());
        fs::File::create_new(&path)?;
        fs::remove_file(&path)
    }
}

impl Drop for BarrierFolder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Removes the barrier folders in `temp` whose process is gone. A process that ends
/// without dropping its watch (a server stopped by SIGTERM or SIGKILL, as clients stop
/// them, or a crash) leaves its folder behind, and every such start would add one to the
/// system's temporary folder for good. Only real folders (a link is neither followed nor
/// removed) of this user, named by a process id that no process has, are removed. A
/// process in another pid namespace sharing the folder looks gone: removing its folder
/// makes its next barriers fail, which turns its watch off (each of its calls walks the
/// tree), so a change is never hidden.
fn remove_dead_barrier_folders(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    let user = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(barrier_folder_pid) else {
            continue;
        };
        // `DirEntry::metadata` is the entry's own status, not its target's.
        let Ok(status) = entry.metadata() else {
            continue;
        };
        if status.is_dir() && status.uid() == user && process_is_gone(pid) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The process id in a barrier folder's name (`None` for any other name).
fn barrier_folder_pid(name: &str) -> Option<rustix::process::Pid> {
    let (pid, counter) = name.strip_prefix(BARRIER_FOLDER_PREFIX)?.split_once('-')?;
    counter.parse::<u64>().ok()?;
    rustix::process::Pid::from_raw(pid.parse().ok()?)
}

/// Whether no process has this id (one of another user still answers `EPERM`).
fn process_is_gone(pid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process stopped by a signal leaves its barrier folder; the next process's first
    /// watch removes it, and nothing else: a live process's folder, a link with such a
    /// name (nor its target), a file, other names.
    #[test]
    fn only_the_barrier_folders_of_gone_processes_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let named = |pid: u32, rest: &str| {
            temp.path()
                .join(format!("{BARRIER_FOLDER_PREFIX}{pid}{rest}"))
        };
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let dead = named(gone, "-3");
        fs::create_dir(&dead).unwrap();
        // A barrier the signal cut between its creation and its removal.
        fs::write(dead.join("7"), "").unwrap();
        let live = named(std::process::id(), "-0");
        fs::create_dir(&live).unwrap();
        let target = temp.path().join("target");
        fs::create_dir(&target).unwrap();
        let link = named(gone, "-4");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let file = named(gone, "-5");
        fs::write(&file, "").unwrap();
        let without_counter = named(gone, "");
        fs::create_dir(&without_counter).unwrap();

        remove_dead_barrier_folders(temp.path());

        assert!(!dead.exists(), "the gone process's folder is removed");
        for kept in [&live, &target, &file, &without_counter] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    }

    fn armed_on(root: &Path) -> ChangeWatch {
        let mut watch = ChangeWatch::default();
        watch.arm(&[root.to_path_buf()]);
        watch.scanned(&[root.to_path_buf()]);
        watch
    }

    /// The barrier is what makes a change made just before the check visible to it:
    /// without it, the event could still be on the watcher's thread.
    #[test]
    fn a_change_made_just_before_the_check_is_always_seen() {
        let root = tempfile::tempdir().unwrap();
        for round in 0..40 {
            let mut watch = armed_on(root.path());
            assert!(!watch.maybe_changed(), "round {round}: quiet after arming");
            assert!(!watch.maybe_changed(), "round {round}: still quiet");
            fs::write(root.path().join(format!("{round}.md")), "# new\n").unwrap();
            assert!(watch.maybe_changed(), "round {round}: the new file");
        }
    }

    #[test]
    fn reads_are_not_changes_but_edits_and_removals_are() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.md");
        fs::write(&file, "# A\n").unwrap();
        let mut watch = armed_on(root.path());
        fs::read(&file).unwrap();
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1);
        assert!(!watch.maybe_changed(), "a read and a listing");

        let touched = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|opened| opened.set_modified(touched))
            .unwrap();
        assert!(watch.maybe_changed(), "a new mtime, the content as it was");

        let mut watch = armed_on(root.path());
        fs::rename(&file, root.path().join("b.md")).unwrap();
        assert!(watch.maybe_changed(), "a rename");
        fs::rename(root.path().join("b.md"), &file).unwrap();

        fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .and_then(|mut opened| io::Write::write_all(&mut opened, b"more\n"))
            .unwrap();
        assert!(watch.maybe_changed(), "an append");

        let mut watch = armed_on(root.path());
        fs::remove_file(&file).unwrap();
        assert!(watch.maybe_changed(), "a removal");
    }

    #[test]
    fn folders_the_watch_did_not_cover_make_the_next_call_walk() {
        let root = tempfile::tempdir().unwrap();
        let mut watch = armed_on(root.path());
        watch.scanned(&[root.path().to_path_buf(), root.path().join("new")]);
        assert!(watch.maybe_changed());
    }

    #[test]
    fn an_unarmed_watch_always_walks_and_a_dropped_one_leaves_no_folder() {
        assert!(ChangeWatch::default().maybe_changed());
        let root = tempfile::tempdir().unwrap();
        let watch = armed_on(root.path());
        let barriers = watch.armed.as_ref().unwrap().barriers.path.clone();
        assert!(barriers.is_dir());
        drop(watch);
        assert!(!barriers.exists());
    }
}
