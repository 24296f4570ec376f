//! Keeping the vector index in step: [`refresh`] brings the index up to the store (claims
//! stored since, by this process or another), and the worker thread embeds the claims
//! that have no vector of the current model.
//!
//! A claim lacks a vector when it was stored while the provider was down or slow, by a
//! process with another model, or before the model changed. The worker takes the oldest
//! missing claims a batch at a time (`EMBEDDINGS_BATCH_SIZE`; 256 for the built-in
//! vectors), first looks for vectors another process stored meanwhile, embeds the rest
//! with no lock held (a batch deadline of its own), stores them in one transaction and
//! puts them into the index. A failing provider makes it back off (1 s doubling to
//! 60 s); it resumes by itself. No call ever waits for it: calls only take the index lock,
//! which the worker holds for the copy of a batch's vectors, never while embedding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::claims;
use super::store::Store;
use super::vector::{passage, ClaimIndex, Vectors};
use super::PolicyInForce;
use crate::embed::provider::backoff;
use crate::error::ToolResult;

/// Claims read per batch while the index catches up with the store.
const INDEX_BATCH: i64 = 5000;
/// How long an idle worker sleeps when nobody nudges it.
const IDLE: Duration = Duration::from_secs(60);

/// Brings `index` up to the store: every claim newer than it, with its stored vector of
/// the index's model.
pub(super) fn refresh(store: &Store, index: &mut ClaimIndex) -> ToolResult<()> {
    let model = index.space().map(|space| space.model.clone());
    loop {
        let rows = store.read(|connection| {
            claims::index_rows(connection, model.as_deref(), index.last_seq(), INDEX_BATCH)
        })?;
        let done = (rows.len() as i64) < INDEX_BATCH;
        for (claim, vector) in rows {
            index.push(claim, vector);
        }
        if done {
            return Ok(());
        }
    }
}

/// Starts the worker; it ends when [`Vectors::stop`] is called.
pub(super) fn start(store: Arc<Store>, policy: Arc<PolicyInForce>, vectors: Arc<Vectors>) {
    let worker = Worker {
        store,
        policy,
        vectors,
    };
    std::thread::Builder::new()
        .name("memory-vectors".to_owned())
        .spawn(move || worker.work())
        .expect("spawn the memory vector worker");
}

struct Worker {
    store: Arc<Store>,
    policy: Arc<PolicyInForce>,
    vectors: Arc<Vectors>,
}

impl Worker {
    fn work(&self) {
        let mut failures = 0;
        while !self.vectors.stopping() {
            match self.fill_batch() {
                Ok(0) => self.vectors.wait(IDLE),
                Ok(_) => failures = 0,
                Err(problem) => {
                    failures += 1;
                    tracing::debug!(problem, failures, "memory vectors: backfill failed");
                    // Calls nudge while claims are missing: the pause is slept whole.
                    let until = Instant::now() + backoff(failures);
                    while !self.vectors.stopping() && Instant::now() < until {
                        self.vectors.wait(until - Instant::now());
                    }
                }
            }
        }
    }

    /// Gives one batch of missing claims their vectors; the number given.
    fn fill_batch(&self) -> Result<usize, String> {
        let batch_size = self.vectors.provider.settings.batch_size;
        let (space, mut todo) = {
            let index = self.vectors.index();
            (index.space().cloned(), index.missing(batch_size))
        };
        if todo.is_empty() {
            return Ok(0);
        }
        let mut given = 0;
        if let Some(space) = &space {
            // Another process may have stored them since this one indexed them.
            let stored = self
                .store
                .read(|c| claims::stored_vectors(c, &space.model, &todo))
                .map_err(|error| error.message)?;
            let mut index = self.vectors.index();
            for (seq, vector) in &stored {
                if index.fill(*seq, vector) {
                    todo.retain(|missing| missing != seq);
                    given += 1;
                }
            }
        }
        if todo.is_empty() {
            return Ok(given);
        }
        let policy = self
            .policy
            .get(&self.store)
            .map_err(|error| error.message)?
            .ok_or("no policy is applied: claims cannot be redacted before embedding")?;
        let mut passages = Vec::new();
        for seq in &todo {
            let parts = self
                .store
                .read(|c| claims::passage_parts(c, *seq))
                .map_err(|error| error.message)?;
            if let Some((text, names)) = parts {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                passages.push((*seq, passage(&policy, &text, &names)));
            }
        }
        if passages.is_empty() {
            return Ok(given);
        }
        let texts: Vec<&str> = passages.iter().map(|(_, text)| text.as_str()).collect();
        let (answer_space, vectors) = self
            .vectors
            .provider
            .embed_batch(&texts)
            .map_err(|error| error.message)?;
        self.store
            .write(|transaction| {
                for ((seq, _), vector) in passages.iter().zip(&vectors) {
                    claims::store_vector(transaction, &answer_space.model, *seq, vector)?;
                }
                Ok(())
            })
            .map_err(|error| error.message)?;
        if space.as_ref() == Some(&answer_space) {
            let mut index = self.vectors.index();
            for ((seq, _), vector) in passages.iter().zip(&vectors) {
                index.fill(*seq, vector);
            }
        } else {
            // A first answer, or another model: the index starts over for it, and the next
            // refresh finds the vectors just stored.
            self.vectors.adopt(&answer_space);
            let mut index = self.vectors.index();
            refresh(&self.store, &mut index).map_err(|error| error.message)?;
        }
        Ok(given + passages.len())
    }
}
