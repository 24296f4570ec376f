#!/bin/sh
# The normaliser's fast paths against the oracle kept in src/text/normalize/oracle.rs,
# whole file by whole file, over the bench vault's notes (generated once in NOTES_DIR),
# the handbook manuals and the Debian handbook (en + ja): the same text and the same map
# back for every file, or the test fails naming the first file that differs.
# Run from the repository root: docs/checks/normalize-oracle/run.sh [NOTES_DIR]
# (builds the release bench and a release test binary; the shared corpora are
# ../shared/bench and ../shared/bench-dah).
set -eu
notes=${1:-${TMPDIR:-/tmp}/manvault-normalize-notes}
shared=${SHARED_DIR:-../shared}
cargo build --release --bin manvault-bench
./target/release/manvault-bench normalize --vault-notes-in "$notes" --runs 1
MANVAULT_NORMALIZE_CORPORA="$notes:$shared/bench/manuals:$shared/bench-dah/manuals" \
  cargo test --release --lib whole_corpora_match_the_oracle -- --ignored --nocapture
