//! The search's view of the manuals: every file's outline (labels: title, page title, path
//! words; raw references; body length), the references between sections, the section
//! index's commit, and each file's normalised text on demand.
//!
//! Outlines are made once per file and kept until the file changes: [`CorpusCache::sync`]
//! compares each file's generation with the one its outline was built from and rebuilds
//! only what changed. A file the section index holds in its current version gets its
//! outline from the catalog's titles and the index's stored part, without its body being
//! read; its text is derived when a search first reads it ([`Corpus::text`], through
//! `texts`). Any other file (no index yet, a failed update, a file a background update is
//! writing) is derived whole, in parallel on the available cores, and its text pinned:
//! the scan reads it at every search and the index writer needs it. The cross-file part
//! (references resolved to sections, link texts attached to their targets) is kept per
//! manual: a manual none of whose files changed keeps its part (read from `refstore` at
//! the first sync), any other is resolved again from the outlines, without touching text.
//!
//! Own text is normalised line by line, so a match maps to its line with a binary search
//! and numbers stay attached to their line (conflict detection reads them). A term broken
//! by a line wrap is still found by the loose text, which joins the lines of a section.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use super::derived::{read_original, CorpusFile, FileOutline, FileText, StoredOutline};
use super::index::keys::{DocKeys, KnownFile};
use super::index::vocabulary::Vocabulary;
use super::index::{file_id, Fields, FileSections, SectionIndex, WriterBudget, Written};
use super::labels::CorpusLabels;
use super::links::extract_references;
use super::outlines::{OutlineStore, StoredOutlines};
use super::refstore::{fits, manual_fingerprint, KeyedReferences, ReferenceStore, UNREAD_KEY};
use super::resolve::{manual_ranges, resolve_manuals, ReferenceGraph};
use super::texts::TextCache;
use crate::manual::{FileType, ListedFile, ManualFile, ManualIndex};

/// A consistent view of every manual for one index generation. Files are in the index's
/// (manual_id, path) order, so `files[i]` is `index.files(None)[i]`.
#[derive(Debug)]
pub(crate) struct Corpus {
    pub generation: u64,
    pub files: Vec<CorpusFile>,
    /// Shared with the next corpus of the same generation (only the section index moved
    /// on).
    pub references: Arc<ReferenceGraph>,
    pub node_count: usize,
    /// Mean bytes of a section's own normalised text (BM25's length normalisation).
    pub mean_node_bytes: f32,
    /// The section index as of this generation.
    pub(crate) sections: SectionsView,
    /// Files with sections the index does not hold (its update failed): the search scans
    /// them directly.
    pub(crate) unindexed: Vec<u32>,
    /// Where the texts of files not pinned are kept (shared with the cache's other
    /// corpora).
    texts: Arc<TextCache>,
    /// Postings of the page titles, link texts and titles (`labels`), built beside the
    /// search after a server's sync, else at the first search.
    pub(crate) labels: OnceLock<CorpusLabels>,
}

/// The section index's commit that matches a corpus, and what a search needs with it.
pub(crate) struct SectionsView {
    pub searcher: tantivy::Searcher,
    pub fields: Fields,
    pub keys: DocKeys,
    vocabulary: OnceLock<Arc<Vocabulary>>,
}

impl std::fmt::Debug for SectionsView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectionsView")
            .field("segments", &self.searcher.segment_readers().len())
            .finish()
    }
}

impl SectionsView {
    /// The Latin words of the index: built by the preparation for this commit, else at
    /// the first search that needs them.
    pub(crate) fn vocabulary(&self) -> &Vocabulary {
        self.vocabulary
            .get_or_init(|| Arc::new(build_vocabulary(&self.searcher, &self.fields)))
    }

    /// Takes `prepared` when it was built from this view's commit.
    fn adopt_vocabulary(&self, prepared: PreparedVocabulary) {
        if prepared.segments == commit_segments(&self.searcher) {
            // A view is new here: nothing has set it yet.
            self.vocabulary.set(prepared.vocabulary).ok();
        }
    }
}

/// The vocabulary of a section index's commit, built before the first sync
/// ([`CorpusCache::prepare`]) and handed to the first view of the same commit.
struct PreparedVocabulary {
    segments: CommitSegments,
    vocabulary: Arc<Vocabulary>,
}

/// What tells one commit's segments from another's: their ids and deletes.
type CommitSegments = Vec<(tantivy::index::SegmentId, Option<tantivy::Opstamp>)>;

fn commit_segments(searcher: &tantivy::Searcher) -> CommitSegments {
    searcher
        .segment_readers()
        .iter()
        .map(|segment| (segment.segment_id(), segment.delete_opstamp()))
        .collect()
}

fn build_vocabulary(searcher: &tantivy::Searcher, fields: &Fields) -> Vocabulary {
    Vocabulary::build(searcher, fields.words).unwrap_or_else(|error| {
        tracing::warn!(error = %error, "the section index's words cannot be read");
        Vocabulary::default()
    })
}

impl Corpus {
    /// The normalised text of file `file`, whose source is `source` (`files[file]` of
    /// the search): pinned, kept in the text cache, or derived now.
    pub(crate) fn text(&self, file: u32, source: &ManualFile) -> Arc<FileText> {
        let entry = &self.files[file as usize];
        match &entry.pinned {
            Some(text) => Arc::clone(text),
            None => self.texts.get(&entry.manual_id, &entry.path, source),
        }
    }

