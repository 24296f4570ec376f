//! Section vectors: one vector for every node of every manual, filled in the background,
//! read by searches without waiting.
//!
//! * **What is embedded** ([`passage`]): a section's heading and the start of its own
//!   body (up to the next node), Markdown markup stripped, cut at
//!   [`PassageShape::body_chars`] characters. The cut is a measured trade (docs/search.md,
//!   "Semantic recall"): embedding cost grows with the text, and so does recall.
//! * **Incremental**: sections are re-derived only for files whose generation moved; a
//!   section's vector is keyed by the hash of its passage ([`crate::embed::store`]), so an
//!   unchanged section is never embedded twice, in one run or across restarts.
//! * **Background**: [`SectionVectors::start`] runs a worker thread that takes a few
//!   missing passages at a time, embeds them with no lock held, stores them and publishes
//!   a new immutable [`Published`] state. Readers clone an `Arc` under a read lock held
//!   for a pointer copy; they never wait for the provider or the worker.
//! * **Degrades**: a provider that is down or slow costs a search at most
//!   `EMBEDDINGS_TIMEOUT_MS` once, then nothing for [`QUERY_PAUSE`] ([`Unavailable`] says
//!   why); the worker backs off up to [`MAX_BACKOFF`](crate::embed::provider::MAX_BACKOFF)
//!   and resumes by itself.
//!
//! Phase 2 (the `semantic` signal of `manual_find`) needs: [`SectionVectors::from_config`]
//! (`None` without `EMBEDDINGS_URL`), [`SectionVectors::start`] with the index holder as
//! [`IndexSource`], [`SectionVectors::nudge`] after a refresh that changed the index,
//! [`SectionVectors::query_vector`], [`SectionVectors::top_k`] and
//! [`SectionVectors::status`] (sections not embedded yet, provider state) for the summary,
//! and [`SectionVectors::fill`] as the "embed sections" step of `manvault index`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::file::ManualText;
use super::{ManualFile, ManualIndex, NodeKind};
use crate::config::Config;
use crate::embed::provider::{backoff, ProviderState};
use crate::embed::quantized::{Arena, Quantized};
use crate::embed::store::{content_hash, Space, VectorStore};
use crate::embed::{EmbedError, EmbedErrorKind, Embedder, OpenAiEmbedder, Role};
use crate::text::lines::LineNo;

/// How long a batch of passages may take (a slow CPU embedding 8 long passages).
const BATCH_TIMEOUT: Duration = Duration::from_secs(120);
/// How often an idle worker looks for changed manuals when nobody nudges it.
const IDLE_POLL: Duration = Duration::from_secs(2);
/// After a query timed out, searches skip the query embedding for this long.
pub(crate) const QUERY_PAUSE: Duration = Duration::from_secs(30);
/// Attempts `fill` makes on a failing batch before it gives up.
const FILL_ATTEMPTS: u32 = 5;
/// The text of the request that learns the model and dimensions before the first batch.
const PROBE_TEXT: &str = "manvault";

/// Which text stands for a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassageShape {
    /// Characters of the section's own body after its heading (markup stripped).
    pub body_chars: usize,
    /// Whether the titles of the enclosing headings come before the section's own.
    pub ancestors: bool,
}

/// The passage used unless a bench asks for another. Measured on bench-dah (docs/search.md,
/// "Semantic recall"): semantic R@20 0.47 / 0.61 / 0.65 / 0.72 for 0 / 200 / 400 / 800
/// body characters, at 9 / 100 / 126 / 325 s of embedding a MB; 800 is the first cut
/// whose union with `manual_find`'s candidates clears 0.89 at K = 20.
pub const DEFAULT_PASSAGE: PassageShape = PassageShape {
    body_chars: 800,
    ancestors: false,
};

