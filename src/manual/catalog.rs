//! Discovery: which manuals and files exist under `MANUALS_ROOT`, and how to read them.
//!
//! Each directory directly under the root is a manual named by its folder; its `.md` and
//! `.json` files (any letter case) are found recursively. Symlinks, to files or folders,
//! are never followed (spec_v2 §4): they are skipped, logged by relative path only, and
//! remembered so a request naming one can be answered `forbidden` rather than
//! `not_found`. A scan records only names and stamps; reading is left to the index so
//! unchanged files are not read again on refresh.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CStr;
use std::fs;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{openat, statat, AtFlags, Dir, Mode, OFlags, CWD};

use super::file::FileType;
use crate::error::ToolError;
use crate::paths::{parse_relative, FileOpener};

/// What tells a changed file from an unchanged one without reading it.
///
/// The vault's forms cache has its own stamp (`vault::forms::Stamp`) for the same
/// question; this one stays apart because its [`FileStamp::fingerprint`] is stored as a
/// file's version (catalog, section index) and must not change across releases: adding
/// the device that one holds, or taking its `fstat` form, would rebuild every cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Inode and status-change time where the system has them: a file replaced by one of
    /// the same size and modification time (`cp -p`, an archive) still changes these, and
    /// the section index, kept across restarts, must not take it for the old one.
    identity: (u64, i64, i64),
}

impl FileStamp {
    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    fn of(metadata: &fs::Metadata) -> Self {
        #[cfg(unix)]
        let identity = {
            use std::os::unix::fs::MetadataExt;
            (metadata.ino(), metadata.ctime(), metadata.ctime_nsec())
        };
        #[cfg(not(unix))]
        let identity = (0, 0, 0);
        FileStamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            identity,
        }
    }

    /// The stamp of a status read by the scan ([`rustix::fs::statat`]), equal to
    /// [`FileStamp::of`] the same file's [`fs::Metadata`] (a read checks the stamp with
    /// the latter).
    // The fields' integer types differ between platforms: the casts are no-ops on some.
    #[allow(clippy::unnecessary_cast)]
    fn of_stat(stat: &rustix::fs::Stat) -> Self {
        let modified = {
            let (seconds, nanos) = (stat.st_mtime as i64, stat.st_mtime_nsec as u32);
            let whole = Duration::from_secs(seconds.unsigned_abs());
            if seconds >= 0 {
                SystemTime::UNIX_EPOCH.checked_add(whole)
            } else {
                SystemTime::UNIX_EPOCH.checked_sub(whole)
            }
            .and_then(|time| time.checked_add(Duration::from_nanos(u64::from(nanos))))
        };
        FileStamp {
            len: stat.st_size as u64,
            modified,
            identity: (
                stat.st_ino as u64,
                stat.st_ctime as i64,
                stat.st_ctime_nsec as i64,
            ),
        }
    }

    /// One number for the stamp, the same in every process: what the section index
    /// records as the version of a file's sections.
    pub(crate) fn fingerprint(&self) -> u64 {
        let modified = self
            .modified
            .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos());
        let (inode, changed, changed_nanos) = self.identity;
        crate::text::fingerprint(&[
            &self.len.to_le_bytes(),
            &modified.to_le_bytes(),
            &inode.to_le_bytes(),
            &changed.to_le_bytes(),
            &changed_nanos.to_le_bytes(),
        ])
    }
}

/// A manual content file found by a scan.
#[derive(Debug)]
pub(super) struct FoundFile {
    pub file_type: FileType,
    pub(crate) stamp: FileStamp,
}

/// One manual folder as a scan saw it.
#[derive(Debug, Default)]
pub(super) struct ManualTree {
    /// Keyed by path relative to the manual folder, `/`-separated.
    pub files: BTreeMap<String, FoundFile>,
    /// Relative paths of skipped symlinks inside the manual.
    pub(crate) symlinks: BTreeSet<String>,
    /// Relative paths of the folders below the manual folder that the scan walked.
    pub folders: Vec<String>,
}

