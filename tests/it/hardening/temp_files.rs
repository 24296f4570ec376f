//! Temporary files left by killed writers are removed at the next start: only ours (by
//! name), only old ones, never through a link.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use manvault::paths::{Root, Swept, STALE_TEMP_AGE};

use crate::support::stdio_server::{empty_workspace, RawServer};

fn write_aged(path: &Path, content: &str, age: Duration) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

const OLD: Duration = Duration::from_secs(3600);

#[test]
fn the_sweep_removes_old_temporary_files_and_nothing_else() {
    let temp = tempfile::tempdir().unwrap();
    let vault = temp.path().join("vault");
    let outside = temp.path().join("outside");
    write_aged(&vault.join(".manvault-tmp-1-0"), "stale", OLD);
    write_aged(&vault.join("a/b/.manvault-tmp-2-7"), "stale too", OLD);
    write_aged(&vault.join(".system/.manvault-tmp-3-1"), "stale", OLD);
    write_aged(
        &vault.join("a/.manvault-tmp-4-0"),
        "in progress",
        Duration::ZERO,
    );
    write_aged(&vault.join("a/old-note.md"), "a note", OLD);
    write_aged(
        &vault.join("a/.manvault-tmp-keep/inner.md"),
        "a folder",
        OLD,
    );
    write_aged(&outside.join("target.txt"), "outside", OLD);
    write_aged(&outside.join("dir/.manvault-tmp-9-9"), "outside temp", OLD);
    symlink(outside.join("target.txt"), vault.join(".manvault-tmp-link")).unwrap();
    symlink(outside.join("dir"), vault.join("linked")).unwrap();

    let root = Root::open(&vault).unwrap();
    let swept = root.sweep_temp_files(SystemTime::now(), STALE_TEMP_AGE);
    assert_eq!(
        swept,
        Swept {
            removed: 3,
            removed_bytes: 5 + 9 + 5,
            kept_recent: 1,
            appends_undone: 0,
        }
    );
    for gone in [
        ".manvault-tmp-1-0",
        "a/b/.manvault-tmp-2-7",
        ".system/.manvault-tmp-3-1",
    ] {
        assert!(!vault.join(gone).exists(), "{gone}");
    }
    for kept in [
        "a/.manvault-tmp-4-0",
        "a/old-note.md",
        "a/.manvault-tmp-keep/inner.md",
    ] {
        assert!(vault.join(kept).exists(), "{kept}");
    }
    assert!(fs::symlink_metadata(vault.join(".manvault-tmp-link")).is_ok());
    assert!(outside.join("target.txt").exists());
    assert!(outside.join("dir/.manvault-tmp-9-9").exists());
}

#[test]
fn a_server_start_sweeps_the_vault() {
    let workspace = empty_workspace();
    let stale = workspace.path().join("vault/notes/.manvault-tmp-77-0");
    write_aged(&stale, &"x".repeat(100_000), OLD);
    let server = RawServer::start(workspace.path(), &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while stale.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!stale.exists(), "the leftover is still there");
    drop(server);
}
