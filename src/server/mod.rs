//! The MCP glue: serves the tool table, resources, prompts, completion and logging with
//! rmcp, over stdio or streamable HTTP (`http`), and converts between MCP types and
//! `App::call_with` / the protocol-free `resources`, `prompts` and `completion` modules.
//! Nothing else lives here: a search change never touches this folder, a protocol change
//! never touches the domains.

mod auth;
mod client_log;
pub(crate) mod http;
mod rate;
mod stdio;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CompletionInfo, ContentBlock, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate, Role,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::app::App;
use crate::call::{CallContext, ProgressReport};
use crate::completion::Target;
use crate::contract::{ToolSpec, TOOLS};
use crate::error::{ErrorCode as ToolCode, ToolError, ToolResult};
use crate::{clock, prompts, resources};
use client_log::SessionLog;

/// Sent once a session: what the agent should know before its first call, and the
/// conventions every answer follows (so no tool description repeats them).
const INSTRUCTIONS: &str =
    "manvault searches a folder of manuals exhaustively and writes notes into a vault. \
Call get_tooling_guide first when unsure; manual_find answers with a trace id and next_actions, \
follow them instead of reading whole files; copy manual text into the vault with bridge_copy_* \
so it never passes through the conversation. Answers leave out what is empty, zero, false or \
at its default; pass refs and next_actions params as they are; a list goes on while it gives \
next_offset (pass it as offset).";

/// The rmcp handler: the shared application, the tool list built once, and the state of
/// one session (its log forwarding). Over HTTP each session gets its own.
#[derive(Clone)]
pub(crate) struct McpServer {
    app: Arc<App>,
    tools: Arc<Vec<Tool>>,
    log: Arc<SessionLog>,
}

impl McpServer {
    pub(crate) fn new(app: Arc<App>) -> McpServer {
        McpServer {
            app,
            tools: Arc::new(served_tools()),
            log: Arc::new(SessionLog::open()),
        }
    }

    /// The server for a new session: the same application and tools, its own log.
    fn for_new_session(&self) -> McpServer {
        McpServer {
            app: Arc::clone(&self.app),
            tools: Arc::clone(&self.tools),
            log: Arc::new(SessionLog::open()),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes the stream; `stdio` answers
    /// malformed lines itself and passes the rest to rmcp.
    pub(crate) async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error>> {
        stdio::serve(self).await
    }

    /// Runs `work` on a blocking thread (handlers do file I/O and CPU-bound search, so
    /// they stay off the reactor) inside the session's span, so its log events reach the
    /// session. The call's context carries the actor, a progress sink when the request
    /// has a progress token, and the cancellation flag: on `notifications/cancelled` the
    /// flag is raised and the work is still awaited, so nothing runs on after the answer
    /// and nothing is left half done. A panic in `work` becomes an internal error.
    async fn blocking<T: Send + 'static>(
        &self,
        request: &RequestContext<RoleServer>,
        work: impl FnOnce(&App, &CallContext) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        self.log.attach(&request.peer);
        let app = Arc::clone(&self.app);
        let (call, progress) = call_context(request);
        let cancel = call.cancel_flag();
        let span = self.log.span();
        let mut task = tokio::task::spawn_blocking(move || span.in_scope(|| work(&app, &call)));
        let done = tokio::select! {
            done = &mut task => done,
            () = request.ct.cancelled() => {
                cancel.store(true, Ordering::Relaxed);
                let cancelled_at = Instant::now();
                let done = task.await;
                let stopped_after_ms = cancelled_at.elapsed().as_millis() as u64;
                tracing::info!(stopped_after_ms, "cancelled call stopped");
                done
            }
        };
        // The context was dropped with the work: the last progress goes out before the answer.
        if let Some(progress) = progress {
            let _ = progress.await;
        }
        done.map_err(|e| ErrorData::internal_error(format!("request task failed: {e}"), None))
    }
}

/// The per-call context of a request: the actor the HTTP layer authenticated (else
/// local) and, when the request asks for progress, a sink that forwards it as
/// `notifications/progress` in order; the forwarding task ends once the context is gone.
fn call_context(request: &RequestContext<RoleServer>) -> (CallContext, Option<JoinHandle<()>>) {
    let call = match auth::actor_of(&request.extensions) {
        Some(actor) => CallContext::for_actor(actor),
        None => CallContext::local(),
    };
    let Some(token) = request.meta.get_progress_token() else {
        return (call, None);
    };
    let (sender, mut reports) = mpsc::unbounded_channel::<ProgressReport>();
    let peer = request.peer.clone();
    let forwarding = tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let progress = ProgressNotificationParam::new(token.clone(), report.done as f64)
                .with_total(report.total as f64)
                .with_message(report.message);
            if peer.notify_progress(progress).await.is_err() {
                break;
            }
        }
    });
    let call = call.with_progress(move |report| {
        // A closed channel means the request is over; nothing is waiting for progress.
        let _ = sender.send(report);
    });
    (call, Some(forwarding))
}

