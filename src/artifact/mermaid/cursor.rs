//! A position in one line of a Mermaid chart, with the few moves the flowchart grammar
//! needs. Errors quote a little of what follows, so a person can find the spot.

/// How much of the remaining text an error quotes.
const QUOTED_CHARS: usize = 20;

pub(crate) struct Cursor<'a> {
    text: &'a str,
    position: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, position: 0 }
    }

    pub(crate) fn rest(&self) -> &'a str {
        &self.text[self.position..]
    }

    /// True at the end of a statement: end of line, `;` or a trailing `%%` comment.
    pub(crate) fn at_statement_end(&self) -> bool {
        let rest = self.rest();
        rest.is_empty() || rest.starts_with(';') || rest.starts_with("%%")
    }

    pub(crate) fn skip_whitespace(&mut self) {
        let rest = self.rest();
        self.position += rest.len() - rest.trim_start().len();
    }

    /// Consumes `prefix` if the text continues with it.
    pub(crate) fn eat(&mut self, prefix: &str) -> bool {
        let found = self.rest().starts_with(prefix);
        if found {
            self.position += prefix.len();
        }
        found
    }

    /// Consumes characters while `keep(char, next_char)` holds and returns them.
    pub(crate) fn take_while(&mut self, keep: impl Fn(char, Option<char>) -> bool) -> &'a str {
        let rest = self.rest();
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        while let Some((at, c)) = chars.next() {
            if !keep(c, chars.peek().map(|&(_, next)| next)) {
                end = at;
                break;
            }
        }
        self.position += end;
        &rest[..end]
    }

    /// Consumes up to and including the first `end`; returns the text before it, or None
    /// (consuming nothing) when `end` does not follow.
    pub(crate) fn take_until(&mut self, end: &str) -> Option<&'a str> {
        let rest = self.rest();
        let found = rest.find(end)?;
        self.position += found + end.len();
        Some(&rest[..found])
    }

    /// The start of the remaining text, for error messages.
    pub(crate) fn quote(&self) -> String {
        let rest = self.rest();
        if rest.is_empty() {
            return "the end of the line".to_owned();
        }
        let shown: String = rest.chars().take(QUOTED_CHARS).collect();
        let ellipsis = if shown.len() < rest.len() { "…" } else { "" };
        format!("`{shown}{ellipsis}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_over_text() {
        let mut cursor = Cursor::new("ab12-->x; y");
        assert_eq!(cursor.take_while(|c, _| c.is_alphanumeric()), "ab12");
        assert!(cursor.eat("-->"));
        assert!(!cursor.eat("-->"));
        assert_eq!(cursor.take_until(";"), Some("x"));
        assert_eq!(cursor.take_until(";"), None);
        cursor.skip_whitespace();
        assert_eq!(cursor.quote(), "`y`");
        assert!(!cursor.at_statement_end());
        cursor.eat("y");
        assert!(cursor.rest().is_empty() && cursor.at_statement_end());
    }
}
