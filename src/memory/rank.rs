//! Ranking: text and vector candidates, fusion and the `g` re-rank, every score in
//! [0, 1] (the reference's documented formula, without the multipliers its code adds on
//! top, which pushed scores above 1).
//!
//! Filtering comes first: a candidate is drawn only from claims of the requested scopes,
//! younger than their scope's TTL, of a class the request reaches, so a claim the caller
//! may not see can never take a place in the top k (the reference filtered after ranking,
//! its issue #58). Content a deny rule refuses is dropped before scoring too.
//!
//! - text: FTS5 BM25 over the claim's units (see `units`), as relevance `-bm25`, divided
//!   by the best relevance among the text candidates (a min-max whose minimum is "no
//!   relevance", so the weakest text candidate still counts, unlike a non-match);
//! - vector: cosine of query and claim vectors, floored at 0;
//! - combined = alpha x vector + (1 - alpha) x text; a claim with neither is no
//!   candidate;
//! - g = (0.6 + 0.4 sigmoid(z)) (0.5 + 0.5 confidence) (0.3 + 0.7 recency), times
//!   (0.5 + 0.5 quality) with `use_quality`; z is the claim's utility z-score among the
//!   claims of the requested scopes, recency halves every half-life of its kind since its
//!   recency anchor;
//! - score = combined x g; ties by created_at descending, then id.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::claims::{self, ClaimRow};
use super::policy::Policy;
use super::store::internal;
use super::units;
use super::vector::{ClaimIndex, IndexedClaim};
use crate::contract::types::{MemoryBoundaryClass, MemoryScope};
use crate::embed::quantized::Quantized;
use crate::error::ToolResult;

const MS_PER_DAY: f64 = 86_400_000.0;
/// Smallest standard deviation a z-score divides by (all utilities equal: z = 0).
const MIN_UTILITY_SPREAD: f64 = 0.001;
/// Text candidates fetched per one wanted, before filtering; grown when too few pass.
const TEXT_OVERFETCH: usize = 4;
/// A unit in more than this share of the claims is left out of the text query: its BM25
/// weight is small (idf under 1.4, against 4.6 for one in a hundred claims) and scoring
/// its postings is most of a query's cost (`の`, `the` in half of all claims). When every
/// unit is that common, the [`KEPT_WHEN_ALL_COMMON`] rarest stay.
const MAX_UNIT_SHARE: f64 = 0.2;
const KEPT_WHEN_ALL_COMMON: usize = 2;
/// Units are taken rarest first until their claims (postings) add up to this: FTS5 scores
/// every claim a query matches (a B-tree lookup of its length each), so this bounds a
/// text query's cost whatever the store's size, and the units left out are the commonest,
/// which weigh least in BM25.
const MAX_POSTINGS: i64 = 20_000;

/// Which claims a ranking may draw from.
pub(crate) struct Filter<'a> {
    pub scopes: &'a [MemoryScope],
    pub classes: &'a [MemoryBoundaryClass],
    /// Oldest creation time accepted per scope (from its TTL; `None`: any age).
    pub oldest_ms: &'a [(MemoryScope, Option<i64>)],
    /// Newest claim considered (a search's later pages see what its first page saw).
    pub up_to_seq: Option<i64>,
}

impl Filter<'_> {
    pub(crate) fn keeps(&self, claim: &IndexedClaim) -> bool {
        self.classes.contains(&claim.class)
            && self.up_to_seq.is_none_or(|last| claim.seq <= last)
            && self.oldest_ms.iter().any(|(scope, oldest)| {
                *scope == claim.scope && oldest.is_none_or(|oldest| claim.created_ms >= oldest)
            })
    }
}

/// The parts of one claim's score.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Scores {
    pub text: f64,
    pub vector: f64,
    pub combined: f64,
    pub utility: f64,
    pub confidence: f64,
    pub quality: f64,
    pub recency: f64,
    pub g: f64,
}

/// One ranked claim.
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    pub claim: ClaimRow,
    pub score: f64,
    pub scores: Scores,
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// g from its parts (each in [0, 1]); monotone in every one.
pub(crate) fn g(utility: f64, confidence: f64, recency: f64, quality: Option<f64>) -> f64 {
    let base = (0.6 + 0.4 * utility) * (0.5 + 0.5 * confidence) * (0.3 + 0.7 * recency);
    quality.map_or(base, |quality| base * (0.5 + 0.5 * quality))
}

