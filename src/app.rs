//! The application: configuration and domain state behind one protocol-agnostic entry
//! point, `App::call(tool, arguments)`. The MCP server and the `manvault call` CLI both
//! go through it, so validation, dispatch and the per-call log line are the same for both.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, TryLockError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::adaptive::Adaptive;
use crate::artifact::Rounds;
use crate::call::CallContext;
use crate::config::Config;
use crate::contract;
use crate::error::{ToolError, ToolResult};
use crate::manual::find::{FindSettings, Finder};
use crate::manual::vectors::{IndexSource, SectionVectors};
use crate::manual::{CatalogStore, ManualIndex};
use crate::memory::Memory;
use crate::paths::{Root, STALE_TEMP_AGE};
use crate::progress::{IndexProgress, ProgressLog};
use crate::validate::InputValidators;
use crate::vault;
use crate::vault::find::VaultFinder;

pub struct App {
    pub(crate) config: Config,
    validators: InputValidators,
    /// The working index: built by the first call that needs it (so `initialize` answers
    /// at once), then refreshed before every use so edits to manuals show without a
    /// restart. Only the refresh holds this lock.
    manuals: Mutex<Option<ManualIndex>>,
    /// The running totals of the build or refresh that holds `manuals` (`None` when none
    /// runs), so that a call waiting for the index reports progress and can be cancelled.
    loading: Mutex<Option<IndexProgress>>,
    /// The snapshot of the working index that queries read, replaced when a refresh
    /// changed something; a query holds its own `Arc`, never a lock, however long it runs.
    /// Shared with the section vectors' worker, which embeds what it holds.
    published: Arc<RwLock<Option<Arc<ManualIndex>>>>,
    /// Opened by the first vault call, then held for the life of the server (see
    /// `paths::Root` for why the descriptor is kept); `workspace::prepare` made the folder.
    vault: OnceLock<Root>,
    /// Search state: derived corpus, traces, synonyms, and the section vectors (with
    /// their background worker) when `EMBEDDINGS_URL` is set.
    pub(crate) finder: Finder,
    /// Search statistics and the tuning of the Stage 4 thresholds (ADAPTIVE_*).
    pub adaptive: Adaptive,
    /// What the agent read from each vault file and what the previous audit rounds saw:
    /// the marginal gain of `vault_coverage`'s stop rule (see `artifact::rounds`).
    rounds: Mutex<Rounds>,
    /// `vault_find` traces, and the normalised text of the vault's files that
    /// `vault_find` and `vault_search` keep between calls (`vault::forms`).
    pub(crate) vault_finder: VaultFinder,
    /// The memory store, opened by the first memory call (like the vault root: a failure
    /// is not remembered).
    memory: OnceLock<Memory>,
}

impl App {
    /// The application over `config`. Starts the sweep of temporary files that killed
    /// writers left in the vault, on its own thread so that nothing waits for the walk.
    ///
    /// With `EMBEDDINGS_URL` set, it also starts the worker that embeds the manuals'
    /// sections in the background (`manual::vectors`); without it, no thread and no
    /// network access is added.
    pub fn new(config: Config) -> App {
        sweep_vault_in_background(&config);
        let published = Arc::new(RwLock::new(None));
        let vectors = SectionVectors::from_config(&config).map(Arc::new);
        if let Some(vectors) = &vectors {
            vectors.start(Arc::new(PublishedManuals(Arc::clone(&published))));
        }
        App {
            finder: Finder::with_vectors(FindSettings::from_config(&config), vectors),
            adaptive: Adaptive::open(&config),
            vault_finder: VaultFinder::new(vault::find::FindSettings::from_config(&config)),
            config,
            validators: InputValidators::compile(),
            manuals: Mutex::new(None),
            loading: Mutex::new(None),
            published,
            vault: OnceLock::new(),
            rounds: Mutex::new(Rounds::default()),
            memory: OnceLock::new(),
        }
    }

    /// Loads the manuals and waits until the section index holds them all (benchmarks:
    /// searches timed or counted with the index). A server never waits: its searches
    /// scan what the index does not hold yet while a background update writes it.
    pub fn complete_section_index(&self) -> ToolResult<()> {
        self.with_manuals(&CallContext::local(), |index| {
            self.finder.complete_section_index(index);
            Ok(())
        })
    }

