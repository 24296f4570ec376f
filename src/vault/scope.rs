//! Which vault files a listing or a search covers: a folder, an optional glob to keep and
//! an optional glob to leave out (requirements §2: daily logs must be easy to exclude).
//!
//! Hidden entries below the folder (names starting with `.`, `.system` among them) are
//! never in scope, and neither are links, folders or special files: only regular files.

use crate::error::ToolResult;
use crate::paths::{Entry, FileKind, RelPath, Root};

use super::glob::Glob;
use super::policy::Access;
use super::{is_hidden, target};

#[derive(Debug, Clone)]
pub(crate) struct Scope {
    dir: RelPath,
    include: Option<Glob>,
    exclude: Option<Glob>,
}

/// A scope as a client spells it; `field` prefixes the names in error details
/// (`"scope."` for `vault_search`, `""` for `vault_ls`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScopeRequest<'a> {
    pub relative_dir: Option<&'a str>,
    pub glob: Option<&'a str>,
    pub exclude_glob: Option<&'a str>,
    pub field: &'a str,
}

impl Scope {
    /// Checks the folder's spelling and policy (a `.system` folder is `forbidden`) and
    /// compiles the globs (`invalid_parameter` when unusable).
    pub(crate) fn new(request: ScopeRequest<'_>) -> ToolResult<Scope> {
        let dir = match request.relative_dir {
            None => RelPath::root(),
            Some(dir) => target(dir, Access::Read)?,
        };
        let compile = |pattern: Option<&str>, name: &str| {
            pattern
                .map(|p| Glob::new(p, &format!("{}{name}", request.field)))
                .transpose()
        };
        Ok(Scope {
            dir,
            include: compile(request.glob, "glob")?,
            exclude: compile(request.exclude_glob, "exclude_glob")?,
        })
    }

    /// The folder searched (the root when none was given).
    pub(crate) fn dir(&self) -> &RelPath {
        &self.dir
    }

    /// The regular files in scope, sorted by path. A folder the client named is listed
    /// even when hidden; hidden entries found below it are not.
    pub(crate) fn files(&self, root: &Root) -> ToolResult<Vec<Entry>> {
        Ok(root
            .read_dir_recursive(&self.dir)?
            .into_iter()
            .filter(|entry| entry.info.kind == FileKind::File && self.holds(&entry.path))
            .collect())
    }

    /// The paths of [`Scope::files`], without their sizes and times, which costs no
    /// `statat` per file: what a search needs, which opens every file anyway.
    pub(crate) fn file_paths(&self, root: &Root) -> ToolResult<Vec<RelPath>> {
        let mut paths = root.regular_files_recursive(&self.dir)?;
        paths.retain(|path| self.holds(path));
        Ok(paths)
    }

    /// Whether a file listed below the folder is in scope: not hidden below it, and
    /// kept by the globs.
    fn holds(&self, path: &RelPath) -> bool {
        let depth = self.dir.components().count();
        !path.components().skip(depth).any(is_hidden) && self.covers(path.as_str())
    }

    fn covers(&self, path: &str) -> bool {
        self.include.as_ref().is_none_or(|glob| glob.matches(path))
            && !self.exclude.as_ref().is_some_and(|glob| glob.matches(path))
    }
}
