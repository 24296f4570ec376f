//! An opened root folder, the one walk every operation goes through, and the reads.
//!
//! Every access starts from the root's descriptor and opens one component at a time with
//! `O_NOFOLLOW`, so the check "is this a link?" and the open are the same system call:
//! there is no moment between checking a path and using it in which a component can be
//! swapped for a link (the race `realpath`-then-open leaves open).

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use serde_json::json;

use super::relpath::RelPath;
use crate::error::{ErrorCode, ToolError};

/// How every folder on a walk is opened. `NOFOLLOW` makes a link fail instead of being
/// entered; `DIRECTORY` makes a file in a folder's place fail too.
pub(super) const FOLDER_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Added to every open of a file at the end of a walk. `NONBLOCK` keeps a FIFO planted
/// in a root from hanging the server on open; `NOCTTY` keeps a terminal device from
/// becoming our controlling terminal. Both are refused right after by type anyway.
const LEAF_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY);

/// A root folder (`manuals/` or `vault/`), held open for the life of the server.
///
/// The path given to [`Root::open`] is operator configuration, so links in it are
/// followed, once. From then on the descriptor pins that folder: re-pointing the
/// configured path later does not move the root, and nothing below it is ever reached by
/// an absolute path. Blocking calls (`flock` in writes): run them off async executors.
#[derive(Debug)]
pub struct Root {
    pub(super) folder: OwnedFd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    /// A device, FIFO or socket: listed, never opened.
    Other,
}

/// What `lstat` says about a file, without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    pub kind: FileKind,
    pub size: u64,
    pub mtime: SystemTime,
    pub inode: u64,
    pub nlink: u64,
}

impl FileInfo {
    // `stat` field types differ between architectures (`st_nlink` is 32-bit on aarch64),
    // so the casts that are no-ops on x86_64 are needed elsewhere.
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn from_stat(stat: &Stat) -> FileInfo {
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => FileKind::File,
            FileType::Directory => FileKind::Directory,
            _ => FileKind::Other,
        };
        FileInfo {
            kind,
            size: stat.st_size as u64,
            mtime: mtime_from(stat.st_mtime as i64, stat.st_mtime_nsec as u64),
            inode: stat.st_ino as u64,
            nlink: stat.st_nlink as u64,
        }
    }

    /// `forbidden` when the file has other hard links: the writers refuse those (the
    /// other name may be outside the root), and a caller that reads a file in order to
    /// rewrite it checks first, so that it does not read through such a link either.
    pub(crate) fn refuse_hardlinked(&self, rel: &RelPath) -> Result<(), ToolError> {
        if self.nlink > 1 {
            return Err(Refusal::Hardlinked.at(rel.as_str()));
        }
        Ok(())
    }

    /// Whether two observations saw the same version of a file: a replace gives a new
    /// inode, an append a new size, an in-place edit by another program a new mtime.
    pub(super) fn same_version(&self, other: &FileInfo) -> bool {
        (self.inode, self.size, self.mtime) == (other.inode, other.size, other.mtime)
    }
}

/// `stat`'s (seconds, nanoseconds) pair; the nanoseconds always count forward, also
/// before the epoch.
fn mtime_from(seconds: i64, nanoseconds: u64) -> SystemTime {
    let whole_seconds = Duration::from_secs(seconds.unsigned_abs());
    let whole = if seconds >= 0 {
        UNIX_EPOCH + whole_seconds
    } else {
        UNIX_EPOCH - whole_seconds
    };
    whole + Duration::from_nanos(nanoseconds)
}

/// One item of a recursive listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: RelPath,
    pub info: FileInfo,
}

/// Whether a walk may create the folders it finds missing (only `create_new` asks to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MissingFolders {
    Refuse,
    Create,
}

/// Where a walk stops: in the folder holding the last component, or in the last component
/// itself, opened as a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WalkTo {
    Parent,
    Folder,
}

