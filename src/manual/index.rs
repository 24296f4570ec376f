//! `ManualIndex`: every manual, file and node, held in memory.
//!
//! Searches must scan pre-parsed text, not re-read files per query, so everything is
//! loaded once. Manuals still change while the server runs; `refresh` re-stats the tree
//! and re-reads only files whose size or mtime changed, so an edit is visible to the next
//! call without a restart and costs one stat per file when nothing changed. The
//! `generation` number moves on every change, letting callers cache derived data cheaply.
//!
//! A search may run for a while; it must not hold up `manual_toc` or a read. So the
//! server refreshes one working index under a lock and publishes [`ManualIndex::snapshot`]s:
//! immutable copies sharing every file (`Arc`), which queries read without any lock
//! while the next refresh builds the next one (the model is rust-analyzer's `Analysis`).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::catalog::{read_manual_file, scan_root, FileStamp, FoundFile, ManualTree, RootScan};
use super::catalog_store::CatalogStore;
use super::file::{FileOrigin, FileType, ManualFile, TextSource};
use super::node::Node;
use super::source::ManualsSource;
use super::validate::{normalize_relative_path, validate_manual_id};
use super::watch::{folders_of, ChangeWatch};
use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::machine::{equal_parts, over_parts};
use crate::paths::Root;
use crate::progress::{IndexProgress, ProgressFn};
use crate::text::lines::LineNo;

/// How many known ids a `not_found` for an unknown manual lists.
const KNOWN_IDS_IN_ERROR: usize = 20;

/// Default of `MAX_MANUAL_FILE_BYTES`: far above any hand-written manual page, far below
/// what would let one file exhaust memory.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;

#[derive(Debug)]
pub struct ManualIndex {
    /// The manuals root, which files' texts are read again from.
    source: Arc<ManualsSource>,
    /// Each manual behind an `Arc`, so a snapshot shares them (a copy of this map per
    /// file cost each start's snapshot a `String` and a map entry a file: 10 ms at
    /// 20,000 files, on the first answer's path); a refresh builds a new `Manual` only
    /// for a manual that changed and keeps the others' `Arc`s, so an unchanged manual a
    /// snapshot holds is never copied.
    manuals: BTreeMap<String, Arc<Manual>>,
    symlinked_manuals: BTreeSet<String>,
    generation: u64,
    /// Skips the walk while nothing under the root changed (see `watch`); a snapshot has
    /// none.
    watch: Option<ChangeWatch>,
    /// The folders of the last scan, watched before the next one.
    folders: Vec<PathBuf>,
    /// Files larger than this are skipped (`MAX_MANUAL_FILE_BYTES`).
    max_file_bytes: u64,
    /// The persisted outlines and line tables (`CACHE_DIR`): read by the first build,
    /// written when files were parsed or dropped; a snapshot has none.
    catalog: Option<CatalogStore>,
}

#[derive(Debug, Default, Clone)]
struct Manual {
    files: BTreeMap<String, IndexedFile>,
    symlinks: BTreeSet<String>,
    /// Files over the size limit, with their size: not read, listed by `manual_list`.
    oversized: BTreeMap<String, u64>,
}

#[derive(Debug, Clone)]
struct IndexedFile {
    stamp: FileStamp,
    /// Shared by every snapshot that holds this version of the file.
    file: Arc<ManualFile>,
}

/// One row of `manual_ls`.
#[derive(Debug, Clone, Copy)]
pub struct ListedFile<'a> {
    pub manual_id: &'a str,
    pub file: &'a ManualFile,
}

impl ManualIndex {
    /// Scans and loads every manual under `root` (`MANUALS_ROOT`), skipping files over
    /// [`DEFAULT_MAX_FILE_BYTES`].
    pub fn build(root: impl Into<PathBuf>) -> io::Result<Self> {
        Self::build_limited(root, DEFAULT_MAX_FILE_BYTES)
    }

    /// Scans and loads every manual under `root`, skipping files over `max_file_bytes`.
    pub(crate) fn build_limited(root: impl Into<PathBuf>, max_file_bytes: u64) -> io::Result<Self> {
        Self::build_reporting(root, max_file_bytes, None, &mut |_| {})
    }

