//! `MemoryTools` on `App`: converts the pce_memory_* requests to `memory::` calls and
//! their results back, with what every memory call shares: the payload limits of the seed
//! (checked on the request as received), the caller's rate limit, and one audit line.
//! No SQL and no ranking here.

use serde::Serialize;
use serde_json::{json, Value};

use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::*;
use crate::contract::MemoryTools;
use crate::embed::provider::ProviderState;
use crate::error::{MemoryCode, ToolError, ToolResult};
use crate::memory::{
    ApplyRequest, Call, Memory, Page, PageItem, RecallRequest, UpsertRequest, VectorNote,
};

/// Payload limits of the seed (pce_memory_tools.md §2), in bytes of the request's JSON.
const ACTIVATE_PAYLOAD: usize = 16 * 1024;
const SEARCH_PAYLOAD: usize = 32 * 1024;
const UPSERT_PAYLOAD: usize = 64 * 1024;
const FEEDBACK_PAYLOAD: usize = 4 * 1024;
const VALIDATE_PAYLOAD: usize = 32 * 1024;
const POLICY_PAYLOAD: usize = 128 * 1024;
const STATE_PAYLOAD: usize = 4 * 1024;

/// Scores are reported to three significant digits: enough to order, short to read.
fn score(value: f64) -> f64 {
    super::significant(value, 3)
}

fn check_payload<T: Serialize>(input: &T, limit: usize) -> ToolResult<()> {
    let size = serde_json::to_vec(input).expect("requests serialise").len();
    if size <= limit {
        return Ok(());
    }
    Err(ToolError::memory(
        MemoryCode::PayloadTooLarge,
        format!("the request is {size} bytes; this tool accepts at most {limit}"),
        json!({ "limit_bytes": limit, "actual_bytes": size }),
    ))
}

impl App {
    /// Runs one memory call: payload limit, rate limit, the operation, the audit line.
    fn memory_call<I: Serialize, O>(
        &self,
        context: &CallContext,
        tool: &str,
        input: &I,
        payload_limit: usize,
        run: impl FnOnce(&Memory, &mut Call) -> ToolResult<O>,
    ) -> ToolResult<O> {
        let memory = self.memory()?;
        let mut call = Call::new(context.actor(), crate::clock::now_millis());
        let result = check_payload(input, payload_limit)
            .and_then(|()| memory.admit(&call))
            .and_then(|()| run(memory, &mut call));
        let code = result.as_ref().err().map(|error| error.code.as_str());
        memory.finish(&call, tool, code);
        result
    }
}

fn scored_item(item: PageItem, include_meta: bool) -> MemoryScoredItem {
    let claim = &item.claim;
    let scores = &item.scores;
    MemoryScoredItem {
        claim: MemoryClaim {
            id: claim.id.clone(),
            text: claim.text.clone(),
            kind: claim.kind,
            scope: claim.scope,
            boundary_class: claim.class,
            created_at: crate::clock::rfc3339_millis(claim.created_ms),
            // A claim never changed since it was stored says so by leaving this out.
            updated_at: (claim.updated_ms != claim.created_ms)
                .then(|| crate::clock::rfc3339_millis(claim.updated_ms)),
        },
        score: score(item.score),
        scores: include_meta.then(|| MemoryScoring {
            text: Some(score(scores.text)),
            vector: Some(score(scores.vector)),
            combined: Some(score(scores.combined)),
            utility: Some(score(scores.utility)),
            confidence: Some(score(scores.confidence)),
            quality: Some(score(scores.quality)),
            recency: Some(score(scores.recency)),
            g: Some(score(scores.g)),
        }),
        evidences: item.evidences,
        reason: include_meta.then(|| item.via.to_string()),
    }
}

fn vector_note(note: VectorNote) -> MemoryVectorNote {
    match note {
        VectorNote::Unavailable { reason, pending } => MemoryVectorNote {
            state: MemoryVectorNoteState::Unavailable,
            pending: pending as u64,
            reason: Some(reason),
        },
        VectorNote::Pending { pending } => MemoryVectorNote {
            state: MemoryVectorNoteState::Pending,
            pending: pending as u64,
            reason: None,
        },
    }
}

/// The page's items and, under include_meta, their provenance in the same order.
fn items(
    page: &mut Page,
    include_meta: bool,
) -> (Vec<MemoryScoredItem>, Vec<serde_json::Map<String, Value>>) {
    let mut provenance = Vec::new();
    let items = page
        .items
        .drain(..)
        .map(|mut item| {
            provenance.extend(item.provenance.take());
            scored_item(item, include_meta)
        })
        .collect();
    (items, provenance)
}

