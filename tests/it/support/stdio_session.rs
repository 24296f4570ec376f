//! The built binary serving MCP over stdio as a well-behaved client drives it (for raw bytes and faults, see `stdio_server`): newline-delimited
//! JSON-RPC, initialised with protocol 2025-06-18.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

const PROTOCOL_VERSION: &str = "2025-06-18";

pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Messages read while waiting for an answer (notifications), in order.
    pub notifications: Vec<Value>,
}

impl Session {
    pub fn start(workspace: &Path, env: &BTreeMap<String, String>) -> Session {
        let mut command = Command::new(env!("CARGO_BIN_EXE_manvault"));
        command
            .arg("serve")
            .env("WORKSPACE_ROOT", workspace)
            .env("LOG_LEVEL", "warn")
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("start manvault");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = Session {
            child,
            stdin,
            stdout,
            next_id: 1,
            notifications: Vec::new(),
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "conformance", "version": "1"}}),
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "initialize: {init}"
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to server");
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads until the response with the same id (rmcp may interleave).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read from server");
            assert!(read > 0, "server closed stdout while waiting for {method}");
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line}"));
            if message["id"] == json!(id) {
                return message;
            }
            self.notifications.push(message);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
