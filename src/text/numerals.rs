//! Kanji numerals to ASCII digits, so `二〇二六年`, `２０２６年` and `2026年` meet, and so
//! do `三万五千円`, `3万5千円` and `35000円`.
//!
//! A *run* is a maximal stretch of ASCII digits, kanji digits (`〇一二…九`, `零`, 大字
//! such as `壱弐参`) and powers of ten (`十百千万億兆`, `拾阡萬`…), with `,` digit groups
//! and one `.` per number between ASCII digits. A run without kanji is left alone. A run
//! without powers is positional and converted digit by digit (`一九八四` -> `1984`), so
//! each digit keeps its own original offset; a run with powers is evaluated as a whole
//! (`千二百` -> `1200`, `1,000万` -> `10000000`, `1.5万` -> `15000`).
//!
//! Words that merely contain a numeral kanji are converted too (`一般` -> `1般`,
//! `統一` -> `統1`, `参照` -> `3照`). That is harmless for matching because queries are
//! normalised by the same function; it only matters to code that shows normalised text,
//! which should show the original instead. `京` is left out: it is far more often 東京
//! than 10^16.

use std::fmt;

use super::bmp::{bmp_set, three_byte_code_at, BmpSet};
use super::normalized::{Normalized, Writer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Numeral {
    Digit(u8),
    /// A power of ten, by exponent: `十` is 1, `万` is 4.
    Power(u32),
}

/// Powers from `万` up group the digits before them (`三千万` is 3000 x 10^4).
const FIRST_GROUPING_POWER: u32 = 4;

/// What `c` is in a numeral run, if anything. Most characters are not numerals; one bit
/// each says so before the list is consulted.
fn numeral(c: char) -> Option<Numeral> {
    if (c as u32) < 0x1_0000 && !NUMERALS_BMP.contains(c as u32) {
        return None;
    }
    numeral_listed(c)
}

/// The list behind [`numeral`]; `const` so the bit set of numerals is built from it.
const fn numeral_listed(c: char) -> Option<Numeral> {
    use Numeral::{Digit, Power};
    Some(match c {
        '0'..='9' => Digit(c as u8 - b'0'),
        '〇' => Digit(0),
        // Kana and everything else below the CJK block: rejected in one comparison, as
        // this runs on every character of the corpus.
        ..'\u{4E00}' => return None,
        '零' => Digit(0),
        '一' | '壱' | '壹' => Digit(1),
        '二' | '弐' | '貳' | '貮' => Digit(2),
        '三' | '参' | '參' => Digit(3),
        '四' | '肆' => Digit(4),
        '五' | '伍' => Digit(5),
        '六' | '陸' => Digit(6),
        '七' | '漆' | '柒' => Digit(7),
        '八' | '捌' => Digit(8),
        '九' | '玖' => Digit(9),
        '十' | '拾' => Power(1),
        '百' | '佰' | '陌' => Power(2),
        '千' | '阡' | '仟' => Power(3),
        '万' | '萬' => Power(4),
        '億' => Power(8),
        '兆' => Power(12),
        _ => return None,
    })
}

/// The characters of the plane that [`numeral_listed`] names.
static NUMERALS_BMP: BmpSet = bmp_set!(|c| numeral_listed(c).is_some());

/// Byte offset of the first character at or after `from` that can be part of a numeral
/// run: an ASCII digit, `〇`, or a CJK numeral (three bytes led by `E4`..`E9`, decoded
/// only there). The same answer as the first `c` with `numeral(c).is_some()`, found
/// without decoding every character: ASCII without digits is passed eight bytes at a time.
fn find_numeral(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(&byte) = bytes.get(at) {
        if byte.is_ascii() {
            let word = bytes
                .get(at..at + 8)
                .map(|word| u64::from_le_bytes(word.try_into().expect("eight bytes")));
            if word.is_some_and(|word| !has_digit_or_non_ascii(word)) {
                at += 8;
                continue;
            }
            if byte.is_ascii_digit() {
                return Some(at);
            }
            at += 1;
            continue;
        }
        match byte {
            // Kana are led by `E3` too: compared, not decoded.
            0xE3 if bytes[at..].starts_with("〇".as_bytes()) => return Some(at),
            0xE4..=0xE9
                if three_byte_code_at(bytes, at)
                    .is_some_and(|code| NUMERALS_BMP.contains(code)) =>
            {
                return Some(at)
            }
            _ => {}
        }
        at += utf8_width(byte);
    }
    None
}

/// Whether any of the eight bytes of `word` is an ASCII digit or not ASCII at all. For
/// ASCII bytes, adding `0x46` sets the high bit of those above `9` and adding `0x50` that
/// of those from `0` up, with no carry between bytes.
fn has_digit_or_non_ascii(word: u64) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if word & HIGH != 0 {
        return true;
    }
    let above_nine = word + 0x4646_4646_4646_4646;
    let from_zero = word + 0x5050_5050_5050_5050;
    from_zero & !above_nine & HIGH != 0
}