    /// The text cache (tests count its derivations).
    #[cfg(test)]
    pub(crate) fn texts(&self) -> &TextCache {
        &self.texts
    }

    /// The label postings: built on a thread of their own after a sync of a cache made
    /// by `CorpusCache::new` (`build_labels_beside`), else at the first search of this
    /// corpus.
    pub(crate) fn labels(&self) -> &CorpusLabels {
        self.labels.get_or_init(|| self.new_labels())
    }

    pub(crate) fn new_labels(&self) -> CorpusLabels {
        CorpusLabels::new(&self.files, self.references.link_texts())
    }

    pub(crate) fn file_index(&self, manual_id: &str, path: &str) -> Option<u32> {
        position_of(&self.files, manual_id, path).map(|index| index as u32)
    }
}

/// Where the file `path` of `manual_id` is in `files`, which are in the index's
/// (manual_id, path) order.
fn position_of(files: &[CorpusFile], manual_id: &str, path: &str) -> Option<usize> {
    files
        .binary_search_by(|file| names_of(file).cmp(&(manual_id, path)))
        .ok()
}

/// A file's (manual_id, path): what orders a corpus's files.
fn names_of(file: &CorpusFile) -> (&str, &str) {
    (&file.manual_id, &file.path)
}

/// Hands out one shared `Arc<str>` per manual id to files met in manual order, instead
/// of one allocation per file (20,000 at the first sync of 24 copies of the handbook).
#[derive(Default)]
struct ManualIds {
    last: Option<Arc<str>>,
}

impl ManualIds {
    fn of(&mut self, manual_id: &str) -> Arc<str> {
        match &self.last {
            Some(last) if **last == *manual_id => Arc::clone(last),
            _ => Arc::clone(self.last.insert(manual_id.into())),
        }
    }

    /// The entry of the listed file `entry` with its `id`, `outline` and `pinned` text.
    fn file(
        &mut self,
        entry: &ListedFile,
        id: u64,
        outline: FileOutline,
        pinned: Option<Arc<FileText>>,
    ) -> CorpusFile {
        CorpusFile {
            id,
            manual_id: self.of(entry.manual_id),
            path: entry.file.path().into(),
            outline: Arc::new(outline),
            pinned,
        }
    }
}

/// Keeps derived data between calls; see the module documentation.
#[derive(Default)]
pub(crate) struct CorpusCache {
    /// The files of the last sync, in the index's (manual_id, path) order: what the next
    /// one keeps of them, found by walking both lists in step (no key is made per file).
    by_file: Vec<CorpusFile>,
    texts: Arc<TextCache>,
    current: Option<Arc<Corpus>>,
    /// Where the section index is kept (`None`: in memory).
    cache_dir: Option<PathBuf>,
    /// The vault's root, when `cache_dir` may lie inside it (`refstore` walks from it).
    vault_root: Option<PathBuf>,
    /// Each manual's resolved references with their key, as of the last sync (read from
    /// `reference_store` at the first).
    resolved: HashMap<Arc<str>, KeyedReferences>,
    /// The resolved references under `cache_dir`, opened at the first sync.
    reference_store: Option<ReferenceStore>,
    references_read: bool,
    /// The outline file under `cache_dir` (`outlines`), opened and read by
    /// [`CorpusCache::prepare`] or the first sync, rewritten by a sync that made an
    /// outline or saw a file go.
    outline_store: Option<OutlineStore>,
    outlines_read: bool,
    /// The outlines read from `outline_store` until the first sync restores them.
    unrestored: Option<StoredOutlines>,
    /// The section index's vocabulary built by [`CorpusCache::prepare`], until the first
    /// sync's view takes it.
    prepared_vocabulary: Option<PreparedVocabulary>,
    /// How many manuals' references the syncs resolved (the others were kept or read).
    #[cfg(test)]
    pub(crate) manuals_resolved: usize,
    sections: Sections,
    /// Whether a sync leaves the index update to a thread of its own (a server) or
    /// writes it before it returns (`manvault index`, tests that read the index).
    background: bool,
    /// Whether a sync builds the new corpus's label postings on a thread of their own
    /// (`build_labels_beside`): on in every cache that answers searches (a server's and
    /// `manvault call`'s, whose first search needs them anyway), off where a test sets
    /// the labels itself.
    labels_beside: bool,
    /// What the last update wrote to the section index.
    last_update: Written,
    /// A background update landed after the current corpus was made: the next sync
    /// searches its commit.
    landed: bool,
    /// Holds the next background build until the test sends (or drops the sender).
    #[cfg(test)]
    hold: Option<std::sync::mpsc::Receiver<()>>,
}

/// Where the section index is.
#[derive(Default)]
enum Sections {
    /// Not opened yet: the first sync opens it.
    #[default]
    Unopened,
    /// Boxed: the index is large beside a thread's handle.
    Ready(Box<SectionIndex>),
    /// A thread is writing it; it hands the index back with what it wrote (`None`: the
    /// update failed, and the log says why).
    Building(JoinHandle<(Box<SectionIndex>, Option<Written>)>),
}

impl CorpusCache {
    /// The cache of a process that answers searches (a server, `manvault call`): its
    /// section index lives under `cache_dir` (`None`: in memory)
    /// and is brought up to date on a thread of its own, so a search never waits for
    /// it: until an update lands, the files it writes are scanned directly, as without an
    /// index.
    pub(crate) fn new(cache_dir: Option<PathBuf>, vault_root: Option<PathBuf>) -> CorpusCache {
        CorpusCache {
            cache_dir,
            vault_root,
            background: true,
            labels_beside: true,
            ..CorpusCache::default()
        }
    }

