//! The section index: every section's own normalised text in a tantivy index, one
//! document per section, so a search asks the index which sections hold its literals and
//! units instead of scanning every section (issue 16).
//!
//! Fields: `body` (the own text, indexed by the unit tokens of `text::units`), `words`
//! (the same text's Latin words as written, for literals) and, as fast fields, the file's
//! id and version and the node's index in its file. The query side
//! builds its terms with the same functions ([`literal`]), so index terms and query units
//! agree by construction. No section text is stored: the search reads it from the corpus
//! (the files), so a stored copy would only cost indexing time and disk. What is stored
//! is each file's [`StoredOutline`] (its references and body length, JSON in `outline`
//! of the file's first section): what a start needs from every file and could otherwise
//! only get by normalising every file's body.
//!
//! The index lives in `${CACHE_DIR}/sections/` and outlives the process: a file's sections
//! carry the fingerprint of the file's stamp, so after a restart only files whose stamp
//! changed are indexed again. Each commit carries the format and tokenizer versions as
//! its payload; an index written with others is rebuilt, never read with terms the
//! queries would not look for. tantivy writes segments first and switches `meta.json`
//! atomically at a commit, and a build commits every [`COMMIT_EVERY_BYTES`] or
//! [`COMMIT_EVERY`] (`manvault index --commit-every` sets the time), so a process
//! killed while indexing leaves the last commit intact: the next start finds it, and
//! indexes only the files it does not hold yet. When `CACHE_DIR` cannot be used the index
//! is kept in memory (with a warning), which is also what tests and `ManualIndex::build`
//! callers without a cache get.
//!
//! Updates are per file (delete the file's sections by its key, add the new ones), driven
//! by the files the manual index reloaded ([`crate::manual::find::corpus`]), not by the
//! file-system watch. A server's corpus sync runs an update on a thread of its own with
//! [`WriterBudget::BACKGROUND`]; `manvault index` runs it in the call with
//! [`WriterBudget::foreground`]. The writer is opened for an update and dropped after its commit,
//! so `manvault index` and a server can take turns; a writer that cannot be had (another
//! process holds it) leaves the files unindexed, and the search scans those directly
//! until a later update succeeds.

mod directory;
pub(crate) mod keys;
pub(crate) mod literal;
mod tokenizer;
pub(crate) mod vocabulary;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::schema::{
    BytesOptions, Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
    Value,
};
use tantivy::{
    Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term,
};

use self::directory::ReadingDirectory;
use super::derived::{FileOutline, FileText, StoredOutline};
use crate::text::units::INDEX_TOKENS_VERSION;

/// The layout of the documents; bump it with any change of fields or of what they hold.
/// 4: the stored outline of each file.
const FORMAT_VERSION: u32 = 4;
/// Folder under `CACHE_DIR`.
const FOLDER: &str = "sections";
/// A build commits after this much text or this much time, whichever comes first, so a
/// kill loses at most that much work. Every commit flushes each writer thread's segment,
/// and small segments are merged again and again: at 2 s / 32 MB a 220 MB build spent a
/// quarter of its CPU in merges (docs/benchmarks.md, "Index build").
const COMMIT_EVERY_BYTES: usize = 128 << 20;
/// The default of `manvault index --commit-every`, and what a server's updates use.
pub(crate) const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_secs(10);
/// Indexing memory of all writer threads together, when the build is all the process
/// does. A thread flushes a segment whenever its share is full, so this sets the size of
/// the segments the merges rework: 48 MB took 1.6x the CPU of 192 MB at 220 MB of text
/// (docs/benchmarks.md, "Index build"). It is a fixed amount, not a share of the corpus.
const WRITER_BUDGET_BYTES: usize = 192 << 20;
/// Names the test knob of `manvault index` (`tests/it/manual/index_kill.rs`): with it at
/// N, an update commits after its first N files, then writes the segments of its next
/// commit after file 2N (`prepare_commit`) and holds there, without switching
/// `meta.json`, until the process is killed. A kill test then kills between two commits
/// by construction, with uncommitted segments on disk, instead of racing a build that a
/// fast machine may finish first. Not a user setting: no one gains by a run that never
/// ends (docs/decisions.md).
const TEST_HOLD_VARIABLE: &str = "MANVAULT_TEST_INDEX_HOLD";
/// Writer threads at most then.
const WRITER_THREADS: usize = 3;
/// Indexing memory a writer thread needs at least: tantivy refuses less than 15 MB.
const WRITER_THREAD_MIN_BYTES: usize = 16 << 20;

