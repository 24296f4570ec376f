"""Sums the probe's `PH <phase> <duration>` lines of each run and prints one row a phase:
its total over the run's queries and its share of the searches' whole time; then the
median number of sections with evidence hits (`flagged`) that the index gave a search.
Usage: phases.py LABEL=FILE [LABEL=FILE ...]"""
import collections
import re
import sys

UNITS = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1000.0}
ORDER = ["ih_literals", "ih_units", "ih_pages_links", "ih_group", "ih_by_section",
         "ih_finish", "index_hits", "ranking", "order", "round_fused", "round_scan",
         "round_verify", "stage01", "verified", "stage23", "run_total", "cap_conclude"]


def load(path):
    totals = collections.defaultdict(float)
    flagged = []
    for line in open(path, encoding="utf-8"):
        _, phase, duration, *counts = line.split()
        value, unit = re.fullmatch(r"([\d.]+)(ns|µs|ms|s)", duration).groups()
        totals[phase] += float(value) * UNITS[unit]
        flagged.extend(int(c[len("flagged="):]) for c in counts if c.startswith("flagged="))
    totals["flagged"] = sorted(flagged)[len(flagged) // 2] if flagged else 0
    return totals


runs = [(arg.split("=", 1)[0], load(arg.split("=", 1)[1])) for arg in sys.argv[1:]]
print("| phase | " + " | ".join(label for label, _ in runs) + " |")
print("|---|" + "---:|" * len(runs))
for phase in ORDER:
    cells = []
    for _, totals in runs:
        whole = totals["run_total"] + totals["cap_conclude"]
        cells.append(f"{totals[phase] / 1000:.2f} s ({100 * totals[phase] / whole:.0f}%)")
    print(f"| {phase} | " + " | ".join(cells) + " |")
print("| flagged sections, median | " + " | ".join(f"{totals['flagged']:,}" for _, totals in runs) + " |")
