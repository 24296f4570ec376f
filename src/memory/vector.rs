//! Claim vectors: the provider that makes them, and the in-memory index that vector
//! candidates are drawn from.
//!
//! **Provider.** One [`Embedder`] of `crate::embed`: with `EMBEDDINGS_URL` set, the
//! OpenAI-compatible server (a semantic model: multilingual-e5 finds a claim asked about
//! in other words or in the other language); without it, the built-in
//! `hashgram-v1-d384` ([`crate::embed::hashgram`]), which is lexical: it matches shared
//! spellings, never synonyms or translations.
//!
//! **Spaces.** Vectors are stored per model id (`claim_vectors.model`) as the provider
//! names it in its answers, and vectors of two models are never compared. The index holds
//! the vectors of one [`Space`], learned from the provider's answers: an answer naming
//! another model (the server restarted with another one) makes the index start over for
//! that model, and the claims without a vector of it are embedded by the background
//! worker (`backfill`), never by a call.
//!
//! **Never waiting.** A call embeds at most one text (the upsert's claim, or the query)
//! and waits at most `EMBEDDINGS_TIMEOUT_MS` for it; when that fails, the upsert stores the
//! claim without a vector and the search ranks by text alone, each saying so
//! ([`VectorNote`]). After a timeout, calls skip the provider for [`PAUSE`], so a hung
//! server costs one call the deadline, not every call.
//!
//! **Memory.** Vectors are held as `crate::embed::quantized` holds section vectors (one
//! signed byte a dimension and one scale, 388 bytes a claim at 384 dimensions) in an
//! [`Arena`] by position, next to what the filters need (scope, class, creation time), so
//! a query is one pass of integer dot products over memory (100,000 claims: 39 MB)
//! instead of a read of every vector from the database.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::policy::Policy;

use crate::config::EmbeddingsConfig;
use crate::contract::types::{MemoryBoundaryClass, MemoryScope};
use crate::embed::hashgram::Hashgram;
use crate::embed::provider::ProviderState;
use crate::embed::quantized::{Arena, Quantized};
use crate::embed::{EmbedError, EmbedErrorKind, Embedder, OpenAiEmbedder, Role};

/// After a call's embedding timed out, calls skip the provider for this long.
pub(crate) const PAUSE: Duration = Duration::from_secs(30);
/// How long the worker waits for one batch (a slow CPU embedding long claims).
const BATCH_TIMEOUT: Duration = Duration::from_secs(60);
/// Claims a batch of the built-in provider (microseconds each).
const BUILTIN_BATCH: usize = 256;

/// Which vectors can be compared: one model's, of one length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Space {
    pub model: String,
    pub dims: usize,
}

/// Why vector retrieval did not fully take part in a call (none: it did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VectorNote {
    /// The provider gave no vector this time: the search ranked by text alone, the
    /// upsert stored its claim without a vector (filled later).
    Unavailable { reason: String, pending: usize },
    /// The provider answered, but `pending` claims have no vector of its model yet: they
    /// are found by text only until the worker embeds them.
    Pending { pending: usize },
}

/// How long calls and the worker wait, and how much the worker sends at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VectorSettings {
    pub call_timeout: Duration,
    pub batch_size: usize,
    pub batch_timeout: Duration,
}

/// The embedder of the memory domain, and whether it is answering.
pub(crate) struct Provider {
    embedder: Arc<dyn Embedder>,
    /// The built-in lexical vectors (no server).
    pub builtin: bool,
    /// `EMBEDDINGS_MODEL`, named by `pce_memory_state` before the server first answers.
    pub configured_model: Option<String>,
    pub settings: VectorSettings,
    state: Mutex<ProviderState>,
    paused_until: Mutex<Option<Instant>>,
}