/// A regular file opened at the end of a walk, with the folder it was found in (writers
/// create their temporary files there, next to it) and its status at open time.
pub(super) struct LeafFile<'p> {
    pub(super) folder: OwnedFd,
    pub(super) name: &'p str,
    pub(super) file: File,
    pub(super) stat: Stat,
}

/// Why the file system refused, in the terms a client can act on. Each maps to one code of
/// the shared vocabulary and is reported against a relative path, never a server path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    Symlink,
    Missing,
    NotAFolder,
    NotAFile,
    SpecialFile,
    Hardlinked,
    Denied(Errno),
    Failed(Errno),
}

impl Refusal {
    pub(super) fn from_errno(errno: Errno) -> Refusal {
        match errno {
            // With `O_NOFOLLOW` on a single component, `ELOOP` means exactly "a link"
            // (`enter_folder` turns the `ENOTDIR` Linux gives for folders back into it).
            Errno::LOOP => Refusal::Symlink,
            Errno::NOENT => Refusal::Missing,
            Errno::NOTDIR => Refusal::NotAFolder,
            Errno::ISDIR => Refusal::NotAFile,
            // `open` of a socket.
            Errno::NXIO => Refusal::SpecialFile,
            Errno::ACCESS | Errno::PERM | Errno::ROFS => Refusal::Denied(errno),
            _ => Refusal::Failed(errno),
        }
    }

    pub(super) fn from_io(error: &io::Error) -> Refusal {
        Refusal::from_errno(Errno::from_io_error(error).unwrap_or(Errno::IO))
    }

    /// The error for this refusal at `relative` (a client-spelled prefix).
    pub(super) fn at(self, relative: &str) -> ToolError {
        let shown = if relative.is_empty() { "." } else { relative };
        let (code, rule, message) = match self {
            Refusal::Symlink => (
                ErrorCode::Forbidden,
                "symlink",
                format!("'{shown}' is a symbolic link; links are never followed"),
            ),
            Refusal::Missing => (
                ErrorCode::NotFound,
                "missing",
                format!("'{shown}' does not exist"),
            ),
            Refusal::NotAFolder => (
                ErrorCode::InvalidPath,
                "not_a_folder",
                format!("'{shown}' is a file, not a folder"),
            ),
            Refusal::NotAFile => (
                ErrorCode::InvalidPath,
                "not_a_file",
                format!("'{shown}' is a folder, not a file"),
            ),
            Refusal::SpecialFile => (
                ErrorCode::Forbidden,
                "special_file",
                format!("'{shown}' is a device, pipe or socket; only regular files are opened"),
            ),
            Refusal::Hardlinked => (
                ErrorCode::Forbidden,
                "hardlinked",
                format!(
                    "'{shown}' has other hard links (possibly outside the root); it is not written"
                ),
            ),
            Refusal::Denied(errno) => (
                ErrorCode::Forbidden,
                "permission",
                format!(
                    "the server may not access '{shown}': {}",
                    io::Error::from(errno)
                ),
            ),
            Refusal::Failed(errno) => {
                tracing::warn!(path = shown, error = %io::Error::from(errno), "file system operation failed");
                (
                    ErrorCode::Conflict,
                    "io_error",
                    format!(
                        "the file system could not complete the operation on '{shown}': {}",
                        io::Error::from(errno)
                    ),
                )
            }
        };
        ToolError::new(code, message).with_details(json!({ "path_rule": rule, "component": shown }))
    }
}