    /// Reads the search's stores and dictionaries that need no manual listing (see
    /// `Finder::prepare`): called by a server on a thread of its own at start, beside the
    /// manual index's build.
    pub fn prepare_search(&self) {
        self.finder.prepare();
    }

    /// Brings the search's corpus in line with the published snapshot of the manual
    /// index: called by a server's start right after it built the index, on the same
    /// thread, so that the first `manual_find` finds the corpus of that generation made
    /// and reuses it (issue 16: the first call made it itself, after waiting for the
    /// build, and the index's thread sat idle meanwhile). The call still refreshes the
    /// index first; a change since the build gives a new generation, which its own sync
    /// brings the corpus up to.
    pub fn sync_search(&self) {
        let published = self
            .published
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(index) = published {
            self.finder.corpus(&index);
        }
    }

    /// Validates and runs one tool call without credentials (the CLI, benchmarks, tests);
    /// `None` when no tool has that name.
    pub fn call(&self, tool: &str, arguments: Value) -> Option<ToolResult<Value>> {
        self.call_with(tool, arguments, &CallContext::local())
    }

    /// Validates and runs one tool call made in `context`; `None` when no tool has that
    /// name. The log line names the actor.
    pub fn call_with(
        &self,
        tool: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Option<ToolResult<Value>> {
        let spec = contract::tool(tool)?;
        let started = Instant::now();
        let result = self
            .validators
            .check(tool, &arguments)
            .map_err(|error| match spec.domain {
                "memory" => self.memory_rejected(context, tool, error),
                _ => error,
            })
            .and_then(|()| {
                contract::dispatch(self, tool, arguments, context)
                    .expect("every listed tool is dispatched")
            });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let actor = context.actor();
        match &result {
            Ok(_) => tracing::info!(tool, actor, ok = true, elapsed_ms),
            Err(_) if context.is_cancelled() => {
                tracing::info!(tool, actor, ok = false, cancelled = true, elapsed_ms)
            }
            Err(error) => {
                tracing::warn!(
                    tool,
                    actor,
                    ok = false,
                    elapsed_ms,
                    code = error.code.as_str()
                )
            }
        }
        Some(result)
    }

    /// Runs a tool on behalf of the server's own features (resources, completion) and
    /// reads its answer as the tool's typed output, so those features go through exactly
    /// the validation, bounds and log line of a client's call.
    pub(crate) fn call_for<O: serde::de::DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
        context: &CallContext,
    ) -> ToolResult<O> {
        let value = self
            .call_with(tool, arguments, context)
            .unwrap_or_else(|| panic!("{tool} is a served tool"))?;
        Ok(serde_json::from_value(value).expect("a tool's answer matches its output schema"))
    }

    /// Runs `query` on a snapshot of the manual index, first bringing the index in line
    /// with the files.
    /// The files of a build or refresh count as `call`'s progress (before the work of the
    /// query itself), and a call cancelled while another call's build runs stops at once.
    pub(crate) fn with_manuals<T>(
        &self,
        call: &CallContext,
        query: impl FnOnce(&ManualIndex) -> ToolResult<T>,
    ) -> ToolResult<T> {
        let snapshot = self.manual_snapshot(call)?;
        query(&snapshot)
    }

    /// Refreshes the working index and returns the snapshot of it, publishing a new one
    /// when the refresh changed anything. A long build also writes a progress line to the
    /// log every few seconds.
    fn manual_snapshot(&self, call: &CallContext) -> ToolResult<Arc<ManualIndex>> {
        let mut working = self.lock_manuals(call)?;
        let mut files_reported = FilesReported::default();
        let mut log = ProgressLog::start();
        let mut progress = |running: IndexProgress| {
            *self.loading.lock().unwrap_or_else(PoisonError::into_inner) = Some(running);
            log.update(running);
            files_reported.report(call, running);
        };
        let refreshed = match working.as_mut() {
            Some(index) => index.refresh_reporting(&mut progress),
            None => ManualIndex::build_reporting(
                &self.config.manuals_root,
                self.config.max_manual_file_bytes,
                CatalogStore::open(&self.config.cache_dir, &self.config.vault_root),
                &mut progress,
            )
            .map(|built| {
                *working = Some(built);
                true
            }),
        };
        *self.loading.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let changed = refreshed.map_err(manuals_unreadable)?;
        let mut published = self
            .published
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if changed || published.is_none() {
            let index = working.as_ref().expect("built above");
            *published = Some(Arc::new(index.snapshot()));
            if let Some(vectors) = self.finder.vectors() {
                vectors.nudge();
            }
        }
        Ok(Arc::clone(published.as_ref().expect("published above")))
    }