    /// Leaves the label postings to the first search, so a test can set a corpus's
    /// labels itself before any search.
    #[cfg(test)]
    pub(crate) fn without_labels_beside(&mut self) {
        self.labels_beside = false;
    }

    /// A cache over a section index opened in `cache_dir`, updated before each sync
    /// returns; the resolved references are kept there too, so the next start reads them.
    pub(crate) fn with_sections(
        sections: SectionIndex,
        cache_dir: &Path,
        vault_root: &Path,
    ) -> CorpusCache {
        CorpusCache {
            cache_dir: Some(cache_dir.to_path_buf()),
            vault_root: Some(vault_root.to_path_buf()),
            sections: Sections::Ready(Box::new(sections)),
            ..CorpusCache::default()
        }
    }

    /// The section index, when no update is writing it.
    pub(crate) fn sections(&self) -> Option<&SectionIndex> {
        match &self.sections {
            Sections::Ready(sections) => Some(sections),
            _ => None,
        }
    }

    /// What the last update that landed wrote to the section index.
    pub(crate) fn last_update(&self) -> Written {
        self.last_update
    }

    /// Waits for a background update of the section index, if one runs; the next sync
    /// searches with what it wrote.
    pub(crate) fn wait_for_sections(&mut self) {
        self.land(true);
    }

    /// Holds the next background update back until the returned sender sends or is
    /// dropped, so a test searches while it has not landed.
    #[cfg(test)]
    pub(crate) fn hold_next_update(&mut self) -> std::sync::mpsc::Sender<()> {
        let (release, hold) = std::sync::mpsc::channel();
        self.hold = Some(hold);
        release
    }

    /// Takes the index back from a finished background update (or waits for it when
    /// `wait`), noting in `landed` whether it wrote a commit.
    fn land(&mut self, wait: bool) {
        let finished = match &self.sections {
            Sections::Building(build) => wait || build.is_finished(),
            _ => false,
        };
        if !finished {
            return;
        }
        let Sections::Building(build) = std::mem::take(&mut self.sections) else {
            unreachable!("checked above")
        };
        let Ok((sections, written)) = build.join() else {
            // The index stays unopened: the next sync opens its last commit again, and
            // the searches scan what that commit does not hold, as after a failed update.
            tracing::error!("the section index update panicked; it is opened again");
            return;
        };
        self.sections = Sections::Ready(sections);
        if let Some(written) = written {
            self.last_update = written;
            self.landed = true;
        }
    }

    /// Reads what the first sync takes from `cache_dir` before any file is listed: the
    /// section index's last commit, the stored outlines (decoded) and the resolved
    /// references. A server calls it on a thread of its own at start, so that this work
    /// runs beside the manual index's build instead of after it (issue 16: a server's
    /// first answer); a first sync without it reads them itself, the same way. It decodes
    /// the outlines on one core fewer than the machine has: the build holds one meanwhile,
    /// and a `manual_list`, which needs only the build, would otherwise wait for both.
    /// It also builds the index's vocabulary, which the first search would otherwise
    /// build after the manual index (46 ms of a first answer at 220 MB).
    pub(crate) fn prepare(&mut self) {
        self.open_sections();
        self.read_outlines(crate::machine::cores().saturating_sub(1).max(1));
        self.read_references();
        if let Some(sections) = self.sections() {
            let searcher = sections.searcher();
            let vocabulary = Arc::new(build_vocabulary(&searcher, &sections.fields()));
            self.prepared_vocabulary = Some(PreparedVocabulary {
                segments: commit_segments(&searcher),
                vocabulary,
            });
        }
    }

    /// The corpus for `index` as it is now, rebuilding what changed since the last call.
    pub(crate) fn sync(&mut self, index: &ManualIndex) -> Arc<Corpus> {
        self.sync_reporting(index, &mut |_| {})
    }

    /// [`Self::sync`], telling `progress` how far an update of the section index written
    /// before the sync returns is.
    pub(crate) fn sync_reporting(
        &mut self,
        index: &ManualIndex,
        progress: &mut dyn FnMut(Written),
    ) -> Arc<Corpus> {
        self.land(false);
        let landed = std::mem::take(&mut self.landed);
        let unchanged = self
            .current
            .as_ref()
            .filter(|current| current.generation == index.generation())
            .map(Arc::clone);
        if let (Some(current), false) = (&unchanged, landed) {
            return Arc::clone(current);
        }
        let listed = index.files(None).expect("listing every manual cannot fail");
        if self.current.is_none() {
            // The first sync makes every file's entry, the reference graph and the views
            // in small allocations, about 0.8 KiB a file (measured at 20,000 files).
            crate::allocator::reserve_thread_heap(listed.len() << 10);
        }
        let file_refs: Vec<&ManualFile> = listed.iter().map(|entry| entry.file).collect();
        self.open_sections();
        let (mut files, references) = match unchanged {
            // Only the section index moved on: the outlines still hold.
            Some(current) => (current.files.clone(), Arc::clone(&current.references)),
            None => {
                let files = self.derive_changed(&listed);
                let references = Arc::new(self.reference_graph(&files, &file_refs));
                (files, references)
            }
        };
        self.unpin_indexed(&mut files, &file_refs);
        let node_count: usize = files.iter().map(|file| file.outline.node_count()).sum();
        let body_bytes: u64 = files
            .iter()
            .map(|file| file.outline.stored.body_bytes)
            .sum();
        let (sections, unindexed) = self.update_and_view(&files, &file_refs, progress);
        if let Some(prepared) = self.prepared_vocabulary.take() {
            sections.adopt_vocabulary(prepared);
        }
        let corpus = Arc::new(Corpus {
            texts: Arc::clone(&self.texts),
            generation: index.generation(),
            node_count,
            mean_node_bytes: body_bytes as f32 / node_count.max(1) as f32,
            files,
            references,
            sections,
            unindexed,
            labels: Default::default(),
        });
        self.current = Some(Arc::clone(&corpus));
        if self.labels_beside {
            build_labels_beside(&corpus);
        }
        corpus
    }