impl Root {
    /// Opens the configured root folder once; see [`Root`] for why links in `path` are
    /// followed here and nowhere else.
    pub fn open(path: &Path) -> io::Result<Root> {
        let folder = fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root { folder })
    }

    /// The same root folder through a second descriptor (`dup`: the folder pinned at
    /// open, not its path resolved again), for work that outlives a call.
    pub(crate) fn try_clone(&self) -> io::Result<Root> {
        Ok(Root {
            folder: self.folder.try_clone()?,
        })
    }

    /// Opens files one after another for reading, reusing the walk to their folder
    /// ([`FileOpener`]).
    pub(crate) fn file_opener(&self) -> FileOpener<'_> {
        FileOpener {
            root: self,
            folder: None,
        }
    }

    /// Opens an existing regular file for reading.
    pub fn open_file(&self, rel: &RelPath) -> Result<File, ToolError> {
        let (folder, name) = self.open_parent(rel, MissingFolders::Refuse)?;
        Ok(open_regular_file(folder, name, rel, OFlags::RDONLY)?.file)
    }

    /// Status of what `rel` names, without following a link at any component (a link
    /// itself is refused, so its target's size or existence is not revealed either).
    pub fn stat(&self, rel: &RelPath) -> Result<FileInfo, ToolError> {
        let refused = |errno| Refusal::from_errno(errno).at(rel.as_str());
        let stat = if rel.is_root() {
            fs::fstat(&self.folder).map_err(refused)?
        } else {
            let (folder, name) = self.open_parent(rel, MissingFolders::Refuse)?;
            fs::statat(&folder, name, AtFlags::SYMLINK_NOFOLLOW).map_err(refused)?
        };
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            return Err(Refusal::Symlink.at(rel.as_str()));
        }
        Ok(FileInfo::from_stat(&stat))
    }

    /// Everything below the folder `rel`, sorted by path (a folder's contents right after
    /// it). Links are neither listed nor entered: they are skipped with a warning that
    /// names only the relative path. So are names no client path could reach (see
    /// [`RelPath`]), which would otherwise be listed but not be readable.
    pub fn read_dir_recursive(&self, rel: &RelPath) -> Result<Vec<Entry>, ToolError> {
        let listed = self.list_recursive(rel, Detail::Stat)?;
        Ok(listed
            .into_iter()
            .map(|listed| Entry {
                info: listed.info.expect("a listing by stat stats"),
                path: listed.path,
            })
            .collect())
    }

    /// The regular files below the folder `rel`, sorted by path, as
    /// [`Root::read_dir_recursive`] lists them but without their sizes and times: the kind
    /// comes from the folder's own entries (`d_type`), so a file costs no `statat` (only
    /// one on a file system that does not tell kinds). For a search, which opens each
    /// file anyway (with `O_NOFOLLOW`, checking it is still regular).
    pub(crate) fn regular_files_recursive(&self, rel: &RelPath) -> Result<Vec<RelPath>, ToolError> {
        let listed = self.list_recursive(rel, Detail::Kind)?;
        Ok(listed
            .into_iter()
            .filter(|listed| listed.kind == FileType::RegularFile)
            .map(|listed| listed.path)
            .collect())
    }

    /// Everything below the folder `rel` as [`Root::read_dir_recursive`] says, learning
    /// of each entry what `detail` asks, sorted by path.
    fn list_recursive(&self, rel: &RelPath, detail: Detail) -> Result<Vec<Listed>, ToolError> {
        let top = self.walk(rel, WalkTo::Folder, MissingFolders::Refuse)?;
        let top = Dir::new(top).map_err(|errno| Refusal::from_errno(errno).at(rel.as_str()))?;
        let mut entries = Vec::new();
        // One open folder per level of depth, and depth is bounded by `MAX_PATH_BYTES`.
        let mut pending = vec![(top, rel.clone())];
        while let Some((folder, folder_path)) = pending.last_mut() {
            match read_next_entry(folder, folder_path, detail) {
                Listing::End => {
                    pending.pop();
                }
                Listing::Skipped => {}
                Listing::Found(entry, subfolder) => {
                    if let Some(subfolder) = subfolder {
                        pending.push((subfolder, entry.path.clone()));
                    }
                    entries.push(entry);
                }
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    /// The one walk from the root that every operation uses: opens each component as a
    /// folder with `O_NOFOLLOW`, so a link anywhere on the way is refused as `forbidden`
    /// naming the prefix that is a link, without its target ever being read.
    fn walk(
        &self,
        rel: &RelPath,
        to: WalkTo,
        missing: MissingFolders,
    ) -> Result<OwnedFd, ToolError> {
        let folders = match to {
            WalkTo::Folder => rel.components().count(),
            WalkTo::Parent => rel.components().count().saturating_sub(1),
        };
        let mut folder = fs::openat(&self.folder, ".", FOLDER_FLAGS, Mode::empty())
            .map_err(|errno| Refusal::from_errno(errno).at(""))?;
        for (name, prefix) in rel.components_with_prefixes().take(folders) {
            folder = enter_folder(&folder, name, missing)
                .map_err(|errno| Refusal::from_errno(errno).at(prefix))?;
        }
        Ok(folder)
    }

    /// The folder holding `rel`'s last component, and that component's name. The root
    /// has no parent: naming it where a file is expected is `invalid_path`.
    pub(super) fn open_parent<'p>(
        &self,
        rel: &'p RelPath,
        missing: MissingFolders,
    ) -> Result<(OwnedFd, &'p str), ToolError> {
        let name = rel.file_name().ok_or_else(|| Refusal::NotAFile.at(""))?;
        Ok((self.walk(rel, WalkTo::Parent, missing)?, name))
    }
}

/// Opens `name` (the last component of `rel`) in `folder` with `access` if it is a regular
/// file; links, folders and special files are refused before a byte is read or written.
pub(super) fn open_regular_file<'p>(
    folder: OwnedFd,
    name: &'p str,
    rel: &RelPath,
    access: OFlags,
) -> Result<LeafFile<'p>, ToolError> {
    let (fd, stat) = open_regular_in(&folder, name, rel, access)?;
    // `NONBLOCK` was only there to survive opening a FIFO; give callers a plain file.
    let refused = |errno| Refusal::from_errno(errno).at(rel.as_str());
    let flags = fs::fcntl_getfl(&fd).map_err(refused)?;
    fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK).map_err(refused)?;
    Ok(LeafFile {
        folder,
        name,
        file: File::from(fd),
        stat,
    })
}

