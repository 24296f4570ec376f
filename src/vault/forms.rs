//! A server's cache of each vault file's normalised and loose text, so that `vault_search`
//! and `vault_find` search text already normalised instead of normalising it again in
//! every call.
//!
//! A scan normalises the windows around every raw place a pattern can occur
//! (`text::near`); for a term that is in every file (`incident` of `incident-4711`) that
//! is a hundred thousand windows per call, and no file prefilter can narrow it. An MCP
//! server is long-lived and an agent searches the same vault many times while it changes
//! a few files at a time, so each file's forms are kept in memory: per block of
//! `vault::blocks` (the same blocks, overlaps and line numbers as a scan reads), the
//! normalisation of the whole block with its map back to the original, its loose text
//! (`text::loose::LooseRuns`), and where its lines start. A search over them finds what
//! the windows find, at the same places: the windows hold every occurrence the whole
//! block's normalisation holds (`text::near`'s contract), and the blocks are the same.
//!
//! An entry is served only while the file's stamp is unchanged: device, inode, size,
//! modification and status-change times in nanoseconds, from the descriptor opened
//! without following links (so a file replaced by a link is refused at the open, and a
//! file edited behind the server's back with its size and modification time restored
//! still moves its status-change time). A file is stamped before it is read and again
//! after; its forms are kept only when both agree, and only once its last change is
//! [`SETTLE`] old: the kernel stamps changes with a coarse clock (a tick of several
//! milliseconds; a second on some file systems), so a change made in the same tick as
//! the previous one, after the read, could leave the stamp as it was (git's "racily
//! clean" files). A file changed that recently is searched from its forms built in this
//! call, and kept by a later call. The vault's own writes drop the entry at once
//! ([`FormsCache::forget`]).
//!
//! A file is read by windows the first time a search sees it, and its forms are built the
//! second time it is seen unchanged (a process that searches once pays nothing more), or
//! before that by the background fill that each search starts when it ends
//! ([`FormsCache::fill_in_background`]): one thread builds the forms of the files searches
//! have seen once, so the next search finds them ready when the agent took a moment between
//! its calls (a server's second search over 100 MB costs seconds of CPU otherwise). The fill
//! gives way to searches: it stops between blocks when one starts, and the next search to
//! end starts it again.
//!
//! Memory is bounded by `VAULT_CACHE_MAX_BYTES` (0 turns the cache off): a file whose
//! forms would not fit in what is left is searched as before, by windows, and nothing is
//! evicted to make room for it (a search reads every file in scope, so evicting in use
//! order would empty the cache in every call once the vault outgrows it). An entry
//! leaves when its file is found changed or gone, or is written through the vault.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::paths::{parse_relative, FileOpener, OpenedFile, RelPath, Root};
use crate::text::lines::{Breaks, LineTable};
use crate::text::loose::LooseRuns;
use crate::text::normalize::{normalize, Normalized};

use super::blocks::{each_block_in, open, Block, Place, Skip};

/// How old a file's last change must be before its forms are kept (see the module's doc).
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// What the forms of a file cost in memory at most, per byte of the file, before they
/// are built: a file that cannot fit by this estimate is not read for the cache at all.
const MOST_BYTES_PER_FILE_BYTE: u64 = 4;

/// One block of a file, in the forms a search needs.
#[derive(Debug)]
pub(crate) struct BlockForms {
    pub(crate) place: Place,
    /// Where the lines of the block's original text start.
    pub(crate) lines: LineTable,
    pub(crate) normalized: Normalized,
    pub(crate) loose: LooseRuns,
}

