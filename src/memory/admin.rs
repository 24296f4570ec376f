//! The tools around the policy: `pce_memory_policy_apply` (and MEMORY_POLICY_PATH at
//! start), `pce_memory_boundary_validate`, and `pce_memory_state`.

use std::path::Path;

use rusqlite::OptionalExtension;
use serde_json::json;

use super::contexts;
use super::hash::hmac_sha256_hex;
use super::policy::{self, Applied, Change, Policy};
use super::store::{internal, schema_version};
use super::{Call, Memory};
use crate::contract::types::{MemoryKind, MemoryScope};
use crate::embed::provider::ProviderState;
use crate::embed::Role;
use crate::error::{MemoryCode, ToolError, ToolResult};

/// What `pce_memory_state` embeds to ask an embeddings server it has not heard from
/// (a fixed text: never a claim or a query).
const PROBE: &str = "pce_memory_state";

/// What `expected_version` says when no policy was ever applied.
pub(crate) const NO_POLICY: &str = "none";
/// `vector_model` before the embeddings server first answered (and without
/// `EMBEDDINGS_MODEL`).
const UNKNOWN_MODEL: &str = "unknown";

pub(crate) struct ApplyRequest<'a> {
    pub yaml: &'a str,
    pub dry_run: bool,
    pub validate_only: bool,
    pub expected_version: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub approver: Option<&'a str>,
}

/// What an apply did: the schema's `ApplyMode`.
pub(crate) use crate::contract::types::ApplyMode;

pub(crate) struct ApplyOutcome {
    pub version: String,
    pub mode: ApplyMode,
    pub policy_version: Option<String>,
    /// Differences from the policy in force (None for validate_only).
    pub changes: Option<Vec<Change>>,
}

/// The boundary's answer for one payload.
pub(crate) struct Verdict {
    pub allowed: bool,
    pub reason: String,
    pub redaction: super::boundary::Redaction,
    pub policy_version: String,
}

/// Counts and health, no text.
pub(crate) struct State {
    pub policy_version: Option<String>,
    pub total: u64,
    /// Counts per session, project, principle.
    pub by_scope: [u64; 3],
    /// Counts per fact, preference, task, policy_hint.
    pub by_kind: [u64; 4],
    /// Counts per public, internal, pii, secret.
    pub by_class: [u64; 4],
    pub active_contexts: u64,
    pub vector_model: String,
    pub vectors: VectorState,
    pub schema_version: i64,
    pub journal_mode: String,
    pub size_bytes: u64,
    pub busy_timeout_ms: u64,
}

/// The claim vectors as this process holds them.
pub(crate) struct VectorState {
    /// The built-in lexical `hashgram-v1-d384` (no embeddings server configured).
    pub builtin: bool,
    /// Whether the provider answered last time it was asked.
    pub provider: ProviderState,
    /// Calls skip the provider for a while after a timeout.
    pub paused: bool,
    /// Dimensions of the model's vectors, once known.
    pub dims: Option<usize>,
    /// Claims with a vector of the model, and without one yet.
    pub embedded: u64,
    pub pending: u64,
}

/// Compares in time independent of where the strings first differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn conflict(expected: &str, in_force: &str) -> ToolError {
    ToolError::memory(
        MemoryCode::Conflict,
        format!("expected_version {expected} is not the policy in force ({in_force})"),
        json!({ "expected_version": expected, "policy_version": in_force, "hint": "read the policy in force (pce_memory_state) and base the change on it" }),
    )
}

