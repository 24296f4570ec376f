//! The watch on Linux, on inotify directly (through `rustix`), asking the kernel only for
//! the events that can change what the index holds.
//!
//! `notify` 8 always asks inotify for `IN_OPEN` as well, so every file or folder the
//! process itself opened (the scan, each search's reads) woke its thread with an event to
//! drop: its thread was 18 % of a server start's CPU at 24 copies of the handbook, arming
//! included. Here the mask leaves opens and reads out, and each watch is added by one
//! `inotify_add_watch` with `IN_ONLYDIR | IN_DONT_FOLLOW` (a folder swapped for a link
//! since the scan is not watched through it) instead of a `stat` and a watch.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use super::Reports;

/// What changes a folder's listing or a file's stamp: content, metadata (a touched mtime),
/// names in or out, the folder itself going.
const FOLDER_EVENTS: WatchFlags = WatchFlags::MODIFY
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// A barrier is one file created in the barrier folder: one event each.
const BARRIER_EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// The name that wakes the reading thread to end it (not a number: no barrier).
const STOP: &str = "stop";

/// Dropping it ends the reading thread (and with its descriptor every watch).
#[derive(Debug)]
pub(super) struct Watcher {
    stop: Arc<AtomicBool>,
    barriers: PathBuf,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    pub(super) fn start(
        barriers: &Path,
        folders: &[PathBuf],
        reports: Arc<Reports>,
    ) -> io::Result<Watcher> {
        let fd = inotify::init(CreateFlags::CLOEXEC)?;
        let barrier_watch = inotify::add_watch(&fd, barriers, BARRIER_EVENTS)?;
        for folder in folders {
            inotify::add_watch(&fd, folder, FOLDER_EVENTS)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("manual-watch".into())
            .spawn(move || read_events(&fd, barrier_watch, &reports, &stopped))?;
        Ok(Watcher {
            stop,
            barriers: barriers.to_path_buf(),
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // The thread blocks in `read`: an event in the barrier folder wakes it. Should
        // that fail, it is left blocked (detached) rather than joined forever.
        let wake = self.barriers.join(STOP);
        let woken = std::fs::File::create(&wake).is_ok();
        let _ = std::fs::remove_file(&wake);
        if let Some(thread) = self.thread.take().filter(|_| woken) {
            let _ = thread.join();
        }
    }
}

/// The thread: every event but a barrier's is a change; a failed read (which ends the
/// thread) is one too, so the watch is not trusted after it.
fn read_events(fd: &OwnedFd, barrier_watch: i32, reports: &Reports, stop: &AtomicBool) {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 16 * 1024];
    let mut events = inotify::Reader::new(fd, &mut buffer);
    loop {
        let event = match events.next() {
            Ok(event) => event,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => {
                reports.change();
                return;
            }
        };
        if stop.load(Ordering::Acquire) {
            return;
        }
        let in_barrier_folder =
            event.wd() == barrier_watch && !event.events().contains(ReadFlags::IGNORED);
        if !in_barrier_folder {
            // Any event in a watched folder, a queue overflow (`IN_Q_OVERFLOW`, no watch)
            // or a watch the kernel dropped (`IN_IGNORED`: its folder went).
            reports.change();
        } else if let Some(number) = barrier_number(&event) {
            reports.barrier(number);
        }
    }
}

/// The number a barrier file is named by; `None` for [`STOP`].
fn barrier_number(event: &inotify::Event<'_>) -> Option<u64> {
    event.file_name()?.to_str().ok()?.parse().ok()
}