    /// One of the stores kept under `cache_dir` (none without a cache folder), opened
    /// with the vault root to walk from when the cache lies inside the vault.
    fn open_store<S>(&self, open: fn(&Path, Option<&Path>) -> Option<S>) -> Option<S> {
        let cache_dir = self.cache_dir.as_deref()?;
        open(cache_dir, self.vault_root.as_deref())
    }

    /// The reference graph of `files` (whose models are `manual_files`): each manual's
    /// part kept from the last sync or read from the reference store when its key still
    /// matches, resolved again otherwise (see `refstore`); the store is rewritten when a
    /// part was resolved or a manual is gone.
    fn reference_graph(
        &mut self,
        files: &[CorpusFile],
        manual_files: &[&ManualFile],
    ) -> ReferenceGraph {
        self.read_references();
        let manuals = manual_ranges(files);
        let mut previous = std::mem::take(&mut self.resolved);
        let mut stale = Vec::new();
        for manual in &manuals {
            let key = manual_fingerprint(manual, manual_files);
            match previous.remove(&manual.manual_id) {
                Some((kept, part)) if kept == key && fits(&part, &files[manual.files.clone()]) => {
                    self.resolved
                        .insert(Arc::clone(&manual.manual_id), (key, part));
                }
                _ => stale.push((manual.clone(), key)),
            }
        }
        let ranges: Vec<_> = stale.iter().map(|(manual, _)| manual.clone()).collect();
        let parts = resolve_manuals(files, manual_files, &ranges);
        #[cfg(test)]
        {
            self.manuals_resolved += ranges.len();
        }
        for ((manual, key), part) in stale.iter().zip(parts) {
            // Resolved without the references of a file that could not be read: kept
            // under a key no listing gives, so the next sync or start resolves it again.
            let read_whole = files[manual.files.clone()]
                .iter()
                .all(|file| !file.outline.unread);
            let key = if read_whole { *key } else { UNREAD_KEY };
            self.resolved
                .insert(Arc::clone(&manual.manual_id), (key, Arc::new(part)));
        }
        if !stale.is_empty() || !previous.is_empty() {
            if let Some(store) = &self.reference_store {
                store.save(
                    manuals
                        .iter()
                        .map(|manual| (&*manual.manual_id, &self.resolved[&manual.manual_id])),
                );
            }
        }
        ReferenceGraph::assemble(manuals.iter().map(|manual| {
            let (_, part) = &self.resolved[&manual.manual_id];
            (manual.files.start, Arc::clone(part))
        }))
    }

    /// Opens the reference store and reads it, once.
    fn read_references(&mut self) {
        if !std::mem::replace(&mut self.references_read, true) {
            self.reference_store = self.open_store(ReferenceStore::open);
            if let Some(store) = &self.reference_store {
                self.resolved = store.read();
            }
        }
    }

    /// Opens the outline store and reads it on `threads` threads, once: kept for the first
    /// sync to restore.
    fn read_outlines(&mut self, threads: usize) {
        if !std::mem::replace(&mut self.outlines_read, true) {
            self.outline_store = self.open_store(OutlineStore::open);
            self.unrestored = self.outline_store.as_ref().map(|store| store.read(threads));
        }
    }

    /// Opens the section index at the first sync.
    fn open_sections(&mut self) {
        if matches!(self.sections, Sections::Unopened) {
            self.sections =
                Sections::Ready(Box::new(SectionIndex::open(self.cache_dir.as_deref())));
        }
    }

