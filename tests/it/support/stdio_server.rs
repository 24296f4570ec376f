//! The built `manvault` binary as a raw stdio server: write any bytes, read the JSON-RPC
//! lines it answers with, kill it. For tests of the framing and of faults, where a real
//! client would not send what the test sends.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// An empty workspace the server accepts: it refuses to start without a manuals folder.
pub fn empty_workspace() -> tempfile::TempDir {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("manuals")).unwrap();
    workspace
}

pub const PROTOCOL_VERSION: &str = "2025-06-18";

pub struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// The server's stdout when no one reads it ([`RawServer::start_unread`]).
    unread: Option<ChildStdout>,
    /// What the server wrote to stderr so far.
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Says when stderr has ended.
    stderr_ended: Receiver<()>,
}

impl RawServer {
    /// Starts `manvault serve` on `workspace` with `env`; stderr is collected.
    pub fn start(workspace: &Path, env: &[(&str, &str)]) -> RawServer {
        let mut server = RawServer::start_unread(workspace, env);
        let stdout = BufReader::new(server.unread.take().unwrap());
        let (line_sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if line_sender.send(line).is_err() {
                    break;
                }
            }
        });
        server.lines = lines;
        server
    }

    /// As [`Self::start`], but the server's stdout is held open and never read, as by a
    /// client that hangs: once the pipe is full, the server's writes to it block.
    pub fn start_unread(workspace: &Path, env: &[(&str, &str)]) -> RawServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_manvault"))
            .arg("serve")
            .env("WORKSPACE_ROOT", workspace)
            .env("LOG_LEVEL", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start manvault");
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (ended, stderr_ended) = mpsc::channel();
        let written = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut chunk = [0; 4096];
            while let Ok(read @ 1..) = stderr_pipe.read(&mut chunk) {
                written.lock().unwrap().extend_from_slice(&chunk[..read]);
            }
            let _ = ended.send(());
        });
        RawServer {
            stdin: child.stdin.take(),
            unread: child.stdout.take(),
            child,
            lines: mpsc::channel().1,
            stderr,
            stderr_ended,
        }
    }

    /// How many bytes the server wrote to its unread stdout (the pipe holds 64 KiB).
    pub fn unread_bytes(&self) -> u64 {
        let stdout = self.unread.as_ref().expect("stdout is not read");
        rustix::io::ioctl_fionread(stdout).expect("FIONREAD on the stdout pipe")
    }

    /// Writes `bytes` as they are (no newline added).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().unwrap();
    }

    /// Writes one JSON-RPC message as a line.
    pub fn send(&mut self, message: &Value) {
        self.write_raw(format!("{message}\n").as_bytes());
    }

    /// The next line the server writes, parsed; `None` if none comes within `patience`.
    pub fn next_message(&self, patience: Duration) -> Option<Value> {
        match self.lines.recv_timeout(patience) {
            Ok(line) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}")),
            ),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Reads until the message with `id` (skipping others), within `patience`.
    pub fn reply_to(&self, id: &Value, patience: Duration) -> Value {
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_message(left) {
                Some(message) if message["id"] == *id => return message,
                Some(_) => continue,
                None => panic!("no reply to id {id} within {patience:?}"),
            }
        }
    }

    /// Sends a request and waits (10 s at most) for its reply.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply_to(&json!(id), Duration::from_secs(10))
    }

    /// `initialize` and `notifications/initialized`, as a client starts a session.
    pub fn initialize(&mut self, id: u64) -> Value {
        let reply = self.request(
            id,
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    /// A `tools/call`, waiting for its reply.
    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// Kills the server with SIGKILL and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes stdin, then as [`Self::exit`].
    pub fn finish(mut self, patience: Duration) -> (Option<std::process::ExitStatus>, String) {
        self.stdin = None;
        self.exit(patience)
    }

    /// Sends SIGTERM with stdin still open, then as [`Self::finish`].
    pub fn terminate(self, patience: Duration) -> (Option<std::process::ExitStatus>, String) {
        super::send_sigterm(&self.child);
        self.exit(patience)
    }

    /// Sends the signal `name` (`TERM`, `INT`), stdin still open.
    pub fn signal(&self, name: &str) {
        super::send_signal(&self.child, name);
    }

    /// Waits (at most `patience`) until stderr holds `needle`.
    pub fn await_stderr(&self, needle: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        loop {
            let written = String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned();
            if written.contains(needle) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on stderr within {patience:?}: {written}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (at most `patience`) for the server to exit, and returns its exit status
    /// (`None`: still running, then killed) and everything it wrote to stderr.
    pub fn exit(mut self, patience: Duration) -> (Option<std::process::ExitStatus>, String) {
        let deadline = Instant::now() + patience;
        let status = loop {
            match self.child.try_wait().unwrap() {
                Some(status) => break Some(status),
                None if Instant::now() >= deadline => {
                    self.kill();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        let _ = self.stderr_ended.recv_timeout(Duration::from_secs(5));
        let stderr = String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned();
        (status, stderr)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
