//! Writes below a root: exclusive create, atomic replace, locked append.
//!
//! Readers must never see half a file, and a failed write must never cost the old content.
//! So whole-file writes go to a temporary file in the target's own folder (same file
//! system, so the final `renameat` is atomic), which is fsynced before it takes the
//! target's name and removed on every error path. Replace and append take an exclusive
//! `flock` on the target's folder, so manvault's own writers to one file run one at a
//! time (and those to one folder, which costs little beside the fsyncs).
//!
//! An append cannot go through a temporary file without copying the whole file, and a
//! writer killed in the middle of a large one leaves the file cut mid-line (a daily log,
//! which only appends may change, could not even be repaired). So an append is
//! journaled: before the bytes go out, a small record of the file's length before and
//! after is written next to it ([`AppendJournal`]), and removed once the bytes are synced.
//! The fault it answers is a killed process (SIGKILL, the OOM killer, a crash), whose
//! writes the page cache keeps; see [`AppendJournal::begin`] for power failures.
//! A journal found later under the folder's lock belongs to a dead writer (the lock dies
//! with it): if the file's length is between the two, the append was cut and the file is
//! truncated back to its length before; at or past the length after, it completed and is
//! kept. The next locked writer of that file, and the sweep at the next start, do this.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as fs, AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::relpath::{RelPath, TEMP_FILE_PREFIX};
use super::root::{open_regular_file, FileInfo, FileKind, LeafFile, MissingFolders, Refusal, Root};
use crate::error::{ErrorCode, ToolError};

/// Distinguishes the temporary files of concurrent calls within one process.
static TEMP_FILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Permissions asked for new files; the process umask still applies, as for any program.
const NEW_FILE_MODE: Mode = Mode::from_raw_mode(0o666);

/// A temporary name can be taken only by a leftover of an earlier process that had our
/// pid; a few fresh counters are enough to step past such leftovers.
const TEMP_NAME_ATTEMPTS: u32 = 16;

impl Root {
    /// Puts `bytes` as the whole content of `rel`, whether or not it exists (folders
    /// created on the way): for caches the server alone writes, where the newest whole
    /// version wins. Replaced first, since a cache file is usually there; a file another
    /// process created between the two attempts is replaced in turn.
    pub(crate) fn write_whole(&self, rel: &RelPath, bytes: &[u8]) -> Result<u64, ToolError> {
        match self.replace(rel, bytes, None) {
            Err(error) if error.code == ErrorCode::NotFound => {
                match self.create_new(rel, bytes, true) {
                    Err(error) if error.code == ErrorCode::Conflict => {
                        self.replace(rel, bytes, None)
                    }
                    other => other,
                }
            }
            other => other,
        }
    }

    /// Creates `rel` with `bytes`, failing with `conflict` if it exists (as anything: a
    /// link there is `forbidden`). The file appears whole or not at all. With
    /// `create_parents`, missing folders are created on the way; each is entered like any
    /// other folder, so a link raced into place is refused, not followed.
    pub fn create_new(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        create_parents: bool,
    ) -> Result<u64, ToolError> {
        let missing = if create_parents {
            MissingFolders::Create
        } else {
            MissingFolders::Refuse
        };
        let (folder, name) = self.open_parent(rel, missing)?;
        // Checked first only to fail before writing anything; the rename below decides.
        refuse_existing(&folder, name, rel)?;
        let mut temp = TempFile::write(&folder, bytes, None, rel)?;
        match temp.rename_onto(name, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            // File systems without an exclusive rename: `linkat` also refuses an existing
            // target, and dropping `temp` removes the temporary name afterwards.
            Err(errno) if rename_flag_unsupported(errno) => {
                fs::linkat(&folder, temp.name.as_str(), &folder, name, AtFlags::empty())
                    .map_err(|errno| existing_or(errno, &folder, name, rel))?;
            }
            Err(errno) => return Err(existing_or(errno, &folder, name, rel)),
        }
        sync_folder(&folder, rel);
        Ok(bytes.len() as u64)
    }