#[derive(Debug, Clone)]
pub struct SectionSettings {
    pub passage: PassageShape,
    pub batch_size: usize,
    pub query_timeout: Duration,
    /// `None`: vectors in memory only.
    pub cache_dir: Option<PathBuf>,
    /// `EMBEDDINGS_PREFIXES`, part of the vector space.
    pub prefixes: String,
}

impl SectionSettings {
    /// The settings of `config`; `None` when embeddings are off.
    pub fn from_config(config: &Config) -> Option<SectionSettings> {
        let embeddings = config.embeddings.as_ref()?;
        Some(SectionSettings {
            passage: DEFAULT_PASSAGE,
            batch_size: embeddings.batch_size,
            query_timeout: Duration::from_millis(embeddings.query_timeout_ms),
            cache_dir: Some(config.cache_dir.clone()),
            prefixes: embeddings.prefixes.as_str().to_owned(),
        })
    }
}

/// Gives the worker the manual index as it is now, without refreshing it (the server's
/// calls do that); may skip `visit` when no index is built yet.
pub(crate) trait IndexSource: Send + Sync + 'static {
    fn with_index(&self, visit: &mut dyn FnMut(&ManualIndex));
}

/// What a search summary reports about semantic recall.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VectorStatus {
    /// Sections of every manual the worker has seen.
    pub sections: usize,
    /// Of those, sections without a vector yet.
    pub pending: usize,
    pub provider: ProviderState,
}

/// Why a search has no semantic signal this time.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable {
    /// No vector space yet: the provider has not answered once.
    NoVectorsYet,
    /// The provider failed on this query.
    Provider(EmbedError),
    /// A recent query timed out; queries skip the provider for a while.
    Paused,
    /// The provider now answers with another model; section vectors are being redone.
    ModelChanged,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NoVectorsYet => formatter
                .write_str("no section vectors yet (the embeddings server has not answered)"),
            Unavailable::Provider(error) => write!(formatter, "{error}"),
            Unavailable::Paused => write!(
                formatter,
                "the embeddings server timed out recently; retrying within {} s",
                QUERY_PAUSE.as_secs()
            ),
            Unavailable::ModelChanged => formatter
                .write_str("the embeddings model changed; section vectors are being recomputed"),
        }
    }
}

/// A query embedded in the space of the section vectors.
#[derive(Debug, Clone)]
pub struct QueryVector {
    vector: Quantized,
}

/// A section close to the query.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticHit {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    /// The node's first line (its heading; 1 for level-0 nodes), as in node ids.
    pub line_start: LineNo,
    /// Cosine similarity.
    pub score: f32,
}

/// Progress of [`SectionVectors::fill`], after each batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillProgress {
    pub sections: usize,
    pub pending: usize,
    /// Passages embedded by this call so far.
    pub embedded: usize,
}

/// One node as the vectors know it.
#[derive(Debug, Clone)]
struct Placed {
    path: Arc<str>,
    line_start: LineNo,
    key: u32,
}

/// Where the text of a missing vector is.
#[derive(Debug, Clone)]
struct Place {
    manual_id: Arc<str>,
    path: Arc<str>,
    line_start: LineNo,
}

struct FileSections {
    generation: u64,
    sections: Vec<Placed>,
}

/// What readers see; replaced whole, never changed.
#[derive(Debug, Clone)]
struct Published {
    manuals: BTreeMap<Arc<str>, Arc<Vec<Placed>>>,
    /// Key ids handed out so far (every section's key is below).
    keys: usize,
    arena: Arena,
    space: Option<Space>,
    status: VectorStatus,
    /// Whether the sections were derived from an index at least once.
    sections_known: bool,
}

/// The worker's bookkeeping, behind one mutex never held while embedding.
struct State {
    store: VectorStore,
    files: BTreeMap<(Arc<str>, Arc<str>), FileSections>,
    manuals: BTreeMap<Arc<str>, Arc<Vec<Placed>>>,
    /// The index generation the sections were derived from.
    synced: Option<u64>,
    /// Missing vectors, by key id, with one place to read each one's text.
    todo: BTreeMap<u32, Place>,
    /// Sections referring to each key id (several for identical sections).
    uses: Vec<u32>,
    sections: usize,
    pending: usize,
    provider: ProviderState,
    sections_known: bool,
}