    /// The working index, once the build or refresh another call runs has finished; its
    /// files count as `call`'s progress meanwhile, and a cancel ends the wait.
    fn lock_manuals(&self, call: &CallContext) -> ToolResult<MutexGuard<'_, Option<ManualIndex>>> {
        let mut waited_for = FilesReported::default();
        loop {
            let working = match self.manuals.try_lock() {
                Ok(working) => working,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    call.check_cancelled()?;
                    let running = *self.loading.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(running) = running {
                        waited_for.report(call, running);
                    }
                    std::thread::sleep(INDEX_WAIT_POLL);
                    continue;
                }
            };
            waited_for.finish(call);
            return Ok(working);
        }
    }

    /// Ends a one-shot process (`manvault call`) once its answers are written: what has
    /// an effect at its end is dropped (the statistics flushed, the memory's worker
    /// stopped, the vault root closed), while the manuals' index and the search's caches,
    /// whose teardown frees every node and text one by one (a tenth of a first call at
    /// 220 MB) and changes nothing on disk, are left to the process's exit; only the
    /// index's change watch is stopped first, as its barrier folder is on disk. A server
    /// drops its `App` as usual.
    pub fn end_process(self) {
        self.stop_watching();
        let App {
            manuals,
            published,
            finder,
            ..
        } = self;
        std::mem::forget((manuals, published, finder));
    }

    /// Stops the manual index's change watch, whose barrier folder is on disk: what a
    /// process that leaves the index to its exit must end first (`end_process`, a server's
    /// end, where a background thread may still hold the `App`). Waits for a build or
    /// refresh of the index in progress.
    pub fn stop_watching(&self) {
        if let Some(index) = self
            .manuals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            index.stop_watching();
        }
    }
}

/// How often a call waiting for another call's index build looks at its progress and at
/// its own cancel flag (the cancel bar is 100 ms).
const INDEX_WAIT_POLL: Duration = Duration::from_millis(10);

/// The index files a call has reported as its progress so far.
#[derive(Default)]
struct FilesReported {
    announced: u64,
    done: u64,
}

impl FilesReported {
    fn report(&mut self, call: &CallContext, running: IndexProgress) {
        if self.announced == 0 {
            self.announced = running.files_found;
            call.expect_work(self.announced, "files");
        }
        // Also when nothing more is done: that sends a report the throttle held back.
        let done = running.files.min(self.announced).max(self.done);
        call.work_done(done - self.done);
        self.done = done;
    }

    /// The build this call waited for has ended: its files are done.
    fn finish(&self, call: &CallContext) {
        if self.done < self.announced {
            call.work_done(self.announced - self.done);
        }
    }
}

/// The snapshot `App` publishes, as the section vectors' worker reads it: as it is, never
/// refreshed by the worker (the calls refresh it).
struct PublishedManuals(Arc<RwLock<Option<Arc<ManualIndex>>>>);

impl IndexSource for PublishedManuals {
    fn with_index(&self, visit: &mut dyn FnMut(&ManualIndex)) {
        let snapshot = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(index) = snapshot {
            visit(&index);
        }
    }
}

impl App {
    /// The vault root, opened on first use. A failure is not remembered, so a vault folder
    /// fixed by the operator works on the next call without a restart.
    pub fn vault(&self) -> ToolResult<&Root> {
        if let Some(root) = self.vault.get() {
            return Ok(root);
        }
        let root = vault::open_root(&self.config.vault_root)?;
        Ok(self.vault.get_or_init(|| root))
    }
}