impl BlockForms {
    fn of(block: Block<'_>) -> BlockForms {
        let normalized = normalize(block.text);
        let mut loose = LooseRuns::of(&normalized.text);
        loose.shrink_to_fit();
        BlockForms {
            place: block.place,
            lines: LineTable::with_breaks(block.text, Breaks::Newline),
            normalized,
            loose,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.lines.heap_bytes() + self.normalized.heap_bytes() + self.loose.heap_bytes()
    }
}

/// The forms of every block of one file, in order.
#[derive(Debug)]
pub(crate) struct FileForms {
    pub(crate) blocks: Vec<BlockForms>,
    bytes: u64,
}

/// Where a search reads a file from.
pub(crate) enum Source {
    /// Its forms, from the cache or just built.
    Forms(Arc<FileForms>),
    /// The file itself, opened (with its size then), for a search by windows: the
    /// cache is off or full.
    File(OpenedFile, u64),
}

/// What identifies a version of a file without reading it. The status-change time moves
/// with every write, even one that restores the size and modification time.
///
/// The manuals' `manual::catalog::FileStamp` answers the same question, but is
/// kept apart: its fingerprint is stored (the catalog's and the section index's file
/// versions, across restarts), so its fields cannot grow the device without every cache
/// being rebuilt at the upgrade; this one lives only in memory, is taken from the open
/// file (`fstat`, so the stamp is the version the search then reads), holds the device
/// because a vault may span mounts, and needs the status-change time as a time
/// ([`Stamp::settled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    // The fields' integer types differ between platforms: the casts are no-ops on some.
    #[allow(clippy::unnecessary_cast)]
    fn of(file: &OpenedFile) -> Option<Stamp> {
        let stat = rustix::fs::fstat(file).ok()?;
        Some(Stamp {
            device: stat.st_dev as u64,
            inode: stat.st_ino as u64,
            size: stat.st_size as u64,
            modified: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        })
    }
}

impl Stamp {
    /// Whether the file's last change was at least `settle` before now.
    fn settled(&self, settle: Duration) -> bool {
        let (seconds, nanos) = self.changed;
        let changed = u64::try_from(seconds).ok().map(|seconds| {
            let nanos = u64::try_from(nanos).unwrap_or(0);
            UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_nanos(nanos)
        });
        changed.is_some_and(|changed| {
            SystemTime::now()
                .duration_since(changed)
                .is_ok_and(|age| age >= settle)
        })
    }
}

struct Entry {
    stamp: Stamp,
    forms: Arc<FileForms>,
}

/// A file not held, as a search last saw it.
struct Sight {
    stamp: Stamp,
    /// The fill found it could not build this version's forms (it is not text, or could
    /// not be read): no fill opens it again until a search sees another version.
    unfillable: bool,
}

#[derive(Default)]
struct Held {
    entries: HashMap<String, Entry>,
    bytes: u64,
    /// Each file not held that a search read by windows. Keyed by the checked path, so
    /// the fill opens it without parsing it again.
    seen: HashMap<RelPath, Sight>,
}

impl Held {
    /// Whether a search sees `rel` at `stamp` for the first time (and notes it). A file
    /// is normalised whole only the second time a search finds it unchanged: that costs
    /// two to eight times a search by windows (`docs/benchmarks.md`), which a process
    /// that searches once (`manvault call`) would pay for nothing.
    fn first_sight(&mut self, rel: &RelPath, stamp: Stamp) -> bool {
        let sight = Sight {
            stamp,
            unfillable: false,
        };
        match self.seen.get_mut(rel) {
            Some(seen) if seen.stamp == stamp => false,
            Some(seen) => {
                *seen = sight;
                true
            }
            None => {
                self.seen.insert(rel.clone(), sight);
                true
            }
        }
    }

    /// Whether a search last saw `rel` at `stamp`.
    fn seen_at(&self, rel: &RelPath, stamp: Stamp) -> bool {
        self.seen.get(rel).is_some_and(|seen| seen.stamp == stamp)
    }

    /// The files a background fill may build the forms of: seen once, not found
    /// unfillable, and small enough to fit by their size when last seen.
    fn fillable(&self, max_bytes: u64) -> Vec<RelPath> {
        let due = |(_, sight): &(&RelPath, &Sight)| {
            !sight.unfillable && self.may_fit(sight.stamp.size, max_bytes)
        };
        self.seen
            .iter()
            .filter(due)
            .map(|(rel, _)| rel.clone())
            .collect()
    }

    fn remove(&mut self, path: &str) {
        if let Some(entry) = self.entries.remove(path) {
            self.bytes -= entry.forms.bytes;
        }
    }

    /// Whether the forms of a file of `size` bytes may fit in what `max_bytes` leaves.
    fn may_fit(&self, size: u64, max_bytes: u64) -> bool {
        size.saturating_mul(MOST_BYTES_PER_FILE_BYTE) <= max_bytes.saturating_sub(self.bytes)
    }
}

/// The forms of the vault's files, one entry per file path (see the module's doc).
pub(crate) struct FormsCache {
    max_bytes: u64,
    /// [`SETTLE`], shorter in tests.
    settle: Duration,
    held: Mutex<Held>,
    /// Searches running now: the background fill gives way to them.
    searches: AtomicUsize,
    /// Whether a background fill runs now (there is at most one).
    filling: AtomicBool,
}

