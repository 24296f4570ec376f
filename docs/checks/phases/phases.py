"""Sums the phase fields of the `manual_find` log lines of each run (JSON lines on stderr)
and prints one row a phase: its total over the run's searches and its share of their
calls' `elapsed_ms`; then the median number of sections the index found a search.
Usage: phases.py LABEL=LOG [LABEL=LOG ...]"""
import json
import sys

PHASES = [("index hits", "index_hits_ms"), ("the one ranking", "ranking_ms"),
          ("verification", "verification_ms")]


def load(path):
    finds, calls = [], []
    for line in open(path, encoding="utf-8"):
        event = json.loads(line)
        if event.get("message") == "manual_find":
            finds.append(event)
        elif event.get("tool") == "manual_find" and "elapsed_ms" in event:
            calls.append(event["elapsed_ms"])
    return finds, sum(calls)


runs = [(arg.split("=", 1)[0], load(arg.split("=", 1)[1])) for arg in sys.argv[1:]]
print("| phase | " + " | ".join(label for label, _ in runs) + " |")
print("|---|" + "---:|" * len(runs))
for name, field in PHASES:
    cells = []
    for _, (finds, whole) in runs:
        total = sum(event[field] for event in finds)
        cells.append(f"{total / 1000:.2f} s ({100 * total / whole:.0f}%)")
    print(f"| {name} | " + " | ".join(cells) + " |")
cells = [f"{whole / 1000:.2f} s ({len(finds)} searches)" for _, (finds, whole) in runs]
print("| the calls, whole (`elapsed_ms`) | " + " | ".join(cells) + " |")
cells = []
for _, (finds, _) in runs:
    counts = sorted(event["index_sections"] for event in finds)
    cells.append(f"{counts[len(counts) // 2]:,}")
print("| sections the index found, median | " + " | ".join(cells) + " |")