/// Writes the segments of the documents added since the last commit, as a commit does
/// first, then holds, without switching `meta.json`, until the process is killed
/// ([`TEST_HOLD_VARIABLE`]).
fn hold_commit(writer: &mut IndexWriter<TantivyDocument>) -> tantivy::Result<()> {
    let _prepared = writer.prepare_commit()?;
    tracing::info!(
        "{TEST_HOLD_VARIABLE}: holding a commit whose segments are written; kill the process"
    );
    loop {
        std::thread::park();
    }
}

/// The threads and memory an update gives tantivy's writer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriterBudget {
    threads: usize,
    bytes: usize,
}

impl WriterBudget {
    /// `manvault index`: the build is all the process does, so it takes up to
    /// [`WRITER_THREADS`] cores and [`WRITER_BUDGET_BYTES`].
    pub(crate) fn foreground() -> WriterBudget {
        let threads = crate::machine::cores().clamp(1, WRITER_THREADS);
        WriterBudget {
            threads,
            bytes: WRITER_BUDGET_BYTES.max(threads * WRITER_THREAD_MIN_BYTES),
        }
    }

    /// A server's build next to its searches: one thread, so the other cores answer,
    /// and the least memory tantivy accepts, so the build adds little to the peak of a
    /// process that already holds the derived corpus (issue 16: peak < 6x the corpus).
    pub(crate) const BACKGROUND: WriterBudget = WriterBudget {
        threads: 1,
        bytes: WRITER_THREAD_MIN_BYTES,
    };
}

/// The fields of a section document: only what the search reads. The heading path, the
/// file's names, the start line and the text's length are not indexed: the search takes
/// them from the corpus, and each field would only add mapped pages to every search's
/// memory (issue 16: peak < 6x the corpus).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// [`file_id`] of the section's file (indexed too: it deletes a file's sections).
    pub(crate) file_id: Field,
    /// [`ManualFile::version`](crate::manual::ManualFile::version) of the file the
    /// section was read from.
    pub(crate) version: Field,
    /// Index of the node in its file.
    pub(crate) node: Field,
    /// The own text, normalised.
    pub(crate) body: Field,
    pub(crate) words: Field,
    /// The file's [`StoredOutline`] as JSON, on its first section only.
    pub(crate) outline: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let positions = |tokenizer: &str| {
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions)
    };
    let fast = || NumericOptions::default().set_fast();
    let fields = Fields {
        file_id: builder.add_u64_field("file_id", fast().set_indexed()),
        version: builder.add_u64_field("version", fast()),
        node: builder.add_u64_field("node", fast()),
        body: builder.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(positions(tokenizer::UNITS)),
        ),
        words: builder.add_text_field(
            "words",
            TextOptions::default().set_indexing_options(positions(tokenizer::WORDS)),
        ),
        outline: builder.add_bytes_field("outline", BytesOptions::default().set_stored()),
    };
    (builder.build(), fields)
}

/// What every commit records: an index with another payload is rebuilt.
fn payload() -> String {
    format!("manvault sections format {FORMAT_VERSION} tokens {INDEX_TOKENS_VERSION}")
}

/// The stable id of a file: what the index's sections name their file by.
pub(crate) fn file_id(manual_id: &str, path: &str) -> u64 {
    crate::text::fingerprint(&[manual_id.as_bytes(), path.as_bytes()])
}

/// One file to (re)index: its names, version, outline and text. Owned, so a build can
/// run on a thread of its own while the manual index moves on.
pub(crate) struct FileSections {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    /// [`ManualFile::version`](crate::manual::ManualFile::version) of the file the
    /// sections are read from.
    pub version: u64,
    pub outline: Arc<FileOutline>,
    pub text: Arc<FileText>,
}

/// How far an update is, for a progress report.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Written {
    /// Files this update indexes.
    pub total_files: u64,
    pub files: u64,
    pub sections: u64,
    pub bytes: u64,
}

pub(crate) struct SectionIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// Where it is kept; `None` in memory.
    folder: Option<PathBuf>,
    /// Version of each file's sections in the last commit, by [`file_id`].
    indexed: HashMap<u64, u64>,
    /// How much indexing time an update commits at most: what a kill may lose.
    commit_every: std::time::Duration,
    /// [`TEST_HOLD_VARIABLE`]'s number of files, when set.
    test_hold: Option<u64>,
}

impl std::fmt::Debug for SectionIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectionIndex")
            .field("folder", &self.folder)
            .field("files", &self.indexed.len())
            .finish()
    }
}