/// A search running, from [`FormsCache::searching`] until dropped.
pub(crate) struct Searching<'c>(&'c FormsCache);

/// The background fill running, from [`FormsCache::start_filling`] until dropped.
struct Filling(Arc<FormsCache>);

impl Drop for Filling {
    fn drop(&mut self) {
        self.0.filling.store(false, Ordering::Release);
    }
}

impl Drop for Searching<'_> {
    fn drop(&mut self) {
        self.0.searches.fetch_sub(1, Ordering::AcqRel);
    }
}

impl FormsCache {
    /// A cache holding at most `max_bytes` of forms; 0 keeps none.
    pub(crate) fn new(max_bytes: u64) -> FormsCache {
        FormsCache::settling(max_bytes, SETTLE)
    }

    /// A cache that keeps the forms of files changed at least `settle` ago.
    pub(crate) fn settling(max_bytes: u64, settle: Duration) -> FormsCache {
        FormsCache {
            max_bytes,
            settle,
            held: Mutex::new(Held::default()),
            searches: AtomicUsize::new(0),
            filling: AtomicBool::new(false),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of forms held now.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.held().bytes
    }

    /// Drops the entry of `path` (as the server spells it): the vault just wrote it.
    pub(crate) fn forget(&self, path: &str) {
        let mut held = self.held();
        held.remove(path);
        if let Ok(rel) = parse_relative(path) {
            held.seen.remove(&rel);
        }
    }

    /// Where to search `rel`: its forms when the cache holds them for the version on
    /// disk, else, if they fit, its forms built now (and kept when the file did not
    /// change while it was read), else the file. A file that cannot be opened or is not
    /// text is skipped.
    pub(crate) fn source(
        &self,
        opener: &mut FileOpener<'_>,
        rel: &RelPath,
    ) -> Result<Source, Skip> {
        let opened = open(opener, rel);
        let Ok((file, size)) = opened else {
            self.forget_file(rel);
            return Err(Skip);
        };
        let Some(stamp) = Stamp::of(&file) else {
            return Ok(Source::File(file, size));
        };
        {
            let mut held = self.held();
            match held.entries.get(rel.as_str()) {
                Some(entry) if entry.stamp == stamp => {
                    return Ok(Source::Forms(Arc::clone(&entry.forms)));
                }
                Some(_) => held.remove(rel.as_str()),
                None => {}
            }
            if !held.may_fit(size, self.max_bytes) || held.first_sight(rel, stamp) {
                return Ok(Source::File(file, size));
            }
        }
        let forms = self.build(&file, size, rel, stamp, || true)?;
        Ok(Source::Forms(forms))
    }

    /// The forms of `file`, opened as `rel` at `stamp`, kept when it was read whole while
    /// `go_on` held and did not change meanwhile, and its last change is settled.
    fn build(
        &self,
        file: &OpenedFile,
        size: u64,
        rel: &RelPath,
        stamp: Stamp,
        go_on: impl Fn() -> bool,
    ) -> Result<Arc<FileForms>, Skip> {
        let (forms, whole) = read_forms(file, size, rel, go_on)?;
        let forms = Arc::new(forms);
        if whole && Stamp::of(file) == Some(stamp) && stamp.settled(self.settle) {
            self.keep(rel, stamp, &forms);
        }
        Ok(forms)
    }

    /// Marks a search as running until the value is dropped: a background fill stops at
    /// its next block.
    pub(crate) fn searching(&self) -> Searching<'_> {
        self.searches.fetch_add(1, Ordering::AcqRel);
        Searching(self)
    }

    /// Drops the entry and the sight of `rel`: it is gone or no longer a plain file.
    fn forget_file(&self, rel: &RelPath) {
        let mut held = self.held();
        held.remove(rel.as_str());
        held.seen.remove(rel);
    }

    /// Starts, on a thread of its own, building the forms of the files searches saw once,
    /// through `root`, unless a fill runs already or there is nothing to fill.
    pub(crate) fn fill_in_background(self: &Arc<Self>, root: &Root) {
        let Some(running) = self.start_filling() else {
            return;
        };
        let due = self.held().fillable(self.max_bytes);
        if due.is_empty() {
            return;
        }
        let Ok(root) = root.try_clone() else {
            return;
        };
        let thread = std::thread::Builder::new().name("vault-forms-fill".into());
        // A thread that cannot be spawned drops `running` with the closure.
        let _ = thread.spawn(move || running.0.fill(&root, due));
    }

