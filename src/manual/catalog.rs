//! Discovery: which manuals and files exist under `MANUALS_ROOT`, and how to read them.
//!
//! Each directory directly under the root is a manual named by its folder; its `.md` and
//! `.json` files (any letter case) are found recursively. Symlinks, to files or folders,
//! are never followed (spec_v2 §4): they are skipped, logged by relative path only, and
//! remembered so a request naming one can be answered `forbidden` rather than
//! `not_found`. A scan records only names and stamps; reading is left to the index so
//! unchanged files are not read again on refresh.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use walkdir::WalkDir;

use super::file::FileType;
use crate::error::ToolError;
use crate::paths::{parse_relative, FileOpener};

/// What tells a changed file from an unchanged one without reading it.
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
            let tree = scan_manual(&entry.path(), &name);
            scan.manuals.insert(name, tree);
        }
    }
    Ok(scan)
}

fn scan_manual(folder: &Path, manual_id: &str) -> ManualTree {
    let mut tree = ManualTree::default();
    for entry in WalkDir::new(folder).follow_links(false).min_depth(1) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                warn_unreadable(manual_id, folder, error);
                continue;
            }
        };
        let path = relative_path(folder, entry.path());
        if entry.path_is_symlink() {
            tracing::warn!(manual_id, path = %path, "skipped symlink");
            tree.symlinks.insert(path);
            continue;
        }
        if entry.file_type().is_dir() {
            tree.folders.push(path);
            continue;
        }
        let Some(file_type) = FileType::from_path(&path).filter(|_| entry.file_type().is_file())
        else {
            continue;
        };
        match entry.metadata() {
            Ok(metadata) => {
                let found = FoundFile {
                    file_type,
                    stamp: FileStamp::of(&metadata),
                };
                tree.files.insert(path, found);
            }
            Err(error) => warn_unreadable(manual_id, folder, error),
        }
    }
    tree
}

fn warn_unreadable(manual_id: &str, folder: &Path, error: walkdir::Error) {
    let path = error
        .path()
        .map(|path| relative_path(folder, path))
        .unwrap_or_default();
    let kind = io::Error::from(error).kind();
    tracing::warn!(manual_id, path = %path, error = %kind, "skipped unreadable entry");
}

/// `path` relative to `folder`, `/`-separated; a name that is not UTF-8 is shown lossily
/// (it can still be listed, just not named exactly by a client).
fn relative_path(folder: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(folder).unwrap_or(path);
    let parts: Vec<_> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
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
