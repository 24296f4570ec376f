//! Recall: `pce_memory_activate` (a ranking stored as an active context, paged from the
//! snapshot) and `pce_memory_search` (the same ranking, stored nowhere, pages re-ranked
//! over the claims that existed at the first page). Both filter by scope, TTL and
//! boundary class before ranking, and redact every text before it is returned.

use serde_json::json;

use super::claims::{self, ClaimRow};
use super::contexts::{self, Context, Cursor};
use super::policy::Policy;
use super::rank::{self, Filter, Ranked, Scores};
use super::vector::{Space, VectorNote};
use super::{fresh_id, Call, Memory};
use crate::contract::types::{MemoryBoundaryClass, MemoryEvidence, MemoryScope};
use crate::embed::quantized::Quantized;
use crate::embed::Role;
use crate::error::{MemoryCode, ToolError, ToolResult};

/// Most evidence items returned a claim under include_meta.
const MAX_EVIDENCES: usize = 5;

/// An activate or search request, as the domain sees it.
pub(crate) struct RecallRequest<'a> {
    pub query: &'a str,
    pub scopes: Option<&'a [MemoryScope]>,
    pub allow: &'a [String],
    pub page_size: Option<usize>,
    pub cursor: Option<&'a str>,
    /// Store the ranking as an active context (activate) or not (search).
    pub keep_context: bool,
    /// Add evidences and provenance to each item.
    pub include_meta: bool,
}

/// One returned claim: its row with the text redacted (and cut to the page's budget).
pub(crate) struct PageItem {
    pub claim: ClaimRow,
    pub score: f64,
    pub scores: Scores,
    /// Which retrieval paths found it.
    pub via: &'static str,
    /// Its evidence, snippets redacted (include_meta only).
    pub evidences: Vec<MemoryEvidence>,
    /// Its provenance, note and actor redacted (include_meta only).
    pub provenance: Option<serde_json::Map<String, serde_json::Value>>,
}

/// One page of a ranking.
pub(crate) struct Page {
    pub items: Vec<PageItem>,
    pub total: usize,
    pub next_cursor: Option<String>,
    pub context: Option<Context>,
    pub policy_version: String,
    pub retrieval: super::policy::Retrieval,
    /// Set when vector retrieval did not fully take part in this page's ranking.
    pub vectors: Option<VectorNote>,
}

fn via(scores: &Scores) -> &'static str {
    match (scores.text > 0.0, scores.vector > 0.0) {
        (true, true) => "text+vector",
        (true, false) => "text",
        _ => "vector",
    }
}

impl Memory {
    /// Runs an activate or a search.
    pub(crate) fn recall(&self, call: &mut Call, request: RecallRequest) -> ToolResult<Page> {
        let policy = self.policy()?;
        let scopes = self.scopes(&policy, request.scopes)?;
        call.facts.scopes = scopes.iter().map(ToString::to_string).collect();
        call.facts.policy_version = Some(policy.version.clone());
        let classes = policy.boundary.reachable(request.allow);
        if classes.is_empty() {
            call.facts.decision = Some("deny");
            return Err(ToolError::memory(
                MemoryCode::BoundaryDenied,
                "the allow tags reach no boundary class of the policy",
                json!({ "allow": request.allow, "classes": policy.boundary.allow_lists() }),
            ));
        }
        let scope_words: Vec<String> = scopes.iter().map(ToString::to_string).collect();
        let fingerprint = contexts::fingerprint(request.query, &scope_words, request.allow);
        let page_size = request.page_size.unwrap_or(policy.retrieval.k_final).max(1);
        let cursor = request
            .cursor
            .map(|text| contexts::decode(text, &fingerprint))
            .transpose()?;
        let mut vectors = None;
        let (window, total, source, offset) = match cursor {
            Some(Cursor::Context { id, offset }) if request.keep_context => {
                let context = self.store.read(|c| contexts::load(c, &id, call.now_ms))?;
                if context.policy_version != policy.version {
                    return Err(ToolError::memory(
                        MemoryCode::Gone,
                        format!(
                            "active context {id} was built under policy {}, and {} is in force now",
                            context.policy_version, policy.version
                        ),
                        json!({ "hint": "call pce_memory_activate again without cursor" }),
                    ));
                }
                contexts::check_fingerprint(&context, &fingerprint)?;
                let window = self.stored_window(&context, offset, page_size)?;
                (window, context.total, Source::Context(context), offset)
            }
            Some(Cursor::Search { up_to_seq, offset }) if !request.keep_context => {
                let (ranking, _, note) = self.rank(
                    &policy,
                    &scopes,
                    &classes,
                    request.query,
                    Some(up_to_seq),
                    call.now_ms,
                )?;
                vectors = note;
                let total = ranking.len();
                let window = ranking.into_iter().skip(offset).collect();
                (window, total, Source::Search(up_to_seq), offset)
            }
            Some(_) => {
                return Err(ToolError::memory(
                    MemoryCode::ValidationError,
                    "this cursor comes from the other recall tool",
                    json!({ "pointer": "/cursor", "hint": "activate cursors page pce_memory_activate, search cursors pce_memory_search" }),
                ))
            }
            None => {
                let (mut ranking, up_to_seq, note) =
                    self.rank(&policy, &scopes, &classes, request.query, None, call.now_ms)?;
                vectors = note;
                if request.keep_context {
                    cut_to_token_budget(&mut ranking, &policy, &scopes);
                    let context =
                        self.keep(&policy, &scopes, &fingerprint, &ranking, call.now_ms)?;
                    (ranking, context.total, Source::Context(context), 0)
                } else {
                    let total = ranking.len();
                    (ranking, total, Source::Search(up_to_seq), 0)
                }
            }
        };
        let items = self.page_items(call, &policy, window, page_size, request.include_meta)?;
        let next_offset = offset + items.len();
        let next_cursor = (next_offset < total).then(|| {
            let cursor = match &source {
                Source::Context(context) => Cursor::Context {
                    id: context.id.clone(),
                    offset: next_offset,
                },
                Source::Search(up_to_seq) => Cursor::Search {
                    up_to_seq: *up_to_seq,
                    offset: next_offset,
                },
            };
            contexts::encode(&cursor, &fingerprint)
        });
        Ok(Page {
            items,
            total,
            next_cursor,
            context: match source {
                Source::Context(context) => Some(context),
                Source::Search(_) => None,
            },
            policy_version: policy.version.clone(),
            retrieval: policy.retrieval.clone(),
            vectors,
        })
    }

