//! The built binary serving MCP over HTTP (`serve --http 127.0.0.1:0`), for the suites
//! that test the transport, plus a minimal client: POST JSON-RPC, read the answer from
//! the JSON or SSE body, keep the session id.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long the server gets to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct HttpServer {
    child: Child,
    pub url: String,
    /// Every stderr line so far (JSON log lines).
    log: Arc<Mutex<Vec<String>>>,
}

/// What one HTTP request answered.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: one JSON object, or the `data:` lines of SSE.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }

    /// The answer to request `id`.
    pub fn answer(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|message| message["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to {id} in {:?}", self.body))
    }
}

impl HttpServer {
    /// Starts `manvault serve --http ADDRESS` on `workspace` with `env` added, and waits
    /// for its "serving" log line; if it exits first, its status and stderr lines.
    pub fn start(
        workspace: &Path,
        address: &str,
        env: &[(&str, &str)],
    ) -> Result<HttpServer, (ExitStatus, Vec<String>)> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_manvault"));
        command
            .args(["serve", "--http", address, "--workspace"])
            .arg(workspace)
            .env("LOG_LEVEL", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start manvault");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let started = Instant::now();
        loop {
            let serving = log
                .lock()
                .unwrap()
                .iter()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|line| line["message"] == "serving MCP over streamable HTTP")
                .and_then(|line| line["address"].as_str().map(str::to_owned));
            if let Some(address) = serving {
                return Ok(HttpServer {
                    child,
                    url: format!("http://{address}/mcp"),
                    log,
                });
            }
            if let Some(status) = child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100)); // let the reader finish
                let lines = log.lock().unwrap().clone();
                return Err((status, lines));
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "the server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The stderr log lines that parse as JSON.
    pub fn log(&self) -> Vec<Value> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The log lines once `ready` holds for them, waiting up to 10 s: a call's log line
    /// can reach the reader thread after its answer reached the client. Panics with the
    /// lines when it never holds.
    pub fn log_once(&self, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let lines = self.log();
            if ready(&lines) {
                return lines;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the log never showed what was awaited: {lines:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn terminate(&self) {
        super::send_sigterm(&self.child);
    }

    /// Waits for the process to exit, at most `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// POSTs one JSON-RPC message with an optional bearer token and session id.
    pub fn post(&self, token: Option<&str>, session: Option<&str>, message: &Value) -> Reply {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(token) = token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("Mcp-Protocol-Version", "2025-11-25");
        }
        let mut response = request
            .send(message.to_string())
            .expect("the server answers");
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.to_string(),
                    value.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        Reply {
            status: response.status().as_u16(),
            headers,
            body: response.body_mut().read_to_string().unwrap_or_default(),
        }
    }

    /// Opens a session (initialize + initialized); its id.
    pub fn open_session(&self, token: Option<&str>) -> String {
        let reply = self.post(
            token,
            None,
            &json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "manvault-tests", "version": "0" }
                }
            }),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        let session = reply
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let ready = self.post(
            token,
            Some(&session),
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        );
        assert_eq!(ready.status, 202, "{}", ready.body);
        session
    }

    /// `tools/call` in `session`: the JSON-RPC answer.
    pub fn call_tool(
        &self,
        token: Option<&str>,
        session: &str,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Value {
        let reply = self.post(
            token,
            Some(session),
            &json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": tool, "arguments": arguments }
            }),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.answer(id)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
