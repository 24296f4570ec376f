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
use std::sync::Arc;
use std::thread::JoinHandle;

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

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

/// Dropping it ends the reading thread (and with its descriptor every watch).
#[derive(Debug)]
pub(super) struct Watcher {
    /// An eventfd the thread polls beside the inotify descriptor: written on drop, it
    /// wakes the thread whatever became of the watched folders (an event in the barrier
    /// folder could not, once something removed that folder).
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    pub(super) fn start(
        barriers: &Path,
        folders: &[PathBuf],
        reports: Arc<Reports>,
    ) -> io::Result<Watcher> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        let barrier_watch = inotify::add_watch(&fd, barriers, BARRIER_EVENTS)?;
        for folder in folders {
            inotify::add_watch(&fd, folder, FOLDER_EVENTS)?;
        }
        let wake = eventfd(0, EventfdFlags::CLOEXEC)?;
        let woken = wake.try_clone()?;
        let thread = std::thread::Builder::new()
            .name("manual-watch".into())
            .spawn(move || read_events(&fd, &woken, barrier_watch, &reports))?;
        Ok(Watcher {
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Should the write fail (it cannot on an eventfd below its maximum count), the
        // thread is left blocked (detached) rather than joined forever.
        let woken = rustix::io::write(&self.wake, &1u64.to_ne_bytes()).is_ok();
        if let Some(thread) = self.thread.take().filter(|_| woken) {
            let _ = thread.join();
        }
    }
}

/// The thread: waits for events or the wake, then reads every queued event. Every event
/// but a barrier's is a change; a failed wait or read (which ends the thread) is one too,
/// so the watch is not trusted after it.
fn read_events(fd: &OwnedFd, wake: &OwnedFd, barrier_watch: i32, reports: &Reports) {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 16 * 1024];
    let mut events = inotify::Reader::new(fd, &mut buffer);
    loop {
        let mut waiting = [
            PollFd::new(fd, PollFlags::IN),
            PollFd::new(wake, PollFlags::IN),
        ];
        match poll(&mut waiting, None) {
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(_) => return reports.change(),
        }
        if !waiting[1].revents().is_empty() {
            return;
        }
        loop {
            let event = match events.next() {
                Ok(event) => event,
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(_) => return reports.change(),
            };
            let in_barrier_folder =
                event.wd() == barrier_watch && !event.events().contains(ReadFlags::IGNORED);
            if !in_barrier_folder {
                // Any event in a watched folder, a queue overflow (`IN_Q_OVERFLOW`, no
                // watch) or a watch the kernel dropped (`IN_IGNORED`: its folder went).
                reports.change();
            } else if let Some(number) = barrier_number(&event) {
                reports.barrier(number);
            }
        }
    }
}

/// The number a barrier file is named by.
fn barrier_number(event: &inotify::Event<'_>) -> Option<u64> {
    event.file_name()?.to_str().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch of one empty folder, with its barrier folder and its reports.
    fn watching() -> (tempfile::TempDir, tempfile::TempDir, Arc<Reports>, Watcher) {
        let barriers = tempfile::tempdir().expect("temp dir");
        let watched = tempfile::tempdir().expect("temp dir");
        let reports = Arc::new(Reports::default());
        let watcher = Watcher::start(
            barriers.path(),
            &[watched.path().to_path_buf()],
            Arc::clone(&reports),
        )
        .expect("watch");
        (barriers, watched, reports, watcher)
    }

    /// The wake does not go through the barrier folder: a watch whose folder something
    /// removed still ends its thread when dropped, instead of leaving it (and its
    /// inotify descriptor with every watch) blocked for the life of the process.
    #[test]
    fn a_dropped_watch_ends_its_thread_even_when_its_barrier_folder_is_gone() {
        let (barriers, _watched, reports, watcher) = watching();
        let barrier_path = barriers.path().to_path_buf();
        barriers.close().expect("remove the barrier folder");
        assert!(!barrier_path.exists());
        drop(watcher);
        assert_eq!(
            Arc::strong_count(&reports),
            1,
            "the thread ended and dropped its reports"
        );
    }

    #[test]
    fn events_still_arrive_and_barriers_still_count() {
        let (barriers, watched, reports, _watcher) = watching();
        std::fs::write(barriers.path().join("7"), "").expect("barrier");
        std::fs::write(watched.path().join("a.md"), "# A\n").expect("edit");
        let seen = reports.seen();
        let (seen, _) = reports
            .arrived
            .wait_timeout_while(seen, std::time::Duration::from_secs(10), |seen| {
                !seen.changed || seen.barrier < 7
            })
            .expect("not poisoned");
        assert!(seen.changed && seen.barrier == 7);
    }
}