/// exp(-ln 2 x age / half-life): 1 now, 0.5 after one half-life.
pub(crate) fn recency(age_ms: i64, half_life_days: f64) -> f64 {
    let age_days = age_ms.max(0) as f64 / MS_PER_DAY;
    (-std::f64::consts::LN_2 * age_days / half_life_days).exp()
}

/// Mean and standard deviation of the utilities of the claims of `scopes`.
fn utility_spread(connection: &Connection, scopes: &[MemoryScope]) -> ToolResult<(f64, f64)> {
    let (mut claims, mut sum, mut sum_sq) = (0i64, 0f64, 0f64);
    let mut statement = connection
        .prepare_cached("SELECT claims, sum, sum_sq FROM scope_utility WHERE scope = ?1")
        .map_err(internal)?;
    for scope in scopes {
        let row = statement.query_row([scope.to_string()], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, f64>(1)?,
                row.get::<_, f64>(2)?,
            ))
        });
        if let Ok((n, s, s2)) = row {
            claims += n;
            sum += s;
            sum_sq += s2;
        }
    }
    if claims == 0 {
        return Ok((0.0, 0.0));
    }
    let mean = sum / claims as f64;
    Ok((mean, (sum_sq / claims as f64 - mean * mean).max(0.0).sqrt()))
}

/// The best `k` text candidates the filter keeps, as (seq, relevance > 0). FTS5 ranks the
/// whole match set by BM25 fastest without a join, so the best `TEXT_OVERFETCH x k` are
/// fetched and filtered here; if fewer than `k` pass and more matches exist, it fetches
/// more. The `k` best of the kept are the `k` best the filter allows either way.
fn text_candidates(
    connection: &Connection,
    index: &ClaimIndex,
    query: &str,
    k: usize,
    filter: &Filter,
) -> ToolResult<Vec<(i64, f64)>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let Some(expression) = units::match_any(&selective_units(connection, index.len(), query)?)
    else {
        return Ok(Vec::new());
    };
    let mut fetch = (k * TEXT_OVERFETCH).max(64);
    let mut statement = connection
        .prepare_cached(
            "SELECT rowid, rank FROM claim_units WHERE claim_units MATCH ?1 ORDER BY rank LIMIT ?2",
        )
        .map_err(internal)?;
    loop {
        let rows: Vec<(i64, f64)> = statement
            .query_map(params![expression, fetch as i64], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map_err(internal)?
            .collect::<rusqlite::Result<_>>()
            .map_err(internal)?;
        let exhausted = rows.len() < fetch;
        let kept: Vec<(i64, f64)> = rows
            .into_iter()
            .filter(|(seq, _)| index.get(*seq).is_some_and(|claim| filter.keeps(claim)))
            .map(|(seq, rank)| (seq, -rank))
            .filter(|(_, relevance)| *relevance > 0.0)
            .take(k)
            .collect();
        if kept.len() >= k || exhausted {
            return Ok(kept);
        }
        fetch *= TEXT_OVERFETCH;
    }
}

/// The query's units that some claim holds, rarest first, without those too common to be
/// worth their cost (see [`MAX_UNIT_SHARE`] and [`MAX_POSTINGS`]).
fn selective_units(connection: &Connection, claims: usize, query: &str) -> ToolResult<Vec<String>> {
    let mut statement = connection
        .prepare_cached("SELECT doc FROM claim_units_vocab WHERE term = ?1")
        .map_err(internal)?;
    let mut found: Vec<(String, i64)> = Vec::new();
    for unit in units::query_units(query) {
        let docs: i64 = statement
            .query_row([&unit], |row| row.get(0))
            .optional()
            .map_err(internal)?
            .unwrap_or(0);
        if docs > 0 {
            found.push((unit, docs));
        }
    }
    found.sort_by_key(|(_, docs)| *docs);
    let common = (claims as f64 * MAX_UNIT_SHARE) as i64;
    let mut postings = 0;
    let selective = found
        .iter()
        .take_while(|(_, docs)| {
            postings += docs;
            *docs <= common && postings <= MAX_POSTINGS
        })
        .count();
    Ok(found
        .into_iter()
        .take(selective.max(KEPT_WHEN_ALL_COMMON))
        .map(|(unit, _)| unit)
        .collect())
}

