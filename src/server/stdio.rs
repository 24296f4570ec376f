//! The stdio framing: reads newline-delimited JSON-RPC from stdin, answers what is not a
//! well-formed message itself, and passes the rest to rmcp through an in-process pipe;
//! one task owns stdout, so the lines of concurrent answers never interleave.
//!
//! rmcp's own stdio transport ignores a line that is not JSON (so a client waits forever
//! for the answer to a truncated request), drops a line over its limit without a word,
//! answers a malformed message without its id, takes a notification or a response before
//! `initialize` for a fatal protocol error (the server exits), answers `tools/call` with
//! parameters of the wrong shape as an unknown method, and lets two requests in flight
//! share an id, so that one of the answers is lost. Here, per line:
//!
//! | line | answer |
//! |---|---|
//! | blank | none |
//! | over [`MAX_LINE_BYTES`] | -32600, with the id if the line's first 64 KiB name it |
//! | not JSON (cut short, a lone surrogate escape, nesting deeper than 128) | -32700, with the id if it can be read |
//! | JSON but not a JSON-RPC 2.0 message (a batch, no `jsonrpc`, a `method` that is not a string, an id that is neither a string nor an integer) | -32600, with the id when valid |
//! | a request whose `params` do not fit its method | -32602 with the id |
//! | a request whose id is in use by a request still in flight | -32600 with the id; the first request's answer still comes |
//! | a notification or a response before `initialize` | none (ignored) |
//! | anything else | passed to rmcp |
//!
//! On SIGINT or SIGTERM (how stdio clients stop a server that does not exit at the end of
//! its input) the reader stops taking lines, the requests in flight get their answers
//! (for up to [`SHUTDOWN_GRACE`]), then rmcp sees the input end and the server returns
//! as at the end of stdin. The signal is raced against the whole of the serving, not
//! only the reading: a client that stops reading stdout (hung, crashed) fills the pipe,
//! and the writer, rmcp and the reader block behind it; the end then waits for nothing
//! unbounded. What is not written [`WRITE_GRACE`] after the drain's bound is dropped, a
//! blocked write to stdout included, and the server returns all the same. A second signal
//! ends the process at once (`ShutdownSignals` in `mod.rs`).
//!
//! **Invariant:** knows JSON-RPC framing and no tool; writes nothing but whole JSON-RPC
//! lines to stdout.

use std::collections::HashSet;
use std::error::Error;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestMethod, CancelTaskMethod, ClientJsonRpcMessage, ClientNotification,
    ClientRequest, CompleteRequestMethod, ConstString, DiscoverRequestMethod,
    GetPromptRequestMethod, GetSkillRequestMethod, GetTaskMethod, InitializeResultMethod,
    ListPromptsRequestMethod, ListResourceTemplatesRequestMethod, ListResourcesRequestMethod,
    ListSkillsRequestMethod, ListToolsRequestMethod, NumberOrString, PingRequestMethod,
    ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod, SetLevelRequestMethod,
    SubscribeRequestMethod, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    UpdateTaskMethod,
};
use rmcp::ServiceExt;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Notify};

use super::{McpServer, ShutdownSignals};
use crate::error::clip;

/// The longest line read, its newline included: rmcp's limit, and the size MCP clients
/// assume. Documented in the README.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of a line over the limit is kept to find its id in.
const ID_SCAN_BYTES: usize = 64 * 1024;

/// The in-process pipes to and from rmcp, and the queue of lines for stdout.
const PIPE_BYTES: usize = 1024 * 1024;
const QUEUED_LINES: usize = 64;