impl MemoryTools for App {
    fn pce_memory_activate(
        &self,
        input: PceMemoryActivateInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryActivateOutput> {
        self.memory_call(
            context,
            "pce_memory_activate",
            &input,
            ACTIVATE_PAYLOAD,
            |memory, call| {
                let mut page = memory.recall(
                    call,
                    RecallRequest {
                        query: &input.q,
                        scopes: input.scope.as_deref(),
                        allow: &input.allow,
                        page_size: input.top_k.map(|k| k as usize),
                        cursor: input.cursor.as_deref(),
                        keep_context: true,
                        include_meta: input.include_meta,
                    },
                )?;
                let (claims, provenance) = items(&mut page, input.include_meta);
                let context = page.context.expect("activate keeps a context");
                let retrieval = &page.retrieval;
                Ok(PceMemoryActivateOutput {
                    active_context_id: context.id,
                    claims,
                    claims_count: page.total as u64,
                    expires_at: crate::clock::rfc3339_millis(context.expires_ms),
                    has_more: super::flag(page.next_cursor.is_some()),
                    next_cursor: page.next_cursor,
                    policy_version: page.policy_version,
                    vectors: page.vectors.map(vector_note),
                    provenance,
                    // The policy's parameters, the same on every page: asked for with
                    // the rest of the breakdown.
                    scoring_params: input.include_meta.then_some(
                        PceMemoryActivateOutputScoringParams {
                            alpha: Some(retrieval.alpha),
                            k_txt: Some(retrieval.k_txt as i64),
                            k_vec: Some(retrieval.k_vec as i64),
                            k_final: Some(retrieval.k_final as i64),
                            rerank: Some(PceMemoryActivateOutputScoringParamsRerank {
                                use_quality: Some(retrieval.use_quality),
                                recency_half_life_days: Some(retrieval.recency_half_life_days),
                            }),
                        },
                    ),
                })
            },
        )
    }

    fn pce_memory_search(
        &self,
        input: PceMemorySearchInput,
        context: &CallContext,
    ) -> ToolResult<PceMemorySearchOutput> {
        self.memory_call(
            context,
            "pce_memory_search",
            &input,
            SEARCH_PAYLOAD,
            |memory, call| {
                let mut page = memory.recall(
                    call,
                    RecallRequest {
                        query: &input.query,
                        scopes: input.scope.as_deref(),
                        allow: &input.allow,
                        page_size: input.top_k.map(|k| k as usize),
                        cursor: input.cursor.as_deref(),
                        keep_context: false,
                        include_meta: input.include_meta,
                    },
                )?;
                let (items, _) = items(&mut page, input.include_meta);
                Ok(PceMemorySearchOutput {
                    items,
                    total: page.total as u64,
                    has_more: super::flag(page.next_cursor.is_some()),
                    next_cursor: page.next_cursor,
                    policy_version: page.policy_version,
                    vectors: page.vectors.map(vector_note),
                })
            },
        )
    }

    fn pce_memory_upsert(
        &self,
        input: PceMemoryUpsertInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryUpsertOutput> {
        self.memory_call(
            context,
            "pce_memory_upsert",
            &input,
            UPSERT_PAYLOAD,
            |memory, call| {
                let outcome = memory.upsert(
                    call,
                    UpsertRequest {
                        text: &input.text,
                        kind: input.kind.unwrap_or(MemoryKind::Fact),
                        scope: input.scope.unwrap_or(MemoryScope::Project),
                        class: input
                            .boundary_class
                            .unwrap_or(MemoryBoundaryClass::Internal),
                        provenance: &input.provenance,
                        entities: &input.entities,
                        relations: &input.relations,
                        evidence: &input.evidence,
                        content_hash: input.content_hash.as_deref(),
                    },
                )?;
                Ok(PceMemoryUpsertOutput {
                    id: outcome.id,
                    is_new: outcome.is_new,
                    content_hash: outcome.content_hash,
                    policy_version: outcome.policy_version,
                    vectors: outcome.vectors.map(vector_note),
                })
            },
        )
    }

    fn pce_memory_feedback(
        &self,
        input: PceMemoryFeedbackInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryFeedbackOutput> {
        self.memory_call(
            context,
            "pce_memory_feedback",
            &input,
            FEEDBACK_PAYLOAD,
            |memory, call| {
                let weight = input.score.map_or(1.0, f64::abs);
                let (outcome, policy_version) =
                    memory.feedback(call, &input.claim_id, input.signal, weight)?;
                Ok(PceMemoryFeedbackOutput {
                    ok: true,
                    applied: outcome.applied,
                    utility: score(outcome.utility),
                    confidence: score(outcome.confidence),
                    policy_version,
                })
            },
        )
    }

    fn pce_memory_boundary_validate(
        &self,
        input: PceMemoryBoundaryValidateInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryBoundaryValidateOutput> {
        self.memory_call(
            context,
            "pce_memory_boundary_validate",
            &input,
            VALIDATE_PAYLOAD,
            |memory, call| {
                let verdict = memory.validate(call, &input.payload, &input.allow, input.scope)?;
                Ok(PceMemoryBoundaryValidateOutput {
                    allowed: verdict.allowed,
                    reason: verdict.reason,
                    escalation: verdict
                        .redaction
                        .needs_review
                        .then_some(PceMemoryBoundaryValidateOutputEscalation::HumanReview),
                    redactions: verdict
                        .redaction
                        .counts
                        .iter()
                        .map(
                            |(rule, count)| PceMemoryBoundaryValidateOutputRedactionsItem {
                                rule: rule.clone(),
                                count: *count as u64,
                            },
                        )
                        .collect(),
                    redacted: verdict.redaction.text,
                    policy_version: verdict.policy_version,
                })
            },
        )
    }

    fn pce_memory_policy_apply(
        &self,
        input: PceMemoryPolicyApplyInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryPolicyApplyOutput> {
        self.memory_call(
            context,
            "pce_memory_policy_apply",
            &input,
            POLICY_PAYLOAD,
            |memory, call| {
                let outcome = memory.apply_policy(
                    call,
                    ApplyRequest {
                        yaml: &input.yaml,
                        dry_run: input.dry_run,
                        validate_only: input.validate_only,
                        expected_version: input.expected_version.as_deref(),
                        signature: input.signature.as_deref(),
                        approver: input.approver.as_deref(),
                    },
                )?;
                let changes_total = outcome.changes.as_ref().map(|changes| changes.len() as u64);
                Ok(PceMemoryPolicyApplyOutput {
                    version: outcome.version,
                    mode: outcome.mode,
                    policy_version: outcome.policy_version,
                    changes: outcome
                        .changes
                        .unwrap_or_default()
                        .into_iter()
                        .take(crate::memory::policy::MAX_LISTED_CHANGES)
                        .map(|change| PceMemoryPolicyApplyOutputChangesItem {
                            pointer: change.pointer,
                            before: change.before,
                            after: change.after,
                        })
                        .collect(),
                    changes_total,
                })
            },
        )
    }

    fn pce_memory_state(
        &self,
        input: PceMemoryStateInput,
        context: &CallContext,
    ) -> ToolResult<PceMemoryStateOutput> {
        self.memory_call(
            context,
            "pce_memory_state",
            &input,
            STATE_PAYLOAD,
            |memory, call| {
                let state = memory.state(call)?;
                Ok(PceMemoryStateOutput {
                    policy_version: state.policy_version,
                    claims: PceMemoryStateOutputClaims {
                        total: state.total,
                        by_scope: MemoryScopeCounts {
                            session: state.by_scope[0],
                            project: state.by_scope[1],
                            principle: state.by_scope[2],
                        },
                        by_kind: MemoryKindCounts {
                            fact: state.by_kind[0],
                            preference: state.by_kind[1],
                            task: state.by_kind[2],
                            policy_hint: state.by_kind[3],
                        },
                        by_boundary_class: MemoryClassCounts {
                            public: state.by_class[0],
                            internal: state.by_class[1],
                            pii: state.by_class[2],
                            secret: state.by_class[3],
                        },
                    },
                    active_contexts: state.active_contexts,
                    vector_model: state.vector_model,
                    vectors: PceMemoryStateOutputVectors {
                        provider: if state.vectors.builtin {
                            PceMemoryStateOutputVectorsProvider::Builtin
                        } else {
                            PceMemoryStateOutputVectorsProvider::EmbeddingsServer
                        },
                        provider_state: match &state.vectors.provider {
                            _ if state.vectors.paused => {
                                PceMemoryStateOutputVectorsProviderState::Paused
                            }
                            ProviderState::Unknown => {
                                PceMemoryStateOutputVectorsProviderState::Unknown
                            }
                            ProviderState::Ready => PceMemoryStateOutputVectorsProviderState::Ready,
                            ProviderState::Down(_) => {
                                PceMemoryStateOutputVectorsProviderState::Down
                            }
                        },
                        problem: match state.vectors.provider {
                            ProviderState::Down(error) => Some(error.message),
                            _ => None,
                        },
                        dims: state.vectors.dims.map(|dims| dims as u64),
                        embedded: state.vectors.embedded,
                        pending: state.vectors.pending,
                    },
                    store: PceMemoryStateOutputStore {
                        schema_version: state.schema_version as u64,
                        journal_mode: state.journal_mode,
                        size_bytes: state.size_bytes,
                        busy_timeout_ms: state.busy_timeout_ms,
                    },
                })
            },
        )
    }
}
