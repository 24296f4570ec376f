#!/usr/bin/env python3
"""The restraint rules of build_jmdict.py on a tiny fixture (no download needed):

    python3 src/text/synonyms/test_build_jmdict.py
"""

import unittest

from build_jmdict import MAX_ENTRIES_PER_WORD, Entry, Form, select_pairs

FUNCTION_WORDS = frozenset({"all", "the"})


def entry(number, kanji, kana, glosses, adverb=False):
    """Forms are (text, prioritised, noted)."""
    forms = [Form(*form) for form in kanji], [Form(*form) for form in kana]
    return Entry(number, *forms, glosses, adverb)


class SelectPairs(unittest.TestCase):
    def pairs(self, entries, sudachi=()):
        return select_pairs(entries, FUNCTION_WORDS, sudachi)

    def test_a_common_word_gives_one_group_per_one_word_gloss(self):
        found = self.pairs(
            [entry(1, [("窃盗", True, False)], [("せっとう", True, False)],
                   ["theft", "stealing", "larceny", "pilfering"])]
        )
        # The reading is no member; the fourth gloss is past the first three.
        self.assertEqual(found, [(["窃盗"], "theft"), (["窃盗"], "stealing"), (["窃盗"], "larceny")])

    def test_entries_without_a_priority_tag_are_dropped(self):
        self.assertEqual(self.pairs([entry(1, [("稀語", False, False)], [], ["rarity"])]), [])

    def test_japanese_forms_need_a_tag_no_note_and_two_characters(self):
        found = self.pairs(
            [
                entry(1, [("申込", True, False), ("申込み", False, False), ("申し込", True, True)],
                      [], ["application"]),
                entry(2, [("木", True, False)], [], ["tree"]),
            ]
        )
        self.assertEqual(found, [(["申込"], "application")])

    def test_kana_forms_stand_in_only_without_kanji_and_not_in_hiragana(self):
        found = self.pairs(
            [
                entry(1, [], [("パッケージ", True, False)], ["package"]),
                entry(2, [], [("あのー", True, False)], ["say"]),
            ]
        )
        self.assertEqual(found, [(["パッケージ"], "package")])

    def test_glosses_must_be_one_content_word(self):
        found = self.pairs(
            [entry(1, [("全部", True, False)], [], ["all", "to finish", "(the) whole"]),
             entry(2, [("電子メール", True, False)], [], ["e-mail", "em", "(electronic) mail"])]
        )
        self.assertEqual(found, [(["全部"], "whole"), (["電子メール"], "e-mail"), (["電子メール"], "mail")])

    def test_a_word_glossing_too_many_entries_is_dropped_everywhere(self):
        entries = [
            entry(number, [(f"変更{number}", True, False)], [], [f"alter{'x' * number}", "change"])
            for number in range(MAX_ENTRIES_PER_WORD + 1)
        ]
        found = self.pairs(entries)
        self.assertNotIn("change", [word for _, word in found])
        self.assertEqual(len(found), MAX_ENTRIES_PER_WORD + 1)
        self.assertIn((["変更0"], "change"), self.pairs(entries[:MAX_ENTRIES_PER_WORD]))

    def test_an_entry_whose_lead_gloss_is_too_ambiguous_gives_nothing(self):
        entries = [
            entry(number, [(f"道具{number}", True, False)], [], ["tool", f"implement{'x' * number}"])
            for number in range(MAX_ENTRIES_PER_WORD + 1)
        ]
        self.assertEqual(self.pairs(entries), [])

    def test_adverbs_are_dropped(self):
        found = self.pairs([entry(1, [("一通り", True, False)], [], ["generally"], adverb=True)])
        self.assertEqual(found, [])

    def test_pairs_already_in_sudachi_are_not_repeated(self):
        found = self.pairs(
            [entry(1, [("妊娠", True, False)], [], ["conception", "pregnancy"])],
            sudachi=[{"妊娠", "懐妊", "conception"}],
        )
        self.assertEqual(found, [(["妊娠"], "pregnancy")])


if __name__ == "__main__":
    unittest.main()