    /// Atomically replaces the content of the existing regular file `rel`, keeping its
    /// permission bits. With `expected` (what the caller saw when it read the file), a
    /// file changed since is left alone and the answer is `conflict`, so a client never
    /// overwrites an edit it has not seen. Hard-linked files are refused: the rename would
    /// silently split the link, and the other name may be outside the root.
    ///
    /// Other programs (an editor saving the file) do not take our lock, and writing and
    /// syncing the new content takes milliseconds. So with `expected` the version is
    /// checked when the lock is taken, again just before the new content takes the name,
    /// and once more on what it displaced: the two names are exchanged atomically
    /// (`RENAME_EXCHANGE` on Linux, `RENAME_SWAP` on macOS), so the displaced file is
    /// still there to be checked, and put back (the answer then `conflict`) if it is not
    /// the version read. On a file system that cannot exchange names the new content is
    /// renamed over the name after the last check, which leaves a window of microseconds
    /// instead of the write's milliseconds.
    pub fn replace(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        expected: Option<&FileInfo>,
    ) -> Result<u64, ToolError> {
        let target = self.lock_existing(rel, OFlags::RDONLY)?;
        if let Some(expected) = expected {
            if !expected.same_version(&FileInfo::from_stat(&target.stat)) {
                return Err(changed_since_read(rel));
            }
        }
        // Set-id bits are deliberately not carried over to content the server wrote.
        let permissions = Mode::from_raw_mode(target.stat.st_mode) & Mode::from_raw_mode(0o777);
        let mut temp = TempFile::write(&target.folder, bytes, Some(permissions), rel)?;
        match expected {
            None => temp
                .rename_onto(target.name, RenameFlags::empty())
                .map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?,
            Some(expected) => temp.replace_if_unchanged(target.name, expected, rel)?,
        }
        sync_folder(&target.folder, rel);
        Ok(bytes.len() as u64)
    }

    /// Appends `bytes` to the existing regular file `rel` in one locked write loop, so
    /// concurrent appends (and a concurrent replace) never interleave or lose each other.
    /// Hard-linked files are refused: the write would also change the other name, which
    /// may be outside the root.
    ///
    /// All or nothing, also when the process is killed during the write: see
    /// [`AppendJournal`].
    pub fn append(&self, rel: &RelPath, bytes: &[u8]) -> Result<u64, ToolError> {
        self.append_durably(rel, bytes, true)
    }

    /// [`Root::append`] without waiting for the disk: the bytes survive a crash of the
    /// process, not necessarily of the machine. For logs written on every call, where an
    /// fsync each would cost more than the call (the memory audit log, whose store
    /// commits with the same guarantee).
    pub(crate) fn append_unsynced(&self, rel: &RelPath, bytes: &[u8]) -> Result<u64, ToolError> {
        self.append_durably(rel, bytes, false)
    }

    fn append_durably(&self, rel: &RelPath, bytes: &[u8], sync: bool) -> Result<u64, ToolError> {
        let mut target = self.lock_existing(rel, OFlags::WRONLY | OFlags::APPEND)?;
        let journal = AppendJournal::begin(&target, bytes.len() as u64, rel)?;
        target
            .file
            .write_all(bytes)
            .and_then(|()| {
                if sync {
                    target.file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|error| Refusal::from_io(&error).at(rel.as_str()))?;
        journal.finish(&target.folder);
        Ok(bytes.len() as u64)
    }

    /// Opens the existing regular file `rel` for a writer, holding an exclusive `flock`
    /// on the folder that contains it until the result is dropped. The folder, not the
    /// file, because a replace puts a new inode under the name: a writer that had waited
    /// on the old file's lock would then append to a file that no longer has a name.
    /// The folder stays the same across replaces, and the file is opened (and its status
    /// taken) only once the lock is held, so the status is the version the write follows.
    ///
    /// A journal left by a writer killed during an append to this file is settled first
    /// (so a replace never reads a cut line back in, and an append never follows one).
    fn lock_existing<'p>(
        &self,
        rel: &'p RelPath,
        access: OFlags,
    ) -> Result<LeafFile<'p>, ToolError> {
        let (folder, name) = self.open_parent(rel, MissingFolders::Refuse)?;
        fs::flock(&folder, FlockOperation::LockExclusive)
            .map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?;
        let mut target = open_regular_file(folder, name, rel, access)?;
        FileInfo::from_stat(&target.stat).refuse_hardlinked(rel)?;
        let journal = journal_name(FileInfo::from_stat(&target.stat).inode);
        if settle_append(target.folder.as_fd(), &journal) == Settled::Truncated {
            // The status taken at open is the cut file's.
            target.stat = fs::fstat(&target.file)
                .map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?;
        }
        Ok(target)
    }
}

