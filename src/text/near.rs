//! Normalising only the parts of a text near a prefilter's candidates (see `prefilter`).
//!
//! `normalize` works segment by segment, and most boundaries between characters are
//! *clean*: the character before is one that normalisation keeps as it is and that no
//! rule looks across ([`super::clean`]: a kana, a kanji that is no numeral, a lowercase
//! letter), and the one after starts a segment. At a clean boundary the normalisation of
//! the whole is that of the part before followed by that of the part after, map included
//! (offsets shifted): no segment, whitespace run or numeral run crosses it. So a window
//! cut at clean boundaries normalises to exactly the slice of the whole text's
//! normalisation it stands for, and searching windows finds what searching the whole
//! would, at the same original ranges, provided every occurrence lies inside a window.
//!
//! An occurrence of the needle overlaps the normalisation of a candidate, so it lies
//! inside a window that holds the needle's length of normalised text on each side of
//! that candidate. Windows start with a margin that is enough in ordinary text; one that
//! falls short (long whitespace runs, text that shrinks a lot) grows until it is not,
//! merging with its neighbours, and windows that would cover half the text give way to
//! normalising it whole, which is cheaper than many small passes.
//!
//! Loose text (`loose`) is the normalised text character by character, so the same
//! windows give slices of the whole loose text too: [`both_forms_around`] finds loose
//! needles (`vault_find`'s Stage 1) around the candidates of one of their characters,
//! with windows grown until they hold the needle's length of loose text on each side,
//! and takes each window's loose text from the one normalisation that also serves the
//! normalised needles (Stage 0), as runs that lead back through that normalisation's
//! map (`loose::LooseRuns`): composing a map of its own for each window's loose text
//! cost more than the rest of taking it.

use std::ops::Range;

use super::clean::is_clean;
use super::loose::{only_itself_loosens_to, LooseRuns};
use super::normalize::normalize;
use super::normalized::Normalized;
use super::prefilter::{Prefilter, DIGITS_RAREST_FIRST};

/// The normalisation (or its loose text) of the window of a text that starts at `offset`.
#[derive(Debug)]
pub(crate) struct Piece {
    pub(crate) offset: usize,
    pub(crate) normalized: Normalized,
}

impl Piece {
    /// The range of the whole text that the normalised `norm` of this piece came from.
    pub(crate) fn original_range(&self, norm: Range<usize>) -> Range<usize> {
        let range = self.normalized.original_range(norm);
        range.start + self.offset..range.end + self.offset
    }
}

/// The parts of `text` whose normalisation can hold the needle `prefilter` was made for,
/// normalised: windows around its candidates (none when there are none), or the whole
/// text when the needle has no prefilter.
pub(crate) fn normalize_where_needed(text: &str, prefilter: Option<&Prefilter>) -> Vec<Piece> {
    let Some(prefilter) = prefilter else {
        return vec![Piece {
            offset: 0,
            normalized: normalize(text),
        }];
    };
    normalized_near(text, &prefilter.candidates(text), prefilter.needle_len())
}

/// The normalised windows of `text` around `candidates` (in order) that hold every
/// occurrence of a needle of `reach` normalised bytes overlapping a candidate's
/// normalisation.
fn normalized_near(text: &str, candidates: &[Range<usize>], reach: usize) -> Vec<Piece> {
    let short = |window: &Window, normalized: &Normalized| {
        let core = window.normalized_core(normalized);
        let after = normalized.text.len() - core.end;
        window.short_sides(core.start < reach, after < reach, text.len())
    };
    normalize_near(text, candidates, reach, normalize, short)
        .into_iter()
        .map(|(offset, normalized)| Piece { offset, normalized })
        .collect()
}

/// Where the needles of one form (normalised or loose) can occur: the `candidates` (in
/// order) of their anchors, and `reach`, the longest needle's length in that form, in
/// bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchored<'c> {
    pub(crate) candidates: &'c [Range<usize>],
    pub(crate) reach: usize,
}

/// One window of a text in both forms: its normalisation and the loose text of that.
#[derive(Debug)]
pub(crate) struct BothForms {
    pub(crate) normalized: Piece,
    pub(crate) loose: LooseRuns,
}

impl BothForms {
    /// The range of the whole text (not only of the window) that `loose` (not empty) of
    /// this window's loose text came from.
    pub(crate) fn loose_original_range(&self, loose: Range<usize>) -> Range<usize> {
        self.normalized
            .original_range(self.loose.normalized_range(loose))
    }
}