    /// Marks a fill as running, unless one is or the cache is off; the mark is cleared
    /// when the value is dropped, even by a fill that panicked.
    fn start_filling(self: &Arc<Self>) -> Option<Filling> {
        let started = self.max_bytes > 0 && !self.filling.swap(true, Ordering::AcqRel);
        started.then(|| Filling(Arc::clone(self)))
    }

    /// Whether a background fill runs now.
    #[cfg(test)]
    fn is_filling(&self) -> bool {
        self.filling.load(Ordering::Acquire)
    }

    /// Builds and keeps the forms of the `due` files, until a search starts.
    fn fill(&self, root: &Root, due: Vec<RelPath>) {
        let mut opener = root.file_opener();
        let no_search = || self.searches.load(Ordering::Acquire) == 0;
        for rel in due {
            if !no_search() {
                return;
            }
            self.fill_one(&mut opener, &rel, no_search);
        }
    }

    /// Builds and keeps the forms of `rel` if a search saw it at the stamp it has now, its
    /// last change is settled and they may fit; notes no sight of its own.
    fn fill_one(&self, opener: &mut FileOpener<'_>, rel: &RelPath, go_on: impl Fn() -> bool) {
        let Ok((file, size)) = open(opener, rel) else {
            self.forget_file(rel);
            return;
        };
        let Some(stamp) = Stamp::of(&file).filter(|stamp| stamp.settled(self.settle)) else {
            return;
        };
        {
            let held = self.held();
            if !held.seen_at(rel, stamp) || !held.may_fit(size, self.max_bytes) {
                return;
            }
        }
        if self.build(&file, size, rel, stamp, go_on).is_err() {
            // Not text, or unreadable: the next search skips it; the fill leaves it.
            let mut held = self.held();
            if let Some(seen) = held.seen.get_mut(rel).filter(|seen| seen.stamp == stamp) {
                seen.unfillable = true;
            }
        }
    }

    /// Keeps `forms` as those of `rel` at `stamp` if they fit.
    fn keep(&self, rel: &RelPath, stamp: Stamp, forms: &Arc<FileForms>) {
        let mut held = self.held();
        held.remove(rel.as_str());
        if held.bytes + forms.bytes > self.max_bytes {
            return;
        }
        held.bytes += forms.bytes;
        held.seen.remove(rel);
        let entry = Entry {
            stamp,
            forms: Arc::clone(forms),
        };
        held.entries.insert(rel.as_str().to_owned(), entry);
    }
}

