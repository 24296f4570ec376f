//! Active contexts: a ranking frozen under an id until it expires, paged by cursor; and
//! the cursors of searches, which keep no state.
//!
//! An activate stores its whole ranking (claim, rank, score and breakdown) with an expiry
//! (the shortest TTL of its scopes, capped by MEMORY_CONTEXT_MAX_TTL_SEC), so its pages
//! never repeat an item and together are the whole ranking, whatever is stored or rated
//! meanwhile and in whichever process. An expired or unknown context is GONE (the
//! reference never set an expiry and silently restarted on an unknown cursor), and so is
//! one built under a policy that is no longer in force: its boundary decisions are stale.
//! Expired contexts are deleted whenever a new one is stored.
//!
//! Cursors are opaque to clients: `<ac_id>.<offset>` for a context (the request must
//! repeat the context's query, scope and allow: its fingerprint is stored), and
//! `s.<last seq>.<offset>.<check>` for a search, where the check binds it to the request's
//! fingerprint (a search stores nothing to compare with).

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::json;

use super::hash::sha256_hex;
use super::rank::{Ranked, Scores};
use super::store::internal;
use crate::error::{MemoryCode, ToolError, ToolResult};

/// A stored context.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Context {
    pub id: String,
    pub expires_ms: i64,
    pub policy_version: String,
    pub fingerprint: String,
    pub total: usize,
}

/// One stored item of a context.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    pub rank: usize,
    pub claim_seq: i64,
    pub score: f64,
    pub scores: Scores,
}

/// The fingerprint of a request: what must be the same for its cursors to apply.
pub(crate) fn fingerprint(query: &str, scopes: &[String], allow: &[String]) -> String {
    let mut allow = allow.to_vec();
    allow.sort();
    let key = json!([query, scopes, allow]).to_string();
    sha256_hex(key.as_bytes())[..32].to_string()
}

fn gone(message: impl Into<String>) -> ToolError {
    ToolError::memory(
        MemoryCode::Gone,
        message,
        json!({ "hint": "call pce_memory_activate again without cursor for a fresh context" }),
    )
}

fn mismatch() -> ToolError {
    ToolError::memory(
        MemoryCode::ValidationError,
        "the cursor belongs to another request",
        json!({ "pointer": "/cursor", "hint": "repeat the query, scope and allow of the answer that gave the cursor" }),
    )
}

/// Stores `ranked` as a new context `id`, deleting expired ones first.
pub(crate) fn store(
    transaction: &Transaction,
    context: &Context,
    ranked: &[Ranked],
    now_ms: i64,
) -> ToolResult<()> {
    delete_expired(transaction, now_ms)?;
    transaction
        .execute(
            "INSERT INTO active_contexts (id, created_ms, expires_ms, policy_version, fingerprint, total) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![context.id, now_ms, context.expires_ms, context.policy_version, context.fingerprint, ranked.len() as i64],
        )
        .map_err(internal)?;
    let mut insert = transaction
        .prepare_cached("INSERT INTO active_context_items (context_id, rank, claim_seq, score, breakdown) VALUES (?1, ?2, ?3, ?4, ?5)")
        .map_err(internal)?;
    for (rank, item) in ranked.iter().enumerate() {
        let breakdown = serde_json::to_string(&item.scores).expect("scores serialise");
        insert
            .execute(params![
                context.id,
                rank as i64,
                item.claim.seq,
                item.score,
                breakdown
            ])
            .map_err(internal)?;
    }
    Ok(())
}

fn delete_expired(connection: &Connection, now_ms: i64) -> ToolResult<()> {
    connection
        .execute(
            "DELETE FROM active_context_items WHERE context_id IN (SELECT id FROM active_contexts WHERE expires_ms <= ?1)",
            [now_ms],
        )
        .map_err(internal)?;
    connection
        .execute(
            "DELETE FROM active_contexts WHERE expires_ms <= ?1",
            [now_ms],
        )
        .map_err(internal)?;
    Ok(())
}

/// Context `id` if it is alive at `now_ms`, else GONE.
pub(crate) fn load(connection: &Connection, id: &str, now_ms: i64) -> ToolResult<Context> {
    let context = connection
        .query_row(
            "SELECT id, expires_ms, policy_version, fingerprint, total FROM active_contexts WHERE id = ?1",
            [id],
            |row| {
                Ok(Context {
                    id: row.get(0)?,
                    expires_ms: row.get(1)?,
                    policy_version: row.get(2)?,
                    fingerprint: row.get(3)?,
                    total: row.get::<_, i64>(4)? as usize,
                })
            },
        )
        .optional()
        .map_err(internal)?
        .ok_or_else(|| gone(format!("no active context {id}: it expired or never existed")))?;
    if context.expires_ms <= now_ms {
        return Err(gone(format!("active context {id} expired")));
    }
    Ok(context)
}