/// The parts of `text` where normalised needles anchored as `normalized` or loose
/// needles anchored as `loose` can occur, each window normalised once and its loose
/// text taken from that normalisation (`loose::LooseRuns`).
///
/// The windows are those around the candidates of both forms together, each holding
/// both reaches on both sides of every candidate: `normalized.reach` normalised bytes
/// and `loose.reach` loose bytes. For the normalised needles, this is what
/// `normalize_where_needed` needs, around more candidates. For a loose needle: its
/// anchor ([`loose_anchor`]) is a character that loose text holds only where the
/// normalised text holds that very character, so every loose occurrence holds one such
/// character from a candidate's normalisation, and lies within `reach` loose bytes of it
/// on either side, however many separators the text puts between its characters. Loose
/// text is the normalised text character by character, so a window cut at clean
/// boundaries gives the slice of the whole loose text it stands for, as for normalising.
/// More windows than one form needs find nothing that the whole text does not hold, at
/// the same places, and the windows never overlap, so each occurrence is found once.
pub(crate) fn both_forms_around(
    text: &str,
    normalized: Anchored<'_>,
    loose: Anchored<'_>,
) -> Vec<BothForms> {
    let mut candidates = [normalized.candidates, loose.candidates].concat();
    candidates.sort_unstable_by_key(|range| (range.start, range.end));
    let reach = normalized.reach.max(loose.reach);
    let both = |window: &str| {
        let normalized = normalize(window);
        let loose = LooseRuns::of(&normalized.text);
        (normalized, loose)
    };
    let short = |window: &Window, (normalized_form, loose_form): &(Normalized, LooseRuns)| {
        let core = window.normalized_core(normalized_form);
        let beside = |reach: usize, before: usize, after: usize| {
            window.short_sides(before < reach, after < reach, text.len())
        };
        let (left, right) = beside(
            normalized.reach,
            core.start,
            normalized_form.text.len() - core.end,
        );
        let (loose_left, loose_right) = beside(
            loose.reach,
            loose_form.loose_before(core.start),
            loose_form.text.len() - loose_form.loose_before(core.end),
        );
        (left || loose_left, right || loose_right)
    };
    normalize_near(text, &candidates, reach, both, short)
        .into_iter()
        .map(|(offset, (normalized, loose))| BothForms {
            normalized: Piece { offset, normalized },
            loose,
        })
        .collect()
}

/// The prefilter of the character a loose needle is found by in
/// [`both_forms_around`]: one that only itself becomes in loose text and can anchor a
/// prefilter, a character outside ASCII first, else the ASCII letter rarest in English
/// (the fewer its candidates, the less text is normalised), a digit last; an ASCII
/// letter only where what follows it may be what follows it in the needle
/// (`Prefilter::followed_by`). `None` when no character qualifies: the whole text is
/// then searched.
pub(crate) fn loose_anchor(loose_needle: &str) -> Option<Prefilter> {
    let rarity = |c: char| match c.is_ascii() {
        false => 0,
        true => {
            let mut rarest_first = ASCII_LETTERS_RAREST_FIRST
                .chars()
                .chain(DIGITS_RAREST_FIRST.chars());
            1 + rarest_first
                .position(|x| x == c.to_ascii_lowercase())
                .unwrap_or(usize::MAX - 1)
        }
    };
    let mut chars: Vec<char> = loose_needle
        .chars()
        .filter(|&c| only_itself_loosens_to(c))
        .collect();
    chars.sort_by_key(|&c| rarity(c));
    chars.into_iter().find_map(|c| {
        let prefilter = Prefilter::new(c.encode_utf8(&mut [0; 4]))?;
        let needle: Vec<char> = loose_needle.chars().collect();
        let mut followers = Vec::new();
        for (at, _) in needle.iter().enumerate().filter(|(_, &x)| x == c) {
            match needle.get(at + 1) {
                Some(&next) => followers.push(next),
                None => return Some(prefilter),
            }
        }
        Some(prefilter.followed_by(&followers))
    })
}

/// The ASCII letters by their frequency in English text, rarest first.
const ASCII_LETTERS_RAREST_FIRST: &str = "zqxjkvbpygfwmucldrhsnioate";

