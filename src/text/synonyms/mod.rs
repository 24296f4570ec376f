//! Synonym expansion, so that a search for 支払 also finds sections that say 決済 or 精算.
//!
//! `manual_find` promises not to miss a section just because it uses a different word
//! than the query. This module owns the dictionary of interchangeable words and answers
//! one question: which dictionary terms occur inside a (normalised) query phrase, and
//! what else could a manual have written instead of each. It knows nothing of manuals,
//! ranking or the protocol; the caller decides how alternatives are searched and scored.
//!
//! # Sources
//!
//! * The builtin table `src/text/synonyms/sudachi.tsv`, derived from SudachiDict's synonym
//!   dictionary (Apache-2.0, see `src/text/synonyms/NOTICE.md`) and compiled into the binary.
//!   One group per line, TAB-separated terms, each written `[=]VOCABULARY:TEXT`: `=` marks
//!   a term that is only an expansion target, `VOCABULARY` is Sudachi's vocabulary number
//!   (terms sharing it are spelling variants, abbreviations or translations of one word).
//!   Lines starting with `#` are comments. `src/text/synonyms/build_synonyms.py` regenerates it.
//! * The builtin translation table `src/text/synonyms/jmdict.tsv`, in the same format,
//!   derived from JMdict (EDRDG, CC BY-SA, see `NOTICE.md`) by
//!   `src/text/synonyms/build_jmdict.py`: one common Japanese word and one of its
//!   one-word English translations a line, all of vocabulary 1 (the same word written
//!   otherwise, as Sudachi numbers its translations), only pairs Sudachi lacks. It gives a
//!   question in one language a route to a section written in the other. Loaded after
//!   the Sudachi table, so Sudachi's alternatives come first under the cap.
//! * An optional user synonyms file, for a company's own vocabulary (稟議 = 決裁):
//!   - UTF-8 text, one group per line; terms are separated by tabs or commas (`,` or the
//!     full-width `，`); spaces around a term are ignored, so are empty fields;
//!   - `#` at the start of a line or after a space or tab starts a comment that runs to
//!     the end of the line (so `C#` stays a term); blank lines are ignored;
//!   - every term of a line triggers the others and is offered for the others;
//!   - a line that cannot be used (fewer than two different terms, only single-character
//!     terms, not valid UTF-8) becomes a warning naming its line number; the other lines
//!     still load. A missing file is not an error and gives no warning;
//!   - a file whose terms would not fit beside the builtin table in `u32` offsets (4 GiB
//!     of text or 4 Gi terms) is refused whole with a warning, as an unreadable one is,
//!     and the builtin table alone loads;
//!   - user groups are merged with the builtin ones, not substituted: a term found in
//!     both gets the user's alternatives first.
//!
//! # Matching rules
//!
//! * Every term is stored as the caller's normaliser returns it, and queries must be
//!   normalised the same way; terms that become identical after normalisation (width,
//!   case) are merged.
//! * Terms are found inside the phrase, leftmost-longest and without overlap: in
//!   支払方法の変更 the group of 支払方法 wins over the group of 支払.
//! * A term made of a single character never triggers an expansion (一 or 話 would match
//!   inside almost any phrase), but it is still offered as an alternative.
//! * A term that begins or ends with an ASCII letter or digit only matches as a whole
//!   word on that side: `log on` is found in `log on画面` but `eve` is not found in
//!   `every`.
//! * A term written only in hiragana only matches as a whole hiragana run of the phrase,
//!   or with one particle of [`PARTICLES`] glued on either side: `すし` is found in
//!   `すしを頼む`, but `うに` is not found in `ように` nor `まとめ` in `まとめて`. Hiragana
//!   is where Japanese writes its grammar, and a hiragana word cut out of a longer run is
//!   almost always a piece of an inflection or of a function word, not that word.
//!   Terms mixing scripts (`支払い`, `お客様`) and kanji or katakana terms still match
//!   inside compounds (`経費精算` gives `経費`).
//! * Sudachi's expansion control is honoured per group: a term marked only-target in a
//!   group is offered as an alternative of that group but does not trigger it.
//! * At most [`MAX_ALTERNATIVES`] alternatives are returned per term, in this order:
//!   spellings of the found term (same vocabulary number), then the first spelling of
//!   every other vocabulary of its groups, then their remaining spellings; within each
//!   step user groups come before builtin ones, and dictionary order is kept. The cap
//!   thus drops extra spellings of a synonym before it drops a synonym.

use std::ops::Range;

use rustc_hash::FxHashMap;

use super::units::{script, Script, PARTICLES};

/// Alternatives returned per found term. Large groups (従業員 has twenty members) would
/// otherwise multiply the work of one query; twelve keeps every spelling variant and the
/// closest synonyms of the groups seen in company manuals.
pub(crate) const MAX_ALTERNATIVES: usize = 12;

/// The builtin tables, in the order their groups are loaded (and their alternatives
/// offered): SudachiDict's synonyms first, then JMdict's Japanese-English pairs, which
/// only add what Sudachi does not have (`build_jmdict.py`, rule 6).
const BUILTIN_TABLES: [&str; 2] = [include_str!("sudachi.tsv"), include_str!("jmdict.tsv")];