/// Length of the UTF-8 sequence `lead` starts (1 for a byte inside one: never asked).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

/// Whether a numeral run holding `c` can put the digit `value` into normalised text
/// where no other character of the run is that digit: `c` is a digit of that value,
/// or a power of ten (a run with one is evaluated, which makes zeros, ones and carries).
pub(crate) fn can_make_digit(c: char, value: u8) -> bool {
    match numeral(c) {
        Some(Numeral::Digit(digit)) => digit == value,
        Some(Numeral::Power(_)) => true,
        None => false,
    }
}

/// Whether `c` can be part of a numeral run (a digit, kanji digit or power of ten).
pub(crate) fn is_numeral(c: char) -> bool {
    numeral(c).is_some()
}

/// Rewrites every run that contains kanji; returns `folded` untouched if there is none.
pub(crate) fn unify(folded: Normalized) -> Normalized {
    unify_with(folded, find_numeral)
}

/// [`unify`], finding the start of each candidate run with `find` (the text and where
/// to look from); the tests pass the character-by-character search it replaced.
fn unify_with(folded: Normalized, find: impl Fn(&str, usize) -> Option<usize>) -> Normalized {
    let text = folded.text.as_str();
    let mut writer: Option<Writer> = None;
    let mut copied_to = 0;
    let mut at = 0;
    while let Some(start) = find(text, at) {
        let run = Run::scan(text, start);
        if run.has_kanji {
            let w = writer.get_or_insert_with(|| Writer::with_capacity(text.len()));
            w.copy_from(&folded, copied_to..start);
            run.write(w, &folded, start);
            copied_to = run.end;
        }
        at = run.end;
    }
    match writer {
        None => folded,
        Some(mut w) => {
            w.copy_from(&folded, copied_to..text.len());
            w.finish(folded.original_offset(text.len()))
        }
    }
}

/// What `Run::scan` found from a run's start.
struct Run {
    end: usize,
    has_kanji: bool,
    has_power: bool,
}

impl Run {
    fn scan(text: &str, start: usize) -> Run {
        let bytes = text.as_bytes();
        let mut run = Run {
            end: start,
            has_kanji: false,
            has_power: false,
        };
        let mut in_fraction = false;
        for (offset, c) in text[start..].char_indices() {
            let at = start + offset;
            match numeral(c) {
                Some(n) => {
                    run.has_kanji |= !c.is_ascii_digit();
                    if let Numeral::Power(_) = n {
                        run.has_power = true;
                        in_fraction = false;
                    }
                }
                None => {
                    let after_digit = at > start && bytes[at - 1].is_ascii_digit();
                    let joins = after_digit
                        && !in_fraction
                        && match c {
                            ',' => is_digit_group(&bytes[at + 1..]),
                            '.' => bytes.get(at + 1).is_some_and(u8::is_ascii_digit),
                            _ => false,
                        };
                    if !joins {
                        break;
                    }
                    in_fraction = c == '.';
                }
            }
            run.end = at + c.len_utf8();
        }
        run
    }