impl SectionIndex {
    /// The index under `cache_dir` (created, or rebuilt when its versions differ), or one
    /// in memory when there is no cache folder or it cannot be used.
    pub(crate) fn open(cache_dir: Option<&Path>) -> SectionIndex {
        if let Some(cache_dir) = cache_dir {
            let folder = cache_dir.join(FOLDER);
            match Self::open_in(&folder) {
                Ok(index) => return index,
                Err(error) => tracing::warn!(
                    error = %error,
                    "the section index cannot be kept under CACHE_DIR; it is built in memory"
                ),
            }
        }
        Self::with_index(Index::create_in_ram(schema().0), None).expect("an index in memory opens")
    }

    /// The index in `cache_dir`, an error when it cannot be kept there.
    pub(crate) fn open_on_disk(cache_dir: &Path) -> tantivy::Result<SectionIndex> {
        Self::open_in(&cache_dir.join(FOLDER))
    }

    fn open_in(folder: &Path) -> tantivy::Result<SectionIndex> {
        refuse_symlink(folder)?;
        std::fs::create_dir_all(folder)?;
        let (schema, _) = schema();
        let directory = ReadingDirectory::open(folder)?;
        let usable = match Index::exists(&directory) {
            Ok(false) => None,
            Ok(true) => Index::open(directory.clone()).ok().filter(|index| {
                index.schema() == schema
                    && index
                        .load_metas()
                        .is_ok_and(|metas| metas.payload.as_deref() == Some(payload().as_str()))
            }),
            Err(_) => None,
        };
        let index = match usable {
            Some(index) => index,
            None => {
                let directory = if Index::exists(&directory).unwrap_or(true) {
                    tracing::info!(
                        "the section index was written by another version; rebuilding it"
                    );
                    drop(directory);
                    std::fs::remove_dir_all(folder)?;
                    std::fs::create_dir_all(folder)?;
                    ReadingDirectory::open(folder)?
                } else {
                    directory
                };
                Index::create(directory, schema, IndexSettings::default())?
            }
        };
        Self::with_index(index, Some(folder.to_path_buf()))
    }

    fn with_index(index: Index, folder: Option<PathBuf>) -> tantivy::Result<SectionIndex> {
        tokenizer::register(&index);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let (_, fields) = schema();
        let mut opened = SectionIndex {
            index,
            reader,
            fields,
            folder,
            indexed: HashMap::new(),
            commit_every: COMMIT_EVERY,
            test_hold: None,
        };
        opened.indexed = opened.read_versions()?;
        Ok(opened)
    }

    /// The index committing every `commit_every` of indexing time instead of
    /// [`COMMIT_EVERY`], and holding its second commit when [`TEST_HOLD_VARIABLE`] is set
    /// (`manvault index` only: a server never reads the knob).
    pub(crate) fn committing_every(self, commit_every: std::time::Duration) -> SectionIndex {
        SectionIndex {
            commit_every,
            test_hold: std::env::var(TEST_HOLD_VARIABLE)
                .ok()
                .and_then(|files| files.parse().ok())
                .filter(|&files| files > 0),
            ..self
        }
    }