/// One dictionary term found inside a query phrase, with what a manual may say instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expansion {
    /// The normalised dictionary term, equal to `query_norm[byte_range]`.
    pub term: String,
    /// Where the term sits in the normalised query, in bytes.
    pub byte_range: Range<usize>,
    /// Other terms of the term's groups, normalised, best first, at most
    /// [`MAX_ALTERNATIVES`].
    pub alternatives: Vec<String>,
    /// How many of the first alternatives are the found word itself written otherwise
    /// (spelling variants, abbreviations, translations: Sudachi's shared vocabulary
    /// number, or a line of the user file) rather than a related word.
    pub same_word: usize,
}

/// The loaded synonym dictionary: builtin table plus the user's groups.
///
/// Terms are found by probing a hash of trigger terms at each position of the query,
/// not with an Aho-Corasick automaton: building a leftmost-longest automaton over the
/// 43k builtin triggers took 110-130 ms in release, the hash takes about 5 ms, and a
/// query of 50 characters is probed in about 15 µs.
///
/// Held in a few flat arrays (every term's text in one string, every member in one list,
/// every trigger's groups in one list), not a `String` a term and a `Vec` a group and a
/// trigger: a server loads it at every start, and the ~180,000 allocations of that
/// layout (heap grown page by page under them) were most of the load's 50-60 ms at 220 MB
/// of manuals (issue 16).
pub(crate) struct Synonyms {
    terms: Terms,
    triggers: Triggers,
    /// Byte length of the longest trigger: no match extends further from its start.
    longest_trigger: usize,
}

/// Every group's members, normalised, in dictionary order.
struct Terms {
    /// The members' texts one after the other.
    text: String,
    members: Vec<Member>,
    /// Group `g` is `members[group_starts[g]..group_starts[g + 1]]` (the last one runs to
    /// the end).
    group_starts: Vec<u32>,
    /// The most bytes of `text` and the most members: [`OFFSET_LIMIT`] but in tests, so
    /// that every offset and number fits the `u32`s above and in [`Triggers`].
    limit: usize,
}

/// What a `u32` offset or number can count up to. Groups, triggers and sites are never
/// more than members, so bounding the text and the members bounds every number stored.
const OFFSET_LIMIT: usize = u32::MAX as usize;

/// The user file's groups and the builtin ones together went past [`Terms::limit`].
#[derive(Debug)]
struct TooLarge;

struct Member {
    /// Where the text is in [`Terms::text`].
    start: u32,
    end: u32,
    vocabulary: u32,
    expandable: bool,
    /// First member of the group with this vocabulary number: the spelling offered
    /// before the others of its vocabulary.
    leads_vocabulary: bool,
}

/// Why a line's terms make no group.
#[derive(Debug, PartialEq)]
enum Rejected {
    /// Fewer than two different terms once normalised.
    TooFewTerms,
    /// Every term is a single character (asked only of user groups).
    NoTrigger,
    /// A term would take the text or the members past [`Terms::limit`].
    TooLarge,
}

/// Every term that may trigger an expansion, with the groups in which it does, found by
/// its text through a hash of it (FxHash: its keys come from the builtin table and the
/// operator's file, never a client, and hashing the 43k terms with SipHash was about
/// 10 ms of a start). Terms whose hashes collide are chained.
struct Triggers {
    hash: fn(&str) -> u64,
    /// The first trigger of each hash.
    first: FxHashMap<u64, u32>,
    entries: Vec<Trigger>,
    /// Trigger `t`'s sites are `sites[site_starts[t]..site_starts[t + 1]]`, in group
    /// order.
    site_starts: Vec<u32>,
    sites: Vec<TriggerSite>,
}

struct Trigger {
    /// A member with the trigger's text (its place in [`Terms::text`]).
    start: u32,
    end: u32,
    /// The next trigger of the same hash ([`NO_TRIGGER`]: none).
    next: u32,
}

/// End of a chain of [`Trigger`]s.
const NO_TRIGGER: u32 = u32::MAX;

/// A group in which a term is an expandable member, and the term's vocabulary there.
#[derive(Clone, Copy)]
struct TriggerSite {
    group: u32,
    vocabulary: u32,
}

/// A term as read from a source, before normalisation.
struct RawTerm<'a> {
    text: &'a str,
    vocabulary: u32,
    expandable: bool,
}

/// The vocabulary number given to every term of a user line: the user says they are all
/// the same word.
const USER_VOCABULARY: u32 = 0;

