#!/bin/sh
# Where a warm manual_find's time goes (docs/benchmarks.md, "Where a warm search's time
# goes"): builds the release `manvault`, makes COPIES copies of the handbook bench as
# `manvault-bench find --copies` does, samples 80 of its queries as that bench does, builds
# the copies' index, runs the queries in one `manvault call --script` process and sums the
# phase fields of the `manual_find` log lines (`index_hits_ms`, `ranking_ms`,
# `verification_ms`, `index_sections`) against the calls' `elapsed_ms`.
# Run from the repository root: docs/checks/phases/run.sh [COPIES...]   (default: 6 24)
set -eu
root=$(pwd)
shared=${SHARED_DIR:-$root/../shared}
work=${TMPDIR:-/tmp}/manvault-phases
rm -rf "$work"
mkdir -p "$work"
cargo build --release --bin manvault
bin="$root/target/release/manvault"
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
  CACHE_DIR="$dir/cache" LOG_LEVEL=info LOG_FORMAT=json "$bin" call \
    --script "$work/speed80.jsonl" --manuals "$dir/manuals" --vault "$dir/vault" \
    2> "$dir/log.jsonl" >/dev/null
  runs="$runs $copies-copies=$dir/log.jsonl"
done
python3 "$root/docs/checks/phases/phases.py" $runs