struct Shared {
    embedder: Arc<dyn Embedder>,
    settings: SectionSettings,
    state: Mutex<State>,
    published: RwLock<Arc<Published>>,
    nudged: Mutex<bool>,
    wake: Condvar,
    stopping: AtomicBool,
    /// A query saw another model than the vectors': the worker asks the provider again.
    recheck_space: AtomicBool,
    query_paused_until: Mutex<Option<Instant>>,
    /// Whether a worker runs (a query may then wait for its first results).
    started: AtomicBool,
    /// Counts publications; [`Self::published_changed`] is notified with each.
    publications: Mutex<u64>,
    published_changed: Condvar,
}

/// The section vectors of every manual; see the module documentation.
pub struct SectionVectors {
    shared: Arc<Shared>,
}

/// A batch taken from the to-do list: key id, passage, and where it came from (to put it
/// back if embedding fails).
type Batch = Vec<(u32, String, Place)>;

impl SectionVectors {
    /// Vectors through the OpenAI-compatible provider of `config`; `None` without
    /// `EMBEDDINGS_URL` (then nothing embeds and nothing touches the network).
    pub fn from_config(config: &Config) -> Option<SectionVectors> {
        let settings = SectionSettings::from_config(config)?;
        let embedder = OpenAiEmbedder::new(config.embeddings.as_ref()?);
        Some(SectionVectors::new(Arc::new(embedder), settings))
    }

    /// Vectors through `embedder`; nothing runs until [`Self::start`] or [`Self::fill`].
    pub fn new(embedder: Arc<dyn Embedder>, settings: SectionSettings) -> SectionVectors {
        let status = VectorStatus {
            sections: 0,
            pending: 0,
            provider: ProviderState::Unknown,
        };
        let published = Published {
            manuals: BTreeMap::new(),
            keys: 0,
            arena: Arena::new(0),
            space: None,
            status: status.clone(),
            sections_known: false,
        };
        SectionVectors {
            shared: Arc::new(Shared {
                embedder,
                settings,
                state: Mutex::new(State {
                    store: VectorStore::default(),
                    files: BTreeMap::new(),
                    manuals: BTreeMap::new(),
                    synced: None,
                    todo: BTreeMap::new(),
                    uses: Vec::new(),
                    sections: 0,
                    pending: 0,
                    provider: ProviderState::Unknown,
                    sections_known: false,
                }),
                published: RwLock::new(Arc::new(published)),
                nudged: Mutex::new(false),
                wake: Condvar::new(),
                stopping: AtomicBool::new(false),
                recheck_space: AtomicBool::new(false),
                query_paused_until: Mutex::new(None),
                started: AtomicBool::new(false),
                publications: Mutex::new(0),
                published_changed: Condvar::new(),
            }),
        }
    }

    /// Starts the background worker over `source`; it stops when `self` is dropped.
    pub(crate) fn start(&self, source: Arc<dyn IndexSource>) {
        self.shared.started.store(true, Ordering::SeqCst);
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("section-vectors".to_owned())
            .spawn(move || shared.work(&*source))
            .expect("spawn the section vector worker");
    }

    /// Tells the worker the manuals changed, so it does not wait for its next poll.
    pub(crate) fn nudge(&self) {
        self.shared.nudge();
    }

    pub(crate) fn status(&self) -> VectorStatus {
        self.shared.published().status.clone()
    }

    /// Sections not embedded yet.
    pub fn pending(&self) -> usize {
        self.status().pending
    }