/// The whole root as a scan saw it.
#[derive(Debug, Default)]
pub(super) struct RootScan {
    pub manuals: BTreeMap<String, ManualTree>,
    /// Names of symlinks directly under the root (would-be manuals).
    pub(crate) symlinked_manuals: BTreeSet<String>,
}

impl RootScan {
    /// Every folder the scan walked, relative to the root: each manual's and those below.
    pub(super) fn folders(&self) -> impl Iterator<Item = String> + '_ {
        self.manuals.iter().flat_map(|(manual_id, tree)| {
            std::iter::once(manual_id.clone()).chain(
                tree.folders
                    .iter()
                    .map(move |folder| format!("{manual_id}/{folder}")),
            )
        })
    }
}

/// Lists manuals and their files under `root`. Only an unreadable root is an error;
/// unreadable entries below it are logged and skipped.
pub(super) fn scan_root(root: &Path) -> io::Result<RootScan> {
    let mut scan = RootScan::default();
    let mut folders = Vec::new();
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            let lossy = entry.file_name().to_string_lossy().into_owned();
            tracing::warn!(path = %lossy, "skipped entry with a non-UTF-8 name");
            continue;
        };
        let file_type = entry.file_type()?;
        if file_type.is_symlink() {
            tracing::warn!(path = %name, "skipped symlink");
            scan.symlinked_manuals.insert(name);
        } else if file_type.is_dir() {
            folders.push((name, entry.path()));
        }
    }
    scan.manuals = scan_manuals(&folders, crate::machine::cores());
    Ok(scan)
}

/// Walks the manual folders `folders` (name, path) on up to `threads` threads, each
/// taking the next manual not yet taken. A walk is system calls (a listing per folder, a
/// status per file), and at a start it is the last of the start's threads to end (issue
/// 16: the other core was idle for its last third at 24 manuals), so a second walker
/// shortens the first answer's wait. Every manual is still walked whole by one thread, in
/// the same way, so the trees are those of a walk on one thread.
fn scan_manuals(folders: &[(String, PathBuf)], threads: usize) -> BTreeMap<String, ManualTree> {
    let next = AtomicUsize::new(0);
    let walk_next = || {
        let mut walked = Vec::new();
        while let Some((name, path)) = folders.get(next.fetch_add(1, Ordering::Relaxed)) {
            walked.push((name.clone(), scan_manual(path, name)));
        }
        walked
    };
    let helpers = threads.min(folders.len()).saturating_sub(1);
    std::thread::scope(|scope| {
        // The calling thread walks too: its heap is the one the start reserved.
        let running: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("manual-scan".into())
                    .spawn_scoped(scope, walk_next)
                    .ok()
            })
            .collect();
        let mut manuals: BTreeMap<String, ManualTree> = walk_next().into_iter().collect();
        for helper in running {
            let walked = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            manuals.extend(walked);
        }
        manuals
    })
}

/// Walks one manual folder depth first, each folder's entries in the order the system
/// lists them. Every folder is opened and every file's status read relative to its
/// folder's descriptor (`openat`, `fstatat`), not by a path from the root: at 20,000
/// files in 8,900 folders the path lookups of a walk by paths were a third of a start's
/// scan (issue 16). Nothing is followed: a folder is opened with `O_NOFOLLOW`, a file's
/// status is the link's own.
fn scan_manual(folder: &Path, manual_id: &str) -> ManualTree {
    let mut walk = ManualWalk::new(manual_id, folder);
    match open_folder(CWD, folder) {
        Ok(descriptor) => walk.folder(descriptor, 0),
        Err(error) => walk.unreadable(error),
    }
    walk.tree
}

/// How many folders of one walk stay open at once (a deeper folder is read whole, closed,
/// and its subfolders and files reached from the manual's folder one component at a
/// time), so a deep tree cannot use up descriptors.
const MAX_OPEN_FOLDERS: usize = 32;

