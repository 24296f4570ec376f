//! Leftovers of writers that did not finish: a writer killed between creating its
//! temporary file and renaming it (or removing it) leaves a hidden `.manvault-tmp-*` file
//! behind, and with large files those add up (52 kills left 272 MB).
//!
//! [`Root::sweep_temp_files`] removes them: only regular files whose name has the writers'
//! prefix (clients cannot create such names) and that are older than a minute, since a
//! younger one may belong to a write in progress in another server on the same vault.
//! Append journals are settled first (the append they record is undone if it was cut, see
//! `write`), whatever their age, when the folder's lock can be taken at once: then their
//! writer is dead. The walk opens every folder with `O_NOFOLLOW` and never enters or
//! removes a link, and only enters folders a client could name (so at most `MAX_PATH_BYTES`
//! deep).

use std::time::{Duration, SystemTime};

use std::os::fd::BorrowedFd;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, FlockOperation, Mode};

use super::relpath::{RelPath, TEMP_FILE_PREFIX};
use super::root::{FileInfo, Root, FOLDER_FLAGS};
use super::write::{is_append_journal, settle_append, Settled};

/// Age from which a temporary file is taken for a leftover: far longer than any write
/// (a 64 MiB edit takes well under a second), short enough to clean up at the next start.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60);

/// What a sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Leftovers removed, and their bytes.
    pub removed: u64,
    pub removed_bytes: u64,
    /// Temporary files younger than the age limit, left alone.
    pub kept_recent: u64,
    /// Appends cut short by a crash, undone.
    pub appends_undone: u64,
}

impl Root {
    /// Removes the writers' temporary files older than `min_age` at `now` anywhere below
    /// the root. Never fails: a folder that cannot be read is skipped.
    pub fn sweep_temp_files(&self, now: SystemTime, min_age: Duration) -> Swept {
        let mut swept = Swept::default();
        let Ok(top) = fs::openat(&self.folder, ".", FOLDER_FLAGS, Mode::empty()).and_then(Dir::new)
        else {
            return swept;
        };
        // One open folder per level of depth, as in `read_dir_recursive`.
        let mut pending = vec![(top, RelPath::root())];
        while let Some((folder, folder_path)) = pending.last_mut() {
            match visit_next(folder, folder_path, now, min_age, &mut swept) {
                Visit::End => {
                    pending.pop();
                }
                Visit::Done => {}
                Visit::Enter(subfolder, path) => pending.push((subfolder, path)),
            }
        }
        swept
    }
}

/// One step of the sweep's walk.
enum Visit {
    /// The folder has no more entries (or cannot be read further).
    End,
    /// An entry handled (removed, kept or skipped).
    Done,
    /// A folder to walk next.
    Enter(Dir, RelPath),
}

fn visit_next(
    folder: &mut Dir,
    folder_path: &RelPath,
    now: SystemTime,
    min_age: Duration,
    swept: &mut Swept,
) -> Visit {
    let Some(Ok(entry)) = folder.next() else {
        return Visit::End;
    };
    let Ok(folder_fd) = folder.fd() else {
        return Visit::End;
    };
    let Ok(name) = std::str::from_utf8(entry.file_name().to_bytes()) else {
        return Visit::Done;
    };
    let Ok(stat) = fs::statat(folder_fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
        return Visit::Done;
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    if is_append_journal(name) && kind == FileType::RegularFile {
        settle_journal(folder_fd, name, swept);
        return Visit::Done;
    }
    if name.starts_with(TEMP_FILE_PREFIX) {
        if kind == FileType::RegularFile {
            let info = FileInfo::from_stat(&stat);
            let age = now.duration_since(info.mtime).unwrap_or_default();
            if age < min_age {
                swept.kept_recent += 1;
            } else if fs::unlinkat(folder_fd, name, AtFlags::empty()).is_ok() {
                swept.removed += 1;
                swept.removed_bytes += info.size;
            }
        }
        return Visit::Done;
    }
    if kind != FileType::Directory || name == "." || name == ".." {
        return Visit::Done;
    }
    let Ok(path) = folder_path.child(name) else {
        return Visit::Done;
    };
    // Opened by name with `NOFOLLOW`: a folder swapped for a link since the `statat` is
    // not entered.
    match fs::openat(folder_fd, name, FOLDER_FLAGS, Mode::empty()).and_then(Dir::new) {
        Ok(subfolder) => Visit::Enter(subfolder, path),
        Err(_) => Visit::Done,
    }
}

/// Settles the append journal `name` if no writer holds the folder's lock (one that does
/// may be writing the append it records); the next writer of its file settles it else.
fn settle_journal(folder: BorrowedFd<'_>, name: &str, swept: &mut Swept) {
    if fs::flock(folder, FlockOperation::NonBlockingLockExclusive).is_err() {
        return;
    }
    if settle_append(folder, name) == Settled::Truncated {
        swept.appends_undone += 1;
    }
    let _ = fs::flock(folder, FlockOperation::Unlock);
}