    /// [`ManualIndex::build_limited`], taking the outlines of unchanged files from
    /// `catalog` and keeping it current, and telling `progress` its running totals (see
    /// [`ManualIndex::refresh_reporting`]).
    pub(crate) fn build_reporting(
        root: impl Into<PathBuf>,
        max_file_bytes: u64,
        mut catalog: Option<CatalogStore>,
        progress: &mut ProgressFn,
    ) -> io::Result<Self> {
        let root: PathBuf = root.into();
        // Watching the folders the catalog knows before the first scan spares the next
        // call a second walk (the watch must cover a folder before a scan walks it).
        let known_folders = catalog.as_mut().map(CatalogStore::take_folders);
        let mut index = ManualIndex {
            max_file_bytes,
            folders: folders_of(&root, known_folders.into_iter().flatten()),
            source: ManualsSource::new(root),
            manuals: BTreeMap::new(),
            symlinked_manuals: BTreeSet::new(),
            generation: 0,
            watch: Some(ChangeWatch::default()),
            catalog,
        };
        index.refresh_reporting(progress)?;
        Ok(index)
    }

    /// Stops the change watch: its thread, and its barrier folder in the system's
    /// temporary folder (a one-shot process that leaves the index to its exit must not
    /// leave that folder too). A later refresh walks and arms a new one.
    pub(crate) fn stop_watching(&mut self) {
        self.watch = None;
    }

    /// An immutable copy for queries: the same manuals and files (shared, not copied),
    /// without the change watch. Costs a map entry per manual.
    pub fn snapshot(&self) -> ManualIndex {
        ManualIndex {
            source: Arc::clone(&self.source),
            manuals: self.manuals.clone(),
            symlinked_manuals: self.symlinked_manuals.clone(),
            generation: self.generation,
            watch: None,
            folders: Vec::new(),
            max_file_bytes: self.max_file_bytes,
            catalog: None,
        }
    }

    /// Brings the index in line with the tree: loads added and changed files, drops
    /// deleted ones. Returns whether anything changed (and the generation moved).
    pub fn refresh(&mut self) -> io::Result<bool> {
        self.refresh_reporting(&mut |_| {})
    }

    /// [`ManualIndex::refresh`], telling `progress` the files gone through so far (kept or
    /// loaded) of those found, with their sections and bytes, after each file: a build of
    /// many megabytes takes seconds, and whoever waits for it (a log line, a call's
    /// progress notifications) can follow it. Not called when nothing changed.
    pub(crate) fn refresh_reporting(&mut self, progress: &mut ProgressFn) -> io::Result<bool> {
        let watch = self.watch.get_or_insert_with(ChangeWatch::default);
        // A reader that found a file changed under it asks for a walk too.
        let read_stale = self.source.take_stale();
        if !watch.maybe_changed() && !read_stale {
            return Ok(false);
        }
        let root_path: &Path = self.source.root();
        watch.arm(&self.folders);
        let scan = scan_root(root_path)?;
        self.folders = folders_of(root_path, scan.folders());
        watch.scanned(&self.folders);
        let root = Root::open(root_path)?;
        let next_generation = self.generation + 1;
        let mut changed = scan.symlinked_manuals != self.symlinked_manuals
            || !scan.manuals.keys().eq(self.manuals.keys());
        let RootScan {
            manuals: trees,
            symlinked_manuals,
        } = scan;
        let mut running = IndexProgress {
            manuals: trees.len() as u64,
            files_found: trees
                .values()
                .flat_map(|tree| tree.files.values())
                .filter(|found| found.stamp.len() <= self.max_file_bytes)
                .count() as u64,
            ..IndexProgress::default()
        };
        let mut on_file = |file: &ManualFile, bytes: u64| {
            running.files += 1;
            running.sections += file.nodes().len() as u64;
            running.bytes += bytes;
            progress(running);
        };
        let mut loader = Loader {
            source: &self.source,
            root: &root,
            generation: next_generation,
            max_file_bytes: self.max_file_bytes,
            catalog: self.catalog.as_mut(),
            parsed: 0,
            dropped: 0,
        };
        let mut manuals = BTreeMap::new();
        for (manual_id, tree) in trees {
            let previous = self.manuals.remove(&manual_id);
            let (manual, manual_changed) = loader.reconcile(
                &manual_id,
                previous.as_deref().unwrap_or(&Manual::default()),
                tree,
                &mut on_file,
            );
            changed |= manual_changed;
            let manual = match previous {
                Some(kept) if !manual_changed => kept,
                _ => Arc::new(manual),
            };
            manuals.insert(manual_id, manual);
        }
        // Manuals left over were deleted.
        let dropped = loader.dropped
            + self
                .manuals
                .values()
                .map(|manual| manual.files.len())
                .sum::<usize>();
        let parsed = loader.parsed;
        self.manuals = manuals;
        self.symlinked_manuals = symlinked_manuals;
        if let Some(catalog) = &mut self.catalog {
            let unclaimed = catalog.drop_unclaimed();
            if changed && (parsed > 0 || dropped > 0 || unclaimed) {
                catalog.save(self.manuals.iter().flat_map(|(manual_id, manual)| {
                    manual
                        .files
                        .values()
                        .map(move |entry| (manual_id.as_str(), &*entry.file))
                }));
            }
        }
        if changed {
            self.generation = next_generation;
            tracing::info!(
                generation = self.generation,
                manuals = self.manuals.len(),
                files_read = self.source.reads(),
                "manual index updated"
            );
        }
        Ok(changed)
    }

