//! A manuals root in a temporary folder, and compact renderings of results to compare.

use std::fs;
use std::path::{Path, PathBuf};

use manvault::error::{ErrorCode, ToolResult};
use manvault::manual::{ManualIndex, Node};

pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        Fixture {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    /// Writes `content` at `relative` (e.g. "m/guide/a.md"), creating folders.
    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("file in a folder")).expect("create folders");
        fs::write(path, content).expect("write file");
        self
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn index(&self) -> ManualIndex {
        ManualIndex::build(self.root()).expect("index builds")
    }
}

/// One index over a single manual "m" holding one file.
pub fn index_with(path: &str, content: &str) -> (Fixture, ManualIndex) {
    let fixture = Fixture::new();
    fixture.write(&format!("m/{path}"), content);
    let index = fixture.index();
    (fixture, index)
}

/// `"h2 3-10 Title #anchor ^parent_id"`: every field of a node of the file `path` (whose
/// nodes are `nodes`) in one comparable line.
pub fn render(path: &str, nodes: &[Node], node: &Node) -> String {
    let mut line = format!(
        "{} {} {}-{} {}",
        node.kind.as_str(),
        node.level,
        node.line_start,
        node.line_end,
        node.title
    );
    if let Some(anchor) = &node.anchor {
        line.push_str(&format!(" #{anchor}"));
    }
    if let Some(parent) = node.parent {
        let parent = &nodes[parent as usize];
        line.push_str(&format!(" ^{}", parent.id(path)));
    }
    line
}

pub fn outline(path: &str, content: &str) -> Vec<String> {
    let (_fixture, index) = index_with(path, content);
    let nodes = index.file("m", path).expect("file listed").nodes();
    nodes.iter().map(|node| render(path, nodes, node)).collect()
}

pub fn error_code<T>(result: ToolResult<T>) -> ErrorCode {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(error) => error.code,
    }
}