/// How long the requests in flight at SIGINT/SIGTERM may take to answer. Short: a
/// client signals a server that did not exit when its input ended (MCP's stdio shutdown),
/// so it has waited already, and writes are atomic (temp + rename) if a call is cut.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long after [`SHUTDOWN_GRACE`] the last answers get to be written to stdout. A
/// client that does not read them any more (hung, crashed, its pipe full) must not hold
/// the end: what is not written by then is dropped.
const WRITE_GRACE: Duration = Duration::from_secs(1);

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The requests rmcp types (every variant of `ClientRequest` but the custom one). One
/// of these that arrives as a custom request had parameters its type refused.
const TYPED_METHODS: [&str; 21] = [
    InitializeResultMethod::VALUE,
    PingRequestMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

/// Serves `server` on stdin/stdout until stdin ends, rmcp stops, or SIGINT/SIGTERM.
pub(super) async fn serve(server: McpServer) -> Result<(), Box<dyn Error>> {
    // Installed before the first line is read: a signal sent at once is not lost to the
    // default action (which ends the process where it stands).
    let signals = ShutdownSignals::install().await?;
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_on(server, stdin, stdout, signals.received()).await
}

/// Serves until `input` ends, rmcp stops, or `stop` is ready (then Ok, whatever rmcp
/// said about its input ending early).
///
/// The stop is raced against the whole of the serving, not only against the reading of
/// stdin: a client that stops reading stdout fills the pipe, the writer blocks, rmcp and
/// then the reader block behind it, and a reader waiting to pass a line on never sees a
/// signal. Once `stop` is ready, the reader stops taking lines and drains
/// ([`SHUTDOWN_GRACE`]), rmcp sees its input end, and the answers queued are written;
/// what is not done [`WRITE_GRACE`] after the drain's bound is dropped, blocked writes to
/// stdout included, and the server returns.
async fn serve_on(
    server: McpServer,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn Error>> {
    let (to_rmcp, rmcp_input) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_output, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (lines, queue) = mpsc::channel(QUEUED_LINES);
    let session = Arc::new(Session::default());
    let stop_reading = Arc::new(Notify::new());
    let writer = tokio::spawn(write_lines(output, queue));
    let relay = tokio::spawn(relay_answers(
        BufReader::new(from_rmcp),
        lines.clone(),
        Arc::clone(&session),
    ));
    let reader = tokio::spawn(read_messages(
        BufReader::with_capacity(ID_SCAN_BYTES, input),
        to_rmcp,
        lines,
        Arc::clone(&session),
        {
            let stop_reading = Arc::clone(&stop_reading);
            async move { stop_reading.notified().await }
        },
    ));
    let tasks = [
        reader.abort_handle(),
        relay.abort_handle(),
        writer.abort_handle(),
    ];
    let serving = async {
        let served = async {
            let running = server.serve((rmcp_input, rmcp_output)).await?;
            running.waiting().await?;
            Ok::<(), Box<dyn Error>>(())
        }
        .await;
        // rmcp is done (stdin ended, or it stopped): stop reading, send what is queued.
        reader.abort();
        let _ = relay.await;
        let _ = writer.await;
        served
    };
    tokio::pin!(serving, stop);
    tokio::select! {
        served = &mut serving => return served,
        () = &mut stop => {}
    }
    // Said here, not by the reader: a reader blocked behind a client that does not read
    // would never say it.
    let in_flight = session.in_flight_ids().len();
    tracing::info!(in_flight, "shutting down: finishing the calls in flight");
    stop_reading.notify_one();
    if tokio::time::timeout(SHUTDOWN_GRACE + WRITE_GRACE, serving)
        .await
        .is_err()
    {
        tracing::warn!(
            "answers not written by the end of the shutdown grace period; dropping them"
        );
        for task in tasks {
            task.abort();
        }
    }
    tracing::info!("shut down");
    Ok(())
}

/// What the reader and the relay share about the session.
#[derive(Default)]
struct Session {
    /// `initialize` was passed on: rmcp takes notifications and responses from now on.
    initialized: AtomicBool,
    /// Ids of the requests passed on and not answered yet ([`id_key`]).
    in_flight: Mutex<HashSet<String>>,
    /// Woken when the last request in flight is answered, for [`Session::drain`]. Its
    /// permit may be stale (the set emptied while no one drained): the drain looks again.
    emptied: Notify,
}

impl Session {
    /// Takes `key` for a request; false if a request in flight has it.
    fn begin(&self, key: String) -> bool {
        self.in_flight_ids().insert(key)
    }

    fn end(&self, key: &str) {
        let mut ids = self.in_flight_ids();
        if ids.remove(key) && ids.is_empty() {
            self.emptied.notify_one();
        }
    }

    /// Waits until every request passed on has been answered, or [`SHUTDOWN_GRACE`] is
    /// over; how many are left unanswered.
    async fn drain(&self) -> usize {
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        while !self.in_flight_ids().is_empty() {
            let woken = tokio::time::timeout_at(deadline, self.emptied.notified()).await;
            if woken.is_err() {
                return self.in_flight_ids().len();
            }
        }
        0
    }

    fn in_flight_ids(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request id as a set key: `7` and `"7"` are different ids.
fn id_key(id: &NumberOrString) -> String {
    match id {
        NumberOrString::Number(number) => format!("n{number}"),
        NumberOrString::String(text) => format!("s{text}"),
    }
}

/// The same key for an id read from JSON.
fn value_id_key(id: &Value) -> Option<String> {
    match id {
        Value::Number(number) => number.as_i64().map(|n| format!("n{n}")),
        Value::String(text) => Some(format!("s{text}")),
        _ => None,
    }
}

/// One line of stdin.
enum Line {
    Whole(Vec<u8>),
    /// Longer than [`MAX_LINE_BYTES`]: its first [`ID_SCAN_BYTES`] (the rest was skipped).
    TooLong(Vec<u8>),
    End,
}

/// Reads one line (without its newline) within the limit. A last line without a
/// newline counts as a line.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (line.is_empty(), too_long) {
                (true, false) => Line::End,
                (_, true) => Line::TooLong(line),
                (false, false) => Line::Whole(line),
            });
        }
        let newline = memchr::memchr(b'\n', available);
        let taken = newline.map_or(available.len(), |at| at + 1);
        let content = &available[..newline.unwrap_or(available.len())];
        if !too_long && line.len() + taken > MAX_LINE_BYTES {
            too_long = true;
            line.truncate(ID_SCAN_BYTES);
        }
        let room = if too_long {
            ID_SCAN_BYTES.saturating_sub(line.len())
        } else {
            content.len()
        };
        line.extend_from_slice(&content[..content.len().min(room)]);
        reader.consume(taken);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong(line)
            } else {
                Line::Whole(line)
            });
        }
    }
}

