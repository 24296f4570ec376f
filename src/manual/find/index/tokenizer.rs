//! The two tantivy tokenizers of the section index, thin adapters over `text::units`:
//! the index holds exactly the tokens the query side computes with the same functions
//! (see [`unit_tokens`](crate::text::units::unit_tokens) and
//! [`word_tokens`](crate::text::units::word_tokens)), so a unit or a literal is found by
//! the terms it is made of. Each tokenizer keeps its [`IndexTokens`] and one [`Token`]
//! from text to text, so a build allocates nothing per token.

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

use crate::text::units::IndexTokens;

/// Name of the tokenizer of the `body` and `heading` fields.
pub(super) const UNITS: &str = "manvault-units";
/// Name of the tokenizer of the `words` field.
pub(super) const WORDS: &str = "manvault-words";

/// Registers both tokenizers with `index`.
pub(super) fn register(index: &tantivy::Index) {
    let tokenizers = index.tokenizers();
    tokenizers.register(UNITS, TextAnalyzer::from(Stream::new(IndexTokens::units)));
    tokenizers.register(WORDS, TextAnalyzer::from(Stream::new(IndexTokens::words)));
}

/// A tokenizer made of a method that cuts normalised text into [`IndexTokens`].
#[derive(Clone)]
struct Stream {
    cut: fn(&mut IndexTokens, &str),
    tokens: IndexTokens,
    token: Token,
}

impl Stream {
    fn new(cut: fn(&mut IndexTokens, &str)) -> Stream {
        Stream {
            cut,
            tokens: IndexTokens::default(),
            token: Token::default(),
        }
    }
}

impl Tokenizer for Stream {
    type TokenStream<'a> = Tokens<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Tokens<'a> {
        (self.cut)(&mut self.tokens, text);
        Tokens {
            tokens: &self.tokens,
            token: &mut self.token,
            next: 0,
        }
    }
}

/// The tokens of one text, handed out in order through one reused [`Token`].
struct Tokens<'a> {
    tokens: &'a IndexTokens,
    token: &'a mut Token,
    next: usize,
}

impl TokenStream for Tokens<'_> {
    fn advance(&mut self) -> bool {
        let Some(next) = self.tokens.tokens().get(self.next) else {
            return false;
        };
        self.next += 1;
        let token = &mut *self.token;
        token.offset_from = next.bytes.start;
        token.offset_to = next.bytes.end;
        token.position = next.position as usize;
        token.position_length = 1;
        token.text.clear();
        token.text.push_str(self.tokens.text_of(next));
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}
