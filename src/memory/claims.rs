//! Claims in the store: the idempotent insert (with entities, relations, evidence, text
//! units and vector) and the reads ranking and answers need.
//!
//! A claim's id is derived from its content hash (`clm_` and the hash's first 20 hex
//! digits), so every process names the same text the same way, and the UNIQUE hash
//! column, checked inside the writer's immediate transaction, makes a second insert of
//! the same text find the first instead of racing it.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::json;

use super::store::internal;
use super::vector::IndexedClaim;
use crate::contract::types::{
    MemoryBoundaryClass, MemoryEntity, MemoryEvidence, MemoryKind, MemoryProvenance,
    MemoryRelation, MemoryScope,
};
use crate::embed::quantized::Quantized;
use crate::error::{MemoryCode, ToolError, ToolResult};

/// Hex digits of the content hash in a claim id: 80 bits, collision-free in practice.
const ID_HEX_DIGITS: usize = 20;
/// Longest evidence snippet kept.
const MAX_SNIPPET_CHARS: usize = 500;

/// The id of the claim whose text has `content_hash` (`sha256:<hex>`).
pub(crate) fn claim_id(content_hash: &str) -> String {
    let hex = content_hash.trim_start_matches("sha256:");
    format!("clm_{}", &hex[..ID_HEX_DIGITS.min(hex.len())])
}

/// An upsert as the domain sees it (the tool layer has applied the defaults).
pub(crate) struct UpsertRequest<'a> {
    pub text: &'a str,
    pub kind: MemoryKind,
    pub scope: MemoryScope,
    pub class: MemoryBoundaryClass,
    pub provenance: &'a MemoryProvenance,
    pub entities: &'a [MemoryEntity],
    pub relations: &'a [MemoryRelation],
    pub evidence: &'a [MemoryEvidence],
    /// The client's own hash of the text, to be checked.
    pub content_hash: Option<&'a str>,
}

/// Everything an upsert stores: the checked request and what was derived from it.
pub(crate) struct NewClaim<'a> {
    pub request: &'a UpsertRequest<'a>,
    pub content_hash: &'a str,
    /// The full-text document (units of the text and the entity names).
    pub units: String,
    /// The vector and the model that made it (none when the provider gave none).
    pub vector: Option<(&'a str, &'a Quantized)>,
    pub actor: &'a str,
    pub now_ms: i64,
}

/// The outcome of an insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Upserted {
    pub id: String,
    pub seq: i64,
    pub is_new: bool,
}

fn validation(message: impl Into<String>, details: serde_json::Value) -> ToolError {
    ToolError::memory(MemoryCode::ValidationError, message, details)
}

/// Stores `claim` unless its text is stored already: then the existing claim, or
/// DUPLICATE when that one has another kind, scope or class. Runs in the caller's
/// immediate transaction.
pub(crate) fn insert(transaction: &Transaction, claim: &NewClaim) -> ToolResult<Upserted> {
    let existing = transaction
        .query_row(
            "SELECT seq, id, kind, scope, boundary_class FROM claims WHERE content_hash = ?1",
            [claim.content_hash],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    [
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, String>(4)?,
                    ],
                ))
            },
        )
        .optional()
        .map_err(internal)?;
    if let Some((seq, id, stored)) = existing {
        let asked = [
            claim.request.kind.to_string(),
            claim.request.scope.to_string(),
            claim.request.class.to_string(),
        ];
        if stored == asked {
            return Ok(Upserted {
                id,
                seq,
                is_new: false,
            });
        }
        return Err(ToolError::memory(
            MemoryCode::Duplicate,
            format!(
                "this text is stored already as {id} with another kind, scope or boundary class"
            ),
            json!({
                "existing_id": id,
                "existing": { "kind": stored[0], "scope": stored[1], "boundary_class": stored[2] },
                "hint": "upsert it with the existing attributes, or reword it",
            }),
        ));
    }
    check_relations(transaction, claim)?;
    let id = claim_id(claim.content_hash);
    transaction
        .execute(
            "INSERT INTO claims (id, content_hash, text, kind, scope, boundary_class, created_ms, updated_ms, recency_anchor_ms, provenance, actor) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?7, ?8, ?9)",
            params![
                id,
                claim.content_hash,
                claim.request.text,
                claim.request.kind.to_string(),
                claim.request.scope.to_string(),
                claim.request.class.to_string(),
                claim.now_ms,
                serde_json::to_string(claim.request.provenance).expect("provenance serialises"),
                claim.actor,
            ],
        )
        .map_err(internal)?;
    let seq = transaction.last_insert_rowid();
    transaction
        .execute(
            "INSERT INTO claim_units (rowid, units) VALUES (?1, ?2)",
            params![seq, claim.units],
        )
        .map_err(internal)?;
    if let Some((model, vector)) = &claim.vector {
        store_vector(transaction, model, seq, vector)?;
    }
    transaction
        .execute(
            "INSERT INTO scope_utility (scope, claims, sum, sum_sq) VALUES (?1, 1, 0, 0) \
             ON CONFLICT (scope) DO UPDATE SET claims = claims + 1",
            [claim.request.scope.to_string()],
        )
        .map_err(internal)?;
    store_graph(transaction, claim, seq, &id)?;
    Ok(Upserted {
        id,
        seq,
        is_new: true,
    })
}