/// What to do with a line.
#[derive(Debug, PartialEq)]
enum Triage {
    PassOn,
    Answer(Vec<u8>),
    Ignore,
}

/// Reads lines until the input ends or `stop` is ready; then waits for the answers in
/// flight ([`Session::drain`]) before it ends the input rmcp reads.
async fn read_messages(
    mut input: impl AsyncBufRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    lines: mpsc::Sender<Vec<u8>>,
    session: Arc<Session>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let read = tokio::select! {
            read = read_line(&mut input) => read,
            () = &mut stop => {
                let in_flight = session.drain().await;
                if in_flight > 0 {
                    tracing::warn!(in_flight, "shutdown grace period over; leaving calls unfinished");
                }
                break;
            }
        };
        let triage = match read {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong(start)) => Triage::Answer(error_line(
                INVALID_REQUEST,
                "the message is longer than the 16 MiB line limit",
                recover_id(&start),
            )),
            Ok(Line::Whole(line)) => match triage(&line, &session) {
                Triage::PassOn => {
                    let passed = to_rmcp.write_all(&line).await;
                    if passed.and(to_rmcp.write_all(b"\n").await).is_err() {
                        break;
                    }
                    continue;
                }
                other => other,
            },
        };
        if let Triage::Answer(answer) = triage {
            if lines.send(answer).await.is_err() {
                break;
            }
        }
    }
    // Dropping `to_rmcp` tells rmcp that the input ended.
}

/// Decides about one whole line (without its newline).
fn triage(line: &[u8], session: &Session) -> Triage {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Triage::Ignore;
    }
    let message = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => message,
        Err(_) => return explain(line),
    };
    let initialized = session.initialized.load(Ordering::Acquire);
    match message {
        ClientJsonRpcMessage::Request(request) => {
            let method = request.request.method().to_string();
            let id = request.id.clone().into_json_value();
            if matches!(request.request, ClientRequest::CustomRequest(_))
                && TYPED_METHODS.contains(&method.as_str())
            {
                let message = format!("the params of {} do not fit the method", clip(&method));
                return Triage::Answer(error_line(INVALID_PARAMS, &message, id));
            }
            if !session.begin(id_key(&request.id)) {
                return Triage::Answer(error_line(
                    INVALID_REQUEST,
                    "a request with this id is still in flight; use another id",
                    id,
                ));
            }
            if method == InitializeResultMethod::VALUE {
                session.initialized.store(true, Ordering::Release);
            }
            Triage::PassOn
        }
        ClientJsonRpcMessage::Notification(_)
        | ClientJsonRpcMessage::Response(_)
        | ClientJsonRpcMessage::Error(_)
            if !initialized =>
        {
            tracing::debug!("a notification or response before initialize was ignored");
            Triage::Ignore
        }
        ClientJsonRpcMessage::Notification(notification) => {
            if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            {
                // rmcp sends no answer to a cancelled request: its id is free again.
                if let Some(request_id) = &cancelled.params.request_id {
                    session.end(&id_key(request_id));
                }
            }
            Triage::PassOn
        }
        ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => Triage::PassOn,
    }
}

