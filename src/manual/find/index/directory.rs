//! Where the section index reads its files: a tantivy [`Directory`] that writes, locks,
//! keeps `meta.json` and watches through tantivy's [`MmapDirectory`], but reads a file's
//! byte ranges with positioned reads into owned buffers instead of mapping the file.
//!
//! Why: with mapped files, every page a search touches (postings and positions, nearly
//! all of the index) stays resident as a file page of the process, counted in its RSS
//! and peak until the kernel needs the memory back; after the warm calls of the speed
//! bench the whole index was resident (73 MB, 1.3x the corpus at 6 copies). Read into
//! buffers, the postings and positions of one search are anonymous memory freed when
//! the search drops them, and the kernel's page cache keeps the file data (shared and
//! reclaimable) for the next read. What tantivy reads whole when it opens a segment (the
//! FST term dictionaries and term-info stores, field norms, deletes; 6-7 MB at 6 copies)
//! is held as owned memory while the searcher lives, as the mapped pages were.
//!
//! A file handle keeps its file open, so the bytes it reads stay those of the file it
//! opened even when a merge deletes it (tantivy never rewrites a segment file in place,
//! which is the same contract the mapped reader relies on). Writes and commits are
//! the mapped directory's, so a kill during a build leaves the last commit as before.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback,
    WatchHandle, WritePtr,
};
use tantivy::HasLen;

/// The index folder, read with positioned reads, written through [`MmapDirectory`].
#[derive(Debug, Clone)]
pub(crate) struct ReadingDirectory {
    folder: PathBuf,
    writes: MmapDirectory,
}

impl ReadingDirectory {
    pub(crate) fn open(folder: &Path) -> Result<ReadingDirectory, OpenDirectoryError> {
        Ok(ReadingDirectory {
            folder: folder.to_path_buf(),
            writes: MmapDirectory::open(folder)?,
        })
    }
}

impl Directory for ReadingDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let wrap = |error: io::Error| match error.kind() {
            io::ErrorKind::NotFound => OpenReadError::FileDoesNotExist(path.to_path_buf()),
            _ => OpenReadError::wrap_io_error(error, path.to_path_buf()),
        };
        // The files are tantivy's own, named by it: a symlink there is not followed.
        let file = rustix::fs::open(
            self.folder.join(path),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(File::from)
        .map_err(|errno| wrap(errno.into()))?;
        let len = file.metadata().map_err(wrap)?.len();
        let len = usize::try_from(len).map_err(|_| {
            wrap(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "an index file larger than the address space",
            ))
        })?;
        Ok(Arc::new(ReadFile { file, len }))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.writes.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.writes.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.writes.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.writes.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.writes.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.writes.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.writes.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.writes.watch(watch_callback)
    }
}

/// An open index file; each read copies the range asked for into a buffer of its own.
#[derive(Debug)]
struct ReadFile {
    file: File,
    len: usize,
}

impl HasLen for ReadFile {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for ReadFile {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        if range.end > self.len || range.start > range.end {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "range {range:?} outside an index file of {} bytes",
                    self.len
                ),
            ));
        }
        if range.is_empty() {
            return Ok(OwnedBytes::empty());
        }
        let mut buffer = vec![0; range.len()];
        self.file.read_exact_at(&mut buffer, range.start as u64)?;
        Ok(OwnedBytes::new(buffer))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use tantivy::directory::{Directory, FileHandle, TerminatingWrite};

    use super::ReadingDirectory;

    /// A directory in a fresh folder holding one file `name` with `bytes`, and the open
    /// handle of that file.
    fn with_file(
        name: &str,
        bytes: &[u8],
    ) -> (tempfile::TempDir, ReadingDirectory, Arc<dyn FileHandle>) {
        use std::io::Write;
        let folder = tempfile::tempdir().unwrap();
        let directory = ReadingDirectory::open(folder.path()).unwrap();
        let mut writer = directory.open_write(Path::new(name)).unwrap();
        writer.write_all(bytes).unwrap();
        writer.terminate().unwrap();
        let handle = directory.get_file_handle(Path::new(name)).unwrap();
        (folder, directory, handle)
    }

    #[test]
    fn a_range_is_read_from_the_file_and_a_range_past_its_end_is_an_error() {
        let (_folder, directory, handle) = with_file("a.idx", b"0123456789");
        assert_eq!(handle.len(), 10);
        assert_eq!(handle.read_bytes(2..5).unwrap().as_slice(), b"234");
        assert_eq!(handle.read_bytes(10..10).unwrap().as_slice(), b"");
        assert!(handle.read_bytes(8..11).is_err());
        let slice = directory.open_read(Path::new("a.idx")).unwrap();
        assert_eq!(slice.read_bytes().unwrap().as_slice(), b"0123456789");
    }

    #[test]
    fn a_file_keeps_its_bytes_after_it_is_deleted_and_a_missing_one_is_said_missing() {
        let (_folder, directory, handle) = with_file("a.pos", b"positions");
        directory.delete(Path::new("a.pos")).unwrap();
        assert_eq!(handle.read_bytes(0..9).unwrap().as_slice(), b"positions");
        assert!(matches!(
            directory.get_file_handle(Path::new("a.pos")),
            Err(tantivy::directory::error::OpenReadError::FileDoesNotExist(
                _
            ))
        ));
    }

    #[test]
    fn a_symlink_in_the_index_folder_is_not_followed() {
        let folder = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"not index data").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), folder.path().join("a.idx"))
            .unwrap();
        let directory = ReadingDirectory::open(folder.path()).unwrap();
        assert!(directory.get_file_handle(Path::new("a.idx")).is_err());
    }
}
