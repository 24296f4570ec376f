//! A workspace in a temporary folder with an `App` over it, for tests that drive the tool
//! layer through `App::call` (validation and dispatch included) rather than a server.

use std::fs;
use std::path::PathBuf;

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::Value;

pub struct Workspace {
    _temp: tempfile::TempDir,
    pub vault: PathBuf,
    pub app: App,
}

impl Workspace {
    /// An empty vault and the manuals at `manuals`, or an empty manuals folder.
    pub fn new(manuals: Option<PathBuf>) -> Workspace {
        let temp = tempfile::tempdir().unwrap();
        let vault = temp.path().join("vault");
        // What `manvault serve` does at start (`workspace::prepare`); `App` creates nothing.
        fs::create_dir(&vault).unwrap();
        let flags = RootFlags {
            workspace: Some(temp.path().to_owned()),
            manuals,
            vault: Some(vault.clone()),
        };
        let app = App::new(Config::load(&|_| None, &flags).unwrap());
        Workspace {
            _temp: temp,
            vault,
            app,
        }
    }

    #[allow(dead_code)] // not every test file writes files itself
    pub fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let path = self.vault.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    /// The answer, or the error body.
    pub fn call(&self, tool: &str, arguments: Value) -> Result<Value, Value> {
        match self.app.call(tool, arguments).expect("a served tool") {
            Ok(answer) => Ok(answer),
            Err(error) => Err(error.to_json()),
        }
    }
}

/// A fresh copy of the example workspace (`examples/workspace`), for tests that start the
/// server binary on it.
pub fn example_copy() -> tempfile::TempDir {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(repo.join("examples/workspace/."))
        .arg(workspace.path())
        .status()
        .unwrap();
    assert!(status.success());
    workspace
}