/// The forms of every block of `file` while `go_on` holds, and whether it was read whole.
fn read_forms(
    file: &OpenedFile,
    size: u64,
    rel: &RelPath,
    go_on: impl Fn() -> bool,
) -> Result<(FileForms, bool), Skip> {
    let mut blocks = Vec::new();
    let whole = each_block_in(file, size, rel, |block| {
        blocks.push(BlockForms::of(block));
        go_on()
    })?;
    let bytes = blocks.iter().map(BlockForms::heap_bytes).sum::<usize>() as u64;
    Ok((FileForms { blocks, bytes }, whole))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::paths::{parse_relative, Root};
    use crate::vault::find::testing::vault;

    /// The normalised text of `path`'s forms as `cache` serves them, `None` when it
    /// serves the file itself.
    fn served(cache: &FormsCache, root: &Root, path: &str) -> Result<Option<String>, Skip> {
        let rel = parse_relative(path).unwrap();
        Ok(match cache.source(&mut root.file_opener(), &rel)? {
            Source::Forms(forms) => Some(
                forms
                    .blocks
                    .iter()
                    .map(|block| block.normalized.text.as_str())
                    .collect(),
            ),
            Source::File(..) => None,
        })
    }

    /// The forms of `path`, built the second time a search sees it unchanged (the first
    /// time, the file itself is served).
    fn filled(cache: &FormsCache, root: &Root, path: &str) -> String {
        assert_eq!(
            served(cache, root, path).ok(),
            Some(None),
            "first sight: the file"
        );
        served(cache, root, path)
            .ok()
            .flatten()
            .expect("second sight: forms")
    }

    /// A cache that keeps what it reads at once (no file here is older than [`SETTLE`]).
    fn keeping() -> FormsCache {
        FormsCache::settling(1 << 20, Duration::ZERO)
    }

    /// Lets the coarse clock the kernel stamps changes with move on.
    fn tick() {
        std::thread::sleep(Duration::from_millis(50));
    }

    #[test]
    fn forms_are_built_at_the_second_sight_then_kept_and_served_while_the_file_is_unchanged() {
        let (_dir, root) = vault(&[("a.md", "ＩＮＣＩＤＥＮＴ-4711\n")]);
        let cache = keeping();
        let first = filled(&cache, &root, "a.md");
        assert!(first.starts_with("incident-4711"), "{first:?}");
        let held = cache.held_bytes();
        assert!(held > 0);
        let again = served(&cache, &root, "a.md").ok().flatten().unwrap();
        assert_eq!(again, first);
        assert_eq!(cache.held_bytes(), held, "served, not read again");
    }

    #[test]
    fn a_file_changed_behind_the_servers_back_with_its_size_and_time_restored_is_read_again() {
        let (dir, root) = vault(&[("a.md", "incident-4711\n")]);
        let path = dir.path().join("a.md");
        let cache = keeping();
        assert!(filled(&cache, &root, "a.md").starts_with("incident-4711"));
        let modified = fs::metadata(&path).unwrap().modified().unwrap();
        tick();
        fs::write(&path, "accident-4711\n").unwrap();
        restore_modified(&path, modified);
        assert_eq!(fs::metadata(&path).unwrap().len(), 14);
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), modified);
        let after = filled(&cache, &root, "a.md");
        assert!(
            after.starts_with("accident-4711"),
            "stale forms served: {after:?}"
        );
    }

    fn restore_modified(path: &Path, modified: SystemTime) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(modified).unwrap();
    }

    #[test]
    fn a_file_changed_within_the_settle_time_is_not_kept() {
        let (_dir, root) = vault(&[("a.md", "incident\n")]);
        let cache = FormsCache::new(1 << 20);
        filled(&cache, &root, "a.md");
        assert_eq!(
            cache.held_bytes(),
            0,
            "just written: its stamp may not move yet"
        );
    }

    #[test]
    fn a_removed_file_or_a_link_in_its_place_is_skipped_and_its_entry_dropped() {
        let files = [
            ("a.md", "incident\n"),
            ("b.md", "incident\n"),
            ("c.md", "other\n"),
        ];
        let (dir, root) = vault(&files);
        let cache = keeping();
        for path in ["a.md", "b.md"] {
            filled(&cache, &root, path);
        }
        let both = cache.held_bytes();
        fs::remove_file(dir.path().join("a.md")).unwrap();
        assert!(served(&cache, &root, "a.md").is_err());
        let one = cache.held_bytes();
        assert!(one < both && one > 0);
        fs::remove_file(dir.path().join("b.md")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("c.md"), dir.path().join("b.md")).unwrap();
        assert!(
            served(&cache, &root, "b.md").is_err(),
            "a link is never followed"
        );
        assert_eq!(cache.held_bytes(), 0);
    }

    #[test]
    fn a_forgotten_entry_is_dropped_at_once() {
        let (_dir, root) = vault(&[("a.md", "incident\n")]);
        let cache = keeping();
        filled(&cache, &root, "a.md");
        assert!(cache.held_bytes() > 0);
        cache.forget("a.md");
        assert_eq!(cache.held_bytes(), 0);
        filled(&cache, &root, "a.md");
    }

    #[test]
    fn files_past_the_budget_are_served_as_files_and_nothing_is_evicted_for_them() {
        let small = "incident\n".repeat(10);
        let large = "incident\n".repeat(1000);
        let (_dir, root) = vault(&[("a.md", &small), ("b.md", &large)]);
        let cache = FormsCache::settling(4096, Duration::ZERO);
        filled(&cache, &root, "a.md");
        let held = cache.held_bytes();
        assert!(held > 0 && held <= 4096);
        for _ in 0..3 {
            assert_eq!(
                served(&cache, &root, "b.md").ok(),
                Some(None),
                "searched as a file"
            );
        }
        assert_eq!(cache.held_bytes(), held);
        let off = FormsCache::new(0);
        for _ in 0..3 {
            assert_eq!(
                served(&off, &root, "a.md").ok(),
                Some(None),
                "0 keeps nothing"
            );
        }
    }

    /// Starts a background fill of `cache` and waits for it to end.
    fn fill_and_wait(cache: &Arc<FormsCache>, root: &Root) {
        cache.fill_in_background(root);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while cache.is_filling() {
            assert!(std::time::Instant::now() < deadline, "the fill never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_background_fill_builds_the_forms_of_files_searches_saw_once() {
        let (_dir, root) = vault(&[("a.md", "ＩＮＣＩＤＥＮＴ\n"), ("b.md", "other\n")]);
        let cache = Arc::new(keeping());
        assert_eq!(
            served(&cache, &root, "a.md").ok(),
            Some(None),
            "first sight"
        );
        fill_and_wait(&cache, &root);
        let held = cache.held_bytes();
        assert!(held > 0, "a.md filled");
        let forms = served(&cache, &root, "a.md").ok().flatten();
        assert_eq!(forms.as_deref(), Some("incident "));
        assert_eq!(cache.held_bytes(), held, "served, not built again");
        assert_eq!(
            served(&cache, &root, "b.md").ok(),
            Some(None),
            "b.md was never searched, so never filled"
        );
    }

    #[test]
    fn the_fill_gives_way_to_a_running_search() {
        let (_dir, root) = vault(&[("a.md", "incident\n")]);
        let cache = Arc::new(keeping());
        assert_eq!(served(&cache, &root, "a.md").ok(), Some(None));
        let search = cache.searching();
        fill_and_wait(&cache, &root);
        assert_eq!(cache.held_bytes(), 0, "stopped before its first file");
        drop(search);
        fill_and_wait(&cache, &root);
        assert!(cache.held_bytes() > 0);
    }

    #[test]
    fn the_fill_leaves_files_changed_since_they_were_seen_or_not_settled() {
        let (dir, root) = vault(&[("a.md", "incident\n")]);
        let cache = Arc::new(keeping());
        assert_eq!(served(&cache, &root, "a.md").ok(), Some(None));
        tick();
        fs::write(dir.path().join("a.md"), "accident\n").unwrap();
        fill_and_wait(&cache, &root);
        assert_eq!(cache.held_bytes(), 0, "not the version a search saw");
        assert_eq!(
            served(&cache, &root, "a.md").ok(),
            Some(None),
            "the fill noted no sight: this search is the first to see the new version"
        );
        let unsettled = Arc::new(FormsCache::new(1 << 20));
        assert_eq!(served(&unsettled, &root, "a.md").ok(), Some(None));
        fill_and_wait(&unsettled, &root);
        assert_eq!(unsettled.held_bytes(), 0, "changed within the settle time");
    }

    #[test]
    fn the_fill_mark_is_cleared_even_when_a_fill_panics() {
        let cache = Arc::new(keeping());
        let running = cache.start_filling().expect("no fill runs yet");
        assert!(cache.start_filling().is_none(), "one fill at a time");
        let panicked = std::thread::spawn(move || {
            let _running = running;
            panic!("a fill that panics");
        })
        .join();
        assert!(panicked.is_err());
        assert!(!cache.is_filling());
        assert!(
            cache.start_filling().is_some(),
            "a later search can fill again"
        );
    }

    #[test]
    fn the_fill_leaves_files_it_cannot_build_or_that_cannot_fit() {
        let large = "incident\n".repeat(1000);
        let (_dir, root) = vault(&[("a.md", "text\0more\n"), ("b.md", &large)]);
        let cache = Arc::new(FormsCache::settling(4096, Duration::ZERO));
        for path in ["a.md", "b.md"] {
            assert_eq!(served(&cache, &root, path).ok(), Some(None), "{path}");
        }
        let due = |cache: &FormsCache| cache.held().fillable(cache.max_bytes);
        let rel = |path| parse_relative(path).unwrap();
        assert_eq!(
            due(&cache),
            vec![rel("a.md")],
            "b.md cannot fit by its size"
        );
        fill_and_wait(&cache, &root);
        assert_eq!(cache.held_bytes(), 0);
        assert!(
            due(&cache).is_empty(),
            "a.md is not text: no fill opens it again"
        );
        cache.fill_in_background(&root);
        assert!(!cache.is_filling(), "nothing to fill, no thread");
    }

    #[test]
    fn a_binary_file_is_skipped() {
        let (_dir, root) = vault(&[("a.md", "text\0more\n")]);
        let cache = keeping();
        // First seen, the file is served as it is, and its search sniffs it as binary.
        assert_eq!(served(&cache, &root, "a.md").ok(), Some(None));
        for _ in 0..2 {
            assert!(served(&cache, &root, "a.md").is_err());
        }
        assert_eq!(cache.held_bytes(), 0);
    }
}
