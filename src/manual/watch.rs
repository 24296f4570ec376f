//! Cheap change detection for the manuals tree, so that the freshness check every tool
//! call makes costs one non-blocking `read` instead of a walk with a `stat` per file
//! (about 50 ms on 5,800 files, more than a third of a warm `manual_find`).
//!
//! Linux inotify watches every folder of the tree. Any event — or anything the watch
//! cannot vouch for (no inotify, a watch limit reached, a queue overflow, folders that a
//! scan found but that were not watched when it ran) — answers "maybe changed", and the
//! index falls back to the full walk it always did. So the watch can only save work,
//! never hide a change.

use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

/// Events that can change what the index holds.
fn interesting() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::MOVE_SELF
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::ONLYDIR
}

#[derive(Debug, Default)]
pub struct ChangeWatch {
    /// The inotify instance and the folders it watches; `None` when nothing is armed.
    armed: Option<(OwnedFd, Vec<PathBuf>)>,
    /// Set when the last scan saw folders the watch did not cover while it ran.
    stale: bool,
}

impl ChangeWatch {
    /// True unless the watch is armed and has seen nothing since it was armed.
    pub fn maybe_changed(&mut self) -> bool {
        let Some((fd, _)) = &self.armed else {
            return true;
        };
        if self.stale {
            return true;
        }
        let mut buffer = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(fd, &mut buffer);
        match reader.next() {
            Err(Errno::AGAIN) => false,
            _ => true, // an event, an overflow or an error: walk
        }
    }

    /// Watches `folders` (the root first) before a scan, so that a change made while the
    /// scan runs shows as an event on the next call. On any failure the watch disarms and
    /// every call walks.
    pub fn arm(&mut self, folders: &[PathBuf]) {
        self.armed = None;
        self.stale = false;
        let Ok(fd) = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) else {
            return;
        };
        for folder in folders {
            if inotify::add_watch(&fd, folder.as_path(), interesting()).is_err() {
                tracing::debug!("manual change watch unavailable; every call walks the tree");
                return;
            }
        }
        self.armed = Some((fd, folders.to_vec()));
    }

    /// After a scan: if it found folders the watch did not cover, the next call walks
    /// again (and re-arms with them).
    pub fn scanned(&mut self, folders: &[PathBuf]) {
        if let Some((_, watched)) = &self.armed {
            self.stale = folders.iter().any(|folder| !watched.contains(folder));
        }
    }
}

/// The root and every manual folder below it that a scan walked, for the next arm.
pub fn folders_of(root: &Path, relative: impl Iterator<Item = String>) -> Vec<PathBuf> {
    std::iter::once(root.to_path_buf())
        .chain(relative.map(|folder| root.join(folder)))
        .collect()
}