/// One manual's walk: what it found so far.
struct ManualWalk<'a> {
    manual_id: &'a str,
    /// The manual's folder, as the root's listing named it.
    folder: &'a Path,
    /// The entry being walked, relative to the manual (`""` for the manual's folder):
    /// one buffer, each name pushed on entering and cut off on leaving, so only what the
    /// tree keeps is copied out of it (a file's path, not every entry's).
    path: String,
    tree: ManualTree,
}

impl<'a> ManualWalk<'a> {
    fn new(manual_id: &'a str, folder: &'a Path) -> Self {
        ManualWalk {
            manual_id,
            folder,
            path: String::new(),
            tree: ManualTree::default(),
        }
    }

    /// Lists the folder open as `descriptor` (at `self.path`) and walks what it holds;
    /// `depth` folders above it are open.
    fn folder(&mut self, descriptor: OwnedFd, depth: usize) {
        let (folder, listing) = match list_folder(descriptor) {
            Ok(listing) => listing,
            Err(error) => return self.unreadable(error),
        };
        // Beyond the open limit the folder is closed before its subfolders are walked.
        let folder = (depth < MAX_OPEN_FOLDERS).then_some(folder);
        let descriptor = folder.as_ref().and_then(|folder| folder.fd().ok());
        let folder_length = self.path.len();
        for (name, file_type) in listing.entries() {
            if folder_length > 0 {
                self.path.push('/');
            }
            self.path.push_str(&name.to_string_lossy());
            self.entry(descriptor, name, file_type, depth);
            self.path.truncate(folder_length);
        }
    }

    /// Walks the entry `name` of the open `folder` (`None` beyond the open limit), at
    /// `self.path`, listed as `file_type`.
    fn entry(
        &mut self,
        folder: Option<BorrowedFd<'_>>,
        name: &CStr,
        file_type: rustix::fs::FileType,
        depth: usize,
    ) {
        use rustix::fs::FileType as Kind;
        let kind = match file_type {
            Kind::Unknown => match self.status(folder, name) {
                Some(stat) => Kind::from_raw_mode(stat.st_mode as _),
                None => return,
            },
            kind => kind,
        };
        match kind {
            Kind::Symlink => {
                tracing::warn!(manual_id = self.manual_id, path = %self.path, "skipped symlink");
                self.tree.symlinks.insert(self.path.clone());
            }
            Kind::Directory => {
                self.tree.folders.push(self.path.clone());
                let opened = match folder {
                    Some(folder) => open_folder(folder, name),
                    None => self.open_by_path(&self.path),
                };
                match opened {
                    Ok(descriptor) => self.folder(descriptor, depth + 1),
                    Err(error) => self.unreadable(error),
                }
            }
            Kind::RegularFile => {
                let Some(file_type) = FileType::from_path(&self.path) else {
                    return;
                };
                if let Some(stat) = self.status(folder, name) {
                    // Replaced by something else since it was listed: not a file now.
                    if Kind::from_raw_mode(stat.st_mode as _) == Kind::RegularFile {
                        let stamp = FileStamp::of_stat(&stat);
                        let found = FoundFile { file_type, stamp };
                        self.tree.files.insert(self.path.clone(), found);
                    }
                }
            }
            _ => {}
        }
    }

    /// The own status (a link's, not its target's) of the entry `name` of the open
    /// `folder` (`None` beyond the open limit), at `self.path`; `None` when unreadable
    /// (logged).
    fn status(&self, folder: Option<BorrowedFd<'_>>, name: &CStr) -> Option<rustix::fs::Stat> {
        let status = match folder {
            Some(folder) => statat(folder, name, AtFlags::SYMLINK_NOFOLLOW),
            None => {
                let parent = self.path.rsplit_once('/').map_or("", |(parent, _)| parent);
                self.open_by_path(parent)
                    .and_then(|parent| statat(parent, name, AtFlags::SYMLINK_NOFOLLOW))
            }
        };
        status.map_err(|error| self.unreadable(error)).ok()
    }