impl Synonyms {
    /// Loads the builtin table and the user synonyms file as the caller read it (`None`:
    /// none configured; a file that is not there is none either). `text/` does no I/O:
    /// the caller reads the file (`path.map(std::fs::read)`).
    ///
    /// Never fails: problems in the user file come back as warnings (without the file's
    /// path, which may be a server path a client must not see) and the rest still loads.
    pub(crate) fn load(
        user_file: Option<std::io::Result<Vec<u8>>>,
        normalize: &dyn Fn(&str) -> String,
    ) -> (Synonyms, Vec<String>) {
        let mut warnings = Vec::new();
        let user_text = user_file.and_then(|read| match read {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                warnings.push(format!("user synonyms file could not be read: {error}"));
                None
            }
        });
        let synonyms = Self::from_sources(
            &BUILTIN_TABLES,
            user_text.as_deref(),
            normalize,
            &mut warnings,
            OFFSET_LIMIT,
        );
        (synonyms, warnings)
    }

    /// The groups of `user_text` then of `builtin_tables` in order, at most `limit` bytes
    /// of terms and `limit` terms ([`OFFSET_LIMIT`] but in tests). A user file that does
    /// not fit beside the builtin tables is refused whole with a warning, as an unreadable
    /// one is, and the builtin tables alone load: an operator's file must not stop the
    /// server.
    fn from_sources(
        builtin_tables: &[&str],
        user_text: Option<&[u8]>,
        normalize: &dyn Fn(&str) -> String,
        warnings: &mut Vec<String>,
        limit: usize,
    ) -> Synonyms {
        if let Some(user_text) = user_text {
            // User groups go first so that their alternatives lead when a term is in both.
            let mut terms = Terms::sized_for(builtin_tables, user_text, limit);
            let mut found = Vec::new();
            let fits =
                parse_user_file(&mut terms, user_text, normalize, &mut found).and_then(|()| {
                    parse_builtin_tables(&mut terms, builtin_tables, normalize, &mut found)
                });
            if fits.is_ok() {
                warnings.append(&mut found);
                return Self::index(terms, fx_hash);
            }
            warnings.push(format!(
                "user synonyms file could not be read: with the builtin table its terms \
                 exceed {limit} bytes or {limit} terms; only the builtin table is used"
            ));
        }
        let mut terms = Terms::sized_for(builtin_tables, b"", limit);
        parse_builtin_tables(&mut terms, builtin_tables, normalize, warnings)
            .expect("the builtin tables alone are far below the limit");
        Self::index(terms, fx_hash)
    }

    fn index(terms: Terms, hash: fn(&str) -> u64) -> Synonyms {
        let triggers = Triggers::of(&terms, hash);
        let longest_trigger = triggers
            .entries
            .iter()
            .map(|trigger| (trigger.end - trigger.start) as usize)
            .max()
            .unwrap_or(0);
        Synonyms {
            terms,
            triggers,
            longest_trigger,
        }
    }

    /// How many groups were loaded, builtin and user together (for startup logs).
    pub(crate) fn group_count(&self) -> usize {
        self.terms.group_starts.len()
    }

    /// The dictionary terms found inside `query_norm`, in order, each with its
    /// alternatives. `query_norm` must be normalised like the dictionary was.
    pub(crate) fn expansions(&self, query_norm: &str) -> Vec<Expansion> {
        let mut expansions = Vec::new();
        let mut start = 0;
        while let Some(first_character) = query_norm[start..].chars().next() {
            match self.longest_trigger_at(query_norm, start) {
                Some((end, sites)) => {
                    let term = &query_norm[start..end];
                    let (alternatives, same_word) = self.alternatives(term, sites);
                    expansions.push(Expansion {
                        term: term.to_owned(),
                        byte_range: start..end,
                        alternatives,
                        same_word,
                    });
                    start = end;
                }
                None => start += first_character.len_utf8(),
            }
        }
        expansions
    }

    /// The longest trigger that starts at byte `start` and does not cut an ASCII word.
    fn longest_trigger_at(&self, haystack: &str, start: usize) -> Option<(usize, &[TriggerSite])> {
        haystack[start..]
            .char_indices()
            .map(|(offset, character)| start + offset + character.len_utf8())
            .take_while(|end| end - start <= self.longest_trigger)
            .filter(|&end| {
                is_whole_ascii_word(haystack, start..end)
                    && is_whole_hiragana_word(haystack, start..end)
            })
            .filter_map(|end| Some((end, self.triggers.get(&self.terms, &haystack[start..end])?)))
            .last()
    }

    /// The alternatives in order of preference, and how many lead as the same word.
    fn alternatives(&self, term: &str, sites: &[TriggerSite]) -> (Vec<String>, usize) {
        let ordered = Preference::ALL.into_iter().flat_map(|preference| {
            sites.iter().flat_map(move |site| {
                self.terms
                    .group(site.group as usize)
                    .iter()
                    .filter(move |member| site.preference(member) == preference)
                    .map(move |member| (member, preference))
            })
        });
        let mut alternatives: Vec<String> = Vec::new();
        let mut same_word = 0;
        for (member, preference) in ordered {
            if alternatives.len() == MAX_ALTERNATIVES {
                break;
            }
            let text = self.terms.text(member);
            if text != term && !alternatives.iter().any(|alternative| alternative == text) {
                alternatives.push(text.to_owned());
                same_word += usize::from(preference == Preference::SameVocabulary);
            }
        }
        (alternatives, same_word)
    }
}

/// How early a group member is offered as an alternative of a found term.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Preference {
    SameVocabulary,
    OtherVocabularyLead,
    OtherVocabularyVariant,
}

impl Preference {
    const ALL: [Preference; 3] = [
        Preference::SameVocabulary,
        Preference::OtherVocabularyLead,
        Preference::OtherVocabularyVariant,
    ];
}

impl TriggerSite {
    fn preference(&self, member: &Member) -> Preference {
        if member.vocabulary == self.vocabulary {
            Preference::SameVocabulary
        } else if member.leads_vocabulary {
            Preference::OtherVocabularyLead
        } else {
            Preference::OtherVocabularyVariant
        }
    }
}

impl Terms {
    /// Empty, with room for the terms of `sources` (normalisation keeps a term about as
    /// long as written), so that nothing is copied as they are added.
    fn sized_for(builtin_tables: &[&str], user_text: &[u8], limit: usize) -> Terms {
        let count = |bytes: &[u8], separator: u8| memchr::memchr_iter(separator, bytes).count();
        let in_tables = |separator: u8| -> usize {
            builtin_tables
                .iter()
                .map(|table| count(table.as_bytes(), separator))
                .sum()
        };
        let lines = in_tables(b'\n') + count(user_text, b'\n') + 1;
        let terms = lines + in_tables(b'\t') + user_text.len() / 4;
        let builtin_bytes: usize = builtin_tables.iter().map(|table| table.len()).sum();
        Terms {
            text: String::with_capacity(builtin_bytes + user_text.len()),
            members: Vec::with_capacity(terms),
            group_starts: Vec::with_capacity(lines),
            limit,
        }
    }

