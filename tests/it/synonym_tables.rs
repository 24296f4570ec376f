//! The generators of the builtin synonym tables (`src/text/synonyms/*.py`) are Python
//! scripts run by hand when a table is regenerated; their restraint rules (which JMdict
//! entries and glosses become translation pairs) have fixture tests in Python, run here so
//! that `cargo test` covers them. Standard library only: no virtualenv, no network, no
//! bytecode left in the source tree (`-B`).

use std::path::Path;
use std::process::Command;

#[test]
fn the_jmdict_generator_keeps_only_the_pairs_its_rules_allow() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/text/synonyms");
    let output = Command::new("python3")
        .args(["-B", "test_build_jmdict.py"])
        .current_dir(&folder)
        .output()
        .expect("python3 runs (CI and the README's test command need Python 3)");
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("OK"), "{report}");
}