/// The journal of appends to the file with `inode` in its folder: a reserved name (no
/// client can name or list it), one per file, so finding a dead writer's journal for a
/// file is one `stat`.
fn journal_name(inode: u64) -> String {
    format!("{TEMP_FILE_PREFIX}{APPEND_JOURNAL_INFIX}{inode}")
}

/// What follows [`TEMP_FILE_PREFIX`] in a journal's name.
const APPEND_JOURNAL_INFIX: &str = "append-";

/// Whether a file name found on disk is an append journal's.
pub(super) fn is_append_journal(name: &str) -> bool {
    name.strip_prefix(TEMP_FILE_PREFIX)
        .is_some_and(|rest| rest.starts_with(APPEND_JOURNAL_INFIX))
}

/// What a journal holds: the file (by name in the journal's folder, and by inode, so a
/// file replaced since is left alone) and its length before and after the append.
#[derive(Debug, Serialize, Deserialize)]
struct JournalRecord {
    file: String,
    inode: u64,
    before: u64,
    after: u64,
}

/// An append in progress, recorded next to its file until its bytes are synced.
struct AppendJournal {
    name: String,
}

impl AppendJournal {
    /// Records that `target` grows by `bytes` now. Not synced: the journal is there for a
    /// killed process, whose writes the page cache keeps; syncing it too would make every
    /// append (the statistics record of every search among them) about four times
    /// slower (measured: 4 ms -> 16 ms for 1 KiB), for a power failure in the middle of
    /// an append, which the file system's own ordering mostly covers.
    fn begin(target: &LeafFile<'_>, bytes: u64, rel: &RelPath) -> Result<Self, ToolError> {
        let info = FileInfo::from_stat(&target.stat);
        let record = JournalRecord {
            file: target.name.to_string(),
            inode: info.inode,
            before: info.size,
            after: info.size + bytes,
        };
        let name = journal_name(info.inode);
        let refused = |error: std::io::Error| Refusal::from_io(&error).at(rel.as_str());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = fs::openat(
            &target.folder,
            name.as_str(),
            flags,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|errno| refused(errno.into()))?;
        let journal = AppendJournal { name };
        let mut file = std::fs::File::from(fd);
        let written = serde_json::to_vec(&record).expect("a journal record serialises");
        if let Err(error) = file.write_all(&written) {
            journal.finish(&target.folder);
            return Err(refused(error));
        }
        Ok(journal)
    }

    /// The append is complete and synced: the journal goes.
    fn finish(self, folder: &OwnedFd) {
        if let Err(errno) = fs::unlinkat(folder, self.name.as_str(), AtFlags::empty()) {
            tracing::warn!(error = %std::io::Error::from(errno), "could not remove an append journal");
        }
    }
}

/// What settling a dead writer's journal did to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
    /// No journal by that name.
    NoJournal,
    /// The append was cut: the file is back at its length before it.
    Truncated,
    /// The append had completed, or the file is another one now: left as it is.
    Kept,
}