/// The answer to a line rmcp's message types refuse: why, with the id when it can be
/// read. Notifications and responses get none (JSON-RPC answers neither).
fn explain(line: &[u8]) -> Triage {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(error) => {
            let message = format!("not JSON: {error}");
            return Triage::Answer(error_line(PARSE_ERROR, &message, recover_id(line)));
        }
    };
    let invalid =
        |message: &str, id: Value| Triage::Answer(error_line(INVALID_REQUEST, message, id));
    let Value::Object(object) = &value else {
        return invalid(
            "a message is one JSON object (batches are not supported)",
            Value::Null,
        );
    };
    let id = object
        .get("id")
        .filter(|id| value_id_key(id).is_some())
        .cloned();
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("\"jsonrpc\" must be \"2.0\"", id.unwrap_or_default());
    }
    match (object.get("method"), object.get("id"), id) {
        (Some(Value::String(_)), Some(_), Some(id)) => Triage::Answer(error_line(
            INVALID_PARAMS,
            "the params do not fit the method",
            id,
        )),
        (Some(Value::String(_)), Some(_), None) => {
            invalid("an id is a string or an integer", Value::Null)
        }
        // A notification or a response that does not parse: nothing to answer.
        (Some(Value::String(_)), None, _) => Triage::Ignore,
        (None, _, _) if object.contains_key("result") || object.contains_key("error") => {
            Triage::Ignore
        }
        (Some(_), _, id) => invalid("\"method\" must be a string", id.unwrap_or_default()),
        (None, _, id) => invalid(
            "neither a request, a notification nor a response",
            id.unwrap_or_default(),
        ),
    }
}

/// A JSON-RPC error answer as a line.
fn error_line(code: i64, message: &str, id: Value) -> Vec<u8> {
    let answer =
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": clip(message)}});
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The `"id"` member of the top-level object of a line that does not parse (cut short,
/// too deep, a bad escape elsewhere, or only its start kept), if it is a valid id and
/// comes before the damage; else `null`. Scans without recursion, so depth costs nothing.
fn recover_id(line: &[u8]) -> Value {
    let mut scanner = Scanner {
        bytes: &line[..line.len().min(ID_SCAN_BYTES)],
        at: 0,
    };
    scanner.top_level_id().unwrap_or_default()
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn top_level_id(&mut self) -> Option<Value> {
        self.skip_whitespace();
        self.expect(b'{')?;
        loop {
            self.skip_whitespace();
            let key = self.string()?;
            let is_id = &self.bytes[key] == b"\"id\"";
            self.skip_whitespace();
            self.expect(b':')?;
            self.skip_whitespace();
            let start = self.at;
            self.value()?;
            if is_id {
                let id: Value = serde_json::from_slice(&self.bytes[start..self.at]).ok()?;
                return value_id_key(&id).map(|_| id);
            }
            self.skip_whitespace();
            self.expect(b',')?;
        }
    }

    fn next(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn expect(&mut self, wanted: u8) -> Option<()> {
        (self.next()? == wanted).then_some(())
    }

    fn skip_whitespace(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// A string: where it is, quotes included.
    fn string(&mut self) -> Option<std::ops::Range<usize>> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                b'"' => return Some(start..self.at),
                _ => {}
            }
        }
    }

    /// Skips one value of any depth; `None` when it does not end within the bytes.
    fn value(&mut self) -> Option<()> {
        match *self.bytes.get(self.at)? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.bytes.get(self.at)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                // A number, `true`, `false` or `null`: up to the next delimiter, which
                // must be there (a number cut by the end may be missing digits).
                let start = self.at;
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|byte| !b",}] \t\r\n".contains(byte))
                {
                    self.at += 1;
                }
                (self.at > start && self.at < self.bytes.len()).then_some(())
            }
        }
    }
}

