//! `vault_replace` racing an editor that saves the same file by rename, without our
//! lock: every editor save survives (a replace prepared against an older version is a
//! `conflict`), however the two interleave. Without a lock the editor honours, one thing
//! cannot be prevented: a save that lands in the instant between the replace's last check
//! and its rename is displaced for the time of one more rename, which puts it back.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::workspace::Workspace;

const FILE: &str = "notes/shared.md";
const RACE: Duration = Duration::from_secs(3);

/// The number after `key: ` on its line.
fn counter(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{key}: ")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} line in {text:?}"))
}

/// An editor saving every 1-4 ms: reads the file, bumps its own counter, writes a
/// temporary file and renames it over the original, as editors save. Returns the saves
/// and how many of them it later found overwritten by older content (lost).
fn editor(file: &Path, stop: &AtomicBool) -> (u64, u64) {
    let temporary = file.with_file_name(".editor-save");
    let (mut saved, mut lost, mut saves) = (0u64, 0u64, 0u64);
    let mut jitter = 7u64;
    while !stop.load(Ordering::Relaxed) {
        let text = settled_read(file, saved);
        if counter(&text, "editor") != saved {
            lost += 1;
        }
        saved += 1;
        let agent_line = text
            .lines()
            .find(|line| line.starts_with("agent: "))
            .unwrap();
        fs::write(&temporary, format!("editor: {saved}\n{agent_line}\n")).unwrap();
        fs::rename(&temporary, file).unwrap();
        saves += 1;
        jitter = jitter
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_micros(1000 + (jitter >> 33) % 3000));
    }
    if counter(&fs::read_to_string(file).unwrap(), "editor") != saved {
        lost += 1;
    }
    (saves, lost)
}

/// The file as the editor reads it before a save. A save that lands between a replace's
/// last check and its exchange is put back by the replace at once (the older version is
/// under the name for the time of one more rename); a read in that moment is not a lost
/// save, so a read without the editor's last counter is repeated for up to a second (a
/// loaded machine may pause the server's thread between the two renames) and counts as
/// lost only if the save never comes back.
fn settled_read(file: &Path, saved: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let text = fs::read_to_string(file).unwrap();
        if counter(&text, "editor") == saved || Instant::now() >= deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn replaces_never_undo_an_editors_save() {
    let workspace = Workspace::new(None);
    workspace.write(FILE, "editor: 0\nagent: 0\n");
    let path = workspace.vault.join(FILE);
    let stop = Arc::new(AtomicBool::new(false));
    let editing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || editor(&path, &stop))
    };
    let (mut replaced, mut refused) = (0u64, 0u64);
    let started = Instant::now();
    while started.elapsed() < RACE {
        let read = workspace
            .call("vault_read", json!({"path": FILE, "full": true}))
            .unwrap();
        let agent = counter(read["text"].as_str().unwrap(), "agent");
        let answer = workspace.call(
            "vault_replace",
            json!({"path": FILE, "find": format!("agent: {agent}\n"),
                   "replace": format!("agent: {}\n", agent + 1)}),
        );
        match answer {
            Ok(_) => replaced += 1,
            Err(error) if error["code"] == "conflict" || error["code"] == "not_found" => {
                refused += 1
            }
            Err(error) => panic!("{error}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (saves, lost) = editing.join().unwrap();
    assert!(
        saves > 100 && replaced > 10,
        "too little racing: {saves} saves, {replaced} replaces"
    );
    assert_eq!(
        lost, 0,
        "{lost} of {saves} editor saves were undone by {replaced} replaces ({refused} refused)"
    );
}