impl App {
    /// A memory tool's input that failed its schema: the error in the memory vocabulary,
    /// and the call audited like any other memory call.
    fn memory_rejected(&self, context: &CallContext, tool: &str, error: ToolError) -> ToolError {
        let translated = error.in_memory_vocabulary();
        if let Ok(memory) = self.memory() {
            let call = crate::memory::Call::new(context.actor(), crate::clock::now_millis());
            memory.finish(&call, tool, Some(translated.code.as_str()));
        }
        translated
    }

    /// The memory store, opened on first use; INTERNAL naming the setting at fault when
    /// it cannot be (the next call tries again).
    pub(crate) fn memory(&self) -> ToolResult<&Memory> {
        if let Some(memory) = self.memory.get() {
            return Ok(memory);
        }
        // The store and the audit log live under the vault by default: make sure it exists.
        self.vault().map_err(|error| {
            ToolError::memory(
                crate::error::MemoryCode::Internal,
                error.message,
                error.details.unwrap_or_default(),
            )
        })?;
        let memory = Memory::open(
            &self.config.memory,
            crate::memory::Provider::from_config(self.config.embeddings.as_ref()),
            &self.config.vault_root,
            self.config.hard_max_chars as usize,
        )
        .map_err(|problem| {
            tracing::error!(problem, "the memory store cannot be opened");
            ToolError::memory(
                crate::error::MemoryCode::Internal,
                "the memory store cannot be opened; check MEMORY_DB_PATH",
                json!({ "problem": problem }),
            )
        })?;
        Ok(self.memory.get_or_init(|| memory))
    }
}