/// Copies rmcp's lines to the stdout queue, freeing the id of each answer it sends.
async fn relay_answers(
    mut from_rmcp: impl AsyncBufRead + Unpin,
    lines: mpsc::Sender<Vec<u8>>,
    session: Arc<Session>,
) {
    /// What a line of rmcp's says about itself: an answer has an id and no method.
    #[derive(Deserialize)]
    struct Envelope {
        id: Option<Value>,
        method: Option<IgnoredAny>,
    }
    loop {
        let mut line = Vec::new();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Ok(Envelope {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice(&line)
        {
            if let Some(key) = value_id_key(&id) {
                session.end(&key);
            }
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if lines.send(line).await.is_err() {
            return;
        }
    }
}

/// The one writer of stdout: whole lines, each flushed.
async fn write_lines(mut output: impl AsyncWrite + Unpin, mut queue: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = queue.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::task::Poll;

    use super::*;
    use crate::server::tests::poll_once;

    #[test]
    fn ids_are_recovered_from_damaged_lines_before_the_damage() {
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        let cases: [(&str, Value); 9] = [
            (r#"{"jsonrpc":"2.0","id":7,"method":"#, json!(7)),
            (
                r#" { "id" : "a\"b" , "method": "x", "params": {"#,
                json!("a\"b"),
            ),
            (
                &format!(r#"{{"deep":{deep},"x":"}}","id":-3,"params":[[["#),
                json!(-3),
            ),
            (
                r#"{"method":"x","params":{"id":5},"id":6,"bad":\ud83d}"#,
                json!(6),
            ),
            (r#"{"method":"x","params":{"id":5}"#, Value::Null),
            (r#"{"id":12"#, Value::Null),
            (r#"{"id":{"a":1},"method":"x"}"#, Value::Null),
            (r#"{"id":1.5,"method":"x"}"#, Value::Null),
            ("[1,2", Value::Null),
        ];
        for (line, id) in cases {
            assert_eq!(recover_id(line.as_bytes()), id, "{line:.60}");
        }
    }

    #[tokio::test]
    async fn lines_over_the_limit_keep_their_start_and_the_next_line_is_whole() {
        let mut input = format!(r#"{{"id":9,"x":"{}"}}"#, "y".repeat(MAX_LINE_BYTES)).into_bytes();
        input.extend_from_slice(b"\n{\"next\":1}\nlast without newline");
        let mut reader = BufReader::with_capacity(1000, input.as_slice());
        match read_line(&mut reader).await.unwrap() {
            Line::TooLong(start) => {
                assert_eq!(start.len(), ID_SCAN_BYTES);
                assert_eq!(recover_id(&start), json!(9));
            }
            _ => panic!("not refused"),
        }
        assert!(
            matches!(read_line(&mut reader).await.unwrap(), Line::Whole(l) if l == b"{\"next\":1}")
        );
        assert!(
            matches!(read_line(&mut reader).await.unwrap(), Line::Whole(l) if l == b"last without newline")
        );
        assert!(matches!(read_line(&mut reader).await.unwrap(), Line::End));
    }

    #[test]
    fn before_initialize_only_requests_pass() {
        let session = Session::default();
        let ignored = [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "  ",
        ];
        for line in ignored {
            assert_eq!(triage(line.as_bytes(), &session), Triage::Ignore, "{line}");
        }
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        assert_eq!(triage(initialize.as_bytes(), &session), Triage::PassOn);
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(triage(initialized.as_bytes(), &session), Triage::PassOn);
    }

    /// The drain is woken by the answer to the last request in flight, not by a timer:
    /// polled right after that answer it is done. A wake-up left from an earlier moment
    /// the set was empty does not end it early.
    #[tokio::test]
    async fn the_drain_ends_when_the_last_request_in_flight_is_answered() {
        let session = Session::default();
        assert!(session.begin("n1".into()));
        session.end("n1");
        assert!(session.begin("n2".into()));
        assert!(session.begin("n3".into()));
        let drain = session.drain();
        tokio::pin!(drain);
        assert_eq!(poll_once(&mut drain).await, Poll::Pending);
        session.end("n2");
        assert_eq!(poll_once(&mut drain).await, Poll::Pending);
        session.end("n3");
        assert_eq!(poll_once(&mut drain).await, Poll::Ready(0));
    }

    #[test]
    fn an_id_is_free_again_once_answered_or_cancelled() {
        let session = Session::default();
        let list = r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#;
        assert_eq!(triage(list.as_bytes(), &session), Triage::PassOn);
        assert!(matches!(
            triage(list.as_bytes(), &session),
            Triage::Answer(_)
        ));
        session.end("sx");
        assert_eq!(triage(list.as_bytes(), &session), Triage::PassOn);
        session.initialized.store(true, Ordering::Release);
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}"#;
        assert_eq!(triage(cancel.as_bytes(), &session), Triage::PassOn);
        assert_eq!(triage(list.as_bytes(), &session), Triage::PassOn);
    }
}
