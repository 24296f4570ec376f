//! `pce_memory_upsert`: checks a claim against the policy and the seed's rules, derives
//! its hash, text units and vector, and stores it once (see `claims::insert`). A provider
//! that gives no vector within the call's deadline does not fail the upsert: the claim is
//! stored without one (found by text until the backfill worker embeds it), and the
//! answer says so.

use serde_json::json;

use super::claims::{self, NewClaim, UpsertRequest};
use super::hash::{content_hash, normalize_for_hash};
use super::units;
use super::vector::{passage, VectorNote};
use super::{Call, Memory};
use crate::contract::types::MemoryBoundaryClass;
use crate::embed::Role;
use crate::error::{MemoryCode, ToolError, ToolResult};

/// How far in the future a provenance time may lie (clock skew between machines).
const FUTURE_SLACK_MS: i64 = 5 * 60 * 1000;

pub(crate) struct UpsertOutcome {
    pub id: String,
    pub is_new: bool,
    pub content_hash: String,
    pub policy_version: String,
    /// Set when the claim was stored without a vector.
    pub vectors: Option<VectorNote>,
}

fn refused(message: impl Into<String>, details: serde_json::Value) -> ToolError {
    ToolError::memory(MemoryCode::BoundaryDenied, message, details)
}

fn invalid(message: impl Into<String>, details: serde_json::Value) -> ToolError {
    ToolError::memory(MemoryCode::ValidationError, message, details)
}

impl Memory {
    pub(crate) fn upsert(
        &self,
        call: &mut Call,
        request: UpsertRequest,
    ) -> ToolResult<UpsertOutcome> {
        let policy = self.policy()?;
        call.facts.policy_version = Some(policy.version.clone());
        call.facts.scopes = vec![request.scope.to_string()];
        policy.scope_rule(request.scope)?;
        let hash = content_hash(request.text);
        call.facts.content_hashes = vec![hash.clone()];
        if normalize_for_hash(request.text).is_empty() {
            return Err(invalid(
                "the text is only whitespace",
                json!({ "pointer": "/text" }),
            ));
        }
        if let Some(given) = request.content_hash {
            if given != hash {
                return Err(invalid(
                    "content_hash is not the hash of the text",
                    json!({
                        "pointer": "/content_hash",
                        "expected": hash,
                        "rule": "sha256 of the text after NFC, CRLF to LF, trim, whitespace runs collapsed to one space",
                    }),
                ));
            }
        }
        if request.class == MemoryBoundaryClass::Secret {
            call.facts.decision = Some("deny");
            return Err(refused(
                "secret claims are never stored",
                json!({ "pointer": "/boundary_class", "hint": "keep secrets out of memory; store a pointer to where they live instead" }),
            ));
        }
        let redaction = policy.boundary.redact(request.text);
        if !redaction.denied_by.is_empty() {
            call.facts.decision = Some("deny");
            call.facts.reason = Some(format!(
                "DENIED_CONTENT: {}",
                redaction.denied_by.join(", ")
            ));
            return Err(refused(
                "the text holds content the policy denies",
                json!({ "rules": redaction.denied_by, "pointer": "/text" }),
            ));
        }
        let at_ms = crate::clock::parse_rfc3339(&request.provenance.at).ok_or_else(|| {
            invalid(
                "provenance.at is not an RFC 3339 date-time",
                json!({ "pointer": "/provenance/at", "example": "2026-11-20T09:00:00Z" }),
            )
        })?;
        if at_ms > call.now_ms + FUTURE_SLACK_MS {
            return Err(invalid(
                "provenance.at lies in the future",
                json!({ "pointer": "/provenance/at", "latest_accepted": crate::clock::rfc3339_millis(call.now_ms + FUTURE_SLACK_MS) }),
            ));
        }
        let mut entities: Vec<(&str, &str)> = request
            .entities
            .iter()
            .map(|entity| (entity.id.as_str(), entity.name.as_str()))
            .collect();
        entities.sort_unstable();
        let names: Vec<&str> = entities.iter().map(|(_, name)| *name).collect();
        let indexed_text = format!("{} {}", request.text, names.join(" "));
        // A text stored already keeps its vector: the provider is not asked again.
        let known = self.store.read(|c| claims::exists(c, &hash))?;
        let embedded = (!known).then(|| {
            self.vectors
                .provider
                .embed_one(&passage(&policy, request.text, &names), Role::Passage)
        });
        let (vector, unavailable) = match embedded {
            Some(Ok((space, vector))) => {
                self.vectors.adopt(&space);
                (Some((space.model, vector)), None)
            }
            Some(Err(reason)) => (None, Some(reason)),
            None => (None, None),
        };
        let claim = NewClaim {
            request: &request,
            content_hash: &hash,
            units: units::document(&indexed_text),
            vector: vector
                .as_ref()
                .map(|(model, vector)| (model.as_str(), vector)),
            actor: call.actor,
            now_ms: call.now_ms,
        };
        let stored = self
            .store
            .write(|transaction| claims::insert(transaction, &claim))?;
        call.facts.decision = Some(if stored.is_new { "store" } else { "existing" });
        let vectors = match unavailable {
            Some(reason) => Some(VectorNote::Unavailable {
                reason,
                pending: self.current_index()?.pending(),
            }),
            None => None,
        };
        Ok(UpsertOutcome {
            vectors,
            id: stored.id,
            is_new: stored.is_new,
            content_hash: hash,
            policy_version: policy.version.clone(),
        })
    }
}
