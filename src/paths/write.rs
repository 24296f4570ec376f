//! Writes below a root: exclusive create, atomic replace, locked append.
//!
//! Readers must never see half a file, and a failed write must never cost the old content.
//! So whole-file writes go to a temporary file in the target's own folder (same file
//! system, so the final `renameat` is atomic), which is fsynced before it takes the
//! target's name and removed on every error path. Replace and append take an exclusive
//! `flock` on the target's folder, so manvault's own writers to one file run one at a
//! time (and those to one folder, which costs little beside the fsyncs).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as fs, AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use serde_json::json;

use super::relpath::{RelPath, TEMP_FILE_PREFIX};
use super::root::{open_regular_file, FileInfo, LeafFile, MissingFolders, Refusal, Root};
use crate::error::{ErrorCode, ToolError};

/// Distinguishes the temporary files of concurrent calls within one process.
static TEMP_FILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Permissions asked for new files; the process umask still applies, as for any program.
const NEW_FILE_MODE: u32 = 0o666;

/// A temporary name can be taken only by a leftover of an earlier process that had our
/// pid; a few fresh counters are enough to step past such leftovers.
const TEMP_NAME_ATTEMPTS: u32 = 16;

impl Root {
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
            // File systems without `RENAME_NOREPLACE`: `linkat` also refuses an existing
            // target, and dropping `temp` removes the temporary name afterwards.
            Err(Errno::INVAL | Errno::NOSYS) => {
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
    pub fn replace(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        expected: Option<&FileInfo>,
    ) -> Result<u64, ToolError> {
        let target = self.lock_existing(rel, OFlags::RDONLY)?;
        if let Some(expected) = expected {
            if !expected.same_version(&FileInfo::from_stat(&target.stat)) {
                return Err(ToolError::new(
                    ErrorCode::Conflict,
                    format!(
                        "'{}' changed since it was read; read it again and retry",
                        rel.as_str()
                    ),
                )
                .with_details(json!({ "path": rel.as_str() })));
            }
        }
        // Set-id bits are deliberately not carried over to content the server wrote.
        let permissions = Mode::from_raw_mode(target.stat.st_mode) & Mode::from_raw_mode(0o777);
        let mut temp = TempFile::write(&target.folder, bytes, Some(permissions), rel)?;
        temp.rename_onto(target.name, RenameFlags::empty())
            .map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?;
        sync_folder(&target.folder, rel);
        Ok(bytes.len() as u64)
    }

    /// Appends `bytes` to the existing regular file `rel` in one locked write loop, so
    /// concurrent appends (and a concurrent replace) never interleave or lose each other.
    /// Hard-linked files are refused: the write would also change the other name, which
    /// may be outside the root.
    pub fn append(&self, rel: &RelPath, bytes: &[u8]) -> Result<u64, ToolError> {
        self.append_durably(rel, bytes, true)
    }

    /// [`Root::append`] without waiting for the disk: the bytes survive a crash of the
    /// process, not necessarily of the machine. For logs written on every call, where an
    /// fsync each would cost more than the call (the memory audit log, whose store
    /// commits with the same guarantee).
    pub fn append_unsynced(&self, rel: &RelPath, bytes: &[u8]) -> Result<u64, ToolError> {
        self.append_durably(rel, bytes, false)
    }

    fn append_durably(&self, rel: &RelPath, bytes: &[u8], sync: bool) -> Result<u64, ToolError> {
        let mut target = self.lock_existing(rel, OFlags::WRONLY | OFlags::APPEND)?;
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
        Ok(bytes.len() as u64)
    }

    /// Opens the existing regular file `rel` for a writer, holding an exclusive `flock`
    /// on the folder that contains it until the result is dropped. The folder, not the
    /// file, because a replace puts a new inode under the name: a writer that had waited
    /// on the old file's lock would then append to a file that no longer has a name.
    /// The folder stays the same across replaces, and the file is opened (and its status
    /// taken) only once the lock is held, so the status is the version the write follows.
    fn lock_existing<'p>(
        &self,
        rel: &'p RelPath,
        access: OFlags,
    ) -> Result<LeafFile<'p>, ToolError> {
        let (folder, name) = self.open_parent(rel, MissingFolders::Refuse)?;
        fs::flock(&folder, FlockOperation::LockExclusive)
            .map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?;
        let target = open_regular_file(folder, name, rel, access)?;
        FileInfo::from_stat(&target.stat).refuse_hardlinked(rel)?;
        Ok(target)
    }
}

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
        let (temp, fd) = TempFile::create(folder, rel)?;
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
            match fs::openat(
                folder,
                name.as_str(),
                flags,
                Mode::from_raw_mode(NEW_FILE_MODE),
            ) {
                Ok(fd) => {
                    return Ok((
                        TempFile {
                            folder,
                            name,
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