    /// The folder `path` (relative to the manual, `""` for its own), opened from the
    /// manual's folder one component at a time, each with `O_NOFOLLOW`: how a folder
    /// beyond the open limit is reached, so a link swapped into the middle of its path is
    /// refused there as it is above the limit (one path handed to `openat` would follow
    /// every link but the last).
    fn open_by_path(&self, path: &str) -> rustix::io::Result<OwnedFd> {
        let mut folder = open_folder(CWD, self.folder)?;
        for component in path.split('/').filter(|component| !component.is_empty()) {
            folder = open_folder(&folder, component)?;
        }
        Ok(folder)
    }

    /// Logs the entry at `self.path` as skipped for `error`.
    fn unreadable(&self, error: rustix::io::Errno) {
        let kind = io::Error::from(error).kind();
        tracing::warn!(manual_id = self.manual_id, path = %self.path, error = %kind, "skipped unreadable entry");
    }
}
/// Opens the folder `path` (relative to `at`) for listing, without following a link.
fn open_folder<P: rustix::path::Arg>(at: impl AsFd, path: P) -> rustix::io::Result<OwnedFd> {
    openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A folder's entries as listed, in the system's order: each name with its NUL, one
/// after another in one buffer, and where each starts with the type the listing gave
/// (two allocations a folder instead of one a name).
#[derive(Debug, Default)]
struct Listing {
    names: Vec<u8>,
    entries: Vec<(usize, rustix::fs::FileType)>,
}

impl Listing {
    fn push(&mut self, name: &CStr, file_type: rustix::fs::FileType) {
        self.entries.push((self.names.len(), file_type));
        self.names.extend_from_slice(name.to_bytes_with_nul());
    }

    fn entries(&self) -> impl Iterator<Item = (&CStr, rustix::fs::FileType)> + '_ {
        self.entries.iter().map(|&(start, file_type)| {
            let name = CStr::from_bytes_until_nul(&self.names[start..]);
            (name.expect("each name is pushed with its NUL"), file_type)
        })
    }
}

/// The entries of the open folder `descriptor` but `.` and `..`, in the system's order,
/// with the listing that keeps the folder open.
fn list_folder(descriptor: OwnedFd) -> rustix::io::Result<(Dir, Listing)> {
    let mut folder = Dir::new(descriptor)?;
    let mut listing = Listing::default();
    for entry in folder.by_ref() {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            listing.push(name, entry.file_type());
        }
    }
    Ok((folder, listing))
}

/// Reads a manual file through the path-safety layer ([`open_manual_file`]).
pub(super) fn read_manual_file(
    opener: &mut FileOpener<'_>,
    manual_id: &str,
    path: &str,
) -> io::Result<Vec<u8>> {
    let (mut file, size) = open_manual_file(opener, manual_id, path)?;
    read_opened(&mut file, size)
}

/// Reads a manual file as [`read_manual_file`] does, if it is still at stamp fingerprint
/// `version`: its status is checked on the open file before and after the read, so a file
/// replaced, rewritten or still being written is not taken for the indexed one.
/// `Err` says why not, for the reader's error.
pub(super) fn read_manual_file_at(
    opener: &mut FileOpener<'_>,
    manual_id: &str,
    path: &str,
    version: u64,
) -> Result<Vec<u8>, String> {
    let check = |file: &fs::File, reason: &str| match file.metadata() {
        Ok(metadata) if FileStamp::of(&metadata).fingerprint() == version => Ok(()),
        Ok(_) => Err(reason.to_owned()),
        Err(error) => Err(format!("status unreadable: {}", error.kind())),
    };
    let (mut file, size) = open_manual_file(opener, manual_id, path)
        .map_err(|error| format!("cannot be opened as a regular file: {error}"))?;
    check(&file, "changed since it was indexed")?;
    let content =
        read_opened(&mut file, size).map_err(|error| format!("unreadable: {}", error.kind()))?;
    check(&file, "changed while it was read")?;
    Ok(content)
}

/// The bytes of an opened manual file, read into a buffer sized by its status at open
/// (a file read whole in one allocation, not grown step by step).
fn read_opened(file: &mut fs::File, size: u64) -> io::Result<Vec<u8>> {
    let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut content)?;
    Ok(content)
}