/// Opens `name` in a folder that stays open if it is a regular file, with its status;
/// the file is still `NONBLOCK` (see [`LEAF_FLAGS`]).
fn open_regular_in(
    folder: &OwnedFd,
    name: &str,
    rel: &RelPath,
    access: OFlags,
) -> Result<(OwnedFd, Stat), ToolError> {
    let refused = |errno| Refusal::from_errno(errno).at(rel.as_str());
    let fd = fs::openat(folder, name, access | LEAF_FLAGS, Mode::empty()).map_err(refused)?;
    let stat = fs::fstat(&fd).map_err(refused)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok((fd, stat)),
        FileType::Directory => Err(Refusal::NotAFile.at(rel.as_str())),
        _ => Err(Refusal::SpecialFile.at(rel.as_str())),
    }
}

/// Opens many files of one root for reading, one after another, walking to a file's
/// folder only when it is not the previous file's: a search reads thousands of files in
/// path order, most folders holding many, and the walk (one `openat` and `close` per
/// component) was most of the system calls of opening each.
///
/// The folder of the last file stays open until the next one or the opener's end, as a
/// listing holds each folder open while it reads it: a file is read from the folder the
/// walk opened, links refused on the way, even if a link is put in the folder's place
/// since (it is never followed). Its files keep the `NONBLOCK` they were opened with,
/// which reads of a regular file ignore: clearing it was two more system calls each.
pub(crate) struct FileOpener<'r> {
    root: &'r Root,
    /// The last folder walked to, and its path with a trailing `/` (empty for the root).
    folder: Option<(String, OwnedFd)>,
}

impl FileOpener<'_> {
    /// Opens the regular file `rel` for reading, as [`Root::open_file`] does, with its
    /// size when opened (what a reader can size its buffers by).
    pub(crate) fn open(&mut self, rel: &RelPath) -> Result<(File, u64), ToolError> {
        let name = rel.file_name().ok_or_else(|| Refusal::NotAFile.at(""))?;
        let parent = &rel.as_str()[..rel.as_str().len() - name.len()];
        let folder = match self.folder.take() {
            Some((path, folder)) if path == parent => (path, folder),
            _ => {
                let (folder, _) = self.root.open_parent(rel, MissingFolders::Refuse)?;
                (parent.to_owned(), folder)
            }
        };
        let (_, folder) = self.folder.insert(folder);
        let (fd, stat) = open_regular_in(folder, name, rel, OFlags::RDONLY)?;
        Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
    }
}

