//! The label selector's query-string grammar: a tokenizer and a recursive-descent parser with the
//! server's wording for every syntax error.

use super::{Operator, Requirement, SelectorError, invalid_value};
use kmm_api::validation::names::qualified_name_errors;

/// Tokens of the label selector syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    End,
    Identifier,
    In,
    NotIn,
    OpenParen,
    CloseParen,
    Comma,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: TokenKind,
    text: &'a str,
}

/// Whether `in`/`notin` are read as operators or as plain words (a value or key may be `in`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the input into tokens. A NUL byte ends the input, as it does for the server's lexer.
fn tokenize(s: &str) -> Vec<Token<'_>> {
    let bytes = s.as_bytes();
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let mut tokens = Vec::new();
    let mut pos = 0;
    loop {
        while pos < end && is_blank(bytes[pos]) {
            pos += 1;
        }
        if pos >= end {
            tokens.push(Token {
                kind: TokenKind::End,
                text: "",
            });
            return tokens;
        }
        let start = pos;
        let kind = if is_symbol(bytes[pos]) {
            let two = bytes.get(pos..pos + 2).filter(|_| pos + 2 <= end);
            let (kind, len) = match (two, bytes[pos]) {
                (Some(b"=="), _) => (TokenKind::DoubleEquals, 2),
                (Some(b"!="), _) => (TokenKind::NotEquals, 2),
                (_, b'=') => (TokenKind::Equals, 1),
                (_, b'!') => (TokenKind::Bang, 1),
                (_, b'(') => (TokenKind::OpenParen, 1),
                (_, b')') => (TokenKind::CloseParen, 1),
                (_, b',') => (TokenKind::Comma, 1),
                (_, b'>') => (TokenKind::GreaterThan, 1),
                _ => (TokenKind::LessThan, 1),
            };
            pos += len;
            kind
        } else {
            while pos < end && !is_blank(bytes[pos]) && !is_symbol(bytes[pos]) {
                pos += 1;
            }
            match &s[start..pos] {
                "in" => TokenKind::In,
                "notin" => TokenKind::NotIn,
                _ => TokenKind::Identifier,
            }
        };
        tokens.push(Token {
            kind,
            text: &s[start..pos],
        });
    }
}

/// A recursive-descent parser over the token list, with the server's grammar and error wording.
pub(super) struct LabelParser<'a> {
    tokens: Vec<Token<'a>>,
    position: usize,
}