    /// A context's stored items from `offset`, with their claims.
    fn stored_window(
        &self,
        context: &Context,
        offset: usize,
        page_size: usize,
    ) -> ToolResult<Vec<Ranked>> {
        let items = self
            .store
            .read(|c| contexts::items(c, &context.id, offset, page_size))?;
        let seqs: Vec<i64> = items.iter().map(|item| item.claim_seq).collect();
        let mut rows = self.store.read(|c| claims::rows(c, &seqs))?;
        Ok(items
            .into_iter()
            .filter_map(|item| {
                rows.remove(&item.claim_seq).map(|claim| Ranked {
                    claim,
                    score: item.score,
                    scores: item.scores,
                })
            })
            .collect())
    }

    /// Ranks the claims of `scopes` and `classes` for `query`; also returns the newest
    /// claim the ranking could see, which bounds a search's later pages, and why vectors
    /// did not fully take part, if they did not. The query is embedded before the index is
    /// locked, so a slow provider delays only this call.
    fn rank(
        &self,
        policy: &Policy,
        scopes: &[MemoryScope],
        classes: &[MemoryBoundaryClass],
        query: &str,
        up_to_seq: Option<i64>,
        now_ms: i64,
    ) -> ToolResult<(Vec<Ranked>, i64, Option<VectorNote>)> {
        // A policy that takes no vector candidates needs no query vector: the call does
        // not wait for the provider, and its answer has no vectors note.
        let wants_vectors = policy.retrieval.k_vec > 0;
        let embedded = wants_vectors.then(|| self.vectors.provider.embed_one(query, Role::Query));
        if let Some(Ok((space, _))) = &embedded {
            self.vectors.adopt(space);
        }
        let index = self.current_index()?;
        let pending = index.pending();
        let (query_vector, note) = match embedded {
            None => (None, None),
            Some(embedded) => Self::query_vector(embedded, index.space(), pending),
        };
        let oldest_ms: Vec<(MemoryScope, Option<i64>)> = scopes
            .iter()
            .map(|scope| (*scope, policy.scopes[scope].ttl_ms.map(|ttl| now_ms - ttl)))
            .collect();
        let up_to_seq = up_to_seq.unwrap_or(index.last_seq());
        let filter = Filter {
            scopes,
            classes,
            oldest_ms: &oldest_ms,
            up_to_seq: Some(up_to_seq),
        };
        let ranking = self.store.read(|connection| {
            rank::rank(
                connection,
                &index,
                policy,
                query,
                query_vector.as_ref(),
                &filter,
                now_ms,
            )
        })?;
        Ok((ranking, up_to_seq, note))
    }