    /// Every listed file's outline: kept where the file did not change, read from the
    /// section index where it holds the file, derived whole (in parallel, text pinned)
    /// elsewhere.
    fn derive_changed(&mut self, listed: &[ListedFile]) -> Vec<CorpusFile> {
        let mut files: Vec<Option<CorpusFile>> = Vec::with_capacity(listed.len());
        // Each file's id once (a SHA-256): the restore, the index's checks and the view
        // all key by it.
        let mut ids: Vec<u64> = Vec::with_capacity(listed.len());
        let mut changed = Vec::new();
        // Both in (manual_id, path) order: a file of the last sync that sorts before the
        // listed one is gone.
        let mut previous = std::mem::take(&mut self.by_file).into_iter().peekable();
        let mut dropped = false;
        let mut manual_ids = ManualIds::default();
        for (position, entry) in listed.iter().enumerate() {
            let names = (entry.manual_id, entry.file.path());
            while previous.next_if(|file| names_of(file) < names).is_some() {
                dropped = true;
            }
            match previous.next_if(|file| names_of(file) == names) {
                Some(file)
                    if file.outline.generation == entry.file.generation()
                        && !file.outline.unread =>
                {
                    ids.push(file.id);
                    files.push(Some(file))
                }
                _ => {
                    ids.push(file_id(entry.manual_id, entry.file.path()));
                    changed.push(position);
                    files.push(None);
                }
            }
        }
        let (changed, stored_other) =
            self.restore_outlines(listed, &ids, changed, &mut files, &mut manual_ids);
        let made = !changed.is_empty();
        let gone = dropped || previous.next().is_some() || stored_other;
        let mut stored = self.stored_outlines(listed, &ids, &changed);
        let (read, stale): (Vec<usize>, Vec<usize>) = changed
            .into_iter()
            .partition(|&position| stored.contains_key(&ids[position]));
        // The labels, normalised on every core; the stored part is moved in after.
        let outlines = map_parallel(listed, &read, |entry| {
            FileOutline::new(entry.file, StoredOutline::default())
        });
        for (position, mut outline) in read.into_iter().zip(outlines) {
            let entry = &listed[position];
            outline.stored = stored.remove(&ids[position]).expect("partitioned by it");
            files[position] = Some(manual_ids.file(entry, ids[position], outline, None));
        }
        let derived = map_parallel(listed, &stale, |entry| derive(entry.file));
        for (position, (outline, text)) in stale.into_iter().zip(derived) {
            let (entry, pinned) = (&listed[position], Some(Arc::new(text)));
            files[position] = Some(manual_ids.file(entry, ids[position], outline, pinned));
        }
        let files: Vec<CorpusFile> = files
            .into_iter()
            .map(|file| file.expect("every changed file was read or derived"))
            .collect();
        if made || gone {
            if let Some(store) = &self.outline_store {
                store.save(
                    listed
                        .iter()
                        .zip(&files)
                        .map(|(entry, file)| (file.id, entry.file, &*file.outline)),
                );
            }
        }
        self.by_file = files.clone();
        files
    }

    /// At the first sync, fills `files` at `changed` positions from the outline file
    /// where it holds the file's current version; returns the positions left, and
    /// whether the file holds outlines not used (files gone, or of other versions).
    fn restore_outlines(
        &mut self,
        listed: &[ListedFile],
        ids: &[u64],
        changed: Vec<usize>,
        files: &mut [Option<CorpusFile>],
        manual_ids: &mut ManualIds,
    ) -> (Vec<usize>, bool) {
        self.read_outlines(crate::machine::cores());
        let Some(mut stored) = self.unrestored.take() else {
            return (changed, false);
        };
        if stored.is_empty() {
            return (changed, false);
        }
        let restoring = changed.len();
        let mut left = Vec::new();
        // Only files the section index holds: another one is derived whole, its text
        // pinned for the scan and the index writer, as without the file.
        let sections = self.sections();
        for position in changed {
            let (entry, id) = (&listed[position], ids[position]);
            let held = sections.is_some_and(|sections| sections.holds(id, entry.file.version()));
            match held.then(|| stored.take(id, entry.file)).flatten() {
                Some(outline) => files[position] = Some(manual_ids.file(entry, id, outline, None)),
                None => left.push(position),
            }
        }
        let other = stored.len() != restoring - left.len();
        (left, other)
    }

    /// The stored outlines of the files at `positions` that the section index holds in
    /// their current version (none while an update is writing the index).
    fn stored_outlines(
        &self,
        listed: &[ListedFile],
        ids: &[u64],
        positions: &[usize],
    ) -> HashMap<u64, StoredOutline> {
        let Some(sections) = self.sections() else {
            return HashMap::new();
        };
        let wanted: HashSet<u64> = positions
            .iter()
            .filter(|&&position| sections.holds(ids[position], listed[position].file.version()))
            .map(|&position| ids[position])
            .collect();
        sections.stored_outlines(&wanted).unwrap_or_else(|error| {
            tracing::warn!(error = %error, "the section index's outlines cannot be read; files are derived");
            HashMap::new()
        })
    }

    /// Hands the pinned texts of the files the section index now holds (a background
    /// update landed) to the text cache, which keeps them within its budget: the scan no
    /// longer reads them at every search.
    fn unpin_indexed(&mut self, files: &mut [CorpusFile], manual_files: &[&ManualFile]) {
        let Some(sections) = self.sections() else {
            return;
        };
        let mut unpinned = Vec::new();
        for (file, manual_file) in files.iter_mut().zip(manual_files) {
            if file.pinned.is_some() && sections.holds(file.id, manual_file.version()) {
                let text = file.pinned.take().expect("checked above");
                self.texts.keep(&file.manual_id, &file.path, text);
                unpinned.push((Arc::clone(&file.manual_id), Arc::clone(&file.path)));
            }
        }
        for (manual_id, path) in unpinned {
            if let Some(kept) = position_of(&self.by_file, &manual_id, &path) {
                self.by_file[kept].pinned = None;
            }
        }
    }