/// The tools `tools/list` serves, in table order; `manvault tools --json` prints the same
/// list, so what a person inspects is what a client gets.
pub fn served_tools() -> Vec<Tool> {
    TOOLS.iter().map(mcp_tool).collect()
}

fn schema_object(text: &str) -> Arc<JsonObject> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Arc::new(map),
        _ => unreachable!("build.rs emits every schema as a JSON object"),
    }
}

fn mcp_tool(spec: &ToolSpec) -> Tool {
    Tool::new(
        spec.name,
        spec.description,
        schema_object(spec.input_schema),
    )
    .with_title(spec.title)
    .with_raw_output_schema(schema_object(spec.output_schema))
    .with_annotations(annotations(spec))
}

/// The hints that differ from MCP's defaults (read-only false, destructive true,
/// idempotent false, open world true): a missing hint means its default, and the
/// destructive and idempotent hints mean nothing for a read-only tool. The title is the
/// tool's own, served once beside them.
fn annotations(spec: &ToolSpec) -> ToolAnnotations {
    let mut hints = ToolAnnotations::new();
    hints.read_only_hint = spec.read_only.then_some(true);
    if !spec.read_only {
        hints.destructive_hint = (!spec.destructive).then_some(false);
        hints.idempotent_hint = spec.idempotent.then_some(true);
    }
    hints.open_world_hint = (!spec.open_world).then_some(false);
    hints
}

/// Success: the object as structuredContent plus its compact JSON as the one text block.
/// Failure: isError with one text block holding `{code, message, details?}` and no
/// structuredContent, since TypeScript clients validate structuredContent against the
/// outputSchema even on errors (DECISIONS.md).
pub(crate) fn to_call_result(result: ToolResult<Value>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_json().to_string())]),
    }
}

/// A failed resource read or prompt as a JSON-RPC error: a missing resource is
/// `RESOURCE_NOT_FOUND`, anything else the client can fix is invalid params; the tool
/// error's JSON is the error's data either way.
fn protocol_error(error: ToolError) -> ErrorData {
    let code = match error.code {
        ToolCode::NotFound => ErrorCode::RESOURCE_NOT_FOUND,
        _ => ErrorCode::INVALID_PARAMS,
    };
    ErrorData::new(code, error.message.clone(), Some(error.to_json()))
}

/// Arguments given as a JSON object of strings (prompt arguments).
fn string_arguments(arguments: Option<JsonObject>) -> Result<BTreeMap<String, String>, ErrorData> {
    arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| match value {
            Value::String(text) => Ok((name, text)),
            _ => Err(ErrorData::invalid_params(
                format!("prompt argument {name:?} must be a string"),
                None,
            )),
        })
        .collect()
}