/// Settles the journal `journal` in `folder`, whose lock the caller holds (so its writer
/// is dead), and removes it. Never follows a link: the file is opened by name with
/// `O_NOFOLLOW` and must be the regular file, with the inode, that the journal names.
pub(super) fn settle_append(folder: BorrowedFd<'_>, journal: &str) -> Settled {
    let record = match read_journal(folder, journal) {
        Err(Errno::NOENT) => return Settled::NoJournal,
        // Cut short or damaged: the writer died before appending anything.
        Err(_) => None,
        Ok(record) => record,
    };
    let settled = record.map_or(Settled::Kept, |record| truncate_cut_append(folder, &record));
    if let Err(errno) = fs::unlinkat(folder, journal, AtFlags::empty()) {
        tracing::warn!(error = %std::io::Error::from(errno), "could not remove an append journal");
    }
    settled
}

/// The journal's record; `Ok(None)` when it is not one.
fn read_journal(
    folder: BorrowedFd<'_>,
    journal: &str,
) -> rustix::io::Result<Option<JournalRecord>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = fs::openat(folder, journal, flags, Mode::empty())?;
    if FileType::from_raw_mode(fs::fstat(&fd)?.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let mut text = Vec::new();
    // A record is well under a kilobyte; anything longer is not one.
    std::fs::File::from(fd)
        .take(4096)
        .read_to_end(&mut text)
        .map_err(|error| Errno::from_io_error(&error).unwrap_or(Errno::IO))?;
    Ok(serde_json::from_slice(&text).ok())
}

fn truncate_cut_append(folder: BorrowedFd<'_>, record: &JournalRecord) -> Settled {
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let Ok(fd) = fs::openat(folder, record.file.as_str(), flags, Mode::empty()) else {
        return Settled::Kept;
    };
    let Ok(stat) = fs::fstat(&fd) else {
        return Settled::Kept;
    };
    let info = FileInfo::from_stat(&stat);
    let cut = info.kind == FileKind::File
        && info.inode == record.inode
        && (record.before + 1..record.after).contains(&info.size);
    if !cut {
        return Settled::Kept;
    }
    match fs::ftruncate(&fd, record.before).and_then(|()| fs::fsync(&fd)) {
        Ok(()) => {
            tracing::warn!(
                removed_bytes = info.size - record.before,
                "an append cut short by a crash was removed"
            );
            Settled::Truncated
        }
        Err(errno) => {
            tracing::warn!(error = %std::io::Error::from(errno), "could not remove an append cut short by a crash");
            Settled::Kept
        }
    }
}

/// Whether a rename with `RenameFlags` failed only because the file system (or kernel)
/// lacks that kind of rename. rustix maps the flags to Linux's `renameat2`
/// (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`; `EINVAL` where a file system lacks them,
/// `ENOSYS` on old kernels) and to macOS's `renameatx_np` (`RENAME_EXCL`, `RENAME_SWAP`;
/// `ENOTSUP` where a file system lacks them, `ENOSYS` before macOS 10.12).
fn rename_flag_unsupported(errno: Errno) -> bool {
    matches!(errno, Errno::INVAL | Errno::NOSYS | Errno::NOTSUP)
}

/// The `conflict` of a conditional replace whose file changed since it was read.
fn changed_since_read(rel: &RelPath) -> ToolError {
    ToolError::new(
        ErrorCode::Conflict,
        format!(
            "'{}' changed since it was read; read it again and retry",
            rel.as_str()
        ),
    )
    .with_details(json!({ "path": rel.as_str() }))
}

/// How many times a conditional replace exchanges names back when the file keeps
/// changing under it (each round is two system calls; an editor saves every few
/// milliseconds at most).
const MAX_RESTORE_ROUNDS: usize = 4;