    fn text(&self, member: &Member) -> &str {
        &self.text[member.start as usize..member.end as usize]
    }

    /// The members of group `group`.
    fn group(&self, group: usize) -> &[Member] {
        let start = self.group_starts[group] as usize;
        let end = self
            .group_starts
            .get(group + 1)
            .map_or(self.members.len(), |&end| end as usize);
        &self.members[start..end]
    }

    fn can_trigger(&self, member: &Member) -> bool {
        member.expandable && self.text(member).chars().nth(1).is_some()
    }

    /// Adds the group of `raw_terms`, normalised, those that become equal merged (an
    /// expandable spelling wins over an only-target one); nothing when fewer than two
    /// different terms remain or, with `needs_trigger`, when none of them can trigger;
    /// nothing either when a term would not fit [`Terms::limit`].
    fn push_group<'a>(
        &mut self,
        raw_terms: impl IntoIterator<Item = RawTerm<'a>>,
        normalize: &dyn Fn(&str) -> String,
        needs_trigger: bool,
    ) -> Result<(), Rejected> {
        let first = self.members.len();
        let text_len = self.text.len();
        for raw in raw_terms {
            let text = normalize(raw.text);
            if text.is_empty() {
                continue;
            }
            let group = &self.members[first..];
            match group.iter().position(|member| self.text(member) == text) {
                Some(at) => self.members[first + at].expandable |= raw.expandable,
                None => {
                    if self.text.len() + text.len() > self.limit || self.members.len() == self.limit
                    {
                        self.members.truncate(first);
                        self.text.truncate(text_len);
                        return Err(Rejected::TooLarge);
                    }
                    let leads_vocabulary = group
                        .iter()
                        .all(|member| member.vocabulary != raw.vocabulary);
                    let start = offset(&self.text);
                    self.text.push_str(&text);
                    self.members.push(Member {
                        start,
                        end: offset(&self.text),
                        vocabulary: raw.vocabulary,
                        expandable: raw.expandable,
                        leads_vocabulary,
                    });
                }
            }
        }
        let group = &self.members[first..];
        let rejected = if group.len() < 2 {
            Some(Rejected::TooFewTerms)
        } else if needs_trigger && !group.iter().any(|member| self.can_trigger(member)) {
            Some(Rejected::NoTrigger)
        } else {
            None
        };
        if let Some(rejected) = rejected {
            self.members.truncate(first);
            self.text.truncate(text_len);
            return Err(rejected);
        }
        self.group_starts.push(offset_of(first));
        Ok(())
    }
}

/// Where the next text pushed onto `text` starts.
fn offset(text: &str) -> u32 {
    offset_of(text.len())
}

/// `at`, an offset in [`Terms::text`] or a number of members, groups or triggers: all at
/// most [`Terms::limit`] ([`Terms::push_group`] refuses a term past it).
fn offset_of(at: usize) -> u32 {
    u32::try_from(at).expect("Terms::limit keeps every offset within u32")
}

fn fx_hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(text)
}

impl Triggers {
    /// The members of `terms` that can trigger, by text, each with the groups in which
    /// it does (in group order); `hash` hashes a text.
    fn of(terms: &Terms, hash: fn(&str) -> u64) -> Triggers {
        let mut triggers = Triggers {
            hash,
            first: FxHashMap::with_capacity_and_hasher(terms.members.len(), Default::default()),
            entries: Vec::with_capacity(terms.members.len()),
            site_starts: Vec::new(),
            sites: Vec::new(),
        };
        // (trigger, site) in group order, then grouped by trigger keeping that order.
        let mut found = Vec::with_capacity(terms.members.len());
        for group in 0..terms.group_starts.len() {
            for member in terms.group(group) {
                if terms.can_trigger(member) {
                    let trigger = triggers.find_or_add(terms, member);
                    let site = TriggerSite {
                        group: offset_of(group),
                        vocabulary: member.vocabulary,
                    };
                    found.push((trigger, site));
                }
            }
        }
        let keyed = found
            .iter()
            .map(|&(trigger, site)| (trigger as usize, site));
        let groups = triggers.entries.len();
        let placed_all = crate::scatter::by_key(
            keyed,
            groups,
            &mut triggers.site_starts,
            &mut triggers.sites,
        );
        debug_assert!(placed_all, "every trigger was numbered below their count");
        triggers
    }

    /// The number of the trigger with `member`'s text, added when there is none yet.
    fn find_or_add(&mut self, terms: &Terms, member: &Member) -> u32 {
        let text = terms.text(member);
        let key = (self.hash)(text);
        if let Some(found) = self.find(terms, key, text) {
            return found;
        }
        let number = offset_of(self.entries.len());
        let next = self.first.insert(key, number).unwrap_or(NO_TRIGGER);
        self.entries.push(Trigger {
            start: member.start,
            end: member.end,
            next,
        });
        number
    }

    fn find(&self, terms: &Terms, key: u64, text: &str) -> Option<u32> {
        let mut at = *self.first.get(&key)?;
        while at != NO_TRIGGER {
            let trigger = &self.entries[at as usize];
            if &terms.text[trigger.start as usize..trigger.end as usize] == text {
                return Some(at);
            }
            at = trigger.next;
        }
        None
    }

