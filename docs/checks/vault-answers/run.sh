#!/bin/sh
# Answers of one manvault binary on both scripts, trace ids masked, for diffing two
# binaries: run.sh MANVAULT VAULT_ROOT OUT_DIR (VAULT_ROOT built by make_vault.py).
# Run from the repository root (the example workspace is examples/workspace).
set -u
bin=$1 vault=$2 out=$3
here=$(dirname "$0")
mkdir -p "$out"
mask() { sed -E 's/"v[0-9a-z]+-[0-9a-z-]+"/"TRACE"/g; s/"(trace_id|only_unscanned_from_trace_id)": "[^"]*"/"\1": "TRACE"/g'; }
cache=$(mktemp -d)
CACHE_DIR=$cache "$bin" call --script "$here/bench-vault.jsonl" \
  --manuals examples/workspace/manuals --vault "$vault" 2>/dev/null | mask >"$out/bench-vault.json"
CACHE_DIR=$cache "$bin" call --script "$here/examples.jsonl" \
  --workspace examples/workspace 2>/dev/null | mask >"$out/examples.json"
rm -rf "$cache"