/// `Ok` if nothing is at `name`; otherwise `forbidden` for a link (even a dangling one:
/// creating "through" it must not be possible) and `conflict` for anything else.
fn refuse_existing(folder: &OwnedFd, name: &str, rel: &RelPath) -> Result<(), ToolError> {
    match fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(Refusal::from_errno(errno).at(rel.as_str())),
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
            Err(Refusal::Symlink.at(rel.as_str()))
        }
        Ok(_) => Err(ToolError::new(
            ErrorCode::Conflict,
            format!(
                "'{}' already exists; use a replace or append tool to change it",
                rel.as_str()
            ),
        )
        .with_details(json!({ "path": rel.as_str() }))),
    }
}

/// The error for a failed publish of a new file: `EEXIST` means something took the name
/// first (reported as what it is), anything else is reported as itself.
fn existing_or(errno: Errno, folder: &OwnedFd, name: &str, rel: &RelPath) -> ToolError {
    if errno != Errno::EXIST {
        return Refusal::from_errno(errno).at(rel.as_str());
    }
    match refuse_existing(folder, name, rel) {
        Err(error) => error,
        // Gone again already; it still existed when we tried.
        Ok(()) => ToolError::new(
            ErrorCode::Conflict,
            format!("'{}' was created concurrently", rel.as_str()),
        )
        .with_details(json!({ "path": rel.as_str() })),
    }
}

/// Makes a rename or link durable. By then the new content is visible, so a failure here
/// is logged rather than reported as a failed write.
fn sync_folder(folder: &OwnedFd, rel: &RelPath) {
    if let Err(errno) = fs::fsync(folder) {
        tracing::warn!(path = rel.as_str(), error = %std::io::Error::from(errno), "could not sync the folder after a write");
    }
}

/// A fully written, fsynced temporary file next to its target. Dropping it removes the
/// temporary name unless it was renamed onto the target, so no error path leaves one behind.
struct TempFile<'f> {
    folder: &'f OwnedFd,
    name: String,
    /// The new content's inode, to recognise it after names were exchanged.
    inode: u64,
    renamed: bool,
}