    /// Starts or writes the update `files` need, and the view a search of them uses.
    ///
    /// In the background the view is the commit from before the update, taken before
    /// the update starts: the files the update writes are unindexed in it, so they are
    /// scanned, and a search never sees a half-written update. While an update runs,
    /// the index is on its thread, and a corpus that changed meanwhile is searched by
    /// scanning every file until the update lands and the next sync starts the rest.
    fn update_and_view(
        &mut self,
        files: &[CorpusFile],
        manual_files: &[&ManualFile],
        progress: &mut dyn FnMut(Written),
    ) -> (SectionsView, Vec<u32>) {
        let sections = match &mut self.sections {
            Sections::Ready(sections) => sections,
            Sections::Building(_) => return view(&SectionIndex::open(None), files, manual_files),
            Sections::Unopened => unreachable!("opened above"),
        };
        let Some((work, removed)) = stale_sections(sections, &self.texts, files, manual_files)
        else {
            return view(sections, files, manual_files);
        };
        if !self.background {
            let written = write_sections(
                sections,
                &work,
                &removed,
                WriterBudget::foreground(),
                progress,
            );
            self.last_update = written.unwrap_or_default();
            return view(sections, files, manual_files);
        }
        let before = view(sections, files, manual_files);
        let Sections::Ready(mut sections) = std::mem::take(&mut self.sections) else {
            unreachable!("matched above")
        };
        #[cfg(test)]
        let hold = self.hold.take();
        self.sections = Sections::Building(std::thread::spawn(move || {
            #[cfg(test)]
            if let Some(hold) = hold {
                // A dropped sender releases the build as a sent message does.
                hold.recv().ok();
            }
            let written = write_sections(
                &mut sections,
                &work,
                &removed,
                WriterBudget::BACKGROUND,
                &mut |_| {},
            );
            (sections, written)
        }));
        before
    }
}

/// Builds `corpus`'s label postings on a thread of their own, so that the search that
/// follows the sync finds them built while it made its plan and asked the section index
/// (issue 16: a server's first answer). A search that needs them sooner waits for this
/// build rather than doing it again (`OnceLock`).
fn build_labels_beside(corpus: &Arc<Corpus>) {
    let corpus = Arc::clone(corpus);
    let spawned = std::thread::Builder::new()
        .name("corpus-labels".into())
        .spawn(move || {
            corpus.labels();
        });
    if let Err(error) = spawned {
        tracing::debug!(error = %error, "label postings are built by the first search instead");
    }
}

/// The files whose sections the index does not hold in their current version (but those
/// that could not be read: they stay unindexed and are derived again at the next sync),
/// and the ids of the files it holds that are gone; `None` when there is nothing to write.
fn stale_sections(
    sections: &SectionIndex,
    texts: &TextCache,
    files: &[CorpusFile],
    manual_files: &[&ManualFile],
) -> Option<(Vec<FileSections>, Vec<u64>)> {
    let stale: Vec<FileSections> = files
        .iter()
        .zip(manual_files)
        .filter(|(file, manual_file)| {
            !file.outline.unread && !sections.holds(file.id, manual_file.version())
        })
        .map(|(file, manual_file)| FileSections {
            manual_id: Arc::clone(&file.manual_id),
            path: Arc::clone(&file.path),
            version: manual_file.version(),
            outline: Arc::clone(&file.outline),
            // Pinned, since the index does not hold it; through the cache should the
            // index have lost it since the outline was read.
            text: file
                .pinned
                .clone()
                .unwrap_or_else(|| texts.get(&file.manual_id, &file.path, manual_file)),
        })
        .collect();
    let current: HashSet<u64> = files.iter().map(|file| file.id).collect();
    let removed: Vec<u64> = sections
        .indexed_files()
        .filter(|id| !current.contains(id))
        .collect();
    (!stale.is_empty() || !removed.is_empty()).then_some((stale, removed))
}

/// Writes the sections of `stale` and drops those of `removed`. A failure (another
/// process holds the writer, the disk is full) is logged and gives `None`; the files
/// stay unindexed and are tried again at the next sync of a changed corpus.
fn write_sections(
    sections: &mut SectionIndex,
    stale: &[FileSections],
    removed: &[u64],
    budget: WriterBudget,
    progress: &mut dyn FnMut(Written),
) -> Option<Written> {
    match sections.update(stale, removed, budget, progress) {
        Ok(written) => {
            tracing::info!(
                files = written.files,
                sections = written.sections,
                removed = removed.len(),
                "section index updated"
            );
            Some(written)
        }
        Err(error) => {
            tracing::warn!(
                error = %error,
                files = stale.len(),
                "the section index could not be updated; those files are scanned directly"
            );
            None
        }
    }
}

/// The index's current commit mapped onto `files`, and the files it does not hold.
fn view(
    sections: &SectionIndex,
    files: &[CorpusFile],
    manual_files: &[&ManualFile],
) -> (SectionsView, Vec<u32>) {
    let known: HashMap<u64, KnownFile> = files
        .iter()
        .zip(manual_files)
        .enumerate()
        .map(|(at, (file, manual_file))| {
            let known = KnownFile {
                index: at as u32,
                version: manual_file.version(),
                nodes: file.outline.node_count() as u32,
            };
            (file.id, known)
        })
        .collect();
    let searcher = sections.searcher();
    let fields = sections.fields();
    let keys = DocKeys::build(&searcher, &fields, &known).unwrap_or_else(|error| {
        tracing::warn!(error = %error, "the section index cannot be read; files are scanned directly");
        DocKeys::default()
    });
    let unindexed = (0..files.len() as u32)
        .filter(|&at| {
            let file = &files[at as usize];
            file.outline.node_count() > 0
                && !(sections.holds(file.id, manual_files[at as usize].version())
                    && keys.holds_file(at))
        })
        .collect();
    let view = SectionsView {
        searcher,
        fields,
        keys,
        vocabulary: OnceLock::new(),
    };
    (view, unindexed)
}

