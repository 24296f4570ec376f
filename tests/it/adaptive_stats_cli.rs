//! `manvault stats` on statistics files written through the adaptive API.

use std::process::Command;

use crate::support::adaptive::{Traffic, Workspace, DAY, START};
use manvault::adaptive::Adaptive;

fn stats(workspace: &Workspace) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_manvault"))
        .args(["stats", "--workspace"])
        .arg(workspace.dir.path())
        .env_remove("ADAPTIVE_STATS_PATH")
        .env_remove("VAULT_ROOT")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[test]
fn the_report_shows_each_day_and_each_change() {
    let workspace = Workspace::new(&[]);
    let adaptive = Adaptive::open(&workspace.config);
    for n in 0..3 * 96 {
        Traffic::EASY.search(&adaptive, n, START + n * 900);
    }
    adaptive.flush(START + 3 * DAY);
    let before = std::fs::read(workspace.stats_path()).unwrap();

    let (ok, report) = stats(&workspace);
    assert!(ok);
    let rows: Vec<Vec<&str>> = report
        .lines()
        .filter(|line| line.starts_with("2026-"))
        .map(|line| line.split_whitespace().collect())
        .collect();
    let days: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    assert_eq!(days, ["2026-11-20", "2026-11-21", "2026-11-22"], "{report}");
    for row in &rows {
        assert_eq!(row[1], "96", "{report}");
        assert_eq!(row[3], "1.000", "every used ref was a candidate: {report}");
    }
    // The first day starts at the defaults and ends loosened; the changes are listed.
    assert_eq!(rows[0][8], "3->2", "{report}");
    assert_eq!(rows[0][9], "0.80->0.83", "{report}");
    let changes = report
        .lines()
        .filter(|line| line.contains("  policy  "))
        .count();
    assert!(changes >= 2, "{report}");
    assert_eq!(
        std::fs::read(workspace.stats_path()).unwrap(),
        before,
        "read only"
    );
}

#[test]
fn without_statistics_the_report_says_so() {
    let workspace = Workspace::new(&[]);
    let (ok, report) = stats(&workspace);
    assert!(ok);
    assert_eq!(report, "no searches recorded yet\n");
}