impl<'f> TempFile<'f> {
    fn write(
        folder: &'f OwnedFd,
        bytes: &[u8],
        permissions: Option<Mode>,
        rel: &RelPath,
    ) -> Result<TempFile<'f>, ToolError> {
        let refused = |error: std::io::Error| Refusal::from_io(&error).at(rel.as_str());
        let (mut temp, fd) = TempFile::create(folder, rel)?;
        temp.inode =
            FileInfo::from_stat(&fs::fstat(&fd).map_err(|errno| refused(errno.into()))?).inode;
        let mut file = std::fs::File::from(fd);
        if let Some(permissions) = permissions {
            fs::fchmod(&file, permissions).map_err(|errno| refused(errno.into()))?;
        }
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(refused)?;
        Ok(temp)
    }

    fn create(folder: &'f OwnedFd, rel: &RelPath) -> Result<(TempFile<'f>, OwnedFd), ToolError> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..TEMP_NAME_ATTEMPTS {
            let counter = TEMP_FILE_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{TEMP_FILE_PREFIX}{}-{counter}", std::process::id());
            match fs::openat(folder, name.as_str(), flags, NEW_FILE_MODE) {
                Ok(fd) => {
                    return Ok((
                        TempFile {
                            folder,
                            name,
                            inode: 0,
                            renamed: false,
                        },
                        fd,
                    ))
                }
                Err(Errno::EXIST) => continue,
                Err(errno) => return Err(Refusal::from_errno(errno).at(rel.as_str())),
            }
        }
        Err(Refusal::Failed(Errno::EXIST).at(rel.as_str()))
    }

    fn rename_onto(&mut self, target: &str, flags: RenameFlags) -> rustix::io::Result<()> {
        fs::renameat_with(self.folder, self.name.as_str(), self.folder, target, flags)?;
        self.renamed = true;
        Ok(())
    }

    /// The status of what is at `name` now, without following a link.
    fn version_at(&self, name: &str) -> rustix::io::Result<FileInfo> {
        fs::statat(self.folder, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|stat| FileInfo::from_stat(&stat))
    }

    /// Puts this content under `target` only if what it displaces is the `expected`
    /// version (see [`Root::replace`]); `conflict` otherwise, with the displaced file
    /// back under `target`.
    fn replace_if_unchanged(
        &mut self,
        target: &str,
        expected: &FileInfo,
        rel: &RelPath,
    ) -> Result<(), ToolError> {
        let refused = |errno| Refusal::from_errno(errno).at(rel.as_str());
        if !expected.same_version(&self.version_at(target).map_err(refused)?) {
            return Err(changed_since_read(rel));
        }
        let exchanged = fs::renameat_with(
            self.folder,
            self.name.as_str(),
            self.folder,
            target,
            RenameFlags::EXCHANGE,
        );
        match exchanged {
            Ok(()) => {}
            Err(errno) if rename_flag_unsupported(errno) => {
                return self
                    .rename_onto(target, RenameFlags::empty())
                    .map_err(refused)
            }
            Err(errno) => return Err(refused(errno)),
        }
        // The temporary name now holds what the target was: if it is the version read,
        // dropping `self` removes it, and the replace is done.
        if expected.same_version(&self.version_at(&self.name).map_err(refused)?) {
            return Ok(());
        }
        // A save came between the last check and the exchange: put the newest version
        // back under the target. Our content is then under the temporary name (dropping
        // `self` removes it), unless yet another save displaced it in between; then the
        // temporary name holds that newer save and another exchange brings it back.
        for _ in 0..MAX_RESTORE_ROUNDS {
            fs::renameat_with(
                self.folder,
                self.name.as_str(),
                self.folder,
                target,
                RenameFlags::EXCHANGE,
            )
            .map_err(refused)?;
            let displaced = self.version_at(&self.name).map_err(refused)?;
            if displaced.inode == self.inode {
                return Err(changed_since_read(rel));
            }
            if displaced.mtime <= self.version_at(target).map_err(refused)?.mtime {
                // What came back is older than what took the target: the editor's own
                // earlier save, which its newer one supersedes.
                return Err(changed_since_read(rel));
            }
        }
        Err(changed_since_read(rel))
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if self.renamed {
            return;
        }
        if let Err(errno) = fs::unlinkat(self.folder, self.name.as_str(), AtFlags::empty()) {
            tracing::warn!(temp_file = self.name.as_str(), error = %std::io::Error::from(errno), "could not remove a temporary file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::{parse_relative, STALE_TEMP_AGE};

    /// Starts an append of `planned` bytes to `rel`, writes `written` of them and dies:
    /// the journal stays, the folder's lock goes with the process (here: the file).
    fn die_during_append(root: &Root, rel: &RelPath, planned: u64, written: &[u8]) {
        let mut target = root
            .lock_existing(rel, OFlags::WRONLY | OFlags::APPEND)
            .unwrap();
        let _left_behind = AppendJournal::begin(&target, planned, rel).unwrap();
        target.file.write_all(written).unwrap();
    }

    #[test]
    fn a_dead_writers_journal_undoes_a_cut_append_and_keeps_a_whole_one() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("log.md");
        std::fs::write(&path, "head\n").unwrap();
        let root = Root::open(folder.path()).unwrap();
        let rel = parse_relative("log.md").unwrap();

        die_during_append(&root, &rel, 10, b"cut ");
        let swept = root.sweep_temp_files(std::time::SystemTime::now(), STALE_TEMP_AGE);
        assert_eq!(swept.appends_undone, 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "head\n");

        die_during_append(&root, &rel, 6, b"whole\n");
        root.append(&rel, b"next\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "head\nwhole\nnext\n"
        );

        die_during_append(&root, &rel, 9, b"cut");
        root.replace(&rel, b"replaced\n", None).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "replaced\n");
        let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no journal stays: {left:?}");
    }
}
