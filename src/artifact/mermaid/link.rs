//! The link between two nodes: `-->`, `---`, `-.->`, `==>`, `--o`, `--x`, `<-->`, `~~~`,
//! with a label as `-->|yes|` or inline as `-- yes -->`.
//!
//! Every visible link is a flow edge in writing order (`A --- B` too: an open line still
//! says B follows A); `<-->` goes both ways; the invisible `~~~` only moves the layout and
//! is no edge at all. Labels do not enter the model.

use super::cursor::Cursor;
use super::node::continues_id;

/// Which flow edges a link makes between its left and right nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Forward,
    BothWays,
    None,
}

/// Strokes that may open a link with inline text, and where that text ends: `-- yes -->`
/// ends at `--`, `-. yes .->` at `.-`, `== yes ==>` at `==`.
const TEXT_LINK_OPENERS: [(&str, &str); 3] = [("--", "--"), ("-.", ".-"), ("==", "==")];

/// Consumes the link, its label and the whitespace after them.
pub(crate) fn parse_link(cursor: &mut Cursor) -> Result<Flow, String> {
    let starts_with_arrow = cursor.eat("<");
    let (mut stroke, mut capped) = parse_stroke(cursor);
    if stroke.chars().count() < 2 {
        return Err(format!(
            "expected an arrow such as --> at {}",
            cursor.quote()
        ));
    }
    if !capped {
        if let Some(&(_, text_end)) = TEXT_LINK_OPENERS
            .iter()
            .find(|(opener, _)| *opener == stroke)
        {
            let rest = cursor.rest();
            let text_length = rest
                .find(text_end)
                .ok_or_else(|| format!("the link text after `{stroke}` has no closing arrow"))?;
            cursor.eat(&rest[..text_length]);
            (stroke, capped) = parse_stroke(cursor);
        }
    }
    cursor.skip_whitespace();
    if cursor.eat("|") && cursor.take_until("|").is_none() {
        return Err("a link label opened with `|` is not closed".to_owned());
    }
    cursor.skip_whitespace();
    Ok(if stroke.contains('~') {
        Flow::None
    } else if starts_with_arrow && capped {
        Flow::BothWays
    } else {
        Flow::Forward
    })
}

/// The line of `-`, `=`, `.` or `~`, and whether an arrow head or an `o` / `x` cap ends it.
fn parse_stroke<'a>(cursor: &mut Cursor<'a>) -> (&'a str, bool) {
    let stroke = cursor.take_while(|c, _| matches!(c, '-' | '=' | '.' | '~'));
    let rest = cursor.rest();
    let mut chars = rest.chars();
    let cap = match (chars.next(), chars.next()) {
        (Some('>'), _) => true,
        (Some('o' | 'x'), next) => !next.is_some_and(continues_id),
        _ => false,
    };
    if cap {
        cursor.eat(&rest[..1]);
    }
    (stroke, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(text: &str) -> (Result<Flow, String>, String) {
        let mut cursor = Cursor::new(text);
        let flow = parse_link(&mut cursor);
        (flow, cursor.rest().to_owned())
    }

    #[test]
    fn arrows_and_their_flow() {
        for (text, flow, rest) in [
            ("-->B", Flow::Forward, "B"),
            ("--- B", Flow::Forward, "B"),
            ("-.-> B", Flow::Forward, "B"),
            ("==> B", Flow::Forward, "B"),
            ("--o B", Flow::Forward, "B"),
            ("--x B", Flow::Forward, "B"),
            ("---->B", Flow::Forward, "B"),
            ("<--> B", Flow::BothWays, "B"),
            ("~~~ B", Flow::None, "B"),
            ("-->|yes| C", Flow::Forward, "C"),
            ("---|open| D", Flow::Forward, "D"),
            ("-- yes --> C", Flow::Forward, "C"),
            ("-. maybe .-> C", Flow::Forward, "C"),
            ("== 承認 ==> C", Flow::Forward, "C"),
            ("<-- both --> C", Flow::BothWays, "C"),
        ] {
            let (parsed, left) = link(text);
            assert_eq!(parsed, Ok(flow), "{text}");
            assert_eq!(left, rest, "{text}");
        }
    }

    #[test]
    fn a_cap_is_not_the_start_of_an_id() {
        let (parsed, left) = link("---oB");
        assert_eq!(parsed, Ok(Flow::Forward));
        assert_eq!(left, "oB");
    }

    #[test]
    fn broken_links_are_errors() {
        for text in ["- B", "B", "-- text without end", "-->|open B"] {
            assert!(link(text).0.is_err(), "{text}");
        }
    }
}
