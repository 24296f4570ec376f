//! The two tantivy tokenizers of the section index, thin adapters over `text::units`:
//! the index holds exactly the tokens the query side computes with the same functions
//! (see [`unit_tokens`] and [`word_tokens`]), so a unit or a literal is found by the
//! terms it is made of.

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

use crate::text::units::{unit_tokens, word_tokens, IndexToken};

/// Name of the tokenizer of the `body` and `heading` fields.
pub(super) const UNITS: &str = "manvault-units";
/// Name of the tokenizer of the `words` field.
pub(super) const WORDS: &str = "manvault-words";

/// Registers both tokenizers with `index`.
pub(super) fn register(index: &tantivy::Index) {
    let tokenizers = index.tokenizers();
    tokenizers.register(UNITS, TextAnalyzer::from(Stream(unit_tokens)));
    tokenizers.register(WORDS, TextAnalyzer::from(Stream(word_tokens)));
}

/// A tokenizer made of a function from normalised text to its tokens.
#[derive(Clone)]
struct Stream(fn(&str) -> Vec<IndexToken>);

impl Tokenizer for Stream {
    type TokenStream<'a> = Tokens;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Tokens {
        Tokens {
            tokens: (self.0)(text)
                .into_iter()
                .map(|token| Token {
                    offset_from: token.bytes.start,
                    offset_to: token.bytes.end,
                    position: token.position as usize,
                    text: token.text,
                    position_length: 1,
                })
                .collect(),
            next: 0,
        }
    }
}

/// The tokens of one text, handed out in order.
struct Tokens {
    tokens: Vec<Token>,
    next: usize,
}

impl TokenStream for Tokens {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}
