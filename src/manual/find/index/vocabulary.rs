//! The Latin words of the index as written, for literals whose first or last word may be
//! part of a longer word: the scan that the index replaces finds `log` inside `syslog`
//! and `rotate` inside `logrotate`, so the index looks such a word up among every word it
//! holds. The list is built once per commit from the term dictionaries of the `words`
//! field (tens of thousands of words, a few hundred kilobytes) and searched with
//! `memchr::memmem` over one string.

use tantivy::schema::Field;
use tantivy::Searcher;

/// A literal's edge word in a longer word: where the longer word must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    /// The literal starts and ends inside this word: anywhere in it.
    Inside,
    /// The literal starts with the word: a word ending with it.
    Ending,
    /// The literal ends with the word: a word starting with it.
    Starting,
}

/// Every distinct word, sorted, in one string.
#[derive(Debug, Default)]
pub(crate) struct Vocabulary {
    /// `\n` + each word + `\n`...
    text: String,
    /// Byte offset of each word in `text`.
    starts: Vec<u32>,
}

impl Vocabulary {
    pub(crate) fn build(searcher: &Searcher, field: Field) -> tantivy::Result<Vocabulary> {
        let mut words: Vec<String> = Vec::new();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(field)?;
            let mut stream = inverted.terms().stream()?;
            while stream.advance() {
                if let Ok(word) = std::str::from_utf8(stream.key()) {
                    words.push(word.to_owned());
                }
            }
        }
        words.sort_unstable();
        words.dedup();
        let mut vocabulary = Vocabulary {
            text: String::with_capacity(words.iter().map(|w| w.len() + 1).sum::<usize>() + 1),
            starts: Vec::with_capacity(words.len()),
        };
        vocabulary.text.push('\n');
        for word in words {
            vocabulary.starts.push(vocabulary.text.len() as u32);
            vocabulary.text.push_str(&word);
            vocabulary.text.push('\n');
        }
        Ok(vocabulary)
    }

    fn word(&self, index: usize) -> &str {
        let start = self.starts[index] as usize;
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |&next| next as usize);
        &self.text[start..end - 1]
    }

    /// The words holding `needle` as `edge` says, each with the characters before
    /// `needle` in it (one entry per occurrence), at most `limit` words; `None` when more
    /// words than that hold it (the literal is then looked for without this word).
    pub(crate) fn holding(
        &self,
        needle: &str,
        edge: Edge,
        limit: usize,
    ) -> Option<Vec<(&str, u32)>> {
        let mut found: Vec<(&str, u32)> = Vec::new();
        let mut words = 0;
        let mut last_word = usize::MAX;
        for at in memchr::memmem::find_iter(self.text.as_bytes(), needle.as_bytes()) {
            let index = self.starts.partition_point(|&start| start as usize <= at);
            let Some(index) = index.checked_sub(1) else {
                continue;
            };
            let word = self.word(index);
            let inside = at - self.starts[index] as usize;
            if inside + needle.len() > word.len() {
                continue;
            }
            let fits = match edge {
                Edge::Inside => true,
                Edge::Ending => inside + needle.len() == word.len(),
                Edge::Starting => inside == 0,
            };
            if !fits {
                continue;
            }
            if index != last_word {
                words += 1;
                last_word = index;
                if words > limit {
                    return None;
                }
            }
            found.push((word, word[..inside].chars().count() as u32));
        }
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary(words: &[&str]) -> Vocabulary {
        let mut sorted: Vec<&str> = words.to_vec();
        sorted.sort_unstable();
        let mut vocabulary = Vocabulary {
            text: "\n".into(),
            starts: Vec::new(),
        };
        for word in sorted {
            vocabulary.starts.push(vocabulary.text.len() as u32);
            vocabulary.text.push_str(word);
            vocabulary.text.push('\n');
        }
        vocabulary
    }

    #[test]
    fn words_are_found_by_where_the_needle_sits() {
        let v = vocabulary(&["log", "logrotate", "syslog", "blogs", "catalog", "lolog"]);
        let inside = v.holding("log", Edge::Inside, 10).unwrap();
        assert!(inside.contains(&("syslog", 3)) && inside.contains(&("blogs", 1)));
        assert!(inside.contains(&("lolog", 2)));
        let ending: Vec<&str> = v
            .holding("log", Edge::Ending, 10)
            .unwrap()
            .iter()
            .map(|(w, _)| *w)
            .collect();
        assert_eq!(ending, ["catalog", "log", "lolog", "syslog"]);
        let starting: Vec<(&str, u32)> = v.holding("log", Edge::Starting, 10).unwrap();
        assert_eq!(starting, [("log", 0), ("logrotate", 0)]);
        assert!(
            v.holding("log", Edge::Inside, 3).is_none(),
            "over the limit"
        );
        assert_eq!(v.holding("xyz", Edge::Inside, 3), Some(vec![]));
    }
}
