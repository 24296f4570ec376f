//! Title and anchor of one heading.
//!
//! Clients match headings by what a reader sees, so the title is the heading's plain text:
//! emphasis, links and code spans are reduced to their text. Many manuals (Hugo, Pandoc,
//! kramdown sources) end a heading with a `{#custom-id}` attribute; comrak (built without
//! its attributes feature) leaves it in the text, so we cut it off the title and keep it as
//! the anchor, since that is the id the published site links to. Headings without one get
//! the GitHub-style slug comrak's renderer would produce.

use std::collections::{HashMap, HashSet};

use comrak::nodes::{AstNode, NodeValue};
use comrak::Anchorizer;

/// A heading's visible text and the anchor that links to it.
pub(crate) struct HeadingText {
    pub title: String,
    pub anchor: String,
}

/// The slugs of one file, numbered as comrak's `Anchorizer` numbers repeated titles (`a`,
/// `a-1`, …), but in amortised constant time: comrak retries every suffix from 0 for each
/// repeat, so a file repeating one heading 20,000 times took minutes to index.
#[derive(Default)]
pub(crate) struct Slugs {
    taken: HashSet<String>,
    /// Per base slug, the lowest suffix not yet known to be taken.
    next_suffix: HashMap<String, usize>,
}

impl Slugs {
    pub(crate) fn anchorize(&mut self, title: &str) -> String {
        // A fresh anchorizer gives the base slug (no collision to number yet).
        let base = Anchorizer::new().anchorize(title);
        let suffix = self.next_suffix.entry(base.clone()).or_default();
        loop {
            let candidate = match *suffix {
                0 => base.clone(),
                n => format!("{base}-{n}"),
            };
            *suffix += 1;
            if self.taken.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

/// Reads the heading `heading`; `slugs` is one per file, so repeated titles get distinct
/// slugs (`a`, `a-1`, …) the way rendered pages number them.
pub(crate) fn heading_text<'a>(heading: &'a AstNode<'a>, slugs: &mut Slugs) -> HeadingText {
    let plain = plain_text(heading);
    match split_custom_id(&plain) {
        Some((title, id)) => HeadingText {
            title: title.to_owned(),
            anchor: id.to_owned(),
        },
        None => HeadingText {
            anchor: slugs.anchorize(&plain),
            title: plain,
        },
    }
}

/// Inline text with markup stripped; line breaks and runs of white space become one space.
fn plain_text<'a>(heading: &'a AstNode<'a>) -> String {
    let mut raw = String::new();
    for inline in heading.descendants() {
        match &inline.data.borrow().value {
            NodeValue::Text(text) => raw.push_str(text),
            NodeValue::Code(code) => raw.push_str(&code.literal),
            NodeValue::SoftBreak | NodeValue::LineBreak => raw.push(' '),
            _ => {}
        }
    }
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `"Title {#id}"` -> `("Title", "id")`. Only a single `#id` without spaces or braces counts,
/// and only when some title remains, so literal braces in a title are left alone.
fn split_custom_id(plain: &str) -> Option<(&str, &str)> {
    let body = plain.strip_suffix('}')?;
    let open = body.rfind("{#")?;
    let id = &body[open + 2..];
    let title = body[..open].trim_end();
    let id_is_plain =
        !id.is_empty() && !id.contains(|c: char| c.is_whitespace() || c == '{' || c == '}');
    (id_is_plain && !title.is_empty()).then_some((title, id))
}

#[cfg(test)]
mod tests {
    use comrak::Anchorizer;

    use super::{split_custom_id, Slugs};

    #[test]
    fn slugs_number_repeats_as_comrak_does() {
        let titles = [
            "A",
            "a",
            "A-1",
            "A",
            "b c",
            "B C",
            "a-1",
            "A",
            "手続き",
            "手続き",
        ];
        let mut ours = Slugs::default();
        let mut comrak = Anchorizer::new();
        for title in titles.iter().chain(titles.iter()) {
            assert_eq!(ours.anchorize(title), comrak.anchorize(title), "{title}");
        }
    }

    #[test]
    fn many_repeats_of_one_title_stay_linear() {
        // Quadratic numbering (comrak's) took minutes here; linear takes milliseconds.
        let mut slugs = Slugs::default();
        for _ in 0..20_000 {
            slugs.anchorize("手続き");
        }
        assert_eq!(slugs.anchorize("手続き"), "手続き-20000");
    }

    #[test]
    fn custom_id_is_split_off() {
        assert_eq!(
            split_custom_id("固定資産 {#fixed-assets}"),
            Some(("固定資産", "fixed-assets"))
        );
        assert_eq!(split_custom_id("A{#a_1}"), Some(("A", "a_1")));
    }

    #[test]
    fn braces_that_are_not_an_id_stay_in_the_title() {
        assert_eq!(split_custom_id("Set {#a b}"), None);
        assert_eq!(split_custom_id("{#only-id}"), None);
        assert_eq!(split_custom_id("Use {#}"), None);
        assert_eq!(split_custom_id("map {x}"), None);
    }
}