/// Everything the search derives from `file`: the references only in Markdown. A file
/// that cannot be read (changed since indexed, or a failed read) gets a blank text and
/// no references, and its outline is marked unread, so that nothing made from it is
/// kept (see [`FileOutline::unread`]).
fn derive(file: &ManualFile) -> (FileOutline, FileText) {
    let original = read_original(file);
    let text = FileText::derive(file, original.as_ref());
    let references = match &original {
        Some(original) if file.file_type() == FileType::Md => {
            extract_references(file, original, &text)
        }
        _ => Vec::new(),
    };
    let stored = StoredOutline {
        body_bytes: text.body.len() as u64,
        node_bytes: text.node_bytes(),
        references: references.into(),
    };
    let mut outline = FileOutline::new(file, stored);
    outline.unread = original.is_none();
    (outline, text)
}

/// `work` on the file of each of `positions` in `listed` on every available core,
/// keeping their order. Files are dealt out round-robin by size so threads finish
/// together.
fn map_parallel<T: Send>(
    listed: &[ListedFile],
    positions: &[usize],
    work: impl Fn(&ListedFile) -> T + Sync,
) -> Vec<T> {
    let threads = crate::machine::cores().min(positions.len().max(1));
    if threads <= 1 {
        return positions.iter().map(|&at| work(&listed[at])).collect();
    }
    let mut by_size: Vec<usize> = (0..positions.len()).collect();
    by_size.sort_by_key(|&nth| std::cmp::Reverse(listed[positions[nth]].file.text_len()));
    let shares: Vec<Vec<usize>> = (0..threads)
        .map(|thread| {
            by_size
                .iter()
                .skip(thread)
                .step_by(threads)
                .copied()
                .collect()
        })
        .collect();
    let mut results: Vec<Option<T>> = positions.iter().map(|_| None).collect();
    let done = crate::machine::over_parts(shares, |share| {
        share
            .into_iter()
            .map(|nth| (nth, work(&listed[positions[nth]])))
            .collect::<Vec<_>>()
    });
    for (nth, derived) in done.into_iter().flatten() {
        results[nth] = Some(derived);
    }
    results
        .into_iter()
        .map(|derived| derived.expect("every file was dealt to a thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::testing::{index, key};

    const GUIDE: &str = "---\ntitle: Guide Ｐage\n---\n# Intro\n\nFirst  line\nwrapped 請求\n書 here\n\n## Details\n\n三万五千円\n";

    #[test]
    fn own_text_is_normalised_line_by_line_and_loose_joins_lines() {
        let (_dir, index) = index(&[("m/docs/guide-one.md", GUIDE)]);
        let corpus = CorpusCache::default().sync(&index);
        let outline = &corpus.files[0].outline;
        let derived = corpus.files[0]
            .pinned
            .as_ref()
            .expect("no index yet: pinned");
        let intro = key(&corpus, &index, "m", "docs/guide-one.md", 4).node;
        let details = key(&corpus, &index, "m", "docs/guide-one.md", 10).node;
        assert_eq!(
            derived.own_text(intro),
            "# intro\n\nfirst line\nwrapped 請求\n書 here\n\n"
        );
        assert_eq!(
            derived.own_loose(intro),
            "introfirstlinewrapped請求書here\n"
        );
        assert_eq!(derived.line_text(12), "35000円");
        assert_eq!(derived.line_at(derived.own_text(intro).len() + 2), 10);
        assert_eq!(outline.labels[details as usize].parent, Some(intro));
        assert_eq!(outline.labels[details as usize].title.text(), "details");
        assert_eq!(outline.page.text(), "guide page docs guide one");
    }

    /// What a server reads before the manuals are listed is what its first sync uses:
    /// with the stores gone after `prepare`, the sync resolves no manual and makes no
    /// outline (it would rewrite the outline file if it had to read the outlines again).
    #[test]
    fn a_prepared_cache_syncs_from_what_it_read_before_the_listing() {
        let (_dir, index) = index(&[
            ("m/a.md", "# A\n\n[to b](b.md)\n"),
            ("m/b.md", "# B\n\n[back](a.md)\n"),
        ]);
        let cache_dir = tempfile::tempdir().unwrap();
        let start = || {
            let sections = SectionIndex::open(Some(cache_dir.path()));
            CorpusCache::with_sections(sections, cache_dir.path(), cache_dir.path())
        };
        let first = start().sync(&index);
        let stores = ["outlines.bin", "references.bin"].map(|name| cache_dir.path().join(name));
        let mut prepared = start();
        prepared.prepare();
        for store in &stores {
            std::fs::remove_file(store).unwrap();
        }
        let second = prepared.sync(&index);
        assert_eq!(prepared.manuals_resolved, 0, "the references read before");
        assert!(
            !stores[0].exists(),
            "no outline made: every one read before"
        );
        for (left, right) in first.files.iter().zip(&second.files) {
            assert_eq!(left.outline.labels, right.outline.labels);
            assert_eq!(left.outline.stored, right.outline.stored);
            assert!(right.pinned.is_none(), "restored, not derived");
        }
        assert_eq!(
            format!("{:?}", first.references.references()),
            format!("{:?}", second.references.references())
        );
    }

    /// The vocabulary built by `prepare` serves the first view of the commit it was
    /// built from, and no other: a view of a newer commit builds its own.
    #[test]
    fn a_prepared_vocabulary_serves_the_first_view_of_its_own_commit_only() {
        let (dir, mut index) = index(&[("m/a.md", "# A\n\nsyslog rotation\n")]);
        let cache_dir = tempfile::tempdir().unwrap();
        let start = || {
            let sections = SectionIndex::open(Some(cache_dir.path()));
            CorpusCache::with_sections(sections, cache_dir.path(), cache_dir.path())
        };
        start().sync(&index);
        let mut prepared = start();
        prepared.prepare();
        let corpus = prepared.sync(&index);
        let view = &corpus.sections;
        let handed = view
            .vocabulary
            .get()
            .expect("handed over before any search");
        let built = build_vocabulary(&view.searcher, &view.fields);
        assert_eq!(format!("{handed:?}"), format!("{built:?}"));
        assert!(format!("{built:?}").contains("syslog"));

        std::fs::write(dir.path().join("m/a.md"), "# A\n\nlogrotate\n").unwrap();
        assert!(index.refresh().unwrap());
        let mut prepared = start();
        prepared.prepare();
        let corpus = prepared.sync(&index);
        assert!(
            corpus.sections.vocabulary.get().is_none(),
            "built from the commit before this sync's update"
        );
        let words = format!("{:?}", corpus.sections.vocabulary());
        assert!(
            words.contains("logrotate") && !words.contains("syslog"),
            "{words}"
        );
    }

    #[test]
    fn a_server_sync_builds_the_label_postings_without_a_search() {
        let (_dir, index) = index(&[("m/docs/guide-one.md", GUIDE)]);
        let corpus = CorpusCache::new(None, None).sync(&index);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while corpus.labels.get().is_none() {
            assert!(std::time::Instant::now() < deadline, "no labels built");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn sync_rebuilds_only_changed_files() {
        let (dir, mut index) = index(&[("m/a.md", "# A\n"), ("m/b.md", "# B\n")]);
        let mut cache = CorpusCache::default();
        let first = cache.sync(&index);
        assert!(
            Arc::ptr_eq(&first, &cache.sync(&index)),
            "same generation, same corpus"
        );
        std::fs::write(dir.path().join("m/b.md"), "# B changed\n\nmore\n").unwrap();
        assert!(index.refresh().unwrap());
        let second = cache.sync(&index);
        assert!(Arc::ptr_eq(
            &first.files[0].outline,
            &second.files[0].outline
        ));
        assert!(!Arc::ptr_eq(
            &first.files[1].outline,
            &second.files[1].outline
        ));
        assert_eq!(second.files[1].outline.labels[0].title.text(), "b changed");
        std::fs::remove_file(dir.path().join("m/a.md")).unwrap();
        index.refresh().unwrap();
        assert_eq!(cache.sync(&index).files.len(), 1);
    }

    /// The last sync's files and the listing are walked in step: files gone between kept
    /// ones, added before, between and after them, and changed ones are told apart in
    /// every manual; the files of one manual share one manual id.
    #[test]
    fn a_sync_keeps_the_unchanged_files_among_gone_added_and_changed_ones() {
        let (dir, mut index) = index(&[
            ("a/x.md", "# X\n"),
            ("a/y.md", "# Y\n"),
            ("a/z.md", "# Z\n"),
            ("b/m.md", "# M\n"),
            ("c/q.md", "# Q\n"),
        ]);
        let mut cache = CorpusCache::default();
        let first = cache.sync(&index);
        assert!(Arc::ptr_eq(
            &first.files[0].manual_id,
            &first.files[2].manual_id
        ));
        std::fs::remove_file(dir.path().join("a/y.md")).unwrap();
        std::fs::write(dir.path().join("a/w.md"), "# W\n").unwrap();
        std::fs::write(dir.path().join("b/n.md"), "# N\n").unwrap();
        std::fs::write(dir.path().join("c/p.md"), "# P\n").unwrap();
        std::fs::write(dir.path().join("c/q.md"), "# Q changed\n").unwrap();
        std::fs::write(dir.path().join("d.md"), "").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/r.md"), "# R\n").unwrap();
        assert!(index.refresh().unwrap());
        let second = cache.sync(&index);
        let names: Vec<(&str, &str)> = second.files.iter().map(names_of).collect();
        assert_eq!(
            names,
            [
                ("a", "w.md"),
                ("a", "x.md"),
                ("a", "z.md"),
                ("b", "m.md"),
                ("b", "n.md"),
                ("c", "p.md"),
                ("c", "q.md"),
                ("d", "r.md"),
            ]
        );
        let first_of =
            |manual_id, path| &first.files[position_of(&first.files, manual_id, path).unwrap()];
        for (manual_id, path) in [("a", "x.md"), ("a", "z.md"), ("b", "m.md")] {
            let kept = &second.files[position_of(&second.files, manual_id, path).unwrap()];
            assert!(
                Arc::ptr_eq(&kept.outline, &first_of(manual_id, path).outline),
                "{path} kept"
            );
        }
        let changed = &second.files[6];
        assert!(!Arc::ptr_eq(
            &changed.outline,
            &first_of("c", "q.md").outline
        ));
        assert_eq!(changed.outline.labels[0].title.text(), "q changed");
        for (file, title) in
            second
                .files
                .iter()
                .zip(["w", "x", "z", "m", "n", "p", "q changed", "r"])
        {
            assert_eq!(file.outline.labels[0].title.text(), title);
        }
    }
}