/// Opens the folder `name` inside `folder`, creating it first if it is missing and the
/// walk may create. A folder we create is opened like any other, so if a link is raced
/// into its place between `mkdirat` and `openat`, the open fails instead of following.
fn enter_folder(
    folder: &OwnedFd,
    name: &str,
    missing: MissingFolders,
) -> rustix::io::Result<OwnedFd> {
    let opened = match fs::openat(folder, name, FOLDER_FLAGS, Mode::empty()) {
        Err(Errno::NOENT) if missing == MissingFolders::Create => {
            match fs::mkdirat(folder, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => fs::openat(folder, name, FOLDER_FLAGS, Mode::empty()),
                Err(errno) => Err(errno),
            }
        }
        opened => opened,
    };
    // Linux answers `O_DIRECTORY | O_NOFOLLOW` on a link with `ENOTDIR`, as for a file.
    // An `lstat` (which reads nothing behind the link) tells them apart, so that a link is
    // reported as a link.
    match opened {
        Err(Errno::NOTDIR) if is_symlink(folder, name) => Err(Errno::LOOP),
        opened => opened,
    }
}

fn is_symlink(folder: &OwnedFd, name: &str) -> bool {
    fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
}

/// What a listing learns of each entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Everything `lstat` says: one `statat` per entry.
    Stat,
    /// The kind only, from the folder's entries where the file system tells it.
    Kind,
}

/// One entry of a listing: its kind, and what `lstat` says when the listing asked.
struct Listed {
    path: RelPath,
    kind: FileType,
    info: Option<FileInfo>,
}

/// One step of a listing.
enum Listing {
    /// The folder has no more entries.
    End,
    /// An entry that is not listed (`.`/`..`, a link, an unreachable name, a vanished one).
    Skipped,
    /// A listed entry, with the folder itself opened if it is one, to be listed next.
    Found(Listed, Option<Dir>),
}

