//! The tripwire of the security suites: proves that an operation under a root neither
//! read, listed, created nor changed anything outside it.
//!
//! It records the tree around the root, sets every access time there to 1970 and,
//! afterwards, requires those access times untouched (Linux `relatime` refreshes an access
//! time that old on any read or listing) and the tree identical.

use std::collections::BTreeMap;
use std::fs::{self, File, FileTimes};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, PartialEq)]
pub enum Node {
    Folder,
    File {
        content: Vec<u8>,
        modified: SystemTime,
        mode: u32,
    },
    Link(PathBuf),
}

/// The outside world's state, and a tripwire on reads of it.
pub struct OutsideWatch {
    before: BTreeMap<PathBuf, Node>,
    base: PathBuf,
    vault: PathBuf,
}

/// An access time no read leaves in place under `relatime`.
fn tripwire_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1)
}

impl OutsideWatch {
    pub fn arm(base: &Path, vault: &Path) -> OutsideWatch {
        let before = snapshot(base, vault);
        for (path, node) in &before {
            if !matches!(node, Node::Link(_)) {
                File::open(path)
                    .unwrap()
                    .set_times(FileTimes::new().set_accessed(tripwire_time()))
                    .unwrap();
            }
        }
        OutsideWatch {
            before,
            base: base.to_owned(),
            vault: vault.to_owned(),
        }
    }

    #[track_caller]
    pub fn assert_untouched(self) {
        for (path, node) in &self.before {
            if !matches!(node, Node::Link(_)) {
                let accessed = fs::symlink_metadata(path).unwrap().accessed().unwrap();
                assert_eq!(
                    accessed,
                    tripwire_time(),
                    "{} outside the root was read or listed",
                    path.display()
                );
            }
        }
        assert_eq!(
            snapshot(&self.base, &self.vault),
            self.before,
            "the outside of the root changed"
        );
    }
}

/// Everything under `base` except the root `vault`, without following links; also used on
/// a root itself (with a `vault` that does not exist) to show a refused call changed nothing.
pub fn snapshot(base: &Path, vault: &Path) -> BTreeMap<PathBuf, Node> {
    let mut nodes = BTreeMap::new();
    let mut pending = vec![base.to_owned()];
    while let Some(folder) = pending.pop() {
        nodes.insert(folder.clone(), Node::Folder);
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let metadata = fs::symlink_metadata(&path).unwrap();
            if path == vault {
                continue;
            } else if metadata.is_symlink() {
                nodes.insert(path.clone(), Node::Link(fs::read_link(&path).unwrap()));
            } else if metadata.is_dir() {
                pending.push(path);
            } else {
                let node = Node::File {
                    content: fs::read(&path).unwrap(),
                    modified: metadata.modified().unwrap(),
                    mode: metadata.mode(),
                };
                nodes.insert(path, node);
            }
        }
    }
    nodes
}