/// Opens a manual file through the path-safety layer, with its size: the path is checked
/// and opened component by component from the manuals root without following any
/// symlink, so a link swapped in after the scan (even as a middle folder) is refused, not
/// followed. The opener keeps the last folder open, so the files of one folder (read in
/// path order) cost one `openat` each instead of one per component. This is the one place
/// manual content is opened.
pub(super) fn open_manual_file(
    opener: &mut FileOpener<'_>,
    manual_id: &str,
    path: &str,
) -> io::Result<(fs::File, u64)> {
    let refused = |error: ToolError| io::Error::new(io::ErrorKind::InvalidInput, error.message);
    let relative = parse_relative(&format!("{manual_id}/{path}")).map_err(refused)?;
    opener.open(&relative).map_err(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a walk by paths (`walkdir`, as the scan was before it walked by descriptors)
    /// finds in `folder`: files with their stamps from `std`, folders, symlinks.
    fn walked_by_paths(folder: &Path) -> ManualTree {
        let mut tree = ManualTree::default();
        for entry in walkdir::WalkDir::new(folder).min_depth(1) {
            let entry = entry.unwrap();
            let path = entry
                .path()
                .strip_prefix(folder)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if entry.path_is_symlink() {
                tree.symlinks.insert(path);
            } else if entry.file_type().is_dir() {
                tree.folders.push(path);
            } else if let Some(file_type) = FileType::from_path(&path) {
                let stamp = FileStamp::of(&entry.metadata().unwrap());
                tree.files.insert(path, FoundFile { file_type, stamp });
            }
        }
        tree
    }

    /// A tree's files with their stamps' fingerprints, its folders sorted, its links.
    type TreeSummary = (Vec<(String, u64)>, Vec<String>, BTreeSet<String>);

    fn summary(tree: &ManualTree) -> TreeSummary {
        let files = tree
            .files
            .iter()
            .map(|(path, found)| (path.clone(), found.stamp.fingerprint()))
            .collect();
        let mut folders = tree.folders.clone();
        folders.sort();
        (files, folders, tree.symlinks.clone())
    }

    /// However many walkers share the manuals, each manual is walked once and whole, as
    /// one walker alone walks it.
    #[test]
    fn several_walkers_find_every_manual_as_one_walker_does() {
        let mut layout = Vec::new();
        for manual in 0..7 {
            for file in 0..=manual {
                layout.push((format!("m{manual}/f{file}.md"), format!("# F{file}\n")));
                layout.push((format!("m{manual}/sub{file}/g.md"), "# G\n".to_owned()));
            }
        }
        let layout: Vec<(&str, &str)> = layout
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let dir = crate::test_support::tree(&layout);
        std::os::unix::fs::symlink(dir.path().join("m1"), dir.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("m2/f0.md"), dir.path().join("m3/l.md"))
            .unwrap();
        let mut folders: Vec<(String, PathBuf)> = (0..7)
            .map(|manual| (format!("m{manual}"), dir.path().join(format!("m{manual}"))))
            .collect();
        folders.reverse();
        let alone: Vec<(String, TreeSummary)> = scan_manuals(&folders, 1)
            .iter()
            .map(|(name, tree)| (name.clone(), summary(tree)))
            .collect();
        let expected: Vec<(String, TreeSummary)> = (0..7)
            .map(|manual| format!("m{manual}"))
            .map(|name| {
                let walked = walked_by_paths(&dir.path().join(&name));
                (name, summary(&walked))
            })
            .collect();
        assert_eq!(alone, expected);
        assert_eq!(alone[3].1 .2.len(), 1, "the link inside a manual");
        for threads in [2, 3, 7, 20] {
            let shared: Vec<(String, TreeSummary)> = scan_manuals(&folders, threads)
                .iter()
                .map(|(name, tree)| (name.clone(), summary(tree)))
                .collect();
            assert_eq!(shared, expected, "{threads} walkers");
        }
        let root = scan_root(dir.path()).unwrap();
        assert_eq!(root.manuals.len(), 7);
        assert!(root.symlinked_manuals.contains("linked"));
        assert!(scan_manuals(&[], 2).is_empty());
    }

    /// Beyond the open limit a folder is reached by its path: every component of it is
    /// opened without following, so a folder swapped for a link on the way is refused.
    #[test]
    fn a_folder_reached_by_its_path_is_refused_through_a_link_on_the_way() {
        let dir = crate::test_support::tree(&[
            ("m/real/deeper/a.md", "# A\n"),
            ("elsewhere/deeper/b.md", "# B\n"),
        ]);
        let folder = dir.path().join("m");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), folder.join("linked")).unwrap();
        let walk = ManualWalk::new("m", &folder);
        assert!(walk.open_by_path("real/deeper").is_ok());
        assert!(walk.open_by_path("").is_ok());
        assert!(
            walk.open_by_path("linked/deeper").is_err(),
            "followed a link in the middle"
        );
        assert!(
            walk.open_by_path("linked").is_err(),
            "followed a link at the end"
        );
    }

    #[test]
    fn the_scan_finds_what_a_walk_by_paths_finds_with_the_same_stamps_however_deep() {
        let deep: String = (0..MAX_OPEN_FOLDERS + 3)
            .map(|level| format!("d{level}/"))
            .collect();
        let dir = crate::test_support::tree(&[
            ("m/a.md", "# A\n"),
            ("m/B.MD", "# B\n"),
            ("m/data.json", "{}"),
            ("m/notes.txt", "not a manual file"),
            ("m/sub/c.md", "# C\n"),
            ("m/sub/empty/.keep", ""),
            (&format!("m/{deep}bottom.md"), "# Bottom\n"),
        ]);
        let folder = dir.path().join("m");
        std::os::unix::fs::symlink(folder.join("a.md"), folder.join("sub/link.md")).unwrap();
        std::os::unix::fs::symlink(folder.join("sub"), folder.join("linked")).unwrap();
        // Beyond the open limit, where entries are reached by their paths.
        let deep_link = format!("{deep}link.md");
        std::os::unix::fs::symlink(folder.join("a.md"), folder.join(&deep_link)).unwrap();
        std::os::unix::fs::symlink(folder.join("sub"), folder.join(format!("{deep}linked")))
            .unwrap();

        let scanned = scan_manual(&folder, "m");
        let walked = walked_by_paths(&folder);
        let files = |tree: &ManualTree| -> Vec<(String, FileStamp)> {
            tree.files
                .iter()
                .map(|(path, found)| (path.clone(), found.stamp))
                .collect()
        };
        assert_eq!(files(&scanned), files(&walked));
        assert!(scanned.files.contains_key(&format!("{deep}bottom.md")));
        assert_eq!(scanned.files.len(), 5, "{:?}", scanned.files.keys());
        let sorted = |tree: &ManualTree| -> Vec<String> {
            let mut folders = tree.folders.clone();
            folders.sort();
            folders
        };
        assert_eq!(sorted(&scanned), sorted(&walked));
        assert_eq!(scanned.symlinks, walked.symlinks);
        assert_eq!(scanned.symlinks.len(), 4);
        assert!(scanned.symlinks.contains(&deep_link));
        for (path, found) in &scanned.files {
            let metadata = std::fs::symlink_metadata(folder.join(path)).unwrap();
            assert_eq!(
                found.stamp.fingerprint(),
                FileStamp::of(&metadata).fingerprint(),
                "{path}"
            );
        }
    }

    #[test]
    fn a_stamp_before_the_epoch_reads_as_std_reads_it() {
        let dir = crate::test_support::tree(&[("m/old.md", "# Old\n")]);
        let path = dir.path().join("m/old.md");
        let before = SystemTime::UNIX_EPOCH - Duration::new(86_400, 250_000_000);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(before)
            .unwrap();
        let scanned = scan_manual(&dir.path().join("m"), "m");
        let stamp = scanned.files["old.md"].stamp;
        assert_eq!(stamp, FileStamp::of(&std::fs::metadata(&path).unwrap()));
        assert_eq!(stamp.modified, Some(before));
    }
}