    fn write(&self, w: &mut Writer, folded: &Normalized, start: usize) {
        let text = &folded.text[start..self.end];
        if !self.has_power {
            return write_positional(w, folded, start, text);
        }
        match evaluate(text) {
            Some(value) => w.replace_from(folded, start..self.end, &value.to_string()),
            // Only past u128: leave it as written, which is still a fixed point.
            None => w.copy_from(folded, start..self.end),
        }
    }
}

/// `,` followed by exactly three ASCII digits groups thousands; anything else ends a run.
fn is_digit_group(rest: &[u8]) -> bool {
    rest.len() >= 3
        && rest[..3].iter().all(u8::is_ascii_digit)
        && !rest.get(3).is_some_and(u8::is_ascii_digit)
}

/// Converts digit by digit, so each digit still points at its own kanji.
fn write_positional(w: &mut Writer, folded: &Normalized, start: usize, run: &str) {
    let mut copied_to = start;
    for (offset, c) in run.char_indices() {
        if c.is_ascii() {
            continue;
        }
        let Some(Numeral::Digit(d)) = numeral(c) else {
            unreachable!("a run without powers holds only digits and separators")
        };
        let at = start + offset;
        w.copy_from(folded, copied_to..at);
        let mut buf = [0; 4];
        let digit = char::from(b'0' + d).encode_utf8(&mut buf);
        w.replace_from(folded, at..at + c.len_utf8(), digit);
        copied_to = at + c.len_utf8();
    }
    w.copy_from(folded, copied_to..start + run.len());
}

/// Value of a run with powers of ten, the way it is read aloud: digits before a small
/// power multiply it (default one), and everything before a grouping power multiplies
/// that (`一億二千万` = 1 x 10^8 + 2000 x 10^4).
fn evaluate(run: &str) -> Option<Decimal> {
    let mut total = Decimal::ZERO;
    let mut group = Decimal::ZERO;
    let mut group_is_empty = true;
    let mut number: Option<Decimal> = None;
    let mut in_fraction = false;
    for c in run.chars() {
        match numeral(c) {
            Some(Numeral::Digit(d)) => {
                number = Some(number.unwrap_or(Decimal::ZERO).push_digit(d, in_fraction)?);
                group_is_empty = false;
            }
            Some(Numeral::Power(exp)) if exp < FIRST_GROUPING_POWER => {
                let multiplier = number.take().unwrap_or(Decimal::ONE);
                group = group.add(multiplier.shift(exp)?)?;
                group_is_empty = false;
                in_fraction = false;
            }
            Some(Numeral::Power(exp)) => {
                let multiplier = if group_is_empty {
                    Decimal::ONE
                } else {
                    group.add(number.take().unwrap_or(Decimal::ZERO))?
                };
                total = total.add(multiplier.shift(exp)?)?;
                group = Decimal::ZERO;
                group_is_empty = true;
                in_fraction = false;
            }
            None => in_fraction |= c == '.',
        }
    }
    total.add(group)?.add(number.unwrap_or(Decimal::ZERO))
}

/// `mantissa / 10^scale`: `1.5万` is exact, and fractions survive to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    mantissa: u128,
    scale: u32,
}

impl Decimal {
    const ZERO: Decimal = Decimal {
        mantissa: 0,
        scale: 0,
    };
    const ONE: Decimal = Decimal {
        mantissa: 1,
        scale: 0,
    };

    fn push_digit(self, digit: u8, in_fraction: bool) -> Option<Decimal> {
        Some(Decimal {
            mantissa: self.mantissa.checked_mul(10)?.checked_add(digit.into())?,
            scale: self.scale + u32::from(in_fraction),
        })
    }

    /// Multiplies by `10^exp`.
    fn shift(self, exp: u32) -> Option<Decimal> {
        if exp >= self.scale {
            let factor = 10u128.checked_pow(exp - self.scale)?;
            Some(Decimal {
                mantissa: self.mantissa.checked_mul(factor)?,
                scale: 0,
            })
        } else {
            Some(Decimal {
                mantissa: self.mantissa,
                scale: self.scale - exp,
            })
        }
    }

