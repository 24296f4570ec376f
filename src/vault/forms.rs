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
//! second time it is seen unchanged (a process that searches once pays nothing more).
//!
//! Memory is bounded by `VAULT_CACHE_MAX_BYTES` (0 turns the cache off): a file whose
//! forms would not fit in what is left is searched as before, by windows, and nothing is
//! evicted to make room for it (a search reads every file in scope, so evicting in use
//! order would empty the cache in every call once the vault outgrows it). An entry
//! leaves when its file is found changed or gone, or is written through the vault.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::paths::{FileOpener, OpenedFile, RelPath};
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

#[derive(Default)]
struct Held {
    entries: HashMap<String, Entry>,
    bytes: u64,
    /// The stamp each file not held had when a search last read it by windows.
    seen: HashMap<String, Stamp>,
}

impl Held {
    /// Whether a search sees `rel` at `stamp` for the first time (and notes it). A file
    /// is normalised whole only the second time a search finds it unchanged: that costs
    /// two to eight times a search by windows (`docs/benchmarks.md`), which a process
    /// that searches once (`manvault call`) would pay for nothing.
    fn first_sight(&mut self, rel: &RelPath, stamp: Stamp) -> bool {
        match self.seen.get_mut(rel.as_str()) {
            Some(seen) if *seen == stamp => false,
            Some(seen) => {
                *seen = stamp;
                true
            }
            None => {
                self.seen.insert(rel.as_str().to_owned(), stamp);
                true
            }
        }
    }

    fn remove(&mut self, path: &str) {
        if let Some(entry) = self.entries.remove(path) {
            self.bytes -= entry.forms.bytes;
        }
    }
}

/// The forms of the vault's files, one entry per file path (see the module's doc).
pub(crate) struct FormsCache {
    max_bytes: u64,
    /// [`SETTLE`], shorter in tests.
    settle: Duration,
    held: Mutex<Held>,
}

impl FormsCache {
    /// A cache holding at most `max_bytes` of forms; 0 keeps none.
    pub(crate) fn new(max_bytes: u64) -> FormsCache {
        FormsCache {
            max_bytes,
            settle: SETTLE,
            held: Mutex::new(Held::default()),
        }
    }

    /// A cache that keeps the forms of files changed at least `settle` ago.
    #[cfg(test)]
    pub(crate) fn settling(max_bytes: u64, settle: Duration) -> FormsCache {
        FormsCache {
            max_bytes,
            settle,
            held: Mutex::new(Held::default()),
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
        held.seen.remove(path);
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
            self.forget(rel.as_str());
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
            let room = self.max_bytes.saturating_sub(held.bytes);
            if size.saturating_mul(MOST_BYTES_PER_FILE_BYTE) > room || held.first_sight(rel, stamp)
            {
                return Ok(Source::File(file, size));
            }
        }
        let (forms, whole) = read_forms(&file, size, rel)?;
        let forms = Arc::new(forms);
        if whole && Stamp::of(&file) == Some(stamp) && stamp.settled(self.settle) {
            self.keep(rel, stamp, &forms);
        }
        Ok(Source::Forms(forms))
    }

    /// Keeps `forms` as those of `rel` at `stamp` if they fit.
    fn keep(&self, rel: &RelPath, stamp: Stamp, forms: &Arc<FileForms>) {
        let mut held = self.held();
        held.remove(rel.as_str());
        if held.bytes + forms.bytes > self.max_bytes {
            return;
        }
        held.bytes += forms.bytes;
        held.seen.remove(rel.as_str());
        let entry = Entry {
            stamp,
            forms: Arc::clone(forms),
        };
        held.entries.insert(rel.as_str().to_owned(), entry);
    }
}

/// The forms of every block of `file`, and whether it was read whole.
fn read_forms(file: &OpenedFile, size: u64, rel: &RelPath) -> Result<(FileForms, bool), Skip> {
    let mut blocks = Vec::new();
    let whole = each_block_in(file, size, rel, |block| {
        blocks.push(BlockForms::of(block));
        true
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