/// Ranks the claims `filter` allows for `query` (its vector `query_vector`; without one,
/// by text alone) under `policy`, best first; `now_ms` dates recency.
pub(crate) fn rank(
    connection: &Connection,
    index: &ClaimIndex,
    policy: &Policy,
    query: &str,
    query_vector: Option<&Quantized>,
    filter: &Filter,
    now_ms: i64,
) -> ToolResult<Vec<Ranked>> {
    let retrieval = &policy.retrieval;
    let text = text_candidates(connection, index, query, retrieval.k_txt, filter)?;
    let vector = query_vector.map_or_else(Vec::new, |query| {
        index.nearest(query, retrieval.k_vec, |claim| filter.keeps(claim))
    });
    let best_text = text
        .iter()
        .map(|(_, relevance)| *relevance)
        .fold(0.0, f64::max);
    let mut evidence: HashMap<i64, (f64, f64)> = HashMap::new();
    for (seq, relevance) in &text {
        evidence.entry(*seq).or_default().0 = (relevance / best_text).clamp(0.0, 1.0);
    }
    for (seq, cosine) in &vector {
        evidence.entry(*seq).or_default().1 = f64::from(*cosine).clamp(0.0, 1.0);
    }
    let seqs: Vec<i64> = evidence.keys().copied().collect();
    let rows = claims::rows(connection, &seqs)?;
    let (mean, spread) = utility_spread(connection, filter.scopes)?;
    let mut ranked: Vec<Ranked> = rows
        .into_values()
        .filter(|row| !policy.boundary.denies(&row.text))
        .filter_map(|row| {
            let (text, vector) = evidence[&row.seq];
            let combined =
                (retrieval.alpha * vector + (1.0 - retrieval.alpha) * text).clamp(0.0, 1.0);
            if combined <= 0.0 {
                return None;
            }
            let utility = sigmoid((row.utility - mean) / spread.max(MIN_UTILITY_SPREAD));
            let confidence = row.confidence.clamp(0.0, 1.0);
            let quality = (row.helpful as f64 + 1.0) / (row.signals as f64 + 2.0);
            let recency = recency(
                now_ms - row.recency_anchor_ms,
                retrieval.half_life_days(row.kind),
            );
            let g = g(
                utility,
                confidence,
                recency,
                retrieval.use_quality.then_some(quality),
            );
            let score = (combined * g).clamp(0.0, 1.0);
            (score >= retrieval.min_score).then_some(Ranked {
                scores: Scores {
                    text,
                    vector,
                    combined,
                    utility,
                    confidence,
                    quality,
                    recency,
                    g,
                },
                score,
                claim: row,
            })
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.claim.created_ms.cmp(&a.claim.created_ms))
            .then(a.claim.id.cmp(&b.claim.id))
    });
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn g_stays_in_range_and_is_monotone(
            u in 0.0..=1.0f64, c in 0.0..=1.0f64, r in 0.0..=1.0f64, q in 0.0..=1.0f64,
            du in 0.0..=1.0f64, which in 0..4usize,
        ) {
            let value = g(u, c, r, Some(q));
            prop_assert!((0.0..=1.0).contains(&value));
            prop_assert!(value >= 0.09 * 0.5 - 1e-12);
            let mut up = [u, c, r, q];
            up[which] = (up[which] + du).min(1.0);
            prop_assert!(g(up[0], up[1], up[2], Some(up[3])) >= value - 1e-12);
            prop_assert!(g(u, c, r, None) >= value);
        }
    }

    #[test]
    fn recency_halves_every_half_life() {
        assert!((recency(0, 14.0) - 1.0).abs() < 1e-12);
        assert!((recency((14.0 * MS_PER_DAY) as i64, 14.0) - 0.5).abs() < 1e-12);
        assert!((recency((28.0 * MS_PER_DAY) as i64, 14.0) - 0.25).abs() < 1e-12);
        assert_eq!(recency(-5, 14.0), 1.0);
    }
}