    /// Files opened and read since the index was made (see `ManualsSource`).
    #[cfg(test)]
    pub(crate) fn files_read(&self) -> usize {
        self.source.reads()
    }

    /// Moves on every change to any manual; equal numbers mean identical content.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sorted ascending.
    pub fn manual_ids(&self) -> impl Iterator<Item = &str> {
        self.manuals.keys().map(String::as_str)
    }

    /// Files of one manual, or of all, sorted by (manual_id, path).
    pub fn files(&self, manual_id: Option<&str>) -> ToolResult<Vec<ListedFile<'_>>> {
        let selected: Vec<(&String, &Manual)> = match manual_id {
            Some(id) => vec![self.manual_entry(id)?],
            None => self
                .manuals
                .iter()
                .map(|(id, manual)| (id, &**manual))
                .collect(),
        };
        Ok(selected
            .into_iter()
            .flat_map(|(id, manual)| {
                manual.files.values().map(move |entry| ListedFile {
                    manual_id: id,
                    file: &entry.file,
                })
            })
            .collect())
    }

    /// Every node of a manual with its file's path, by (path, line).
    pub fn toc(&self, manual_id: &str) -> ToolResult<impl Iterator<Item = (&str, &Node)>> {
        let (_, manual) = self.manual_entry(manual_id)?;
        Ok(manual.files.values().flat_map(|entry| {
            let path = entry.file.path();
            entry.file.nodes().iter().map(move |node| (path, node))
        }))
    }

    /// The files of a manual skipped for their size, with their size, by path.
    pub(crate) fn oversized(
        &self,
        manual_id: &str,
    ) -> ToolResult<impl Iterator<Item = (&str, u64)>> {
        let (_, manual) = self.manual_entry(manual_id)?;
        Ok(manual
            .oversized
            .iter()
            .map(|(path, &bytes)| (path.as_str(), bytes)))
    }

    pub fn file(&self, manual_id: &str, path: &str) -> ToolResult<&ManualFile> {
        let (_, manual) = self.manual_entry(manual_id)?;
        let path = normalize_relative_path(path)?;
        match manual.files.get(&path) {
            Some(entry) => Ok(&entry.file),
            None => Err(missing_file(manual_id, manual, &path)),
        }
    }

    /// The deepest node of `path` whose range contains `line`; `None` when no node does
    /// (front matter above the first heading, or a line past the end).
    pub fn node_at(&self, manual_id: &str, path: &str, line: LineNo) -> ToolResult<Option<&Node>> {
        Ok(self.file(manual_id, path)?.node_at(line))
    }

    /// A node by its id (see [`crate::manual::node`] for the format), with its file.
    pub fn node(&self, manual_id: &str, node_id: &str) -> ToolResult<(&ManualFile, &Node)> {
        let (_, manual) = self.manual_entry(manual_id)?;
        // A JSON file's node id is its path; a Markdown node's is "<path>#L<line>".
        let file_and_line = match manual.files.get(node_id) {
            Some(entry) => Some((&*entry.file, 1)),
            None => node_id.rsplit_once("#L").and_then(|(path, line)| {
                Some((&*manual.files.get(path)?.file, line.parse().ok()?))
            }),
        };
        file_and_line
            .and_then(|(file, line)| {
                Some((
                    file,
                    file.node_at(line)
                        .filter(|node| node.has_id(file.path(), node_id))?,
                ))
            })
            .ok_or_else(|| {
                ToolError::not_found(format!("no node {node_id:?} in manual {manual_id:?}"))
                    .with_details(json!({ "manual_id": manual_id, "node_id": node_id }))
            })
    }

    fn manual_entry(&self, manual_id: &str) -> ToolResult<(&String, &Manual)> {
        validate_manual_id(manual_id)?;
        if let Some((id, manual)) = self.manuals.get_key_value(manual_id) {
            return Ok((id, manual));
        }
        if self.symlinked_manuals.contains(manual_id) {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                "manual folders reached through a symlink are not served",
            )
            .with_details(json!({ "manual_id": manual_id, "component": manual_id })));
        }
        let known: Vec<&str> = self.manual_ids().take(KNOWN_IDS_IN_ERROR).collect();
        Err(ToolError::not_found(format!("no manual {manual_id:?}"))
            .with_details(json!({ "manual_id": manual_id, "known": known })))
    }
}

