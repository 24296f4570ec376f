//! One node reference in a flowchart statement: `A`, `A[text]`, `A{text}`, `A([text])`,
//! `A["quoted [text]"]`, optionally followed by `:::class`.
//!
//! Only three shapes mean something to the audit: the stadium and circles are terminals
//! (start or end, by position), the rhombus is a decision, every other shape is a step.

use super::cursor::Cursor;

/// What a node's shape says about its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Terminal,
    Decision,
    Step,
}

/// Mermaid's shape delimiters: opener, accepted closers, meaning. Longer openers come
/// first so `((` is not read as `(`.
const SHAPES: &[(&str, &[&str], Shape)] = &[
    ("(((", &[")))"], Shape::Terminal),
    ("((", &["))"], Shape::Terminal),
    ("([", &["])"], Shape::Terminal),
    ("(", &[")"], Shape::Step),
    ("[[", &["]]"], Shape::Step),
    ("[(", &[")]"], Shape::Step),
    ("[/", &["/]", "\\]"], Shape::Step),
    ("[\\", &["\\]", "/]"], Shape::Step),
    ("[", &["]"], Shape::Step),
    ("{{", &["}}"], Shape::Step),
    ("{", &["}"], Shape::Decision),
    (">", &["]"], Shape::Step),
];

/// A node as written at one place; a node written bare (`A`) has no label.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NodeSyntax<'a> {
    pub id: &'a str,
    pub label: Option<(Shape, String)>,
}

/// Node ids are letters, digits, `_`, and `-` between them (`-` before `-`, `.` or `>`
/// starts an arrow instead).
fn is_id_char(c: char, next: Option<char>) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    is_word(c) || (c == '-' && next.is_some_and(is_word))
}

/// True when `c` could continue a node id; used to tell an arrow cap from an id.
pub(crate) fn continues_id(c: char) -> bool {
    is_id_char(c, None)
}

pub(crate) fn parse_node<'a>(cursor: &mut Cursor<'a>) -> Result<NodeSyntax<'a>, String> {
    let id = cursor.take_while(is_id_char);
    if id.is_empty() {
        return Err(format!("expected a node id at {}", cursor.quote()));
    }
    let label = parse_shape(cursor)?;
    if cursor.eat(":::") {
        cursor.take_while(is_id_char);
    }
    Ok(NodeSyntax { id, label })
}

fn parse_shape(cursor: &mut Cursor) -> Result<Option<(Shape, String)>, String> {
    let Some(&(opener, closers, shape)) = SHAPES.iter().find(|(opener, ..)| cursor.eat(opener))
    else {
        return Ok(None);
    };
    let text = if cursor.eat("\"") {
        let quoted = cursor
            .take_until("\"")
            .ok_or_else(|| format!("unclosed quote in the label after `{opener}`"))?;
        if !closers.iter().any(|closer| cursor.eat(closer)) {
            return Err(format!("expected `{}` at {}", closers[0], cursor.quote()));
        }
        quoted
    } else {
        let rest = cursor.rest();
        let (at, closer) = closers
            .iter()
            .filter_map(|closer| rest.find(closer).map(|at| (at, closer)))
            .min()
            .ok_or_else(|| format!("`{opener}` is not closed by `{}`", closers[0]))?;
        cursor.take_until(closer);
        &rest[..at]
    };
    Ok(Some((shape, text.trim().to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> (NodeSyntax<'_>, String) {
        let mut cursor = Cursor::new(text);
        let node = parse_node(&mut cursor).unwrap();
        (node, cursor.rest().to_owned())
    }

    fn labelled(shape: Shape, text: &str) -> Option<(Shape, String)> {
        Some((shape, text.to_owned()))
    }

    #[test]
    fn shapes_give_roles() {
        assert_eq!(node("A([申請])").0.label, labelled(Shape::Terminal, "申請"));
        assert_eq!(node("A((x))").0.label, labelled(Shape::Terminal, "x"));
        assert_eq!(
            node("B{上長承認?}").0.label,
            labelled(Shape::Decision, "上長承認?")
        );
        assert_eq!(
            node("C[経理へ回付]").0.label,
            labelled(Shape::Step, "経理へ回付")
        );
        assert_eq!(node("C{{prep}}").0.label, labelled(Shape::Step, "prep"));
        assert_eq!(node("C[/io\\]").0.label, labelled(Shape::Step, "io"));
        assert_eq!(node("C(round)").0.label, labelled(Shape::Step, "round"));
        assert_eq!(node("D>flag]").0.label, labelled(Shape::Step, "flag"));
    }

    #[test]
    fn ids_labels_and_classes() {
        let (parsed, rest) = node("step-1[\"a [b] c\"]:::warn-->B");
        assert_eq!(parsed.id, "step-1");
        assert_eq!(parsed.label, labelled(Shape::Step, "a [b] c"));
        assert_eq!(rest, "-->B");
        let (parsed, rest) = node("A-->B");
        assert_eq!((parsed.id, parsed.label), ("A", None));
        assert_eq!(rest, "-->B");
    }

    #[test]
    fn broken_nodes_say_what_is_missing() {
        for text in ["[x]", "A[x", "A[\"x]", "A[\"x\"}"] {
            assert!(parse_node(&mut Cursor::new(text)).is_err(), "{text}");
        }
    }
}