/// Windows of `text` around `candidates` (in order), each at its offset and turned into
/// `form` (the normalisation, or that and its loose text), grown until `short` finds no
/// side of the window short of text: such that every occurrence of a needle of the form
/// that overlaps a candidate's form lies inside one of them. Or the whole text as one
/// piece. `reach` is the longest needle's length, in bytes.
fn normalize_near<F>(
    text: &str,
    candidates: &[Range<usize>],
    reach: usize,
    form: impl Fn(&str) -> F,
    short: impl Fn(&Window, &F) -> (bool, bool),
) -> Vec<(usize, F)> {
    if candidates.is_empty() {
        return Vec::new();
    }
    // Raw bytes that give `reach` normalised bytes in ordinary text (ASCII, kana and
    // kanji keep their length); a side short of that (full-width letters are three bytes
    // that become one, whitespace runs one space) grows until it is not.
    let margin = reach + 8;
    let mut snapper = Snapper::new(text);
    let mut windows: Vec<(Window, F)> = Vec::new();
    let mut covered = 0;
    let mut candidates = candidates.iter().peekable();
    while let Some(first) = candidates.next() {
        let mut window = Window::around(&mut snapper, first.clone(), margin);
        let mut grow = margin;
        let formed = loop {
            // A candidate whose window would overlap this one joins it before it is
            // normalised: merging afterwards normalises the window again each time, and
            // a chain of close candidates (numerals all over a Japanese text) would be
            // normalised over and over as it grows.
            while let Some(next) =
                candidates.next_if(|next| next.start.saturating_sub(margin) < window.range.end)
            {
                window.absorb(&mut snapper, next.clone(), margin);
            }
            if let Some((before, _)) =
                windows.pop_if(|(before, _)| window.range.start < before.range.end)
            {
                covered -= before.range.len();
                window.follow(before);
            }
            if (covered + window.range.len()) * 2 > text.len() {
                return vec![(0, form(text))];
            }
            let formed = form(&text[window.range.clone()]);
            let (left, right) = short(&window, &formed);
            if !(left || right) {
                break formed;
            }
            grow *= 2;
            if left {
                window.range.start = snapper.back(window.range.start.saturating_sub(grow));
            }
            if right {
                window.range.end = snapper.forward(window.range.end + grow);
            }
        };
        covered += window.range.len();
        windows.push((window, formed));
    }
    windows
        .into_iter()
        .map(|(window, formed)| (window.range.start, formed))
        .collect()
}

/// A stretch of text between clean boundaries and the span of the candidates it must
/// cover, from the first one's start to the furthest end, widened to clean boundaries
/// (its *core*). The text beside the core is what each side must hold enough of: the
/// candidate nearest a side has the least beside it.
#[derive(Debug)]
struct Window {
    range: Range<usize>,
    core: Range<usize>,
}

impl Window {
    fn around(snapper: &mut Snapper<'_>, candidate: Range<usize>, margin: usize) -> Window {
        let core = snapper.back(candidate.start)..snapper.forward(candidate.end);
        Window {
            range: snapper.back(core.start.saturating_sub(margin))
                ..snapper.forward(core.end + margin),
            core,
        }
    }

    /// Takes in a candidate that starts at or after the core's start.
    fn absorb(&mut self, snapper: &mut Snapper<'_>, candidate: Range<usize>, margin: usize) {
        let core_end = snapper.forward(candidate.end);
        self.range.end = self.range.end.max(snapper.forward(core_end + margin));
        self.core.end = self.core.end.max(core_end);
    }

    /// Takes in `before`, a window that this one overlaps.
    fn follow(&mut self, before: Window) {
        self.range.start = self.range.start.min(before.range.start);
        self.core = before.core.start.min(self.core.start)..before.core.end.max(self.core.end);
    }

    /// Where the core starts and ends in `normalized`, this window normalised.
    fn normalized_core(&self, normalized: &Normalized) -> Range<usize> {
        output_before(normalized, self.core.start - self.range.start)
            ..output_before(normalized, self.core.end - self.range.start)
    }

    /// Which sides of this window are short of text, given whether the text beside the
    /// core is short on each (a side at an end of the text of `text_len` bytes never is).
    fn short_sides(&self, short_before: bool, short_after: bool, text_len: usize) -> (bool, bool) {
        (
            self.range.start > 0 && short_before,
            self.range.end < text_len && short_after,
        )
    }
}