/// What one refresh loads files with, and what it counted.
struct Loader<'a> {
    source: &'a Arc<ManualsSource>,
    /// The manuals root, which the files are opened under.
    root: &'a Root,
    /// The generation the loaded files get.
    generation: u64,
    max_file_bytes: u64,
    catalog: Option<&'a mut CatalogStore>,
    /// Files parsed (not taken from the catalog) that the catalog would keep.
    parsed: usize,
    /// Files dropped (deleted or grown over the limit).
    dropped: usize,
}

/// Files a refresh reads and parses in one round on every core before it reports them in
/// path order: progress moves while a large manual loads.
const LOAD_ROUND: usize = 256;

/// A file of a round: carried over or restored already, or to be read and parsed.
enum Slot {
    Ready(IndexedFile),
    Load(FileToLoad),
}

/// A changed file that the catalog does not hold: what reading and parsing it needs.
struct FileToLoad {
    path: String,
    file_type: FileType,
    stamp: FileStamp,
    /// The stamp's fingerprint, the loaded file's version.
    version: u64,
    origin: FileOrigin,
}

impl Loader<'_> {
    /// Carries over unchanged files of `previous` and loads the rest of `tree`. Borrows
    /// `previous`, which a snapshot may share: the caller keeps it when nothing changed.
    fn reconcile(
        &mut self,
        manual_id: &str,
        previous: &Manual,
        tree: ManualTree,
        on_file: &mut dyn FnMut(&ManualFile, u64),
    ) -> (Manual, bool) {
        let manual_origin: Arc<str> = Arc::from(manual_id);
        let mut changed = previous.symlinks != tree.symlinks;
        let mut files = BTreeMap::new();
        let mut oversized = BTreeMap::new();
        let mut found_files = tree.files.into_iter().peekable();
        while found_files.peek().is_some() {
            let mut round = Vec::with_capacity(LOAD_ROUND);
            for (path, found) in found_files.by_ref() {
                let bytes = found.stamp.len();
                if bytes > self.max_file_bytes {
                    if previous.oversized.get(&path) != Some(&bytes) {
                        tracing::warn!(
                            manual_id,
                            path = %path,
                            bytes,
                            max_bytes = self.max_file_bytes,
                            "manual file skipped: larger than MAX_MANUAL_FILE_BYTES"
                        );
                    }
                    changed |= previous.files.contains_key(&path);
                    oversized.insert(path, bytes);
                    continue;
                }
                let slot = match previous.files.get(&path) {
                    Some(kept) if kept.stamp == found.stamp => Slot::Ready(kept.clone()),
                    _ => {
                        changed = true;
                        self.restore(manual_id, &manual_origin, path.clone(), found)
                    }
                };
                round.push((path, slot));
                if round.len() == LOAD_ROUND {
                    break;
                }
            }
            for (path, entry) in self.load_round(manual_id, round) {
                on_file(&entry.file, entry.stamp.len());
                files.insert(path, entry);
            }
        }
        // Files of `previous` not carried over or loaded again were deleted (or are now
        // over the size limit).
        let deleted = previous
            .files
            .keys()
            .filter(|path| !files.contains_key(*path))
            .count();
        changed |= deleted > 0;
        self.dropped += deleted;
        (
            Manual {
                files,
                symlinks: tree.symlinks,
                oversized,
            },
            changed,
        )
    }

    /// A changed file from the catalog, when it holds this version, else the file to load.
    fn restore(
        &mut self,
        manual_id: &str,
        manual_origin: &Arc<str>,
        path: String,
        found: FoundFile,
    ) -> Slot {
        let version = found.stamp.fingerprint();
        let origin = FileOrigin {
            source: Arc::clone(self.source) as Arc<dyn TextSource>,
            manual_id: Arc::clone(manual_origin),
        };
        let restored = self
            .catalog
            .as_deref_mut()
            .and_then(|catalog| catalog.claim(manual_id, &path, version))
            .and_then(|stored| {
                ManualFile::restore(
                    origin.clone(),
                    path.clone(),
                    found.file_type,
                    stored,
                    self.generation,
                )
            });
        match restored {
            Some(file) => {
                let file = file.with_version(version);
                if let Some(problem) = file.problem() {
                    tracing::warn!(manual_id, path = %path, problem, "manual file has a problem");
                }
                Slot::Ready(IndexedFile {
                    stamp: found.stamp,
                    file: Arc::new(file),
                })
            }
            None => Slot::Load(FileToLoad {
                path,
                file_type: found.file_type,
                stamp: found.stamp,
                version,
                origin,
            }),
        }
    }

    /// The files of `round` in order, those to load read and parsed on every core.
    fn load_round(
        &mut self,
        manual_id: &str,
        round: Vec<(String, Slot)>,
    ) -> Vec<(String, IndexedFile)> {
        let wanted: Vec<&FileToLoad> = round
            .iter()
            .filter_map(|(_, slot)| match slot {
                Slot::Load(load) => Some(load),
                Slot::Ready(_) => None,
            })
            .collect();
        let mut loaded = self.load(manual_id, &wanted).into_iter();
        round
            .into_iter()
            .map(|(path, slot)| {
                let entry = match slot {
                    Slot::Ready(entry) => entry,
                    Slot::Load(load) => {
                        let file = loaded.next().expect("one file loaded per file to load");
                        self.source.count_read();
                        match file.problem() {
                            Some(problem) => {
                                tracing::warn!(manual_id, path = %path, problem, "manual file has a problem")
                            }
                            None => self.parsed += 1,
                        }
                        IndexedFile {
                            stamp: load.stamp,
                            file: Arc::new(file),
                        }
                    }
                };
                (path, entry)
            })
            .collect()
    }

    /// Reads and parses `wanted`, in order, on every core: each thread takes consecutive
    /// files of about equal size with an opener of its own, which keeps their folder open.
    fn load(&self, manual_id: &str, wanted: &[&FileToLoad]) -> Vec<ManualFile> {
        let parts = equal_parts(wanted, crate::machine::cores(), |load| {
            usize::try_from(load.stamp.len()).unwrap_or(usize::MAX)
        });
        let load_part = |part: std::ops::Range<usize>| -> Vec<ManualFile> {
            let mut opener = self.root.file_opener();
            wanted[part]
                .iter()
                .map(|load| {
                    ManualFile::load(
                        load.origin.clone(),
                        load.path.clone(),
                        load.file_type,
                        read_manual_file(&mut opener, manual_id, &load.path),
                        self.generation,
                    )
                    .with_version(load.version)
                })
                .collect()
        };
        over_parts(parts, load_part).into_iter().flatten().collect()
    }
}