    /// The query's vector if it is of the index's space, and the note when vectors did
    /// not fully take part (`pending` claims have none of that space yet).
    fn query_vector(
        embedded: Result<(Space, Quantized), String>,
        index_space: Option<&Space>,
        pending: usize,
    ) -> (Option<Quantized>, Option<VectorNote>) {
        match embedded {
            Ok((space, vector)) if index_space == Some(&space) => (
                Some(vector),
                (pending > 0).then_some(VectorNote::Pending { pending }),
            ),
            Ok(_) => (
                None,
                Some(VectorNote::Unavailable {
                    reason: "the embeddings model changed during this call".to_owned(),
                    pending,
                }),
            ),
            Err(reason) => (None, Some(VectorNote::Unavailable { reason, pending })),
        }
    }

    /// Stores `ranking` as a new active context.
    fn keep(
        &self,
        policy: &Policy,
        scopes: &[MemoryScope],
        fingerprint: &str,
        ranking: &[Ranked],
        now_ms: i64,
    ) -> ToolResult<Context> {
        let ttl_ms = scopes
            .iter()
            .filter_map(|scope| policy.scopes[scope].ttl_ms)
            .chain([self.settings.context_max_ttl_ms])
            .min()
            .expect("the cap is always there");
        let context = Context {
            id: fresh_id("ac"),
            expires_ms: now_ms + ttl_ms,
            policy_version: policy.version.clone(),
            fingerprint: fingerprint.to_string(),
            total: ranking.len(),
        };
        self.store
            .write(|transaction| contexts::store(transaction, &context, ranking, now_ms))?;
        Ok(context)
    }

    /// The items of one page from `window` (the ranking from the page's offset): at most
    /// `page_size`, and past the first none that would take the page's claim text over
    /// HARD_MAX_CHARS. Texts, evidence snippets and provenance notes are redacted here,
    /// before anything leaves the server.
    fn page_items(
        &self,
        call: &mut Call,
        policy: &Policy,
        window: Vec<Ranked>,
        page_size: usize,
        include_meta: bool,
    ) -> ToolResult<Vec<PageItem>> {
        let budget = self.settings.max_page_chars;
        let mut used = 0;
        let mut items = Vec::new();
        for ranked in window.into_iter().take(page_size) {
            let redaction = policy.boundary.redact(&ranked.claim.text);
            let chars = redaction.text.chars().count();
            if !items.is_empty() && used + chars > budget {
                break;
            }
            used += chars;
            call.facts.redacted_count += redaction.total();
            call.facts
                .content_hashes
                .push(ranked.claim.content_hash.clone());
            let (evidences, provenance) = if include_meta {
                let mut evidences = self
                    .store
                    .read(|c| claims::evidences(c, ranked.claim.seq, MAX_EVIDENCES))?;
                for evidence in &mut evidences {
                    evidence.snippet = evidence
                        .snippet
                        .as_deref()
                        .map(|s| policy.boundary.redact(s).text);
                }
                (evidences, Some(redacted_provenance(policy, &ranked.claim)))
            } else {
                (Vec::new(), None)
            };
            let mut claim = ranked.claim;
            claim.text = crate::text::snippet::truncate_chars(&redaction.text, budget)
                .0
                .to_string();
            items.push(PageItem {
                via: via(&ranked.scores),
                claim,
                score: ranked.score,
                scores: ranked.scores,
                evidences,
                provenance,
            });
        }
        call.facts.decision = Some(if call.facts.redacted_count > 0 {
            "redact"
        } else {
            "allow"
        });
        Ok(items)
    }
}

/// Where a page's next cursor points.
enum Source {
    Context(Context),
    Search(i64),
}

/// A claim's provenance as returned: `claim_id` first, `note` and `actor` redacted.
fn redacted_provenance(
    policy: &Policy,
    claim: &ClaimRow,
) -> serde_json::Map<String, serde_json::Value> {
    let mut provenance = serde_json::Map::new();
    provenance.insert("claim_id".into(), claim.id.clone().into());
    if let Ok(serde_json::Value::Object(stored)) = serde_json::from_str(&claim.provenance) {
        for (key, value) in stored {
            let value = match (key.as_str(), &value) {
                ("note" | "actor", serde_json::Value::String(text)) => {
                    policy.boundary.redact(text).text.into()
                }
                _ => value,
            };
            provenance.insert(key, value);
        }
    }
    provenance
}

/// Cuts a ranking where its text exceeds the smallest `max_tokens` of its scopes
/// (estimated as characters / 4, rounded up); the first claim always stays.
fn cut_to_token_budget(ranking: &mut Vec<Ranked>, policy: &Policy, scopes: &[MemoryScope]) {
    let Some(budget) = scopes
        .iter()
        .filter_map(|scope| policy.scopes[scope].max_tokens)
        .min()
    else {
        return;
    };
    let mut used = 0u64;
    let keep = ranking
        .iter()
        .take_while(|ranked| {
            used += (ranked.claim.text.chars().count() as u64).div_ceil(4);
            used <= budget
        })
        .count()
        .max(1);
    ranking.truncate(keep);
}