impl App {
    /// The stop rule's bookkeeping; see `artifact::rounds`.
    pub(crate) fn rounds(&self) -> MutexGuard<'_, Rounds> {
        self.rounds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The manuals root itself cannot be read; the message names the setting, never the
/// server path.
fn manuals_unreadable(error: std::io::Error) -> ToolError {
    ToolError::not_found("MANUALS_ROOT cannot be read; check the server's configuration")
        .with_details(json!({ "setting": "MANUALS_ROOT", "error": error.kind().to_string() }))
}

/// Removes the writers' leftovers (`paths::sweep`) from the vault, if it exists yet, on a
/// thread of its own; one log line says what was removed.
fn sweep_vault_in_background(config: &Config) {
    let vault_root = config.vault_root.clone();
    let spawned = std::thread::Builder::new()
        .name("vault-sweep".into())
        .spawn(move || {
            let Ok(root) = Root::open(&vault_root) else {
                return;
            };
            let swept = root.sweep_temp_files(std::time::SystemTime::now(), STALE_TEMP_AGE);
            if swept.removed > 0 {
                tracing::info!(
                    removed = swept.removed,
                    removed_bytes = swept.removed_bytes,
                    "removed temporary files left by interrupted writes"
                );
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(error = %error, "could not start the sweep of temporary files");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::config::RootFlags;

    fn app(workspace: &std::path::Path) -> App {
        app_with(workspace, &[])
    }

    /// Every progress report of a call, as `(done, total)`.
    type Reports = Arc<Mutex<Vec<(u64, u64)>>>;

    /// A call with a progress sink that keeps every report.
    fn call_recording_progress() -> (CallContext, Reports) {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&reports);
        let call = CallContext::local().with_progress(move |report| {
            sink.lock().unwrap().push((report.done, report.total));
        });
        (call, reports)
    }

    #[test]
    fn a_build_counts_its_files_as_the_calls_progress() {
        let dir = crate::test_support::tree(&[
            ("manuals/m/a.md", "# A\n\ntext\n"),
            ("manuals/m/b.md", "# B\n\ntext\n"),
            ("manuals/n/c.md", "# C\n"),
        ]);
        let app = app(dir.path());
        let (call, reports) = call_recording_progress();
        app.with_manuals(&call, |_| Ok(())).unwrap();
        let reports = reports.lock().unwrap().clone();
        assert_eq!(reports.first(), Some(&(0, 3)), "{reports:?}");
        assert_eq!(reports.last(), Some(&(3, 3)), "{reports:?}");
        assert!(app.loading.lock().unwrap().is_none());
    }

    /// A call that arrives while another builds the index follows that build's files and,
    /// cancelled, stops waiting at once; uncancelled, it completes that progress and runs.
    #[test]
    fn a_call_waiting_for_a_build_reports_its_progress_and_stops_when_cancelled() {
        let dir = crate::test_support::tree(&[("manuals/m/a.md", "# A\n")]);
        let app = app(dir.path());
        let app = &app;
        let building = app.manuals.lock().unwrap();
        *app.loading.lock().unwrap() = Some(IndexProgress {
            files_found: 10,
            files: 4,
            ..IndexProgress::default()
        });
        std::thread::scope(|scope| {
            let (cancelled_call, cancelled_reports) = call_recording_progress();
            let flag = cancelled_call.cancel_flag();
            let cancelled = scope.spawn(move || app.with_manuals(&cancelled_call, |_| Ok(())));
            let (waiting_call, waiting_reports) = call_recording_progress();
            let waiting = scope.spawn(move || app.with_manuals(&waiting_call, |_| Ok(())));
            let start = Instant::now();
            // The files are announced at once, the 4 done within the throttle's 50 ms.
            while !cancelled_reports.lock().unwrap().contains(&(4, 10))
                || !waiting_reports.lock().unwrap().contains(&(4, 10))
            {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no progress reported"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(cancelled_reports.lock().unwrap()[0], (0, 10));
            let cancelled_at = Instant::now();
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let error = cancelled.join().unwrap().unwrap_err();
            assert!(cancelled_at.elapsed() < Duration::from_millis(100));
            assert_eq!(error.details.unwrap()["cancelled"], true);
            *app.loading.lock().unwrap() = None;
            drop(building);
            waiting.join().unwrap().unwrap();
            let reports = waiting_reports.lock().unwrap().clone();
            assert_eq!(reports.first(), Some(&(0, 10)), "{reports:?}");
            assert_eq!(reports.last(), Some(&(11, 11)), "{reports:?}");
        });
    }

    /// A start syncs the search's corpus after its build, so the first search reuses it
    /// instead of deriving it again; an edit after the start is still found.
    #[test]
    fn the_first_search_reuses_the_corpus_the_start_synced_and_sees_later_edits() {
        let dir = crate::test_support::tree(&[
            ("manuals/m/a.md", "# A\n\n育児休暇の申請\n"),
            ("manuals/n/b.md", "# B\n\ntext\n"),
        ]);
        let app = app(dir.path());
        app.sync_search();
        assert_eq!(app.finder.manuals_resolved(), 0, "nothing published yet");
        app.with_manuals(&CallContext::local(), |_| Ok(())).unwrap();
        app.sync_search();
        assert_eq!(app.finder.manuals_resolved(), 2, "synced at the start");
        let found = app.call("manual_find", json!({ "query": "育児休暇" }));
        assert!(found.unwrap().unwrap().to_string().contains("a.md"));
        assert_eq!(
            app.finder.manuals_resolved(),
            2,
            "the first search synced nothing"
        );

        std::fs::write(dir.path().join("manuals/n/b.md"), "# B\n\n育児休暇の規程\n").unwrap();
        let found = app.call("manual_find", json!({ "query": "育児休暇の規程" }));
        assert!(found.unwrap().unwrap().to_string().contains("b.md"));
        assert_eq!(
            app.finder.manuals_resolved(),
            3,
            "the changed manual resolved again"
        );
    }

    fn app_with(workspace: &std::path::Path, settings: &[(&str, &str)]) -> App {
        let flags = RootFlags {
            workspace: Some(workspace.to_path_buf()),
            ..RootFlags::default()
        };
        let lookup = |name: &str| {
            settings
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        };
        App::new(Config::load(&lookup, &flags).expect("configuration"))
    }

    #[test]
    fn manual_list_names_the_files_skipped_for_their_size() {
        let big = "# Big\n\n".to_owned() + &"長い本文。".repeat(100);
        let dir = crate::test_support::tree(&[
            ("manuals/m/a.md", "# A\n\ntext\n"),
            ("manuals/m/big.md", &big),
        ]);
        let app = app_with(dir.path(), &[("MAX_MANUAL_FILE_BYTES", "1000")]);
        let list = app.call("manual_list", json!({})).unwrap().unwrap();
        assert_eq!(list["items"][0]["file_count"], 1);
        assert_eq!(
            list["items"][0]["skipped"],
            json!([{ "path": "big.md", "size_bytes": big.len(), "reason": "too_large" }])
        );
        let found = app.call("manual_find", json!({ "query": "長い本文" }));
        let trace_id = found.unwrap().unwrap()["trace_id"].clone();
        let hits = app.call("manual_hits", json!({ "trace_id": trace_id }));
        let hits = hits.unwrap().unwrap().to_string();
        assert!(!hits.contains("big.md"), "{hits}");
        let plain = app_with(dir.path(), &[]);
        let list = plain.call("manual_list", json!({})).unwrap().unwrap();
        assert_eq!(list["items"][0]["file_count"], 2);
        assert!(list["items"][0].get("skipped").is_none());
    }

    /// Semantic recall is off without `EMBEDDINGS_URL`: no section vectors (so no worker
    /// thread and no network access) and answers without a trace of it.
    #[test]
    fn without_an_embeddings_url_nothing_semantic_exists_or_shows() {
        let dir = crate::test_support::tree(&[("manuals/m/a.md", "# A\n\nsome text\n")]);
        let app = app(dir.path());
        assert!(app.finder.vectors().is_none());
        let found = app.call("manual_find", json!({ "query": "text" }));
        let found = found.unwrap().unwrap();
        assert!(found["summary"].get("semantic").is_none(), "{found}");
        assert!(found["summary"]["signal_coverage"]
            .get("semantic")
            .is_none());
    }

    /// With `EMBEDDINGS_URL` naming a server that is not there, the worker starts and a
    /// search answers lexically at once, saying why.
    #[test]
    fn an_embeddings_server_that_is_down_leaves_lexical_answers_with_a_warning() {
        let dir = crate::test_support::tree(&[("manuals/m/a.md", "# A\n\nsome text\n")]);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let app = app_with(
            dir.path(),
            &[("EMBEDDINGS_URL", &url), ("EMBEDDINGS_TIMEOUT_MS", "500")],
        );
        assert!(app.finder.vectors().is_some());
        // The first call builds the index and the search's corpus (seconds in a debug
        // build on a loaded machine); the second shows what the provider costs.
        app.call("manual_find", json!({ "query": "some" }))
            .unwrap()
            .unwrap();
        let started = Instant::now();
        let found = app.call("manual_find", json!({ "query": "text" }));
        let found = found.unwrap().unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(found["summary"]["candidates"], 1);
        let semantic = &found["summary"]["semantic"];
        assert_eq!(semantic["used"], false, "{found}");
        assert!(semantic["warning"]
            .as_str()
            .is_some_and(|warning| warning.contains("cannot be reached")));
        assert!(
            !found.to_string().contains(&url),
            "no server address in answers"
        );
    }

    /// A query in progress (here: one that waits inside `with_manuals`) must not keep
    /// another manual tool waiting: the other call refreshes and answers from a snapshot.
    #[test]
    fn a_running_query_does_not_block_other_manual_tools() {
        let dir = crate::test_support::tree(&[("manuals/m/a.md", "# A\n\ntext\n")]);
        let app = app(dir.path());
        let (started, wait_started) = mpsc::channel();
        let (answered, wait_answered) = mpsc::channel();
        std::thread::scope(|scope| {
            let app = &app;
            let slow = scope.spawn(move || {
                app.with_manuals(&CallContext::local(), |_| {
                    started.send(()).expect("send");
                    Ok(wait_answered.recv_timeout(Duration::from_secs(10)).is_ok())
                })
            });
            wait_started.recv().expect("the query started");
            std::fs::write(dir.path().join("manuals/m/b.md"), "# B\n").expect("write");
            let toc = app
                .call("manual_toc", json!({ "manual_id": "m" }))
                .expect("a tool")
                .expect("answered while the query runs");
            answered.send(()).expect("send");
            assert_eq!(toc["items"].as_array().map(Vec::len), Some(2), "{toc}");
            let unblocked = slow.join().expect("no panic").expect("ok");
            assert!(unblocked, "the other call answered before the query ended");
        });
    }
}