impl Memory {
    pub(crate) fn apply_policy(
        &self,
        call: &mut Call,
        request: ApplyRequest,
    ) -> ToolResult<ApplyOutcome> {
        if let Some(secret) = &self.settings.policy_secret {
            let expected = hmac_sha256_hex(secret.0.as_bytes(), request.yaml.as_bytes());
            let given = request
                .signature
                .map(str::to_ascii_lowercase)
                .unwrap_or_default();
            if !same_secret(&given, &expected) {
                call.facts.decision = Some("deny");
                return Err(ToolError::memory(
                    MemoryCode::Unauthorized,
                    if request.signature.is_some() {
                        "the policy signature is wrong"
                    } else {
                        "this server requires signed policies"
                    },
                    json!({ "pointer": "/signature", "rule": "hex HMAC-SHA256 of the yaml text with MEMORY_POLICY_SECRET" }),
                ));
            }
        }
        let current = self.current_policy()?;
        let in_force = current
            .as_ref()
            .map_or(NO_POLICY.to_string(), |policy| policy.version.clone());
        let next_revision = current.as_ref().map_or(0, |policy| policy.revision) + 1;
        let draft = Policy::parse(request.yaml, next_revision)?;
        call.facts.policy_version = Some(draft.version.clone());
        if let Some(expected) = request.expected_version {
            if expected != in_force {
                return Err(conflict(expected, &in_force));
            }
        }
        let current_version = current.as_ref().map(|policy| policy.version.clone());
        if request.validate_only {
            call.facts.decision = Some("validate");
            return Ok(ApplyOutcome {
                version: draft.version,
                mode: ApplyMode::ValidateOnly,
                policy_version: current_version,
                changes: None,
            });
        }
        let changes = policy::changes(
            current.as_ref().map(|policy| &policy.document),
            &draft.document,
        );
        if request.dry_run {
            call.facts.decision = Some("dry_run");
            return Ok(ApplyOutcome {
                version: draft.version,
                mode: ApplyMode::DryRun,
                policy_version: current_version,
                changes: Some(changes),
            });
        }
        let applied = self.store.write(|transaction| {
            // Another process may have applied one since: the revision and the
            // expectation are settled inside the write lock.
            let latest = transaction
                .query_row(
                    "SELECT revision, version FROM policies ORDER BY revision DESC LIMIT 1",
                    [],
                    |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()
                .map_err(internal)?;
            let (revision, latest_version) = latest.unwrap_or((0, NO_POLICY.to_string()));
            if let Some(expected) = request.expected_version {
                if expected != latest_version {
                    return Err(conflict(expected, &latest_version));
                }
            }
            let policy = if revision + 1 == draft.revision {
                draft
            } else {
                Policy::parse(request.yaml, revision + 1)?
            };
            policy::append(
                transaction,
                &policy,
                &Applied {
                    yaml: request.yaml,
                    actor: call.actor,
                    approver: request.approver,
                    signature: request.signature,
                    now_ms: call.now_ms,
                },
            )
            .map_err(internal)?;
            Ok(policy.version)
        })?;
        call.facts.decision = Some("apply");
        call.facts.policy_version = Some(applied.clone());
        call.facts.reason = request
            .approver
            .map(|approver| format!("approved by {approver}"));
        Ok(ApplyOutcome {
            version: applied.clone(),
            mode: ApplyMode::Applied,
            policy_version: Some(applied),
            changes: Some(changes),
        })
    }

    /// Applies the policy file at `path` when it exists and is not the policy in force.
    /// A file that does not parse is logged and left alone (the policy in force, or none,
    /// stays: fail-closed).
    pub(super) fn apply_policy_file(&self, path: &Path) {
        let Ok(yaml) = std::fs::read_to_string(path) else {
            return;
        };
        let outcome = self.store.write(|transaction| {
            let latest = policy::latest(transaction).map_err(internal)?;
            if latest.as_ref().is_some_and(|(_, applied)| *applied == yaml) {
                return Ok(None);
            }
            let revision = latest.map_or(0, |(revision, _)| revision) + 1;
            let policy = Policy::parse(&yaml, revision)?;
            let applied = Applied {
                yaml: &yaml,
                actor: "MEMORY_POLICY_PATH",
                approver: None,
                signature: None,
                now_ms: crate::clock::now_millis(),
            };
            policy::append(transaction, &policy, &applied).map_err(internal)?;
            Ok(Some(policy.version))
        });
        match outcome {
            Ok(Some(version)) => {
                tracing::info!(version, "memory policy applied from MEMORY_POLICY_PATH")
            }
            Ok(None) => {}
            Err(error) => tracing::error!(
                code = error.code.as_str(),
                problem = error.message,
                "MEMORY_POLICY_PATH was not applied"
            ),
        }
    }

    pub(crate) fn validate(
        &self,
        call: &mut Call,
        payload: &str,
        allow: &[String],
        scope: Option<MemoryScope>,
    ) -> ToolResult<Verdict> {
        let policy = self.policy()?;
        call.facts.policy_version = Some(policy.version.clone());
        call.facts.scopes = scope.iter().map(ToString::to_string).collect();
        let redaction = policy.boundary.redact(payload);
        let reachable = policy.boundary.reachable(allow);
        let (allowed, reason) = if !redaction.denied_by.is_empty() {
            (
                false,
                format!("DENIED_CONTENT: {}", redaction.denied_by.join(", ")),
            )
        } else if reachable.is_empty() {
            (
                false,
                format!(
                    "BOUNDARY_DENIED: no boundary class allows {}",
                    if allow.is_empty() {
                        "an untagged use".to_string()
                    } else {
                        allow.join(", ")
                    }
                ),
            )
        } else if let Some(scope) = scope.filter(|scope| !policy.scopes.contains_key(scope)) {
            (
                false,
                format!("SCOPE_UNKNOWN: the policy defines no {scope} scope"),
            )
        } else if redaction.total() > 0 {
            let rules: Vec<&str> = redaction
                .counts
                .iter()
                .map(|(rule, _)| rule.as_str())
                .collect();
            (true, format!("REDACTED: {}", rules.join(", ")))
        } else {
            (true, "ALLOWED".to_string())
        };
        call.facts.decision = Some(match (allowed, redaction.total() > 0) {
            (false, _) => "deny",
            (true, true) => "redact",
            (true, false) => "allow",
        });
        call.facts.reason = Some(reason.split(':').next().unwrap_or_default().to_string());
        call.facts.redacted_count = redaction.total();
        Ok(Verdict {
            allowed,
            reason,
            redaction,
            policy_version: policy.version.clone(),
        })
    }

    pub(crate) fn state(&self, call: &mut Call) -> ToolResult<State> {
        let policy_version = self.current_policy()?.map(|policy| policy.version.clone());
        call.facts.policy_version = policy_version.clone();
        let counts: Vec<(String, String, String, u64)> = self.store.read(|connection| {
            let mut statement = connection
                .prepare(
                    "SELECT scope, kind, boundary_class, count(*) FROM claims GROUP BY 1, 2, 3",
                )
                .map_err(internal)?;
            let rows = statement
                .query_map([], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get::<_, i64>(3)? as u64,
                    ))
                })
                .map_err(internal)?;
            rows.collect::<rusqlite::Result<_>>().map_err(internal)
        })?;
        fn tally<T: std::fmt::Display, const N: usize>(
            words: [T; N],
            counts: &[(String, String, String, u64)],
            column: usize,
        ) -> [u64; N] {
            words.map(|word| {
                let name = word.to_string();
                counts
                    .iter()
                    .filter(|row| [&row.0, &row.1, &row.2][column] == &name)
                    .map(|row| row.3)
                    .sum()
            })
        }
        let (schema_version, journal_mode, size_bytes, active_contexts) =
            self.store.read(|connection| {
                let pages: i64 = connection
                    .query_row("PRAGMA page_count", [], |row| row.get(0))
                    .map_err(internal)?;
                let page_size: i64 = connection
                    .query_row("PRAGMA page_size", [], |row| row.get(0))
                    .map_err(internal)?;
                Ok((
                    schema_version(connection).map_err(internal)?,
                    connection
                        .query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
                        .map_err(internal)?,
                    (pages * page_size) as u64,
                    contexts::live(connection, call.now_ms)?,
                ))
            })?;
        call.facts.decision = Some("report");
        self.learn_space();
        let (space, indexed, pending) = {
            let index = self.current_index()?;
            (index.space().cloned(), index.len(), index.pending())
        };
        let provider = &self.vectors.provider;
        Ok(State {
            policy_version,
            total: counts.iter().map(|row| row.3).sum(),
            by_scope: tally(
                [
                    MemoryScope::Session,
                    MemoryScope::Project,
                    MemoryScope::Principle,
                ],
                &counts,
                0,
            ),
            by_kind: tally(
                [
                    MemoryKind::Fact,
                    MemoryKind::Preference,
                    MemoryKind::Task,
                    MemoryKind::PolicyHint,
                ],
                &counts,
                1,
            ),
            by_class: tally(super::boundary::CLASSES, &counts, 2),
            active_contexts,
            vector_model: space
                .as_ref()
                .map(|space| space.model.clone())
                .or_else(|| provider.configured_model.clone())
                .unwrap_or_else(|| UNKNOWN_MODEL.to_owned()),
            vectors: VectorState {
                builtin: provider.builtin,
                provider: provider.state(),
                paused: provider.paused(),
                dims: space.map(|space| space.dims),
                embedded: (indexed - pending) as u64,
                pending: pending as u64,
            },
            schema_version,
            journal_mode,
            size_bytes,
            busy_timeout_ms: self.settings.busy_timeout_ms,
        })
    }

    /// Asks the embeddings server once (within the call deadline, not while calls skip
    /// it) when this process has not heard from it yet, so that the state names its model
    /// and counts the claims embedded by it rather than saying `unknown` until the first
    /// search: a fresh `manvault call pce_memory_state` is how an operator checks it.
    fn learn_space(&self) {
        if self.vectors.index().space().is_some() {
            return;
        }
        if let Ok((space, _)) = self.vectors.provider.embed_one(PROBE, Role::Query) {
            self.vectors.adopt(&space);
        }
    }
}