impl Provider {
    /// The embeddings server of `EMBEDDINGS_*` when configured, else the built-in one.
    pub(crate) fn from_config(embeddings: Option<&EmbeddingsConfig>) -> Provider {
        match embeddings {
            None => Provider::builtin(),
            Some(config) => {
                let mut provider = Provider::new(
                    Arc::new(OpenAiEmbedder::new(config)),
                    VectorSettings {
                        call_timeout: Duration::from_millis(config.query_timeout_ms),
                        batch_size: config.batch_size,
                        batch_timeout: BATCH_TIMEOUT,
                    },
                );
                provider.configured_model = config.model.clone();
                provider
            }
        }
    }

    pub(crate) fn builtin() -> Provider {
        let mut provider = Provider::new(
            Arc::new(Hashgram),
            VectorSettings {
                call_timeout: BATCH_TIMEOUT,
                batch_size: BUILTIN_BATCH,
                batch_timeout: BATCH_TIMEOUT,
            },
        );
        provider.builtin = true;
        provider
    }

    /// A provider of `embedder` (a server's; tests pass the stub).
    pub(crate) fn new(embedder: Arc<dyn Embedder>, settings: VectorSettings) -> Provider {
        Provider {
            embedder,
            builtin: false,
            configured_model: None,
            settings,
            state: Mutex::new(ProviderState::Unknown),
            paused_until: Mutex::new(None),
        }
    }

    /// The space of the built-in vectors, known before any embedding.
    pub(crate) fn known_space(&self) -> Option<Space> {
        self.builtin.then(|| Space {
            model: Hashgram::MODEL_ID.to_owned(),
            dims: Hashgram::DIMENSIONS,
        })
    }

    pub(crate) fn state(&self) -> ProviderState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether calls skip the provider now (a call timed out less than [`PAUSE`] ago).
    pub(crate) fn paused(&self) -> bool {
        self.paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|until| Instant::now() < until)
    }

    /// One text's vector within the call deadline, or why there is none (a message
    /// naming the variable to check, never the text).
    pub(crate) fn embed_one(&self, text: &str, role: Role) -> Result<(Space, Quantized), String> {
        if self.paused() {
            return Err(format!(
                "the embeddings server timed out recently; calls skip it for up to {} s",
                PAUSE.as_secs()
            ));
        }
        match self.embed(&[text], role, self.settings.call_timeout) {
            Ok((space, mut vectors)) => Ok((space, vectors.pop().expect("one vector a text"))),
            Err(error) => {
                if error.kind == EmbedErrorKind::Timeout {
                    *self
                        .paused_until
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + PAUSE);
                }
                Err(error.message)
            }
        }
    }

    /// The worker's batch, with the longer batch deadline and no pause.
    pub(crate) fn embed_batch(
        &self,
        texts: &[&str],
    ) -> Result<(Space, Vec<Quantized>), EmbedError> {
        self.embed(texts, Role::Passage, self.settings.batch_timeout)
    }

    /// Embeds `texts`, records whether the provider answered (a change is logged, without
    /// text), and quantises the vectors.
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        timeout: Duration,
    ) -> Result<(Space, Vec<Quantized>), EmbedError> {
        let answer = self
            .embedder
            .embed(texts, role, timeout)
            .and_then(|answer| {
                let dims = answer.vectors.first().map_or(0, Vec::len);
                if answer.vectors.len() != texts.len()
                    || dims == 0
                    || answer.vectors.iter().any(|vector| vector.len() != dims)
                {
                    return Err(EmbedError::new(
                        EmbedErrorKind::Failed,
                        "the embeddings provider answered malformed vectors; check EMBEDDINGS_URL",
                    ));
                }
                let space = Space {
                    model: answer.model,
                    dims,
                };
                Ok((
                    space,
                    answer.vectors.iter().map(|v| Quantized::new(v)).collect(),
                ))
            });
        let now = match &answer {
            Ok(_) => ProviderState::Ready,
            Err(error) => ProviderState::Down(error.clone()),
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if std::mem::discriminant(&*state) != std::mem::discriminant(&now) {
            match &now {
                ProviderState::Down(error) => tracing::warn!(
                    problem = error.message,
                    "memory vectors: the embeddings provider failed; calls go on without vectors"
                ),
                _ => tracing::info!("memory vectors: the embeddings provider answers"),
            }
        }
        *state = now;
        answer
    }
}