    fn add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let widen = |d: Decimal| d.mantissa.checked_mul(10u128.checked_pow(scale - d.scale)?);
        Some(Decimal {
            mantissa: widen(self)?.checked_add(widen(other)?)?,
            scale,
        })
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = 10u128.pow(self.scale);
        let (whole, fraction) = (self.mantissa / unit, self.mantissa % unit);
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{fraction:0width$}", width = self.scale as usize);
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// The numeral pass as it was before [`find_numeral`]: every character decoded and
/// looked up in the list. The oracle the faster pass is compared with.
#[cfg(test)]
pub(super) fn unify_by_characters(folded: Normalized) -> Normalized {
    unify_with(folded, |text, at| {
        text[at..]
            .char_indices()
            .find(|&(_, c)| numeral_listed(c).is_some())
            .map(|(offset, _)| at + offset)
    })
}

#[cfg(test)]
mod tests {
    use super::{find_numeral, numeral, numeral_listed};
    use crate::text::normalize::normalize_str as n;

    #[test]
    fn the_bit_set_agrees_with_the_list_everywhere() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(numeral(c), numeral_listed(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn find_numeral_stops_exactly_at_numerals() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            // Before, alone and after eight bytes of ASCII, to reach the word-at-a-time path.
            let text = format!("{c}abcdefgh{c}");
            let expected = numeral_listed(c).map(|_| 0);
            assert_eq!(find_numeral(&text, 0), expected, "U+{:04X}", c as u32);
            let after = c.len_utf8() + 8;
            let found = find_numeral(&text, c.len_utf8());
            assert_eq!(
                found,
                numeral_listed(c).map(|_| after),
                "U+{:04X}",
                c as u32
            );
        }
        assert_eq!(find_numeral("abcdefgh12", 0), Some(8));
        assert_eq!(
            find_numeral("abcdefgh/:", 0),
            None,
            "the neighbours of the digits"
        );
    }

    #[test]
    fn positional_numerals() {
        assert_eq!(n("一九八四"), "1984");
        assert_eq!(n("二〇二六"), "2026");
        assert_eq!(n("〇"), "0");
        assert_eq!(n("〇〇七"), "007", "positional keeps leading zeros");
    }

    #[test]
    fn multiplicative_numerals() {
        assert_eq!(n("二十五"), "25");
        assert_eq!(n("三万五千"), "35000");
        assert_eq!(n("百"), "100");
        assert_eq!(n("千二百"), "1200");
        assert_eq!(n("一億"), "100000000");
        assert_eq!(n("一億二千万"), "120000000");
        assert_eq!(n("十"), "10");
        assert_eq!(n("二〇万"), "200000");
    }

    #[test]
    fn daiji_are_plain_numerals() {
        assert_eq!(n("壱萬弐阡参拾"), "12030");
        assert_eq!(n("金伍阡円"), "金5000円");
        assert_eq!(n("壹貳參"), "123");
    }

    #[test]
    fn mixed_digits_and_kanji_powers() {
        assert_eq!(n("3万5千円"), "35000円");
        assert_eq!(n("１０万円"), "100000円");
        assert_eq!(n("1,000万円"), "10000000円");
        assert_eq!(n("1.5万人"), "15000人");
        assert_eq!(n("十1.5"), "11.5");
    }

    #[test]
    fn runs_without_kanji_are_left_alone() {
        assert_eq!(n("1,234 と 1.50 と 007"), "1,234 と 1.50 と 007");
        assert_eq!(n("v1.2.3"), "v1.2.3");
    }

    #[test]
    fn separators_that_do_not_group_digits_end_a_run() {
        assert_eq!(n("1,2万"), "1,20000");
        assert_eq!(n("1,2,三"), "1,2,3");
        assert_eq!(n("1.十"), "1.10");
    }

    #[test]
    fn numeral_kanji_inside_words_convert_too() {
        assert_eq!(n("一般"), "1般");
        assert_eq!(n("統一"), "統1");
        assert_eq!(n("東京"), "東京", "京 is not treated as a numeral");
    }

    #[test]
    fn overflow_leaves_the_run_as_written() {
        let huge = format!("{}兆兆", "9".repeat(40));
        assert_eq!(n(&huge), huge);
    }
}
