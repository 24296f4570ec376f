#!/usr/bin/env python3
"""Builds the vault of `manvault-bench vault` (same generator, same bytes) under
ROOT/notes, plus files that spell the bench's queries in tricky ways, a symlink, a
linked folder, a hidden folder and a FIFO. Usage: make_vault.py ROOT"""
import os
import re
import sys

FILES = 10_000
FILE_BYTES = 10_000
RARE_QUERY = "incident-4711"
MASK = (1 << 64) - 1
BENCH_SOURCE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../../src/bin/manvault_bench/vault.rs"
)


def bench_sentences(name):
    """The bench's own sentence list `name`, read from its source (one copy only)."""
    with open(BENCH_SOURCE) as source:
        text = source.read()
    body = re.search(r"const " + name + r": &\[&str\] = &\[(.*?)\];", text, re.S)
    return re.findall(r'"((?:[^"\\]|\\.)*)"', body.group(1))


JAPANESE = bench_sentences("JAPANESE")
ENGLISH = bench_sentences("ENGLISH")
# Spellings the normaliser and the loose stage must see through (from the matcher's
# tests), with long whitespace runs and numerals around them.
TRICKY = [
    "障害対応の手順を確認する。",
    "障害\n対応は・障・害・対・応とも書く",
    "ＩＮＣＩＤＥＮＴ－４７１１ and Incident-4711, incident 4711",
    "ｉｎｃｉｄｅｎｔ－四七一一 in-ci-dent",
    "四千七百十一、4千7百11、㈣七一一、4,711 and ①⑦ incident",
    "INCIDENT4711 Incidents cite in-cid-ent, inc\u0301ident, traffic",
    "incident" + " " * 300 + "-4711 after a long run of spaces",
    "障害" + "\u3000" * 200 + "対応 after ideographic spaces",
    "ｲﾝｼﾃﾞﾝﾄ 障ｶﾞｲ 障害対応 ㉗ ⑦ 七千 十七 4711 incident\u200b-4711",
    "**incident**-**4711** and _障害_**対応** in emphasis",
]


class XorShift:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        x = self.state
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        self.state = x
        return x

    def sentence(self):
        if self.next() % 2 == 0:
            return JAPANESE[self.next() % len(JAPANESE)]
        return ENGLISH[self.next() % len(ENGLISH)]


def build_notes(folder):
    random = XorShift(0x9E3779B97F4A7C15)
    for file in range(FILES):
        directory = os.path.join(folder, f"{file // 100:03}")
        os.makedirs(directory, exist_ok=True)
        text = f"# Note {file}\n\n"
        if file % 100 == 0:
            text += f"See {RARE_QUERY} for the post-mortem.\n"
        while len(text.encode()) < FILE_BYTES:
            for _ in range(1 + random.next() % 3):
                text += random.sentence() + " "
            text += "\n"
        with open(os.path.join(directory, f"note-{file:05}.md"), "w") as out:
            out.write(text)


def build_extras(root):
    notes = os.path.join(root, "notes")
    tricky = "\n".join(TRICKY * 40) + "\n"
    with open(os.path.join(notes, "tricky.md"), "w") as out:
        out.write(tricky)
    hidden = os.path.join(notes, ".hidden")
    os.makedirs(hidden, exist_ok=True)
    with open(os.path.join(hidden, "secret.md"), "w") as out:
        out.write(tricky)
    outside = os.path.join(root, "outside")
    os.makedirs(outside, exist_ok=True)
    with open(os.path.join(outside, "linked.md"), "w") as out:
        out.write(tricky)
    os.symlink("../outside/linked.md", os.path.join(notes, "link.md"))
    os.symlink("../outside", os.path.join(notes, "linked-folder"))
    os.mkfifo(os.path.join(notes, "fifo.md"))


def main():
    root = sys.argv[1]
    build_notes(os.path.join(root, "notes"))
    build_extras(root)


if __name__ == "__main__":
    main()
