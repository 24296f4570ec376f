//! Characters of the Basic Multilingual Plane recognised from their UTF-8 bytes.
//!
//! The normaliser, loose text and the numeral pass each ask one question of every
//! character of the corpus (stable? kept as it is? a numeral?). Nearly all text lies in
//! the plane, so each question is answered by a bit table built at compile time from the
//! rule itself, and the character is decoded from its bytes here, without the checks of
//! a general decoder. Characters past the plane go to the rule.

/// A set of code points below `U+10000`, one bit each (8 KiB). Built at compile time by
/// [`bmp_set!`] from the rule it stands for, so the table and the rule cannot disagree.
pub(crate) struct BmpSet([u64; 1024]);

impl BmpSet {
    pub(crate) const fn from_bits(bits: [u64; 1024]) -> Self {
        BmpSet(bits)
    }

    /// Whether `code` (below `U+10000`) is in the set.
    #[inline]
    pub(crate) fn contains(&self, code: u32) -> bool {
        (self.0[(code >> 6) as usize] >> (code & 63)) & 1 == 1
    }
}

/// `bmp_set!(|c| rule)`: the [`BmpSet`] of every character `c` of the plane for which
/// the `const` expression `rule` holds. A macro because a `const fn` cannot call a
/// closure.
macro_rules! bmp_set {
    (|$c:ident| $rule:expr) => {{
        let mut bits = [0u64; 1024];
        let mut code = 0u32;
        while code < 0x1_0000 {
            if let Some($c) = char::from_u32(code) {
                if $rule {
                    bits[(code >> 6) as usize] |= 1 << (code & 63);
                }
            }
            code += 1;
        }
        $crate::text::bmp::BmpSet::from_bits(bits)
    }};
}
pub(crate) use bmp_set;

/// The code point and length of the character of the plane that starts at `at` of
/// `bytes` (UTF-8 text, `at` a character boundary); `None` past the end or for a
/// four-byte character.
#[inline]
pub(crate) fn code_at(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    match *bytes.get(at..)? {
        [lead @ 0x00..=0x7F, ..] => Some((u32::from(lead), 1)),
        [lead @ 0xC0..=0xDF, second, ..] => Some(((u32::from(lead & 0x1F) << 6) | tail(second), 2)),
        [lead @ 0xE0..=0xEF, second, third, ..] => Some((decode_three(lead, second, third), 3)),
        _ => None,
    }
}

/// The code point of the three-byte character (kana, kanji, most CJK punctuation) that
/// starts at `at` of `bytes`, if one does: [`code_at`] for the loops that only go on
/// through such characters, in one comparison of the lead byte.
#[inline]
pub(crate) fn three_byte_code_at(bytes: &[u8], at: usize) -> Option<u32> {
    match *bytes.get(at..at.checked_add(3)?)? {
        [lead @ 0xE0..=0xEF, second, third] => Some(decode_three(lead, second, third)),
        _ => None,
    }
}

fn decode_three(lead: u8, second: u8, third: u8) -> u32 {
    (u32::from(lead & 0x0F) << 12) | (tail(second) << 6) | tail(third)
}

/// The six bits a continuation byte carries.
fn tail(byte: u8) -> u32 {
    u32::from(byte & 0x3F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_character_of_the_plane_decodes_to_itself() {
        for c in (0..0x1_0000).filter_map(char::from_u32) {
            let mut buffer = [0; 4];
            let bytes = c.encode_utf8(&mut buffer).as_bytes();
            assert_eq!(code_at(bytes, 0), Some((c as u32, bytes.len())), "{c:?}");
            let three = (bytes.len() == 3).then_some(c as u32);
            assert_eq!(three_byte_code_at(bytes, 0), three, "{c:?}");
        }
        assert_eq!(code_at("😀".as_bytes(), 0), None);
        assert_eq!(three_byte_code_at("aあ".as_bytes(), 1), Some('あ' as u32));
        assert_eq!(three_byte_code_at("aあ".as_bytes(), 0), None);
        assert_eq!(three_byte_code_at("é".as_bytes(), 0), None);
        assert_eq!(three_byte_code_at("あ".as_bytes(), 1), None);
        assert_eq!(code_at(b"a", 1), None);
    }

    #[test]
    fn a_set_holds_exactly_what_its_rule_holds() {
        const DIGITS_AND_KANA: BmpSet =
            bmp_set!(|c| c.is_ascii_digit() || matches!(c, '\u{3041}'..='\u{3096}'));
        for c in (0..0x1_0000).filter_map(char::from_u32) {
            let member = c.is_ascii_digit() || ('\u{3041}'..='\u{3096}').contains(&c);
            assert_eq!(DIGITS_AND_KANA.contains(c as u32), member, "{c:?}");
        }
    }
}