/// `forbidden` when the path runs through a skipped symlink (naming that component, never
/// its target), else `not_found`.
fn missing_file(manual_id: &str, manual: &Manual, path: &str) -> ToolError {
    let through_symlink = path
        .match_indices('/')
        .map(|(end, _)| &path[..end])
        .chain([path])
        .find(|prefix| manual.symlinks.contains(*prefix));
    match through_symlink {
        Some(component) => ToolError::new(
            ErrorCode::Forbidden,
            "paths through a symlink are not served",
        )
        .with_details(json!({ "manual_id": manual_id, "path": path, "component": component })),
        None => ToolError::not_found(format!("no file {path:?} in manual {manual_id:?}"))
            .with_details(json!({ "manual_id": manual_id, "path": path })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_over_the_size_limit_are_skipped_until_they_shrink() {
        let big = format!("# Big\n\n{}\n", "x".repeat(200));
        let dir = crate::test_support::tree(&[("m/small.md", "# Small\n"), ("m/big.md", &big)]);
        let mut index = ManualIndex::build_limited(dir.path(), 100).expect("index");
        let served: Vec<&str> = index
            .files(Some("m"))
            .unwrap()
            .iter()
            .map(|listed| listed.file.path())
            .collect();
        assert_eq!(served, ["small.md"]);
        let skipped: Vec<(&str, u64)> = index.oversized("m").unwrap().collect();
        assert_eq!(skipped, [("big.md", big.len() as u64)]);
        assert_eq!(
            index.file("m", "big.md").unwrap_err().code,
            ErrorCode::NotFound
        );
        std::fs::write(dir.path().join("m/big.md"), "# Big\n").unwrap();
        assert!(index.refresh().unwrap());
        assert!(index.file("m", "big.md").is_ok());
        assert_eq!(index.oversized("m").unwrap().count(), 0);
    }

    /// A start over an unchanged tree needs one walk: the watch armed before it covers
    /// every folder it walked (from the catalog), so the next call only checks the watch.
    #[test]
    fn a_start_from_the_catalog_watches_every_folder_its_scan_walks() {
        let dir = crate::test_support::tree(&[
            ("manuals/m/a.md", "# A\n"),
            ("manuals/m/deep/er/b.md", "# B\n"),
            ("manuals/n/c.md", "# C\n"),
        ]);
        let vault = dir.path().join("vault");
        std::fs::create_dir(&vault).unwrap();
        let cache_dir = vault.join(".system/cache");
        let start = || {
            ManualIndex::build_reporting(
                dir.path().join("manuals"),
                DEFAULT_MAX_FILE_BYTES,
                CatalogStore::open(&cache_dir, &vault),
                &mut |_| {},
            )
            .expect("index")
        };
        let mut first = start();
        let first_watch = first.watch.as_mut().unwrap();
        assert!(
            first_watch.maybe_changed(),
            "no catalog yet: the next call walks"
        );
        drop(first);

        let mut second = start();
        let watch = second.watch.as_mut().unwrap();
        assert!(
            !watch.maybe_changed(),
            "every folder of the scan was watched"
        );
        std::fs::write(dir.path().join("manuals/m/deep/er/b.md"), "# B2\n").unwrap();
        assert!(second.refresh().unwrap(), "an edit deep down is still seen");
    }

    #[test]
    fn a_snapshot_keeps_its_files_while_the_index_moves_on() {
        let dir = crate::test_support::tree(&[("m/a.md", "# A\n")]);
        let mut index = ManualIndex::build(dir.path()).expect("index");
        let snapshot = index.snapshot();
        assert!(
            Arc::ptr_eq(&snapshot.manuals["m"], &index.manuals["m"]),
            "a snapshot shares each manual"
        );
        std::fs::write(dir.path().join("m/b.md"), "# B\n").unwrap();
        assert!(index.refresh().unwrap());
        assert_eq!(snapshot.files(None).unwrap().len(), 1);
        assert_eq!(index.files(None).unwrap().len(), 2);
        assert_eq!(snapshot.generation() + 1, index.generation());
    }

    /// A refresh that changes one manual builds that one anew and keeps the others' `Arc`s,
    /// which the published snapshot shares, instead of copying them.
    #[test]
    fn a_refresh_shares_the_manuals_it_did_not_change() {
        let dir = crate::test_support::tree(&[
            ("m/a.md", "# A\n"),
            ("n/b.md", "# B\n"),
            ("o/c.md", "# C\n"),
        ]);
        let mut index = ManualIndex::build(dir.path()).expect("index");
        let snapshot = index.snapshot();
        std::fs::write(dir.path().join("n/b2.md"), "# B2\n").unwrap();
        assert!(index.refresh().unwrap());
        for unchanged in ["m", "o"] {
            assert!(
                Arc::ptr_eq(&snapshot.manuals[unchanged], &index.manuals[unchanged]),
                "{unchanged} is shared, not copied"
            );
        }
        assert!(!Arc::ptr_eq(&snapshot.manuals["n"], &index.manuals["n"]));
        assert_eq!(snapshot.files(Some("n")).unwrap().len(), 1);
        assert_eq!(index.files(Some("n")).unwrap().len(), 2);
        std::fs::remove_file(dir.path().join("n/b.md")).unwrap();
        assert!(index.refresh().unwrap(), "a deleted file is a change");
        assert_eq!(index.files(Some("n")).unwrap().len(), 1);
        assert!(Arc::ptr_eq(&snapshot.manuals["m"], &index.manuals["m"]));
    }
}