    /// The version of every file with sections in the current commit.
    fn read_versions(&self) -> tantivy::Result<HashMap<u64, u64>> {
        let searcher = self.reader.searcher();
        let mut versions = HashMap::new();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let ids = fast.u64("file_id")?;
            let version = fast.u64("version")?;
            for doc in segment.doc_ids_alive() {
                if let (Some(id), Some(version)) = (ids.first(doc), version.first(doc)) {
                    versions.insert(id, version);
                }
            }
        }
        Ok(versions)
    }

    pub(crate) fn fields(&self) -> Fields {
        self.fields
    }

    /// Bytes of the index's files on disk (0 in memory).
    pub(crate) fn disk_bytes(&self) -> u64 {
        let Some(folder) = &self.folder else {
            return 0;
        };
        std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|entry| entry.metadata().ok())
                    .filter(|meta| meta.is_file())
                    .map(|meta| meta.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Whether the index holds the sections of version `version` of the file whose
    /// [`file_id`] is `id`.
    pub(crate) fn holds(&self, id: u64, version: u64) -> bool {
        self.indexed.get(&id) == Some(&version)
    }

    /// The stored outlines of the files `wanted` (by [`file_id`]) in the last commit. A
    /// file whose outline is missing or unreadable is left out (the caller derives it).
    pub(crate) fn stored_outlines(
        &self,
        wanted: &HashSet<u64>,
    ) -> tantivy::Result<HashMap<u64, StoredOutline>> {
        let mut outlines = HashMap::with_capacity(wanted.len());
        if wanted.is_empty() {
            return Ok(outlines);
        }
        let searcher = self.reader.searcher();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let ids = fast.u64("file_id")?;
            let nodes = fast.u64("node")?;
            // First sections are spread over the store's blocks: a one-block cache is
            // enough for the few that share one.
            let store = segment.get_store_reader(1)?;
            for doc in segment.doc_ids_alive() {
                let Some(id) = ids.first(doc).filter(|id| wanted.contains(id)) else {
                    continue;
                };
                if nodes.first(doc) != Some(0) {
                    continue;
                }
                let document: TantivyDocument = store.get(doc)?;
                let parsed = document
                    .get_first(self.fields.outline)
                    .and_then(|value| value.as_bytes())
                    .map(serde_json::from_slice::<StoredOutline>);
                match parsed {
                    Some(Ok(outline)) => {
                        outlines.insert(id, outline);
                    }
                    Some(Err(error)) => {
                        tracing::warn!(error = %error, "a stored outline cannot be read; the file is derived")
                    }
                    None => {}
                }
            }
        }
        Ok(outlines)
    }

    /// The ids of the files the index holds sections of.
    pub(crate) fn indexed_files(&self) -> impl Iterator<Item = u64> + '_ {
        self.indexed.keys().copied()
    }

    /// The searcher of the last commit.
    pub(crate) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Replaces the sections of `files` and drops those of the files `removed` (by
    /// [`file_id`]), committing every [`COMMIT_EVERY_BYTES`] or `commit_every` and at the
    /// end; `progress` gets the running totals after each file.
    pub(crate) fn update(
        &mut self,
        files: &[FileSections],
        removed: &[u64],
        budget: WriterBudget,
        progress: &mut dyn FnMut(Written),
    ) -> tantivy::Result<Written> {
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(budget.threads, budget.bytes)?;
        let mut pending: Vec<(u64, Option<u64>)> = Vec::new();
        for &id in removed {
            writer.delete_term(Term::from_field_u64(self.fields.file_id, id));
            pending.push((id, None));
        }
        let mut written = Written {
            total_files: files.len() as u64,
            ..Written::default()
        };
        let mut since_commit = 0;
        let mut committed = std::time::Instant::now();
        for entry in files {
            let id = file_id(&entry.manual_id, &entry.path);
            writer.delete_term(Term::from_field_u64(self.fields.file_id, id));
            let bytes = self.add_file(&writer, entry, id)?;
            pending.push((id, Some(entry.version)));
            written.files += 1;
            written.sections += entry.outline.node_count() as u64;
            written.bytes += bytes as u64;
            since_commit += bytes;
            if since_commit >= COMMIT_EVERY_BYTES
                || committed.elapsed() >= self.commit_every
                || self.test_hold == Some(written.files)
            {
                self.commit(&mut writer, &mut pending)?;
                since_commit = 0;
                committed = std::time::Instant::now();
            }
            if self.test_hold.map(|files| 2 * files) == Some(written.files) {
                hold_commit(&mut writer)?;
            }
            progress(written);
        }
        self.commit(&mut writer, &mut pending)?;
        // Merging the small segments of an update keeps the number a query visits low.
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(written)
    }

    fn commit(
        &mut self,
        writer: &mut IndexWriter<TantivyDocument>,
        pending: &mut Vec<(u64, Option<u64>)>,
    ) -> tantivy::Result<()> {
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload());
        prepared.commit()?;
        for (id, version) in pending.drain(..) {
            match version {
                Some(version) => self.indexed.insert(id, version),
                None => self.indexed.remove(&id),
            };
        }
        Ok(())
    }

    /// Adds one document per section of the file; returns the bytes of text added.
    fn add_file(
        &self,
        writer: &IndexWriter<TantivyDocument>,
        entry: &FileSections,
        id: u64,
    ) -> tantivy::Result<usize> {
        let fields = &self.fields;
        let mut bytes = 0;
        for node in 0..entry.outline.node_count() as u32 {
            let own = entry.text.own_text(node);
            bytes += own.len();
            let mut doc = TantivyDocument::default();
            doc.add_u64(fields.file_id, id);
            doc.add_u64(fields.version, entry.version);
            doc.add_u64(fields.node, u64::from(node));
            if node == 0 {
                let outline = serde_json::to_vec(&entry.outline.stored)
                    .expect("an outline of strings and numbers serialises");
                doc.add_bytes(fields.outline, &outline);
            }
            doc.add_text(fields.body, own);
            doc.add_text(fields.words, own);
            writer.add_document(doc)?;
        }
        Ok(bytes)
    }
}

/// The index folder must be a real folder: a symlink planted there would make the index
/// write elsewhere.
fn refuse_symlink(folder: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(folder) {
        Ok(meta) if meta.file_type().is_symlink() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the section index folder is a symlink",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
