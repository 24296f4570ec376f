//! One representative per family of look-alike punctuation.
//!
//! Manuals written by many hands mix `–`, `—` and `−` for one hyphen, `【】` and `（）`
//! for one bracket, `〜` and `～` for one range mark. NFKC unifies only full-width
//! forms, so the rest are mapped here. Every representative is NFKC-stable and has no
//! case, which keeps normalisation idempotent.

/// Representative of `c`, applied after NFKC and lowercasing.
pub(crate) fn representative(c: char) -> char {
    match c {
        // Hyphens, dashes and minus signs. Plain `-` is never turned into `ー`.
        '\u{2010}'..='\u{2015}'
        | '\u{2212}'
        | '\u{2043}'
        | '\u{02D7}'
        | '\u{2E3A}'
        | '\u{2E3B}'
        | '\u{FE58}'
        | '\u{FE63}'
        | '\u{FF0D}' => '-',
        // Long-vowel look-alikes typed for `ー`, notably box-drawing rules.
        '\u{2500}' | '\u{2501}' | '\u{FF70}' => 'ー',
        // Tildes and wave dashes.
        '\u{301C}' | '\u{3030}' | '\u{FF5E}' | '\u{223C}' | '\u{2053}' => '~',
        // Middle dots and bullets.
        '\u{00B7}' | '\u{2022}' | '\u{2027}' | '\u{2219}' | '\u{22C5}' | '\u{2E31}'
        | '\u{FF65}' => '・',
        // Opening and closing brackets of every shape.
        '[' | '{' | '\u{3008}' | '\u{300A}' | '\u{3010}' | '\u{3014}' | '\u{3016}' | '\u{3018}'
        | '\u{301A}' | '\u{27E8}' | '\u{2985}' => '(',
        ']' | '}' | '\u{3009}' | '\u{300B}' | '\u{3011}' | '\u{3015}' | '\u{3017}' | '\u{3019}'
        | '\u{301B}' | '\u{27E9}' | '\u{2986}' => ')',
        // Japanese quotation brackets: 『』 nest inside 「」 and mean the same to a reader.
        '\u{300E}' => '「',
        '\u{300F}' => '」',
        // Slashes; the backslash stays distinct (paths, escapes).
        '\u{2215}' | '\u{2044}' | '\u{29F8}' => '/',
        // Quotation marks.
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{301D}' | '\u{301E}'
        | '\u{301F}' | '\u{00AB}' | '\u{00BB}' => '"',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::representative;

    fn all_map_to(family: &str, expected: char) {
        for c in family.chars() {
            assert_eq!(representative(c), expected, "{c:?} (U+{:04X})", c as u32);
        }
    }

    #[test]
    fn families_share_one_representative() {
        all_map_to("‐‑‒–—―−⁃﹘﹣－-", '-');
        all_map_to("─━ｰー", 'ー');
        all_map_to("〜〰～∼~", '~');
        all_map_to("·•‧∙⋅･・", '・');
        all_map_to("([{〈《【〔〖〘〚⟨⦅", '(');
        all_map_to(")]}〉》】〕〗〙〛⟩⦆", ')');
        all_map_to("「『", '「');
        all_map_to("」』", '」');
        all_map_to("∕⁄⧸/", '/');
        all_map_to("“”„‟〝〞〟«»\"", '"');
        all_map_to("‘’‚‛'", '\'');
    }

    #[test]
    fn other_characters_are_kept() {
        all_map_to("\\", '\\');
        all_map_to("あ", 'あ');
    }
}