/// Items `offset..offset + limit` of a context, by rank.
pub(crate) fn items(
    connection: &Connection,
    id: &str,
    offset: usize,
    limit: usize,
) -> ToolResult<Vec<Item>> {
    let mut statement = connection
        .prepare_cached(
            "SELECT rank, claim_seq, score, breakdown FROM active_context_items WHERE context_id = ?1 AND rank >= ?2 ORDER BY rank LIMIT ?3",
        )
        .map_err(internal)?;
    let rows = statement
        .query_map(params![id, offset as i64, limit as i64], |row| {
            let breakdown: String = row.get(3)?;
            Ok(Item {
                rank: row.get::<_, i64>(0)? as usize,
                claim_seq: row.get(1)?,
                score: row.get(2)?,
                scores: serde_json::from_str(&breakdown).unwrap_or_default(),
            })
        })
        .map_err(internal)?;
    rows.collect::<rusqlite::Result<_>>().map_err(internal)
}

/// Live contexts, for the state report.
pub(crate) fn live(connection: &Connection, now_ms: i64) -> ToolResult<u64> {
    connection
        .query_row(
            "SELECT count(*) FROM active_contexts WHERE expires_ms > ?1",
            [now_ms],
            |row| row.get::<_, i64>(0),
        )
        .map(|count| count as u64)
        .map_err(internal)
}

/// Where a cursor points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cursor {
    Context { id: String, offset: usize },
    Search { up_to_seq: i64, offset: usize },
}

fn search_check(fingerprint: &str, up_to_seq: i64, offset: usize) -> String {
    sha256_hex(format!("{fingerprint}.{up_to_seq}.{offset}").as_bytes())[..12].to_string()
}

/// The cursor text for `cursor` of a request with `fingerprint`.
pub(crate) fn encode(cursor: &Cursor, fingerprint: &str) -> String {
    match cursor {
        Cursor::Context { id, offset } => format!("{id}.{offset}"),
        Cursor::Search { up_to_seq, offset } => {
            format!(
                "s.{up_to_seq}.{offset}.{}",
                search_check(fingerprint, *up_to_seq, *offset)
            )
        }
    }
}

/// Reads a cursor given with a request of `fingerprint`. A context cursor is only parsed
/// (its context's fingerprint is checked when loaded); a malformed cursor is GONE, as an
/// unknown one; a search cursor of another request is VALIDATION_ERROR.
pub(crate) fn decode(text: &str, fingerprint: &str) -> ToolResult<Cursor> {
    let malformed = || gone("the cursor is not one this server issued");
    let parts: Vec<&str> = text.split('.').collect();
    match parts.as_slice() {
        [id, offset] if id.starts_with("ac_") => Ok(Cursor::Context {
            id: id.to_string(),
            offset: offset.parse().map_err(|_| malformed())?,
        }),
        ["s", up_to_seq, offset, check] => {
            let up_to_seq: i64 = up_to_seq.parse().map_err(|_| malformed())?;
            let offset: usize = offset.parse().map_err(|_| malformed())?;
            if *check != search_check(fingerprint, up_to_seq, offset) {
                return Err(mismatch());
            }
            Ok(Cursor::Search { up_to_seq, offset })
        }
        _ => Err(malformed()),
    }
}

/// Checks that a context cursor is used with the request that made it.
pub(crate) fn check_fingerprint(context: &Context, fingerprint: &str) -> ToolResult<()> {
    if context.fingerprint == fingerprint {
        Ok(())
    } else {
        Err(mismatch())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn cursors_round_trip_and_bind_to_their_request() {
        let print = fingerprint("q", &["project".into()], &["b".into(), "a".into()]);
        assert_eq!(
            print,
            fingerprint("q", &["project".into()], &["a".into(), "b".into()])
        );
        for cursor in [
            Cursor::Context {
                id: "ac_0123abcd".into(),
                offset: 12,
            },
            Cursor::Search {
                up_to_seq: 99,
                offset: 24,
            },
        ] {
            assert_eq!(decode(&encode(&cursor, &print), &print).unwrap(), cursor);
        }
        let other = fingerprint("other", &[], &[]);
        let search = encode(
            &Cursor::Search {
                up_to_seq: 1,
                offset: 2,
            },
            &print,
        );
        let error = decode(&search, &other).unwrap_err();
        assert_eq!(error.code, ErrorCode::Memory(MemoryCode::ValidationError));
        for garbage in ["", "x", "ac_1.x", "s.1.2", "ac_1.2.3"] {
            let error = decode(garbage, &print).unwrap_err();
            assert_eq!(error.code, ErrorCode::Memory(MemoryCode::Gone), "{garbage}");
        }
    }
}