/// The provider and the index, shared by the calls and the backfill worker.
pub(crate) struct Vectors {
    pub provider: Provider,
    index: Mutex<ClaimIndex>,
    nudged: Mutex<bool>,
    wake: Condvar,
    stopping: AtomicBool,
}

impl Vectors {
    pub(crate) fn new(provider: Provider) -> Vectors {
        Vectors {
            index: Mutex::new(ClaimIndex::new(provider.known_space())),
            provider,
            nudged: Mutex::new(false),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
        }
    }

    /// The index as it is (callers that rank bring it up to the store first).
    pub(crate) fn index(&self) -> MutexGuard<'_, ClaimIndex> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `space` (from a provider's answer) the index's. Another model than the
    /// index's empties it: the next refresh reloads every claim with the vectors of the
    /// new model, and the worker embeds those that have none.
    pub(crate) fn adopt(&self, space: &Space) {
        let mut index = self.index();
        if index.space() != Some(space) {
            if let Some(previous) = index.space() {
                tracing::info!(
                    from = previous.model,
                    to = space.model,
                    "memory vectors: the embeddings model changed; claims are re-embedded in the background"
                );
            }
            *index = ClaimIndex::new(Some(space.clone()));
        }
    }

    /// Wakes the worker (claims are missing their vectors, or it should stop).
    pub(crate) fn nudge(&self) {
        *self.nudged.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    /// Sleeps up to `timeout`, or until nudged or stopped.
    pub(crate) fn wait(&self, timeout: Duration) {
        let nudged = self.nudged.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut nudged, _) = self
            .wake
            .wait_timeout_while(nudged, timeout, |nudged| !*nudged && !self.stopping())
            .unwrap_or_else(PoisonError::into_inner);
        *nudged = false;
    }

    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.nudge();
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// The text that stands for a claim in its vector: its text and its entities' names
/// (by entity id), redacted under `policy`, so nothing a redact rule catches is ever sent
/// to an embeddings server.
pub(crate) fn passage(policy: &Policy, text: &str, names: &[&str]) -> String {
    policy
        .boundary
        .redact(&format!("{text} {}", names.join(" ")))
        .text
}

/// What the filters need to know of one claim.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedClaim {
    pub seq: i64,
    pub scope: MemoryScope,
    pub class: MemoryBoundaryClass,
    pub created_ms: i64,
}

/// Every claim's filter fields, in `seq` order (claims are never deleted, so the index
/// only grows, from the largest `seq` it has), and the vectors of one space by position.
pub(crate) struct ClaimIndex {
    claims: Vec<IndexedClaim>,
    space: Option<Space>,
    vectors: Arena,
    /// Positions without a vector of the space.
    missing: BTreeSet<u32>,
}

impl ClaimIndex {
    /// An empty index for vectors of `space` (`None`: not known yet, every claim is
    /// missing its vector).
    pub(crate) fn new(space: Option<Space>) -> ClaimIndex {
        ClaimIndex {
            vectors: Arena::new(space.as_ref().map_or(0, |space| space.dims)),
            claims: Vec::new(),
            space,
            missing: BTreeSet::new(),
        }
    }

    pub(crate) fn space(&self) -> Option<&Space> {
        self.space.as_ref()
    }

    /// Claims indexed.
    pub(crate) fn len(&self) -> usize {
        self.claims.len()
    }

    /// Claims without a vector of the space.
    pub(crate) fn pending(&self) -> usize {
        self.missing.len()
    }

    /// The largest `seq` indexed (0 when empty).
    pub(crate) fn last_seq(&self) -> i64 {
        self.claims.last().map_or(0, |claim| claim.seq)
    }