    /// The groups in which `text` triggers; `None` when it triggers none.
    fn get(&self, terms: &Terms, text: &str) -> Option<&[TriggerSite]> {
        let trigger = self.find(terms, (self.hash)(text), text)? as usize;
        let start = self.site_starts[trigger] as usize;
        Some(&self.sites[start..self.site_starts[trigger + 1] as usize])
    }
}

/// False when the match cuts an ASCII word: its first or last byte is an ASCII letter or
/// digit glued to another one outside the match. Bytes suffice because every byte of a
/// multi-byte UTF-8 character is outside the ASCII range.
fn is_whole_ascii_word(haystack: &str, range: Range<usize>) -> bool {
    let bytes = haystack.as_bytes();
    let glued = |inside: u8, outside: Option<&u8>| {
        inside.is_ascii_alphanumeric() && outside.is_some_and(u8::is_ascii_alphanumeric)
    };
    let before = range.start.checked_sub(1).map(|index| &bytes[index]);
    !glued(bytes[range.start], before) && !glued(bytes[range.end - 1], bytes.get(range.end))
}

/// False when a hiragana-only match is cut out of a longer hiragana run and what it
/// leaves of that run on a side is more than one particle (`うに` in `ように`). Matches
/// with any other character are not judged here.
fn is_whole_hiragana_word(haystack: &str, range: Range<usize>) -> bool {
    let is_hiragana = |character: char| script(character) == Script::Hiragana;
    if !haystack[range.clone()].chars().all(is_hiragana) {
        return true;
    }
    let before = &haystack[..range.start];
    let run_start = before
        .char_indices()
        .rev()
        .take_while(|&(_, character)| is_hiragana(character))
        .last()
        .map_or(range.start, |(offset, _)| offset);
    let after = &haystack[range.end..];
    let run_end = range.end
        + after
            .find(|character: char| !is_hiragana(character))
            .unwrap_or(after.len());
    let leaves_a_particle_at_most = |rest: &str| rest.is_empty() || PARTICLES.contains(&rest);
    leaves_a_particle_at_most(&before[run_start..])
        && leaves_a_particle_at_most(&haystack[range.end..run_end])
}

/// The numbered lines of a source that carry content: comments stripped, blank lines
/// skipped, a UTF-8 byte order mark and CR line ends tolerated. A line that is not UTF-8
/// comes back as `Err` so the caller can name it.
fn content_lines(text: &[u8]) -> impl Iterator<Item = (usize, Result<&str, ()>)> {
    let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
    text.split(|&byte| byte == b'\n')
        .enumerate()
        .filter_map(|(index, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let content = match std::str::from_utf8(line) {
                Ok(line) => without_comment(line).trim(),
                Err(_) => return Some((index + 1, Err(()))),
            };
            (!content.is_empty()).then_some((index + 1, Ok(content)))
        })
}

/// The line up to a `#` that starts it or follows whitespace; a `#` inside a term (C#)
/// is kept.
fn without_comment(line: &str) -> &str {
    let mut previous_is_space = true;
    for (offset, character) in line.char_indices() {
        if character == '#' && previous_is_space {
            return &line[..offset];
        }
        previous_is_space = character.is_whitespace();
    }
    line
}

/// Every builtin table, one after the other: the order of their groups is the order in
/// which their alternatives are offered.
fn parse_builtin_tables(
    terms: &mut Terms,
    tables: &[&str],
    normalize: &dyn Fn(&str) -> String,
    warnings: &mut Vec<String>,
) -> Result<(), TooLarge> {
    tables
        .iter()
        .try_for_each(|table| parse_builtin_table(terms, table, normalize, warnings))
}

/// Reads a builtin table as its format is written (`build_synonyms.py`): a comment is a
/// whole line starting with `#`, and no line needs trimming. Not through
/// [`content_lines`], the user file's reader: the table is already a `str` and generated,
/// so a UTF-8 check and a search for comments inside every line would only be work, and
/// at every start (31 M of the 157 M instructions of a load of both tables, issue 9).
fn parse_builtin_table(
    terms: &mut Terms,
    table: &str,
    normalize: &dyn Fn(&str) -> String,
    warnings: &mut Vec<String>,
) -> Result<(), TooLarge> {
    let mut raw_terms = Vec::new();
    let content = table
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    for (line_number, line) in
        content.filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
    {
        raw_terms.clear();
        let parsed = line.split('\t').try_for_each(|field| -> Result<(), &str> {
            raw_terms.push(parse_builtin_term(field).ok_or(field)?);
            Ok(())
        });
        match parsed {
            // Groups merged away by normalisation (variants differing only in width or
            // case) are expected and dropped silently.
            Ok(()) => match terms.push_group(raw_terms.drain(..), normalize, false) {
                Err(Rejected::TooLarge) => return Err(TooLarge),
                Ok(()) | Err(Rejected::TooFewTerms | Rejected::NoTrigger) => {}
            },
            Err(field) => warnings.push(format!(
                "builtin synonym table line {line_number}: term {field:?} is not written \
                 [=]VOCABULARY:TEXT"
            )),
        }
    }
    Ok(())
}

/// Parses `[=]VOCABULARY:TEXT`.
fn parse_builtin_term(field: &str) -> Option<RawTerm<'_>> {
    let (expandable, rest) = match field.strip_prefix('=') {
        Some(rest) => (false, rest),
        None => (true, field),
    };
    let (vocabulary, text) = rest.split_once(':')?;
    Some(RawTerm {
        text: (!text.is_empty()).then_some(text)?,
        vocabulary: vocabulary.parse().ok()?,
        expandable,
    })
}