/// How many normalised bytes come from the source before `at`, a clean boundary.
fn output_before(normalized: &Normalized, at: usize) -> usize {
    let (mut low, mut high) = (0, normalized.text.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if normalized.original_offset(middle) < at {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// Finds the nearest clean boundaries, remembering the last stretch it walked without
/// one, so that many candidates in one long stretch of text with no clean boundary
/// (a line of capitals, say) do not walk it again each.
struct Snapper<'t> {
    text: &'t str,
    /// Walking back from the first found the second, and nothing clean in between.
    walked_back: Option<(usize, usize)>,
    /// Walking forward from the first found the second, and nothing clean in between.
    walked_forward: Option<(usize, usize)>,
}

impl<'t> Snapper<'t> {
    fn new(text: &'t str) -> Self {
        Snapper {
            text,
            walked_back: None,
            walked_forward: None,
        }
    }

    /// The nearest clean boundary at or before `at`.
    fn back(&mut self, at: usize) -> usize {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let from = at;
        while !is_clean(self.text, at) {
            match self.walked_back {
                Some((walked_from, found)) if (found + 1..=walked_from).contains(&at) => {
                    at = found;
                    break;
                }
                _ => {}
            }
            at -= self.text[..at]
                .chars()
                .next_back()
                .map_or(0, char::len_utf8);
        }
        self.walked_back = Some((from, at));
        at
    }

    /// The nearest clean boundary at or after `at`.
    fn forward(&mut self, at: usize) -> usize {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at += 1;
        }
        let from = at;
        while !is_clean(self.text, at) {
            match self.walked_forward {
                Some((walked_from, found)) if (walked_from..found).contains(&at) => {
                    at = found;
                    break;
                }
                _ => {}
            }
            at += self.text[at..].chars().next().map_or(0, char::len_utf8);
        }
        self.walked_forward = Some((from, at));
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_boundaries_follow_plain_characters_before_segment_starts() {
        let text = "ab Cd一e,fｶﾞg";
        let clean: Vec<usize> = (0..=text.len())
            .filter(|&at| text.is_char_boundary(at) && is_clean(text, at))
            .collect();
        // Never after a space, a capital, a numeral or `,`, nor inside `ｶﾞ`.
        let after = |prefix: &str| prefix.len();
        assert_eq!(
            clean,
            [
                0,
                after("a"),
                after("ab"),
                after("ab Cd"),
                after("ab Cd一e"),
                after("ab Cd一e,f"),
                after("ab Cd一e,fｶﾞg") // the end
            ]
        );
    }

    #[test]
    fn windows_normalise_to_slices_of_the_whole() {
        let text = "前文。障害対応の手順、ＡＢＣ と 二十 件。後文です。".repeat(40);
        let whole = normalize(&text);
        let candidates: Vec<Range<usize>> = text
            .match_indices("手順")
            .map(|(at, found)| at..at + found.len())
            .step_by(7)
            .collect();
        let pieces = normalized_near(&text, &candidates, "手順".len());
        assert!(pieces.len() > 1, "the test needs several windows");
        for piece in &pieces {
            let start = output_before(&whole, piece.offset);
            let slice = &whole.text[start..start + piece.normalized.text.len()];
            assert_eq!(slice, piece.normalized.text);
            for (at, c) in piece.normalized.text.char_indices() {
                let span = at..at + c.len_utf8();
                assert_eq!(
                    piece.original_range(span.clone()),
                    whole.original_range(start + span.start..start + span.end)
                );
            }
        }
    }

    #[test]
    fn dense_candidates_give_way_to_the_whole_text() {
        let text = "手順 ".repeat(100);
        let candidates: Vec<Range<usize>> = text
            .match_indices("手順")
            .map(|(at, found)| at..at + found.len())
            .collect();
        let pieces = normalized_near(&text, &candidates, 6);
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].offset, 0);
        assert_eq!(pieces[0].normalized.text, normalize(&text).text);
    }

    #[test]
    fn a_window_grows_across_a_long_whitespace_run() {
        let text = format!(
            "{}手順a{}b{}",
            "x".repeat(2000),
            " ".repeat(500),
            "y".repeat(2000)
        );
        let at = text.find("手順").unwrap();
        let candidate = at..at + "手順".len();
        let pieces = normalized_near(&text, std::slice::from_ref(&candidate), "手順a b".len());
        assert_eq!(pieces.len(), 1);
        assert!(pieces[0].normalized.text.contains("手順a b"));
        assert!(pieces[0].normalized.text.len() < text.len() / 2);
    }
}