fn read_next_entry(folder: &mut Dir, folder_path: &RelPath, detail: Detail) -> Listing {
    let skip = |path: &str, reason: &str| {
        tracing::warn!(path, reason, "listing skipped an entry");
        Listing::Skipped
    };
    let entry = match folder.next() {
        None => return Listing::End,
        Some(Ok(entry)) => entry,
        Some(Err(errno)) => {
            tracing::warn!(path = folder_path.as_str(), error = %io::Error::from(errno), "listing stopped reading a folder");
            return Listing::End;
        }
    };
    let raw_name = entry.file_name().to_bytes();
    if raw_name == b"." || raw_name == b".." {
        return Listing::Skipped;
    }
    let Ok(name) = std::str::from_utf8(raw_name) else {
        let lossy = format!(
            "{}/{}",
            folder_path.as_str(),
            String::from_utf8_lossy(raw_name)
        );
        return skip(&lossy, "not_utf8");
    };
    let path = match folder_path.child(name) {
        Ok(path) => path,
        Err(rule) => return skip(&format!("{}/{}", folder_path.as_str(), name), rule),
    };
    let Ok(folder_fd) = folder.fd() else {
        return Listing::End;
    };
    let told = entry.file_type();
    let stat = if detail == Detail::Stat || told == FileType::Unknown {
        match fs::statat(folder_fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(stat),
            Err(Errno::NOENT) => return Listing::Skipped,
            Err(_) => return skip(path.as_str(), "stat_failed"),
        }
    } else {
        None
    };
    let kind = stat.map_or(told, |stat| FileType::from_raw_mode(stat.st_mode));
    let subfolder = match kind {
        FileType::Symlink => return skip(path.as_str(), "symlink"),
        // Opened by name again with `NOFOLLOW`: if it became a link since the listing
        // read its kind, this fails and the folder is listed but not entered.
        FileType::Directory => {
            match fs::openat(folder_fd, name, FOLDER_FLAGS, Mode::empty()).and_then(Dir::new) {
                Ok(subfolder) => Some(subfolder),
                Err(_) => {
                    tracing::warn!(
                        path = path.as_str(),
                        reason = "not_entered",
                        "listing could not enter a folder"
                    );
                    None
                }
            }
        }
        _ => None,
    };
    let info = stat.as_ref().map(FileInfo::from_stat);
    Listing::Found(Listed { path, kind, info }, subfolder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::parse_relative;

    #[test]
    fn an_opener_reads_files_across_folders_and_refuses_links() {
        let dir = crate::test_support::tree(&[
            ("top.md", "top"),
            ("a/one.md", "one"),
            ("a/two.md", "two"),
            ("b/c/three.md", "three"),
            ("elsewhere/secret.md", "secret"),
        ]);
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join("d")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a/one.md"), dir.path().join("a/link.md"))
            .unwrap();
        let root = Root::open(dir.path()).unwrap();
        let mut opener = root.file_opener();
        let mut read = |path: &str| -> Result<String, ErrorCode> {
            let (mut file, size) = opener
                .open(&parse_relative(path).unwrap())
                .map_err(|e| e.code)?;
            let text = io::read_to_string(&mut file).unwrap();
            assert_eq!(size, text.len() as u64);
            Ok(text)
        };
        for (path, text) in [
            ("a/one.md", "one"),
            ("a/two.md", "two"),
            ("b/c/three.md", "three"),
            ("top.md", "top"),
            ("a/one.md", "one"),
        ] {
            assert_eq!(read(path).as_deref(), Ok(text), "{path}");
        }
        let refused = [
            ("a/link.md", ErrorCode::Forbidden),
            ("d/secret.md", ErrorCode::Forbidden),
            ("a", ErrorCode::InvalidPath),
            ("a/missing.md", ErrorCode::NotFound),
        ];
        for (path, code) in refused {
            assert_eq!(read(path), Err(code), "{path}");
        }
        assert_eq!(read("a/two.md").as_deref(), Ok("two"), "after a refusal");
    }

    #[test]
    fn regular_files_are_those_a_full_listing_finds_without_links_or_specials() {
        let dir = crate::test_support::tree(&[
            ("top.md", "top"),
            ("a/one.md", "one"),
            ("a/b/two.md", "two"),
            ("elsewhere/secret.md", "secret"),
        ]);
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join("a/d")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("top.md"), dir.path().join("a/link.md"))
            .unwrap();
        // A special file is listed by neither (rustix has `mknodat` on Linux only).
        #[cfg(target_os = "linux")]
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("a/fifo.md"),
            FileType::Fifo,
            Mode::RUSR | Mode::WUSR,
            0,
        )
        .unwrap();
        let root = Root::open(dir.path()).unwrap();
        let full: Vec<RelPath> = root
            .read_dir_recursive(&RelPath::root())
            .unwrap()
            .into_iter()
            .filter(|entry| entry.info.kind == FileKind::File)
            .map(|entry| entry.path)
            .collect();
        let regular = root.regular_files_recursive(&RelPath::root()).unwrap();
        assert_eq!(regular, full);
        let names: Vec<&str> = regular.iter().map(RelPath::as_str).collect();
        assert_eq!(
            names,
            ["a/b/two.md", "a/one.md", "elsewhere/secret.md", "top.md"]
        );
        let below = root
            .regular_files_recursive(&parse_relative("a").unwrap())
            .unwrap();
        assert_eq!(below.len(), 2);
    }

    #[test]
    fn mtimes_before_the_epoch_count_nanoseconds_forward() {
        assert_eq!(
            mtime_from(-2, 500_000_000),
            UNIX_EPOCH - Duration::from_millis(1500)
        );
        assert_eq!(
            mtime_from(2, 500_000_000),
            UNIX_EPOCH + Duration::from_millis(2500)
        );
    }
}
