#!/bin/sh
# Where a warm manual_find's time goes, phase by phase (docs/benchmarks.md, "Where a warm
# search's time goes"). Applies probe.patch (timing lines on stderr, `PH <phase>
# <duration>`, never committed to the server) to a detached worktree of HEAD, builds its
# release `manvault` into target/phases (its own folder, so the repository's binaries stay
# as they are; a first build there takes as long as a clean release build, and
# PHASES_TARGET_DIR=target makes it an incremental one that replaces them), makes COPIES copies of the handbook bench as `manvault-bench find
# --copies` does, samples 80 of its queries, builds the copies' index, runs the queries
# in one `manvault call --script` process and prints each phase's total and share.
# Run from the repository root: docs/checks/phases/run.sh [COPIES...]   (default: 6 24)
set -eu
root=$(pwd)
shared=${SHARED_DIR:-$root/../shared}
work=${TMPDIR:-/tmp}/manvault-phases
rm -rf "$work"
mkdir -p "$work"
git worktree add -q --detach "$work/tree" HEAD
trap 'git -C "$root" worktree remove --force "$work/tree"' EXIT
git -C "$work/tree" apply "$root/docs/checks/phases/probe.patch"
target=${PHASES_TARGET_DIR:-$root/target/phases}
CARGO_TARGET_DIR="$target" cargo build --release --bin manvault \
  --manifest-path "$work/tree/Cargo.toml"
bin="$target/release/manvault"
python3 - "$shared/bench/queries.jsonl" "$work/speed80.jsonl" <<'PY'
import json, sys
queries = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
sample = queries[::max(len(queries) // 80, 1)][:80]
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for query in sample:
        call = {"tool": "manual_find", "arguments": {"query": query["query"]}}
        out.write(json.dumps(call, ensure_ascii=False) + "\n")
PY
runs=""
for copies in ${*:-6 24}; do
  dir="$work/c$copies"
  mkdir -p "$dir/manuals" "$dir/vault"
  i=1
  while [ "$i" -le "$copies" ]; do
    cp -R "$shared/bench/manuals/handbook-ja" "$dir/manuals/handbook-ja-$i"
    i=$((i + 1))
  done
  CACHE_DIR="$dir/cache" "$bin" index --manuals "$dir/manuals" --vault "$dir/vault" >/dev/null 2>&1
  CACHE_DIR="$dir/cache" "$bin" call --script "$work/speed80.jsonl" \
    --manuals "$dir/manuals" --vault "$dir/vault" 2>&1 >/dev/null | grep '^PH ' > "$dir/phases.txt"
  runs="$runs $copies-copies=$dir/phases.txt"
done
python3 "$root/docs/checks/phases/phases.py" $runs