/// Everything this server serves. Logging is deprecated in rmcp with protocol 2026-07-28
/// (SEP-2577); see `client_log`.
#[allow(deprecated)]
fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_resources()
        .enable_prompts()
        .enable_completions()
        .enable_logging()
        .build()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if crate::contract::tool(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", crate::error::clip(&name)),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = self
            .blocking(&context, move |app, call| {
                app.call_with(&name, arguments, call)
                    .expect("tool name checked above")
            })
            .await?;
        Ok(to_call_result(result).into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let page = self
            .blocking(&context, move |app, call| {
                app.list_resources(cursor.as_deref(), call)
            })
            .await?
            .map_err(protocol_error)?;
        let resources = page
            .resources
            .into_iter()
            .map(|listed| {
                let resource =
                    Resource::new(listed.uri, listed.name).with_mime_type(listed.mime_type);
                match listed.size {
                    Some(size) => resource.with_size(size),
                    None => resource,
                }
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page.next_cursor;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = resources::TEMPLATES
            .iter()
            .map(|template| {
                ResourceTemplate::new(template.uri_template, template.name)
                    .with_title(template.title)
                    .with_description(template.description)
            })
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let read = self
            .blocking(&context, move |app, call| app.read_resource(&uri, call))
            .await?
            .map_err(protocol_error)?;
        let contents = ResourceContents::TextResourceContents {
            uri: read.uri,
            mime_type: Some(read.mime_type.to_owned()),
            text: read.text,
            meta: Some(read.meta.into()),
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = prompts::PROMPTS
            .iter()
            .map(|spec| {
                let arguments = spec
                    .arguments
                    .iter()
                    .map(|arg| {
                        PromptArgument::new(arg.name)
                            .with_description(arg.description)
                            .with_required(arg.required)
                    })
                    .collect();
                Prompt::new(spec.name, Some(spec.description), Some(arguments))
                    .with_title(spec.title)
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = string_arguments(request.arguments)?;
        let today = clock::date(clock::now());
        let rendered =
            prompts::render(&request.name, &arguments, &today).map_err(protocol_error)?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, rendered.text)])
                .with_description(rendered.description)
                .into(),
        )
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let resolved: BTreeMap<String, String> = request
            .context
            .and_then(|c| c.arguments)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let target = match request.r#ref {
            Reference::Prompt(prompt) => Target::Prompt { name: prompt.name },
            Reference::Resource(resource) => Target::Resource {
                uri_template: resource.uri,
            },
            // A kind of reference this server does not know: nothing to offer.
            _ => return Ok(CompleteResult::new(CompletionInfo::default())),
        };
        let completion = self
            .blocking(&context, move |app, call| {
                app.complete(
                    &target,
                    &request.argument.name,
                    &request.argument.value,
                    &resolved,
                    call,
                )
            })
            .await?;
        let mut info = CompletionInfo::new(completion.values)
            .expect("completion keeps to CompletionInfo::MAX_VALUES");
        info.total = Some(u32::try_from(completion.total).unwrap_or(u32::MAX));
        info.has_more = Some(completion.has_more);
        Ok(CompleteResult::new(info))
    }

    /// Deprecated in rmcp with protocol 2026-07-28 (SEP-2577); see `client_log`.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log.attach(&context.peer);
        self.log.set_level(request.level);
        Ok(())
    }
}

/// SIGINT and SIGTERM, the two ways a supervisor or a terminal asks the server to stop.
/// Watched on a thread of their own (with a one-thread runtime) for the rest of the
/// process's life, not on the server's runtime: the graceful end goes on after that
/// runtime's shutdown (the change watch is stopped after it), and a second signal must be
/// seen until the very end.
///
/// The first signal starts the graceful end ([`ShutdownSignals::received`]); a second one
/// ends the process at once with 128 + the signal's number (130 for SIGINT, 143 for
/// SIGTERM: what a shell reports for a process the signal killed, the convention of
/// servers and CLIs alike), skipping the rest of the graceful end. Nothing is lost that
/// was written: every write is atomic (temp + rename); the change watch's barrier folder
/// is then left to the next start's sweep. The exit does no I/O first (not even a log
/// line: stderr may be a pipe no one reads), so nothing can hold it.
struct ShutdownSignals {
    first: Arc<Notify>,
}