    fn position(&self, seq: i64) -> Option<usize> {
        self.claims
            .binary_search_by_key(&seq, |claim| claim.seq)
            .ok()
    }

    /// Adds a claim newer than every indexed one, with its stored vector of the space (a
    /// vector of another length counts as none).
    pub(crate) fn push(&mut self, claim: IndexedClaim, vector: Option<Quantized>) {
        debug_assert!(claim.seq > self.last_seq());
        let at = self.claims.len() as u32;
        self.claims.push(claim);
        match vector {
            Some(vector) if self.space.is_some() && vector.dims() == self.vectors.dims() => {
                self.vectors.set(at, &vector)
            }
            _ => {
                self.missing.insert(at);
            }
        }
    }

    /// Gives claim `seq` its vector (filled after it was indexed); `false` when the claim
    /// is not indexed or the vector is not of the space's length.
    pub(crate) fn fill(&mut self, seq: i64, vector: &Quantized) -> bool {
        let Some(at) = self.position(seq) else {
            return false;
        };
        if self.space.is_none() || vector.dims() != self.vectors.dims() {
            return false;
        }
        self.vectors.set(at as u32, vector);
        self.missing.remove(&(at as u32));
        true
    }

    /// Up to `n` claims without a vector, oldest first.
    pub(crate) fn missing(&self, n: usize) -> Vec<i64> {
        self.missing
            .iter()
            .take(n)
            .map(|at| self.claims[*at as usize].seq)
            .collect()
    }

    /// The filter fields of claim `seq`, if indexed.
    pub(crate) fn get(&self, seq: i64) -> Option<&IndexedClaim> {
        self.position(seq).map(|at| &self.claims[at])
    }

