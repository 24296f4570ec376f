//! The one switch for tests that download packages (PyPI, npm): they run only when
//! `MANVAULT_NETWORK_TESTS=1`, which `.ci/run` sets. Without it such a test says loudly
//! that it was skipped, so a green run without the switch is never mistaken for one with it.

/// Whether network tests are on; prints a skip notice naming `what` when they are not.
pub fn enabled(what: &str) -> bool {
    let on = std::env::var("MANVAULT_NETWORK_TESTS").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("SKIPPED {what}: needs the network; run with MANVAULT_NETWORK_TESTS=1");
    }
    on
}