    /// Embeds every missing section of `index` in the calling thread (the step of
    /// `manvault index`), calling `progress` after each batch. A failing batch is tried
    /// [`FILL_ATTEMPTS`] times with a growing pause; then the error is returned and what
    /// was embedded so far stays cached.
    pub fn fill(
        &self,
        index: &ManualIndex,
        progress: &mut dyn FnMut(FillProgress),
    ) -> Result<FillProgress, EmbedError> {
        let shared = &self.shared;
        let mut embedded = 0;
        loop {
            let batch = shared.take_batch(index);
            if batch.is_empty() {
                break;
            }
            let mut attempt = 1;
            let stored = loop {
                match shared.embed_batch(&batch) {
                    Ok(stored) => break stored,
                    Err(error) if error.retryable() && attempt < FILL_ATTEMPTS => {
                        std::thread::sleep(backoff(attempt));
                        attempt += 1;
                    }
                    Err(error) => {
                        shared.give_back(batch);
                        return Err(error);
                    }
                }
            };
            // A batch that stored nothing learnt the vector space: the counts wait for
            // the sync that follows (until then every section looks pending, and the
            // cached ones would then look embedded at once, making the time left short).
            if stored > 0 {
                embedded += stored;
                progress(shared.progress(embedded));
            }
        }
        shared.compact();
        Ok(shared.progress(embedded))
    }

    /// The query's vector, or why there is none; never waits longer than
    /// `EMBEDDINGS_TIMEOUT_MS` and not at all during a [`QUERY_PAUSE`].
    ///
    /// Within that time, a query made while a started worker has not yet learnt the
    /// vector space or derived the sections (the first search of a process) waits for
    /// them after its own embedding call, so that a fresh process answers with the
    /// vectors its cache already holds.
    pub fn query_vector(&self, query: &str) -> Result<QueryVector, Unavailable> {
        let shared = &self.shared;
        let deadline = Instant::now() + shared.settings.query_timeout;
        let paused = shared.lock_pause();
        if paused.is_some_and(|until| Instant::now() < until) {
            return Err(Unavailable::Paused);
        }
        drop(paused);
        let answer = shared
            .embedder
            .embed(&[query], Role::Query, shared.settings.query_timeout);
        let mut answer = match answer {
            Ok(answer) => answer,
            Err(error) => {
                if error.kind == EmbedErrorKind::Timeout {
                    *shared.lock_pause() = Some(Instant::now() + QUERY_PAUSE);
                }
                return Err(Unavailable::Provider(error));
            }
        };
        let published = shared.wait_until_ready(deadline);
        if matches!(published.status.provider, ProviderState::Down(_)) {
            // The provider answers again: the worker need not sit out its back-off.
            shared.nudge();
        }
        let space = published.space.as_ref().ok_or(Unavailable::NoVectorsYet)?;
        let vector = answer.vectors.pop().unwrap_or_default();
        if answer.model != space.model || vector.len() != space.dims {
            shared.recheck_space.store(true, Ordering::SeqCst);
            shared.nudge();
            return Err(Unavailable::ModelChanged);
        }
        Ok(QueryVector {
            vector: Quantized::new(&vector),
        })
    }