impl<'a> LabelParser<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Self {
            tokens: tokenize(s),
            position: 0,
        }
    }

    fn peek(&self, context: Context) -> Token<'a> {
        let token = self.tokens.get(self.position).copied().unwrap_or(Token {
            kind: TokenKind::End,
            text: "",
        });
        match (context, token.kind) {
            (Context::Values, TokenKind::In | TokenKind::NotIn) => Token {
                kind: TokenKind::Identifier,
                ..token
            },
            _ => token,
        }
    }

    fn next(&mut self, context: Context) -> Token<'a> {
        let token = self.peek(context);
        self.position += 1;
        token
    }

    pub(super) fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let token = self.peek(Context::Values);
            match token.kind {
                TokenKind::Identifier | TokenKind::Bang => {
                    let requirement = self.requirement().map_err(|e| {
                        SelectorError::new(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(requirement);
                    let after = self.next(Context::Values);
                    match after.kind {
                        TokenKind::End => return Ok(requirements),
                        TokenKind::Comma => {
                            let following = self.peek(Context::Values);
                            if !matches!(following.kind, TokenKind::Identifier | TokenKind::Bang) {
                                return Err(SelectorError::new(format!(
                                    "found '{}', expected: identifier after ','",
                                    following.text
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::new(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                after.text
                            )));
                        }
                    }
                }
                TokenKind::End => return Ok(requirements),
                _ => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        token.text
                    )));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, unary) = self.key_and_unary_operator()?;
        if let Some(operator) = unary {
            return Requirement::new(key, operator, Vec::new());
        }
        let operator = self.binary_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(key, operator, values)
    }

    /// Reads `[!]key`; the operator is known already when the key is negated or stands alone.
    fn key_and_unary_operator(&mut self) -> Result<(&'a str, Option<Operator>), SelectorError> {
        let mut token = self.next(Context::Values);
        let negated = token.kind == TokenKind::Bang;
        if negated {
            token = self.next(Context::Values);
        }
        if token.kind != TokenKind::Identifier {
            return Err(SelectorError::new(format!(
                "found '{}', expected: identifier",
                token.text
            )));
        }
        let key_errors = qualified_name_errors(token.text);
        if !key_errors.is_empty() {
            return Err(SelectorError::new(invalid_value(
                "<nil>",
                token.text,
                &key_errors,
            )));
        }
        let stands_alone = matches!(
            self.peek(Context::Values).kind,
            TokenKind::End | TokenKind::Comma
        );
        let unary = if negated {
            Some(Operator::DoesNotExist)
        } else if stands_alone {
            Some(Operator::Exists)
        } else {
            None
        };
        Ok((token.text, unary))
    }

    fn binary_operator(&mut self) -> Result<Operator, SelectorError> {
        let token = self.next(Context::KeyAndOperator);
        match token.kind {
            TokenKind::In => Ok(Operator::In),
            TokenKind::NotIn => Ok(Operator::NotIn),
            TokenKind::Equals => Ok(Operator::Equals),
            TokenKind::DoubleEquals => Ok(Operator::DoubleEquals),
            TokenKind::NotEquals => Ok(Operator::NotEquals),
            TokenKind::GreaterThan => Ok(Operator::GreaterThan),
            TokenKind::LessThan => Ok(Operator::LessThan),
            _ => Err(SelectorError::new(format!(
                "found '{}', expected: '=', '!=', '==', 'in', notin'",
                token.text
            ))),
        }
    }

    /// Reads `(a,b,...)`; empty entries stand for the empty value.
    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        let open = self.next(Context::Values);
        if open.kind != TokenKind::OpenParen {
            return Err(SelectorError::new(format!(
                "found '{}' expected: '('",
                open.text
            )));
        }
        let first = self.peek(Context::Values);
        match first.kind {
            TokenKind::Identifier | TokenKind::Comma => {
                let values = self.value_list()?;
                if self.next(Context::Values).kind != TokenKind::CloseParen {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: ')'",
                        first.text
                    )));
                }
                Ok(values)
            }
            TokenKind::CloseParen => {
                self.next(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(SelectorError::new(format!(
                "found '{}', expected: ',', ')' or identifier",
                first.text
            ))),
        }
    }

    /// Reads the inside of a value set up to (not including) the closing parenthesis.
    fn value_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let token = self.next(Context::Values);
            match token.kind {
                TokenKind::Identifier => {
                    values.push(token.text.to_owned());
                    let following = self.peek(Context::Values);
                    match following.kind {
                        TokenKind::Comma => {}
                        TokenKind::CloseParen => return Ok(values),
                        _ => {
                            return Err(SelectorError::new(format!(
                                "found '{}', expected: ',' or ')'",
                                following.text
                            )));
                        }
                    }
                }
                TokenKind::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.peek(Context::Values).kind {
                        TokenKind::CloseParen => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        TokenKind::Comma => {
                            self.next(Context::Values);
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: ',', or identifier",
                        token.text
                    )));
                }
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<`; nothing at all means the empty value.
    fn exact_value(&mut self) -> Result<String, SelectorError> {
        if matches!(
            self.peek(Context::Values).kind,
            TokenKind::End | TokenKind::Comma
        ) {
            return Ok(String::new());
        }
        let token = self.next(Context::Values);
        if token.kind == TokenKind::Identifier {
            Ok(token.text.to_owned())
        } else {
            Err(SelectorError::new(format!(
                "found '{}', expected: identifier",
                token.text
            )))
        }
    }
}
