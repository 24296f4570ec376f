//! Title and anchor of one heading.
//!
//! Clients match headings by what a reader sees, so the title is the heading's plain text:
//! emphasis, links and code spans are reduced to their text. Many manuals (Hugo, Pandoc,
//! kramdown sources) end a heading with a `{#custom-id}` attribute; comrak (built without
//! its attributes feature) leaves it in the text, so we cut it off the title and keep it as
//! the anchor, since that is the id the published site links to. Headings without one get
//! the GitHub-style slug comrak's renderer would produce.

use comrak::nodes::{AstNode, NodeValue};
use comrak::Anchorizer;

/// A heading's visible text and the anchor that links to it.
pub(crate) struct HeadingText {
    pub title: String,
    pub anchor: String,
}

/// Reads the heading `heading`; `anchorizer` is one per file, so repeated titles get
/// distinct slugs (`a`, `a-1`, …) the way rendered pages number them.
pub(crate) fn heading_text<'a>(
    heading: &'a AstNode<'a>,
    anchorizer: &mut Anchorizer,
) -> HeadingText {
    let plain = plain_text(heading);
    match split_custom_id(&plain) {
        Some((title, id)) => HeadingText {
            title: title.to_owned(),
            anchor: id.to_owned(),
        },
        None => HeadingText {
            anchor: anchorizer.anchorize(&plain),
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
    use super::split_custom_id;

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