    /// The `k` claims `keep` accepts whose vectors are most similar to `query` (cosine,
    /// positive only), best first; none for a query of another length than the space's.
    pub(crate) fn nearest(
        &self,
        query: &Quantized,
        k: usize,
        keep: impl Fn(&IndexedClaim) -> bool,
    ) -> Vec<(i64, f32)> {
        if k == 0 || self.space.is_none() || query.dims() != self.vectors.dims() {
            return Vec::new();
        }
        let mut best: Vec<(i64, f32)> = Vec::with_capacity(k + 1);
        let mut floor = 0f32;
        for (at, claim) in self.claims.iter().enumerate() {
            if !keep(claim) {
                continue;
            }
            let Some((scale, values)) = self.vectors.get(at as u32) else {
                continue;
            };
            let cosine = query.cosine(scale, values);
            if cosine <= floor {
                continue;
            }
            let place = best.partition_point(|(_, score)| *score >= cosine);
            best.insert(place, (claim.seq, cosine.min(1.0)));
            if best.len() > k {
                best.pop();
                floor = best.last().map_or(0.0, |(_, score)| *score);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::stub::StubEmbedder;

    fn hashgram(text: &str) -> Quantized {
        Quantized::new(&Hashgram::vector(text))
    }

    fn claim(seq: i64, class: MemoryBoundaryClass) -> IndexedClaim {
        IndexedClaim {
            seq,
            scope: MemoryScope::Project,
            class,
            created_ms: 0,
        }
    }

    #[test]
    fn nearest_filters_before_taking_k() {
        let mut index = ClaimIndex::new(Provider::builtin().known_space());
        let texts = ["解約の手順", "解約は非同期", "webhook retries", "解約 API"];
        for (n, text) in texts.iter().enumerate() {
            let class = if n == 1 {
                MemoryBoundaryClass::Pii
            } else {
                MemoryBoundaryClass::Internal
            };
            index.push(claim(n as i64 + 1, class), Some(hashgram(text)));
        }
        let found = index.nearest(&hashgram("解約"), 2, |claim| {
            claim.class != MemoryBoundaryClass::Pii
        });
        let seqs: Vec<i64> = found.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs.len(), 2);
        assert!(!seqs.contains(&2) && !seqs.contains(&3), "{found:?}");
        assert!(found[0].1 >= found[1].1);
        assert_eq!(index.get(3).map(|claim| claim.seq), Some(3));
        assert!(index
            .nearest(&Quantized::new(&[1.0, 0.0]), 2, |_| true)
            .is_empty());
    }

    #[test]
    fn claims_without_a_vector_are_missing_until_filled() {
        let mut index = ClaimIndex::new(Provider::builtin().known_space());
        index.push(claim(1, MemoryBoundaryClass::Internal), None);
        index.push(
            claim(4, MemoryBoundaryClass::Internal),
            Some(hashgram("返金")),
        );
        index.push(
            claim(7, MemoryBoundaryClass::Internal),
            Some(Quantized::new(&[1.0; 8])),
        );
        assert_eq!(index.pending(), 2);
        assert_eq!(index.missing(10), vec![1, 7]);
        let query = hashgram("解約の手順");
        assert_eq!(index.nearest(&query, 5, |_| true), Vec::new());
        assert!(index.fill(1, &hashgram("解約の手順は")));
        assert!(!index.fill(7, &Quantized::new(&[1.0; 8])));
        assert!(!index.fill(99, &hashgram("x")));
        assert_eq!(index.missing(10), vec![7]);
        assert_eq!(index.nearest(&query, 5, |_| true)[0].0, 1);

        let mut unknown = ClaimIndex::new(None);
        unknown.push(claim(1, MemoryBoundaryClass::Internal), Some(hashgram("a")));
        assert_eq!(unknown.pending(), 1);
        assert!(!unknown.fill(1, &hashgram("a")));
    }

    fn stub_provider(timeout_ms: u64) -> (Arc<StubEmbedder>, Provider) {
        let stub = Arc::new(StubEmbedder::default());
        let provider = Provider::new(
            stub.clone(),
            VectorSettings {
                call_timeout: Duration::from_millis(timeout_ms),
                batch_size: 4,
                batch_timeout: Duration::from_secs(5),
            },
        );
        (stub, provider)
    }

    #[test]
    fn a_call_waits_at_most_its_deadline_and_then_skips_a_slow_provider() {
        let (stub, provider) = stub_provider(100);
        assert_eq!(provider.state(), ProviderState::Unknown);
        let (space, vector) = provider.embed_one("解約", Role::Query).unwrap();
        assert_eq!(space.model, "stub");
        assert_eq!(vector.dims(), space.dims);
        assert_eq!(provider.state(), ProviderState::Ready);

        stub.delay_ms.store(5_000, Ordering::SeqCst);
        let started = Instant::now();
        let reason = provider.embed_one("解約", Role::Query).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(reason.contains("too slow"), "{reason}");
        assert!(matches!(provider.state(), ProviderState::Down(_)));
        let calls = stub.calls.load(Ordering::SeqCst);
        let started = Instant::now();
        let reason = provider.embed_one("解約", Role::Query).unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(50));
        assert!(reason.contains("skip"), "{reason}");
        assert_eq!(
            stub.calls.load(Ordering::SeqCst),
            calls,
            "paused: not asked"
        );
    }

    #[test]
    fn a_down_provider_is_reported_with_the_variable_to_check() {
        let (stub, provider) = stub_provider(1000);
        *stub.down.lock().unwrap() = Some(EmbedErrorKind::Unreachable);
        let reason = provider.embed_one("a", Role::Passage).unwrap_err();
        assert!(reason.contains("EMBEDDINGS_URL"), "{reason}");
        assert!(!provider.paused(), "only a timeout pauses");
        let error = provider.embed_batch(&["a", "b"]).unwrap_err();
        assert_eq!(error.kind, EmbedErrorKind::Unreachable);
        *stub.down.lock().unwrap() = None;
        let (_, vectors) = provider.embed_batch(&["a", "b"]).unwrap();
        assert_eq!(vectors.len(), 2);
    }
}