    /// The `k` sections of each of `manual_ids` closest to `query`, best first over all
    /// of them. Sections without a vector yet are not ranked.
    pub fn top_k(&self, query: &QueryVector, manual_ids: &[&str], k: usize) -> Vec<SemanticHit> {
        let published = self.shared.published();
        let mut hits = Vec::new();
        // Identical sections (copies of a manual, boilerplate) share a key: score each
        // key once. NaN: not scored yet; -inf: no vector.
        let mut scores = vec![f32::NAN; published.keys];
        for &manual_id in manual_ids {
            let Some((id, sections)) = published.manuals.get_key_value(manual_id) else {
                continue;
            };
            let mut best: BinaryHeap<Reverse<(Score, usize)>> = BinaryHeap::with_capacity(k + 1);
            for (at, section) in sections.iter().enumerate() {
                let memo = &mut scores[section.key as usize];
                if memo.is_nan() {
                    *memo = published
                        .arena
                        .cosine(&query.vector, section.key)
                        .unwrap_or(f32::NEG_INFINITY);
                }
                let score = *memo;
                if score == f32::NEG_INFINITY {
                    continue;
                }
                // Most sections lose to the k-th best so far: compare before touching the heap.
                if best.len() == k && best.peek().is_some_and(|Reverse((low, _))| score <= low.0) {
                    continue;
                }
                best.push(Reverse((Score(score), at)));
                if best.len() > k {
                    best.pop();
                }
            }
            hits.extend(
                best.into_iter()
                    .map(|Reverse((Score(score), at))| SemanticHit {
                        manual_id: Arc::clone(id),
                        path: Arc::clone(&sections[at].path),
                        line_start: sections[at].line_start,
                        score,
                    }),
            );
        }
        hits.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| {
                (&a.manual_id, &a.path, a.line_start).cmp(&(&b.manual_id, &b.path, b.line_start))
            })
        });
        hits
    }

    /// Bytes the vectors take in memory.
    pub fn vector_bytes(&self) -> usize {
        self.shared.published().arena.bytes()
    }

    /// Bytes one vector takes in memory (0 before the provider first answered).
    pub fn bytes_per_vector(&self) -> usize {
        self.shared.published().arena.bytes_per_vector()
    }

    /// Bytes of the cache file, if vectors are cached on disk.
    pub fn cache_file_bytes(&self) -> Option<u64> {
        self.shared.lock_state().store.file_bytes()
    }
}

impl Drop for SectionVectors {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.nudge();
    }
}