fn parse_user_file(
    terms: &mut Terms,
    text: &[u8],
    normalize: &dyn Fn(&str) -> String,
    warnings: &mut Vec<String>,
) -> Result<(), TooLarge> {
    for (line_number, line) in content_lines(text) {
        let problem = match line {
            Err(()) => "not valid UTF-8",
            Ok(line) => {
                let raw_terms = line
                    .split(['\t', ',', '，'])
                    .map(str::trim)
                    .filter(|field| !field.is_empty())
                    .map(|text| RawTerm {
                        text,
                        vocabulary: USER_VOCABULARY,
                        expandable: true,
                    });
                match terms.push_group(raw_terms, normalize, true) {
                    Ok(()) => continue,
                    Err(Rejected::TooFewTerms) => "a group needs at least two different terms",
                    Err(Rejected::NoTrigger) => {
                        "every term is a single character, and those never trigger an expansion"
                    }
                    Err(Rejected::TooLarge) => return Err(TooLarge),
                }
            }
        };
        warnings.push(format!(
            "user synonyms file line {line_number} ignored: {problem}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;
    use unicode_normalization::UnicodeNormalization;

    /// Stands in for the project's normaliser: the properties the module relies on are
    /// width folding and case folding.
    fn normalize(text: &str) -> String {
        text.nfkc().collect::<String>().to_lowercase()
    }

    fn builtin() -> &'static Synonyms {
        static BUILTIN: OnceLock<Synonyms> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let (synonyms, warnings) = Synonyms::load(None, &normalize);
            assert_eq!(warnings, Vec::<String>::new());
            synonyms
        })
    }

    fn with_sources(table: &str, user_text: &str) -> (Synonyms, Vec<String>) {
        let mut warnings = Vec::new();
        let synonyms = with_limit(table, user_text, OFFSET_LIMIT, &mut warnings);
        (synonyms, warnings)
    }

    /// Alternatives of `term` found in `query` (normalised here, as the caller would),
    /// checking that the reported range points at it.
    fn alternatives_of(synonyms: &Synonyms, query: &str, term: &str) -> Vec<String> {
        let query_norm = normalize(query);
        let expansion = synonyms
            .expansions(&query_norm)
            .into_iter()
            .find(|expansion| expansion.term == term)
            .unwrap_or_else(|| panic!("{term} not found in {query_norm}"));
        assert_eq!(&query_norm[expansion.byte_range], term);
        expansion.alternatives
    }

    #[test]
    fn builtin_table_loads_without_warnings() {
        assert!(
            builtin().group_count() > 17_000,
            "{}",
            builtin().group_count()
        );
    }

    #[test]
    fn jmdict_pairs_translate_both_ways_but_not_between_glosses() {
        // JMdict: 窃盗 "theft, stealing, larceny", 盗難 "theft, robbery".
        let theft = alternatives_of(builtin(), "bicycle theft", "theft");
        assert_eq!(theft, ["窃盗", "盗難"]);
        let larceny = alternatives_of(builtin(), "窃盗の届出", "窃盗");
        assert!(larceny.starts_with(&["theft".to_owned()]), "{larceny:?}");
        assert!(larceny.contains(&"larceny".to_owned()), "{larceny:?}");
        // Glosses of one entry are each paired with the headword, not with each other.
        assert_eq!(alternatives_of(builtin(), "larceny", "larceny"), ["窃盗"]);
    }

    #[test]
    fn builtin_format_marks_targets_and_vocabularies() {
        let table = "# comment\n1:アプリ\t1:APP\t=2:ソフト\t3:プログラム\n\n1:一\t2:壱\n";
        let (synonyms, warnings) = with_sources(table, "");
        assert_eq!(warnings, Vec::<String>::new());
        // The single-character group loads but can never trigger.
        assert_eq!(synonyms.group_count(), 2);
        assert_eq!(
            alternatives_of(&synonyms, "プログラム", "プログラム"),
            ["アプリ", "ソフト", "app"]
        );
        assert_eq!(
            alternatives_of(&synonyms, "ＡＰＰ", "app"),
            ["アプリ", "ソフト", "プログラム"]
        );
        assert!(synonyms.expansions("ソフト").is_empty());
        assert!(synonyms.expansions("一").is_empty());
    }

    #[test]
    fn builtin_format_errors_name_the_line() {
        let (synonyms, warnings) = with_sources("1:a\t1:b\n1:c\tx:d\n1:e\t:\n", "");
        assert_eq!(synonyms.group_count(), 1);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("line 2") && warnings[0].contains("\"x:d\""));
        assert!(warnings[1].contains("line 3") && warnings[1].contains("\":\""));
    }

    #[test]
    fn finds_a_term_inside_a_phrase_and_lists_variants_first() {
        let alternatives = alternatives_of(builtin(), "交通費の支払について", "支払");
        assert_eq!(alternatives[0], "支払い");
        assert!(
            alternatives.contains(&"決済".to_owned()),
            "{alternatives:?}"
        );
    }

    #[test]
    fn longest_term_wins_at_the_same_position() {
        let alternatives = alternatives_of(builtin(), "支払方法の変更", "支払方法");
        assert!(
            alternatives.contains(&"決済方法".to_owned()),
            "{alternatives:?}"
        );
    }

    #[test]
    fn finds_every_term_of_a_company_phrase() {
        let found: Vec<String> = builtin()
            .expansions("有給休暇の申請と経費の承認")
            .into_iter()
            .map(|expansion| expansion.term)
            .collect();
        assert_eq!(found, ["有給休暇", "申請", "経費", "承認"]);
        assert!(alternatives_of(builtin(), "有給休暇", "有給休暇").contains(&"年休".to_owned()));
        assert!(alternatives_of(builtin(), "経費", "経費").contains(&"コスト".to_owned()));
        assert!(alternatives_of(builtin(), "承認", "承認").contains(&"許可".to_owned()));
    }

    #[test]
    fn only_target_terms_are_offered_but_do_not_trigger() {
        // 精算 is only a target in both of its Sudachi groups.
        assert!(alternatives_of(builtin(), "支払", "支払").contains(&"精算".to_owned()));
        assert!(builtin().expansions("精算").is_empty());
        // 申請 triggers the 届け出 group, where it is expandable, but not the 申し込み
        // group, where it is only a target.
        let alternatives = alternatives_of(builtin(), "申請", "申請");
        assert!(
            alternatives.contains(&"届出".to_owned()),
            "{alternatives:?}"
        );
        assert!(
            !alternatives.contains(&"申込".to_owned()),
            "{alternatives:?}"
        );
    }

    #[test]
    fn single_characters_are_alternatives_but_not_triggers() {
        assert!(builtin().expansions("話").is_empty());
        assert!(alternatives_of(builtin(), "お喋り", "お喋り").contains(&"話".to_owned()));
    }

    #[test]
    fn english_terms_match_whole_words_only() {
        let alternatives = alternatives_of(builtin(), "Login画面", "login");
        assert_eq!(alternatives[0], "ログイン");
        assert!(alternatives.contains(&"サインイン".to_owned()));
        assert!(builtin().expansions("logins").is_empty());
        assert_eq!(
            alternatives_of(builtin(), "how to sign in", "sign in")[0],
            "サインイン"
        );
    }

    #[test]
    fn hiragana_terms_match_as_whole_hiragana_words_only() {
        // (query, dictionary term, whether it is found): grammar is no word, a hiragana
        // word alone or with its particle is, and terms in other scripts are not judged.
        let table = [
            ("ように設定する", "うに", false),
            ("ウニのように", "うに", false),
            ("まとめて削除", "まとめ", false),
            ("ファイルおよびフォルダ", "および", true),
            ("うに", "うに", true),
            ("うにを食べる", "うに", true),
            ("夕食のおかず", "おかず", true),
            ("すしの作り方", "すし", true),
            ("交通費の支払について", "支払", true),
            ("支払いについて", "支払い", true),
            ("経費精算の方法", "経費", true),
        ];
        for (query, term, expected) in table {
            let found = builtin()
                .expansions(&normalize(query))
                .into_iter()
                .any(|expansion| expansion.term == term);
            assert_eq!(found, expected, "{term} in {query}");
        }
        assert!(alternatives_of(builtin(), "うにを食べる", "うに").contains(&"ウニ".to_owned()));
    }

    #[test]
    fn other_synonyms_come_before_their_extra_spellings() {
        // 申請 is alone in its vocabulary; the 届け出 group spells most of its words
        // several ways (届け出, 届出, 届け出で), and the cap must not be spent on those.
        let alternatives = alternatives_of(builtin(), "申請", "申請");
        assert_eq!(
            alternatives[..6],
            [
                "届け出",
                "申告",
                "申し出",
                "申し出る",
                "申し入れ",
                "申し入れる"
            ]
        );
        assert_eq!(alternatives[6], "届出");
    }

    #[test]
    fn alternatives_are_capped_with_variants_first() {
        // サラリーマン's group has twenty members; its spellings share vocabulary 13.
        let alternatives = alternatives_of(builtin(), "サラリーマン", "サラリーマン");
        assert_eq!(alternatives.len(), MAX_ALTERNATIVES);
        assert_eq!(alternatives[..2], ["salaried man", "salaryman"]);
    }

    #[test]
    fn terms_whose_hashes_collide_are_told_apart_by_their_text() {
        let table = "1:経費\t2:コスト\n1:申請\t2:届出\n3:経費\t4:出費\n1:話\t2:お喋り\n";
        let mut warnings = Vec::new();
        let mut terms = Terms::sized_for(&[], b"", OFFSET_LIMIT);
        parse_builtin_table(&mut terms, table, &normalize, &mut warnings).unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        let colliding = Synonyms::index(terms, |_| 0);
        let (hashed, _) = with_sources(table, "");
        for query in ["経費の申請", "コスト", "届出", "出費", "お喋り", "話"] {
            assert_eq!(colliding.expansions(query), hashed.expansions(query));
        }
        assert_eq!(
            alternatives_of(&colliding, "経費の申請", "経費"),
            ["コスト", "出費"]
        );
        assert_eq!(alternatives_of(&colliding, "経費の申請", "申請"), ["届出"]);
        assert!(colliding.expansions("費用と話").is_empty());
    }

    #[test]
    fn user_groups_merge_before_builtin_ones() {
        let (synonyms, warnings) = with_sources(
            "1:承認\t2:許可\n=1:精算\t1:決算\n",
            "稟議, 決裁，承認  # company words\n精算\t経費精算\n",
        );
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(
            alternatives_of(&synonyms, "稟議書", "稟議"),
            ["決裁", "承認"]
        );
        assert_eq!(
            alternatives_of(&synonyms, "承認", "承認"),
            ["稟議", "決裁", "許可"]
        );
        // The user made 精算 a trigger of the user's group only.
        assert_eq!(alternatives_of(&synonyms, "精算", "精算"), ["経費精算"]);
    }

    fn with_limit(
        table: &str,
        user_text: &str,
        limit: usize,
        warnings: &mut Vec<String>,
    ) -> Synonyms {
        let user_text = Some(user_text.as_bytes());
        Synonyms::from_sources(&[table], user_text, &normalize, warnings, limit)
    }

    /// A user file past the limit (4 GiB of terms, here 24 bytes) is refused whole with one
    /// warning, its lines' own warnings dropped, whether it overflows alone or only with
    /// the builtin table after it; the builtin table still loads, and nothing panics.
    #[test]
    fn a_user_file_past_the_limit_is_refused_and_the_builtin_table_kept() {
        let table = "1:経費\t2:コスト\n"; // 15 bytes of terms
        let refused = "user synonyms file could not be read: with the builtin table its terms \
                       exceed 24 bytes or 24 terms; only the builtin table is used";
        for user_text in [
            "稟議, 決裁\n休暇\n",           // 12 bytes: fits alone, not with the table
            "稟議, 決裁\n承認, 許可, 可\n", // 24 bytes and a term more: not alone
        ] {
            let mut warnings = Vec::new();
            let synonyms = with_limit(table, user_text, 24, &mut warnings);
            assert_eq!(warnings, [refused], "{user_text:?}");
            assert_eq!(alternatives_of(&synonyms, "経費", "経費"), ["コスト"]);
            assert!(synonyms.expansions("稟議").is_empty());
            assert_eq!(synonyms.group_count(), 1);
        }
        // At the limit exactly, it loads.
        let mut warnings = Vec::new();
        let synonyms = with_limit(table, "稟議, 可\n", 24, &mut warnings);
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(alternatives_of(&synonyms, "稟議", "稟議"), ["可"]);
        assert_eq!(synonyms.group_count(), 2);
    }

    #[test]
    fn user_file_problems_become_warnings_naming_the_line() {
        let mut text = "# header\n休暇\nC#, C sharp\n".as_bytes().to_vec();
        text.extend(b"\xff\xfe\n");
        text.extend("A,a\n一,壱\r\n , ,\n".as_bytes());
        let mut warnings = Vec::new();
        let synonyms =
            Synonyms::from_sources(&[], Some(&text), &normalize, &mut warnings, OFFSET_LIMIT);
        assert_eq!(
            warnings,
            [
                "user synonyms file line 2 ignored: a group needs at least two different terms",
                "user synonyms file line 4 ignored: not valid UTF-8",
                "user synonyms file line 5 ignored: a group needs at least two different terms",
                "user synonyms file line 6 ignored: every term is a single character, and \
                 those never trigger an expansion",
                "user synonyms file line 7 ignored: a group needs at least two different terms",
            ]
        );
        assert_eq!(alternatives_of(&synonyms, "c#", "c#"), ["c sharp"]);
    }

    #[test]
    fn user_file_with_byte_order_mark_loads() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("synonyms.txt");
        std::fs::write(&path, "\u{feff}稟議,決裁\r\n").unwrap();
        let (synonyms, warnings) = Synonyms::load(Some(std::fs::read(&path)), &normalize);
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(synonyms.group_count(), builtin().group_count() + 1);
        assert_eq!(alternatives_of(&synonyms, "稟議", "稟議"), ["決裁"]);
    }

    #[test]
    fn missing_user_file_is_silent_and_unreadable_one_warns_without_its_path() {
        let directory = tempfile::tempdir().unwrap();
        let (_, warnings) = Synonyms::load(
            Some(std::fs::read(directory.path().join("absent"))),
            &normalize,
        );
        assert_eq!(warnings, Vec::<String>::new());
        let (synonyms, warnings) =
            Synonyms::load(Some(std::fs::read(directory.path())), &normalize);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("user synonyms file could not be read"));
        assert!(!warnings[0].contains(&*directory.path().to_string_lossy()));
        assert_eq!(synonyms.group_count(), builtin().group_count());
    }

    /// Dictionary terms of every kind (expandable, only-target, single-character, English)
    /// and the glue around them in real queries.
    const QUERY_PIECES: &[&str] = &[
        "支払",
        "経費",
        "login",
        "申請",
        "精算",
        "の",
        "x",
        " ",
        "話",
        "サラリーマン",
    ];

    proptest! {
        #[test]
        fn expansions_describe_the_query(
            pieces in proptest::collection::vec(
                prop_oneof![
                    prop::sample::select(QUERY_PIECES).prop_map(str::to_owned),
                    "[a-zぁ-んァ-ン一-龥]{0,3}",
                ],
                0..8,
            )
        ) {
            let query = normalize(&pieces.concat());
            let mut previous_end = 0;
            for expansion in builtin().expansions(&query) {
                prop_assert!(expansion.byte_range.start >= previous_end);
                previous_end = expansion.byte_range.end;
                prop_assert_eq!(&query[expansion.byte_range.clone()], expansion.term.as_str());
                prop_assert!(expansion.term.chars().count() >= 2);
                prop_assert!(!expansion.alternatives.is_empty());
                prop_assert!(expansion.alternatives.len() <= MAX_ALTERNATIVES);
                prop_assert!(!expansion.alternatives.contains(&expansion.term));
            }
        }
    }
}