/// A signal that asks the server to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    /// The exit status of a process ended by a second signal: 128 + the signal's number.
    fn exit_status(self) -> i32 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

impl ShutdownSignals {
    /// Installs the handlers (before it returns, so a signal sent at once is not lost to
    /// the default action, which ends the process where it stands) and starts watching.
    async fn install() -> Result<ShutdownSignals, String> {
        let first = Arc::new(Notify::new());
        let notified = Arc::clone(&first);
        let (installed, outcome) = oneshot::channel();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || watch_signals(&notified, installed))
            .map_err(|error| format!("cannot start the signal thread: {error}"))?;
        match outcome.await {
            Ok(Ok(())) => Ok(ShutdownSignals { first }),
            Ok(Err(message)) => Err(message),
            Err(_) => Err("the signal thread ended at its start".into()),
        }
    }

    /// Ready once the first SIGINT or SIGTERM has come (also when it came before).
    async fn received(self) {
        self.first.notified().await;
    }
}

/// The signal thread: installs the handlers, says so on `installed`, then waits for two
/// signals ([`wait_for_two`]) and ends the process on the second.
fn watch_signals(first: &Notify, installed: oneshot::Sender<Result<(), String>>) {
    let (runtime, (mut interrupt, mut terminate)) = match listen() {
        Ok(listening) => {
            let _ = installed.send(Ok(()));
            listening
        }
        Err(message) => {
            let _ = installed.send(Err(message));
            return;
        }
    };
    runtime.block_on(async {
        let next = async || {
            tokio::select! {
                _ = interrupt.recv() => StopSignal::Interrupt,
                _ = terminate.recv() => StopSignal::Terminate,
            }
        };
        let second = wait_for_two(next, first).await;
        std::process::exit(second.exit_status());
    });
}

/// The signal thread's runtime and its SIGINT and SIGTERM handlers.
fn listen() -> Result<(tokio::runtime::Runtime, (Signal, Signal)), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|error| format!("cannot start the signal thread: {error}"))?;
    let handlers = {
        let _inside = runtime.enter();
        let handler = |kind| {
            signal(kind).map_err(|error| format!("cannot install a signal handler: {error}"))
        };
        (
            handler(SignalKind::interrupt())?,
            handler(SignalKind::terminate())?,
        )
    };
    Ok((runtime, handlers))
}

/// Waits for a signal, tells `first` (no log line: the signal thread does no I/O, which a
/// full stderr pipe could block), and returns the next one.
async fn wait_for_two(mut next: impl AsyncFnMut() -> StopSignal, first: &Notify) -> StopSignal {
    next().await;
    first.notify_one();
    next().await
}

#[cfg(test)]
pub(crate) mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;

    use super::*;

    /// Polls `future` once.
    pub(crate) async fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *future).poll(cx))).await
    }

    /// The first signal starts the graceful end and the watch goes on; the second, of
    /// either kind, is the one the process exits on, with 128 + its number.
    #[tokio::test]
    async fn the_first_signal_starts_the_end_and_the_second_ends_the_process() {
        let (sender, mut signals) = mpsc::unbounded_channel();
        let first = Notify::new();
        let watch = wait_for_two(async || signals.recv().await.expect("open"), &first);
        let received = first.notified();
        tokio::pin!(watch, received);
        assert_eq!(poll_once(&mut watch).await, Poll::Pending);
        assert_eq!(poll_once(&mut received).await, Poll::Pending);
        sender.send(StopSignal::Terminate).unwrap();
        assert_eq!(poll_once(&mut watch).await, Poll::Pending);
        assert_eq!(poll_once(&mut received).await, Poll::Ready(()));
        sender.send(StopSignal::Interrupt).unwrap();
        assert_eq!(
            poll_once(&mut watch).await,
            Poll::Ready(StopSignal::Interrupt)
        );
        assert_eq!(StopSignal::Interrupt.exit_status(), 130);
        assert_eq!(StopSignal::Terminate.exit_status(), 143);
    }
}