/// A cosine ordered totally (NaN never occurs: vectors are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_pause(&self) -> MutexGuard<'_, Option<Instant>> {
        self.query_paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn published(&self) -> Arc<Published> {
        Arc::clone(
            &self
                .published
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    fn nudge(&self) {
        *self.nudged.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    /// The published state once a started worker has learnt the vector space and
    /// derived the sections, or found the provider down, or at `deadline`, whichever
    /// comes first; at once without a worker.
    fn wait_until_ready(&self, deadline: Instant) -> Arc<Published> {
        let mut publications = self
            .publications
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            let published = self.published();
            let ready = published.space.is_some() && published.sections_known
                || matches!(published.status.provider, ProviderState::Down(_))
                || !self.started.load(Ordering::SeqCst);
            let now = Instant::now();
            if ready || now >= deadline {
                return published;
            }
            publications = self
                .published_changed
                .wait_timeout(publications, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Sleeps up to `timeout`, or until nudged or stopped.
    fn wait(&self, timeout: Duration) {
        let nudged = self.nudged.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut nudged, _) = self
            .wake
            .wait_timeout_while(nudged, timeout, |nudged| {
                !*nudged && !self.stopping.load(Ordering::SeqCst)
            })
            .unwrap_or_else(PoisonError::into_inner);
        *nudged = false;
    }

    /// The worker: embeds missing sections while there are any, backing off while the
    /// provider fails, polling for changed manuals while idle.
    fn work(&self, source: &dyn IndexSource) {
        let mut failures = 0;
        while !self.stopping.load(Ordering::SeqCst) {
            let mut batch = Vec::new();
            source.with_index(&mut |index| batch = self.take_batch(index));
            let outcome = if !batch.is_empty() {
                let outcome = self.embed_batch(&batch);
                if outcome.is_err() {
                    self.give_back(batch);
                }
                outcome
            } else if self.recheck_space.load(Ordering::SeqCst)
                || self.lock_state().store.space().is_none()
            {
                // Learn the space even with nothing to embed, so that queries know it.
                self.ensure_space().map(|_| 0)
            } else {
                self.compact();
                self.wait(IDLE_POLL);
                continue;
            };
            match outcome {
                Ok(_) => failures = 0,
                Err(_) => {
                    failures += 1;
                    self.wait(backoff(failures));
                }
            }
        }
    }

    /// Brings the sections in line with `index` and takes the next batch of missing
    /// passages (each checked against its key: a section edited since is skipped, the
    /// next sync queues it again).
    fn take_batch(&self, index: &ManualIndex) -> Batch {
        let mut state = self.lock_state();
        if state.synced != Some(index.generation()) {
            self.sync(&mut state, index);
        }
        let mut batch = Vec::new();
        while batch.len() < self.settings.batch_size {
            let Some((key, place)) = state.todo.pop_first() else {
                break;
            };
            if state.store.has(key) {
                continue;
            }
            let text = index
                .file(&place.manual_id, &place.path)
                .ok()
                .and_then(|file| passage_at(file, place.line_start, self.settings.passage));
            match text {
                Some(text) if content_hash(&text) == *state.store.hash(key) => {
                    batch.push((key, text, place))
                }
                _ => {}
            }
        }
        batch
    }

    /// Re-derives the sections of files whose generation moved, rebuilds the to-do list
    /// and publishes.
    fn sync(&self, state: &mut State, index: &ManualIndex) {
        let shape = self.settings.passage;
        let mut files = BTreeMap::new();
        let mut manuals = BTreeMap::new();
        for manual_id in index.manual_ids() {
            let manual: Arc<str> = state
                .manuals
                .get_key_value(manual_id)
                .map_or_else(|| Arc::from(manual_id), |(id, _)| Arc::clone(id));
            let mut placed = Vec::new();
            for listed in index.files(Some(manual_id)).unwrap_or_default() {
                let file = listed.file;
                let key = (Arc::clone(&manual), Arc::<str>::from(file.path()));
                let sections = match state.files.remove(&key) {
                    Some(known) if known.generation == file.generation() => known,
                    _ => FileSections {
                        generation: file.generation(),
                        sections: derive_sections(file, shape, &mut state.store),
                    },
                };
                placed.extend(sections.sections.iter().cloned());
                files.insert(key, sections);
            }
            manuals.insert(manual, Arc::new(placed));
        }
        state.files = files;
        state.manuals = manuals;
        state.synced = Some(index.generation());
        let State {
            store,
            manuals,
            todo,
            uses,
            ..
        } = state;
        todo.clear();
        uses.clear();
        let mut sections = 0;
        for (manual_id, placed) in manuals.iter() {
            for section in placed.iter() {
                let key = section.key as usize;
                if uses.len() <= key {
                    uses.resize(key + 1, 0);
                }
                uses[key] += 1;
                sections += 1;
                if !store.has(section.key) {
                    todo.entry(section.key).or_insert_with(|| Place {
                        manual_id: Arc::clone(manual_id),
                        path: Arc::clone(&section.path),
                        line_start: section.line_start,
                    });
                }
            }
        }
        state.pending = state
            .todo
            .keys()
            .map(|&key| state.uses[key as usize] as usize)
            .sum();
        state.sections = sections;
        state.sections_known = true;
        self.publish(state);
    }

    /// Learns the vector space from a one-word request when it is not known yet or a query
    /// saw another model; true when the space changed (every section is queued again, the
    /// cached ones dropping out at the next sync).
    fn ensure_space(&self) -> Result<bool, EmbedError> {
        let known = self.lock_state().store.space().is_some();
        if known && !self.recheck_space.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        let probe = self
            .embedder
            .embed(&[PROBE_TEXT], Role::Passage, BATCH_TIMEOUT);
        match self.record_outcome(probe) {
            Ok(probe) => {
                let dims = probe.vectors.first().map_or(0, Vec::len);
                Ok(self.adopt_space(self.space_of(&probe.model, dims)))
            }
            Err(error) => {
                self.recheck_space.store(known, Ordering::SeqCst);
                Err(error)
            }
        }
    }

    /// Switches to `space` (loading its cache) unless it is the one in use; a switch
    /// drops every vector and queues every section again.
    fn adopt_space(&self, space: Space) -> bool {
        let mut state = self.lock_state();
        if state.store.space() == Some(&space) {
            return false;
        }
        state
            .store
            .attach(space, self.settings.cache_dir.as_deref());
        state.synced = None;
        self.publish(&mut state);
        true
    }

    /// Embeds one batch (learning the vector space first if needed) and stores it;
    /// answers how many vectors it stored. Nothing is stored when the space changed on the
    /// way: the sync that follows queues what the new space's cache lacks.
    fn embed_batch(&self, batch: &Batch) -> Result<usize, EmbedError> {
        if self.ensure_space()? {
            return Ok(0);
        }
        let texts: Vec<&str> = batch.iter().map(|(_, text, _)| text.as_str()).collect();
        let answer = self.embedder.embed(&texts, Role::Passage, BATCH_TIMEOUT);
        let answer = self.record_outcome(answer)?;
        let dims = answer.vectors.first().map_or(0, Vec::len);
        if self.adopt_space(self.space_of(&answer.model, dims)) {
            return Ok(0);
        }
        let vectors: Vec<(u32, Quantized)> = batch
            .iter()
            .zip(&answer.vectors)
            .map(|((key, _, _), vector)| (*key, Quantized::new(vector)))
            .collect();
        let mut state = self.lock_state();
        state.store.insert(&vectors);
        for (key, _) in &vectors {
            let uses = state.uses.get(*key as usize).copied().unwrap_or(0) as usize;
            state.pending = state.pending.saturating_sub(uses);
        }
        self.publish(&mut state);
        Ok(vectors.len())
    }

    fn space_of(&self, model: &str, dims: usize) -> Space {
        Space {
            model: model.to_owned(),
            prefixes: self.settings.prefixes.clone(),
            dims,
        }
    }

    /// Records whether the provider answered (logging only the changes of state) and
    /// passes the answer on.
    fn record_outcome<T>(&self, outcome: Result<T, EmbedError>) -> Result<T, EmbedError> {
        let now = match &outcome {
            Ok(_) => ProviderState::Ready,
            Err(error) => ProviderState::Down(error.clone()),
        };
        let mut state = self.lock_state();
        if state.provider != now {
            match &now {
                ProviderState::Down(error) => {
                    tracing::warn!(error = %error, "embeddings provider unavailable; section vectors wait")
                }
                _ => tracing::info!("embeddings provider answers; filling section vectors"),
            }
            state.provider = now;
            self.publish(&mut state);
        }
        outcome
    }

    /// Puts the places of a failed batch back on the to-do list.
    fn give_back(&self, batch: Batch) {
        let mut state = self.lock_state();
        for (key, _, place) in batch {
            state.todo.entry(key).or_insert(place);
        }
    }

    /// Drops cached vectors no section uses any more (once nothing is missing), never
    /// before the sections of an index are known in the current space: until then no
    /// key is in use, and the whole cache would go.
    fn compact(&self) {
        let mut state = self.lock_state();
        if !state.todo.is_empty() || state.synced.is_none() {
            return;
        }
        let live: Vec<u32> = (0..state.uses.len() as u32)
            .filter(|&key| state.uses[key as usize] > 0)
            .collect();
        state.store.compact(&live);
    }

    fn progress(&self, embedded: usize) -> FillProgress {
        let state = self.lock_state();
        FillProgress {
            sections: state.sections,
            pending: state.pending,
            embedded,
        }
    }

    fn publish(&self, state: &mut State) {
        let published = Published {
            manuals: state.manuals.clone(),
            keys: state.store.keys(),
            arena: state.store.arena().clone(),
            space: state.store.space().cloned(),
            status: VectorStatus {
                sections: state.sections,
                pending: state.pending,
                provider: state.provider.clone(),
            },
            sections_known: state.sections_known,
        };
        *self
            .published
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(published);
        // After the write: a reader checking under this lock sees it or is woken.
        *self
            .publications
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        self.published_changed.notify_all();
    }
}

/// The sections of one file with the key ids of their passages; none when the file
/// cannot be read as indexed (it changed: the refresh that follows derives it again).
fn derive_sections(file: &ManualFile, shape: PassageShape, store: &mut VectorStore) -> Vec<Placed> {
    let Ok(original) = file.read_text() else {
        return Vec::new();
    };
    let path: Arc<str> = Arc::from(file.path());
    (0..file.nodes().len())
        .map(|at| Placed {
            path: Arc::clone(&path),
            line_start: file.nodes()[at].line_start,
            key: store.id(&content_hash(&passage(file, &original, at, shape))),
        })
        .collect()
}

/// The passage of the node starting at `line_start`, if the file still has one there.
fn passage_at(file: &ManualFile, line_start: LineNo, shape: PassageShape) -> Option<String> {
    let at = file
        .nodes()
        .binary_search_by_key(&line_start, |node| node.line_start)
        .ok()?;
    Some(passage(file, &file.read_text().ok()?, at, shape))
}

/// The text that stands for node `at` of `file`: its title (after its ancestors' titles
/// with `shape.ancestors`), a line break, and the start of its own body with Markdown
/// markup stripped and white space collapsed, cut at `shape.body_chars` characters.
/// `original` is the file's text.
pub(crate) fn passage(
    file: &ManualFile,
    original: &ManualText<'_>,
    at: usize,
    shape: PassageShape,
) -> String {
    let nodes = file.nodes();
    let node = &nodes[at];
    let mut text = String::new();
    if shape.ancestors {
        let mut titles = Vec::new();
        let mut parent = node.parent;
        while let Some(found) = parent.and_then(|index| nodes.get(index as usize)) {
            titles.push(found.title.as_str());
            parent = found.parent;
        }
        for title in titles.iter().rev() {
            text.push_str(title);
            text.push_str(" > ");
        }
    }
    text.push_str(&node.title);
    // A heading's own line is its title; level-0 nodes have no heading line.
    let first = if node.level > 0 && node.kind == NodeKind::Heading {
        node.line_start + 1
    } else {
        node.line_start
    };
    let last = file.own_end(at);
    let mut body = String::new();
    if shape.body_chars > 0 && first <= last {
        for line in original.lines(first, last).lines() {
            push_plain(line, &mut body);
            if body.chars().count() >= shape.body_chars {
                break;
            }
        }
    }
    let body: String = body
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(shape.body_chars)
        .collect();
    if !body.is_empty() {
        text.push('\n');
        text.push_str(&body);
    }
    text
}

/// Appends `line` without Markdown markup: block markers (`#`, `>`, list bullets), code
/// fences, setext underlines, emphasis and code marks, table pipes, link targets and
/// HTML tags go; what a reader sees stays.
fn push_plain(line: &str, out: &mut String) {
    let trimmed = line.trim();
    let is_rule = !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| matches!(c, '=' | '-' | '*' | '_' | ' '));
    if trimmed.starts_with("```") || trimmed.starts_with("~~~") || is_rule {
        return;
    }
    let mut rest = trimmed.trim_start_matches(['#', '>', ' ']);
    for bullet in ["- ", "* ", "+ "] {
        if let Some(after) = rest.strip_prefix(bullet) {
            rest = after;
            break;
        }
    }
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' | '`' | '|' | '[' => {}
            '!' if chars.peek() == Some(&'[') => {}
            ']' if chars.peek() == Some(&'(') => {
                for skipped in chars.by_ref() {
                    if skipped == ')' {
                        break;
                    }
                }
            }
            ']' => {}
            '<' if chars
                .peek()
                .is_some_and(|next| next.is_ascii_alphabetic() || *next == '/') =>
            {
                for skipped in chars.by_ref() {
                    if skipped == '>' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out.push(' ');
}

#[cfg(test)]
mod tests;