/// Every relation must join entities of this upsert or ones already stored.
fn check_relations(connection: &Connection, claim: &NewClaim) -> ToolResult<()> {
    let given: HashSet<&str> = claim
        .request
        .entities
        .iter()
        .map(|entity| entity.id.as_str())
        .collect();
    for (at, relation) in claim.request.relations.iter().enumerate() {
        for (field, end) in [("src_id", &relation.src_id), ("dst_id", &relation.dst_id)] {
            if given.contains(end.as_str()) {
                continue;
            }
            let known: bool = connection
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM entities WHERE id = ?1)",
                    [end],
                    |row| row.get(0),
                )
                .map_err(internal)?;
            if !known {
                return Err(validation(
                    format!("relation {} names an unknown entity {end:?}", relation.id),
                    json!({ "pointer": format!("/relations/{at}/{field}"), "hint": "add the entity to entities" }),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a claim with this content hash is stored.
pub(crate) fn exists(connection: &Connection, content_hash: &str) -> ToolResult<bool> {
    connection
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM claims WHERE content_hash = ?1)")
        .and_then(|mut statement| statement.query_row([content_hash], |row| row.get(0)))
        .map_err(internal)
}

/// Up to `limit` claims after `after_seq` in `seq` order, as the index holds them, each
/// with its stored vector of `model` (`None`: the model is not known yet). A vector that
/// does not read counts as none (the worker embeds it again).
pub(crate) fn index_rows(
    connection: &Connection,
    model: Option<&str>,
    after_seq: i64,
    limit: i64,
) -> ToolResult<Vec<(IndexedClaim, Option<Quantized>)>> {
    type Row = (i64, String, String, i64, Option<Vec<u8>>);
    let mut statement = connection
        .prepare_cached(
            "SELECT c.seq, c.scope, c.boundary_class, c.created_ms, v.vector FROM claims c \
             LEFT JOIN claim_vectors v ON v.model = ?1 AND v.claim_seq = c.seq \
             WHERE c.seq > ?2 ORDER BY c.seq LIMIT ?3",
        )
        .map_err(internal)?;
    let rows: Vec<Row> = statement
        .query_map(params![model, after_seq, limit], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .map_err(internal)?
        .collect::<rusqlite::Result<_>>()
        .map_err(internal)?;
    Ok(rows
        .into_iter()
        .filter_map(|(seq, scope, class, created_ms, blob)| {
            let claim = IndexedClaim {
                seq,
                scope: scope.parse().ok()?,
                class: class.parse().ok()?,
                created_ms,
            };
            Some((claim, blob.as_deref().and_then(Quantized::from_blob)))
        })
        .collect())
}

/// The stored vectors of `model` among the claims `seqs`.
pub(crate) fn stored_vectors(
    connection: &Connection,
    model: &str,
    seqs: &[i64],
) -> ToolResult<Vec<(i64, Quantized)>> {
    let mut statement = connection
        .prepare_cached("SELECT vector FROM claim_vectors WHERE model = ?1 AND claim_seq = ?2")
        .map_err(internal)?;
    let mut found = Vec::new();
    for seq in seqs {
        let blob: Option<Vec<u8>> = statement
            .query_row(params![model, seq], |row| row.get(0))
            .optional()
            .map_err(internal)?;
        if let Some(vector) = blob.as_deref().and_then(Quantized::from_blob) {
            found.push((*seq, vector));
        }
    }
    Ok(found)
}

/// A claim's text and its entities' names by entity id (what its vector stands for).
pub(crate) fn passage_parts(
    connection: &Connection,
    seq: i64,
) -> ToolResult<Option<(String, Vec<String>)>> {
    let text: Option<String> = connection
        .prepare_cached("SELECT text FROM claims WHERE seq = ?1")
        .and_then(|mut statement| statement.query_row([seq], |row| row.get(0)).optional())
        .map_err(internal)?;
    let Some(text) = text else {
        return Ok(None);
    };
    let mut statement = connection
        .prepare_cached(
            "SELECT e.name FROM claim_entities ce JOIN entities e ON e.id = ce.entity_id \
             WHERE ce.claim_seq = ?1 ORDER BY e.id",
        )
        .map_err(internal)?;
    let names = statement
        .query_map([seq], |row| row.get(0))
        .map_err(internal)?
        .collect::<rusqlite::Result<_>>()
        .map_err(internal)?;
    Ok(Some((text, names)))
}

pub(crate) fn store_vector(
    connection: &Connection,
    model: &str,
    seq: i64,
    vector: &Quantized,
) -> ToolResult<()> {
    connection
        .execute(
            "INSERT OR REPLACE INTO claim_vectors (model, claim_seq, vector) VALUES (?1, ?2, ?3)",
            params![model, seq, vector.to_blob()],
        )
        .map_err(internal)?;
    Ok(())
}

fn store_graph(transaction: &Transaction, claim: &NewClaim, seq: i64, id: &str) -> ToolResult<()> {
    for entity in claim.request.entities {
        transaction
            .execute(
                "INSERT INTO entities (id, type, name, canonical_key, attrs) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (id) DO UPDATE SET type = excluded.type, name = excluded.name, \
                 canonical_key = excluded.canonical_key, attrs = excluded.attrs",
                params![
                    entity.id,
                    entity.type_.to_string(),
                    entity.name,
                    entity.canonical_key,
                    serde_json::Value::Object(entity.attrs.clone()).to_string(),
                ],
            )
            .map_err(internal)?;
        transaction
            .execute(
                "INSERT OR IGNORE INTO claim_entities (claim_seq, entity_id) VALUES (?1, ?2)",
                params![seq, entity.id],
            )
            .map_err(internal)?;
    }
    for relation in claim.request.relations {
        transaction
            .execute(
                "INSERT INTO relations (id, src_id, dst_id, type, props, evidence_claim_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (id) DO UPDATE SET src_id = excluded.src_id, dst_id = excluded.dst_id, \
                 type = excluded.type, props = excluded.props, evidence_claim_id = excluded.evidence_claim_id",
                params![
                    relation.id,
                    relation.src_id,
                    relation.dst_id,
                    relation.type_,
                    serde_json::Value::Object(relation.props.clone()).to_string(),
                    relation.evidence_claim_id.as_deref().unwrap_or(id),
                ],
            )
            .map_err(internal)?;
    }
    let derived = derived_evidence(claim.request.provenance);
    for (at, evidence) in claim.request.evidence.iter().chain(&derived).enumerate() {
        let snippet = evidence
            .snippet
            .as_ref()
            .map(|s| s.chars().take(MAX_SNIPPET_CHARS).collect::<String>());
        transaction
            .execute(
                "INSERT INTO evidence (id, claim_seq, source_type, source_id, snippet, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![format!("evd_{}_{at}", &id[4..]), seq, evidence.source_type, evidence.source_id, snippet, evidence.at],
            )
            .map_err(internal)?;
    }
    Ok(())
}

/// Evidence a provenance implies: its commit and its page.
fn derived_evidence(provenance: &MemoryProvenance) -> Vec<MemoryEvidence> {
    let mut derived = Vec::new();
    if let Some(commit) = provenance.git.as_ref().and_then(|git| git.commit.clone()) {
        let repo = provenance.git.as_ref().and_then(|git| git.repo.clone());
        derived.push(MemoryEvidence {
            id: None,
            source_type: "git".into(),
            source_id: Some(match repo {
                Some(repo) => format!("{repo}@{commit}"),
                None => commit,
            }),
            snippet: None,
            at: Some(provenance.at.clone()),
        });
    }
    if let Some(url) = &provenance.url {
        derived.push(MemoryEvidence {
            id: None,
            source_type: "url".into(),
            source_id: Some(url.clone()),
            snippet: None,
            at: Some(provenance.at.clone()),
        });
    }
    derived
}

/// What ranking and answers read of a claim.
#[derive(Debug, Clone)]
pub(crate) struct ClaimRow {
    pub seq: i64,
    pub id: String,
    pub content_hash: String,
    pub text: String,
    pub kind: MemoryKind,
    pub scope: MemoryScope,
    pub class: MemoryBoundaryClass,
    pub utility: f64,
    pub confidence: f64,
    /// helpful, and every feedback signal, for the quality estimate.
    pub helpful: i64,
    pub signals: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub recency_anchor_ms: i64,
    pub provenance: String,
}

fn vocabulary<T: std::str::FromStr>(word: String, index: usize) -> rusqlite::Result<T> {
    word.parse().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            "not in the schema's vocabulary".into(),
        )
    })
}

/// The claims with these `seq`s, by `seq` (missing ones are left out). One statement
/// whatever their number (the list travels as a JSON array), so it stays prepared.
pub(crate) fn rows(connection: &Connection, seqs: &[i64]) -> ToolResult<HashMap<i64, ClaimRow>> {
    let mut statement = connection
        .prepare_cached(
            "SELECT seq, id, text, kind, scope, boundary_class, utility, confidence, helpful, \
             helpful + harmful + outdated + duplicate, created_ms, updated_ms, recency_anchor_ms, provenance, content_hash \
             FROM claims WHERE seq IN (SELECT value FROM json_each(?1))",
        )
        .map_err(internal)?;
    let list = serde_json::to_string(seqs).expect("numbers serialise");
    let rows = statement
        .query_map([list], |row| {
            Ok(ClaimRow {
                seq: row.get(0)?,
                id: row.get(1)?,
                text: row.get(2)?,
                kind: vocabulary(row.get(3)?, 3)?,
                scope: vocabulary(row.get(4)?, 4)?,
                class: vocabulary(row.get(5)?, 5)?,
                utility: row.get(6)?,
                confidence: row.get(7)?,
                helpful: row.get(8)?,
                signals: row.get(9)?,
                created_ms: row.get(10)?,
                updated_ms: row.get(11)?,
                recency_anchor_ms: row.get(12)?,
                provenance: row.get(13)?,
                content_hash: row.get(14)?,
            })
        })
        .map_err(internal)?;
    let mut found = HashMap::with_capacity(seqs.len());
    for row in rows {
        let row = row.map_err(internal)?;
        found.insert(row.seq, row);
    }
    Ok(found)
}

/// The `seq` of claim `id`, or UNKNOWN_CLAIM.
pub(crate) fn seq_of(connection: &Connection, id: &str) -> ToolResult<i64> {
    connection
        .query_row("SELECT seq FROM claims WHERE id = ?1", [id], |row| row.get(0))
        .optional()
        .map_err(internal)?
        .ok_or_else(|| {
            ToolError::memory(
                MemoryCode::UnknownClaim,
                format!("no claim has the id {id:?}"),
                json!({ "claim_id": id, "hint": "use an id from pce_memory_activate or pce_memory_search" }),
            )
        })
}

/// Up to `limit` pieces of evidence of claim `seq`, in the order they were given.
pub(crate) fn evidences(
    connection: &Connection,
    seq: i64,
    limit: usize,
) -> ToolResult<Vec<MemoryEvidence>> {
    let mut statement = connection
        .prepare_cached("SELECT id, source_type, source_id, snippet, at FROM evidence WHERE claim_seq = ?1 ORDER BY rowid LIMIT ?2")
        .map_err(internal)?;
    let rows = statement
        .query_map(params![seq, limit as i64], |row| {
            Ok(MemoryEvidence {
                id: row.get(0)?,
                source_type: row.get(1)?,
                source_id: row.get(2)?,
                snippet: row.get(3)?,
                at: row.get(4)?,
            })
        })
        .map_err(internal)?;
    rows.collect::<rusqlite::Result<_>>().map_err(internal)
}
