//! Path safety: the only way any tool touches the file system under a root.
//!
//! Clients name files by paths relative to `manuals/` or `vault/`. The threats are a path
//! that leaves its root (`../`, absolute and network paths, look-alike characters that
//! normalise to those), one that is reached through a link planted inside the root, and a
//! write that leaves a half-written or clobbered file behind. Two steps answer them:
//!
//! 1. [`parse_relative`] checks the spelling and yields a [`RelPath`]: plain components,
//!    no `..`, no anchor, NFKC-normalised. Pure string work, no file system.
//! 2. [`Root`] performs every access by walking those components from the root's open
//!    descriptor with `openat(O_NOFOLLOW)`, so a link at any component is refused by the
//!    same call that would have opened it (and its target is never read). Writes go
//!    through a temporary file and an atomic rename; appends hold an exclusive lock.
//!    Temporary files a killed writer left behind are removed by [`Root::sweep_temp_files`].
//!
//! Error codes (spec_v2 §7.1), with `details.path_rule` naming the rule and
//! `details.component` the offending (relative, client-spelled) component or prefix;
//! no server path ever appears:
//!
//! - `out_of_scope`: the path, read lexically, points outside the root: absolute (`/x`,
//!   `\x`), network (`//srv`, `\\srv\share`), or climbing above the root (`../x`,
//!   `a/../../x`).
//! - `invalid_path`: a malformed spelling that would stay inside: `a/../b` (any `..`),
//!   empty path, control characters, bidirectional controls and line separators,
//!   percent-encoded dots or separators, drive letters,
//!   `:`, leading `~`, Windows device names, trailing space or dot, over-long names, the
//!   server's temporary-file names; also a folder where a file is expected or the reverse.
//! - `forbidden`: a symbolic link at any component, a hard-linked write target, a device,
//!   pipe or socket, or the operating system denying access.
//! - `not_found`: nothing at that path (or at the prefix named in `details.component`).
//! - `conflict`: create over an existing file, a replace whose `expected` version is
//!   stale, or an unexpected I/O failure (the file system refused; retrying may help).
//!
//! Not covered here: vault policy (`.system/`, the daily folder, extensions) lives in the
//! vault module and works on [`RelPath::components`].

mod relpath;
mod root;
mod sweep;
mod write;

pub use relpath::{parse_relative, RelPath, MAX_COMPONENT_BYTES, MAX_PATH_BYTES};
pub(crate) use root::FileOpener;
pub use root::{Entry, FileInfo, FileKind, Root};
/// A file [`FileOpener`] opened: other modules hold and read it, only `paths` opens one.
pub(crate) use std::fs::File as OpenedFile;
pub use sweep::{Swept, STALE_TEMP_AGE};

use std::path::{Path, PathBuf};

/// A file the server keeps at a configured path (statistics, memory store, audit log):
/// the folder opened as its [`Root`], that folder's path, and the file relative to it.
pub struct LocatedFile {
    pub folder: PathBuf,
    pub root: Root,
    pub file: RelPath,
}

/// Locates the file at `path`. Inside `vault_root` the vault root is the root, so a
/// missing `.system/` is created by the same link-refusing walk as any vault write;
/// elsewhere the file's own folder is. Creates nothing. Errors name `setting`, never the
/// server path.
pub fn locate_file(path: &Path, vault_root: &Path, setting: &str) -> Result<LocatedFile, String> {
    let (folder, inside) = match path.strip_prefix(vault_root) {
        Ok(inside) => (vault_root, inside),
        Err(_) => (
            path.parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
            Path::new(path.file_name().unwrap_or_default()),
        ),
    };
    let inside = inside
        .to_str()
        .ok_or_else(|| format!("{setting} is not valid UTF-8"))?;
    let file = parse_relative(inside).map_err(|error| format!("{setting}: {}", error.message))?;
    let root = Root::open(folder)
        .map_err(|error| format!("the folder of {setting} cannot be opened: {}", error.kind()))?;
    Ok(LocatedFile {
        folder: folder.to_path_buf(),
        root,
        file,
    })
}
