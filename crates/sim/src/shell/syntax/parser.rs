//! The recursive-descent parser of [`super`]: tokens are read on demand from the characters, since what a
//! character means depends on where it is (a word, a quote, a substitution).

use std::sync::Arc;

use super::{
    AndOr, CaseArm, Command, Compound, Connector, List, Param, ParamOp, ParseError, Part, Pipeline,
    Redirect, RedirectOp, Simple, TestOp, Word, is_name,
};

type Result<T> = std::result::Result<T, ParseError>;

/// Parse `source` as a whole script; constructs may nest at most `max_depth` deep.
pub(crate) fn parse(source: &str, max_depth: usize) -> Result<List> {
    Parser::new(source, 0, max_depth).program()
}

/// The reserved words that end a list.
const LIST_ENDS: &[&str] = &["then", "else", "elif", "fi", "do", "done", "esac", "}"];

/// Redirection operators, longest first so that the first match is the right one.
const REDIRECTIONS: &[(&str, RedirectOp)] = &[
    ("&>>", RedirectOp::AppendBoth),
    ("<<-", RedirectOp::HereDoc),
    ("<<", RedirectOp::HereDoc),
    (">>", RedirectOp::Append),
    ("<&", RedirectOp::DupInput),
    (">&", RedirectOp::DupOutput),
    ("<>", RedirectOp::Read),
    (">|", RedirectOp::Write),
    ("&>", RedirectOp::WriteBoth),
    ("<", RedirectOp::Read),
    (">", RedirectOp::Write),
];

/// Control operators, longest first.
const OPERATORS: &[&str] = &["&&", "||", ";;", "&", "|", ";", "(", ")"];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Op(&'static str),
    Redirect {
        fd: Option<u32>,
        op: RedirectOp,
        /// `<<-`: leading tabs are stripped from the here-document.
        strip_tabs: bool,
    },
    Newline,
    End,
}

impl Token {
    fn reserved(&self) -> Option<&str> {
        match self {
            Token::Word(word) => word.as_literal(),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Token::Word(word) => match word.as_literal() {
                Some(text) => format!("word '{text}'"),
                None => "word".to_owned(),
            },
            Token::Op(op) => format!("'{op}'"),
            Token::Redirect { .. } => "redirection".to_owned(),
            Token::Newline => "newline".to_owned(),
            Token::End => "end of file".to_owned(),
        }
    }
}

/// Where the characters of a word are read, which decides what ends it and what quotes mean.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A word of a command: ends at a blank or an operator.
    Unquoted,
    /// Inside `"…"`: ends at the closing quote.
    Double,
    /// The word of `${x:-word}`: ends at `}`; `quoted` when the expansion is inside double quotes.
    Brace { quoted: bool },
    /// A here-document's body or an arithmetic expression: everything up to the end of the source.
    Body,
}

/// How the parentheses of a `$((` close.
enum Closing {
    /// With `))` at this position: an arithmetic expansion.
    At(usize),
    /// Otherwise, as in `$( (a) )`: a command substitution of a subshell.
    Otherwise,
    /// Not before the end of the source.
    Missing,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    max_depth: usize,
    /// A token read ahead, and where it ends; `pos` stays at its start.
    peeked: Option<(Token, usize)>,
}

impl Parser {
    fn new(source: &str, depth: usize, max_depth: usize) -> Self {
        Self {
            chars: source.chars().collect(),
            pos: 0,
            depth,
            max_depth,
            peeked: None,
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(ParseError::TooDeep);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn starts_with(&self, text: &str) -> bool {
        text.chars().enumerate().all(|(i, c)| self.at(i) == Some(c))
    }

    // --- tokens ---

    fn peek(&mut self) -> Result<&Token> {
        if self.peeked.is_none() {
            let start = self.pos;
            let token = self.lex()?;
            let end = self.pos;
            self.pos = start;
            self.peeked = Some((token, end));
        }
        match &self.peeked {
            Some((token, _)) => Ok(token),
            None => unreachable!("a token was just peeked"),
        }
    }

    fn next(&mut self) -> Result<Token> {
        match self.peeked.take() {
            Some((token, end)) => {
                self.pos = end;
                Ok(token)
            }
            None => self.lex(),
        }
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.at(0) {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.at(1) == Some('\n') => self.pos += 2,
                Some('#') => {
                    while self.at(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn lex(&mut self) -> Result<Token> {
        self.skip_blanks();
        let Some(c) = self.at(0) else {
            return Ok(Token::End);
        };
        if c == '\n' {
            self.pos += 1;
            return Ok(Token::Newline);
        }
        let digits = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let fd = if digits > 0 && matches!(self.at(digits), Some('<' | '>')) {
            let number: String = self.chars[self.pos..self.pos + digits].iter().collect();
            self.pos += digits;
            Some(
                number
                    .parse()
                    .map_err(|_| ParseError::Unexpected(format!("descriptor {number}")))?,
            )
        } else {
            None
        };
        for (text, op) in REDIRECTIONS {
            if self.starts_with(text) && !(fd.is_some() && text.starts_with('&')) {
                self.pos += text.chars().count();
                return Ok(Token::Redirect {
                    fd,
                    op: *op,
                    strip_tabs: *text == "<<-",
                });
            }
        }
        for op in OPERATORS {
            if self.starts_with(op) {
                self.pos += op.len();
                return Ok(Token::Op(op));
            }
        }
        Ok(Token::Word(self.word(Mode::Unquoted)?))
    }

    // --- words ---

    /// Read a word's parts from `pos` until `mode` ends it (not consuming what ends it).
    fn word(&mut self, mode: Mode) -> Result<Word> {
        let quoted = match mode {
            Mode::Unquoted => false,
            Mode::Double | Mode::Body => true,
            Mode::Brace { quoted } => quoted,
        };
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut text_quoted = quoted;
        let flush = |parts: &mut Vec<Part>, text: &mut String, text_quoted: bool| {
            if !text.is_empty() {
                parts.push(Part::Text {
                    text: std::mem::take(text),
                    quoted: text_quoted,
                });
            }
        };
        macro_rules! literal {
            ($s:expr, $q:expr) => {{
                if text_quoted != $q {
                    flush(&mut parts, &mut text, text_quoted);
                    text_quoted = $q;
                }
                text.push_str($s);
            }};
        }
        loop {
            let Some(c) = self.at(0) else {
                return match mode {
                    Mode::Unquoted | Mode::Body => {
                        flush(&mut parts, &mut text, text_quoted);
                        Ok(Word(parts))
                    }
                    Mode::Double => Err(ParseError::Incomplete("'\"'".into())),
                    Mode::Brace { .. } => Err(ParseError::Incomplete("'}'".into())),
                };
            };
            match (mode, c) {
                (
                    Mode::Unquoted,
                    ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')',
                )
                | (Mode::Double, '"')
                | (Mode::Brace { .. }, '}') => {
                    flush(&mut parts, &mut text, text_quoted);
                    return Ok(Word(parts));
                }
                (_, '\\') => {
                    self.pos += 1;
                    let next = self.at(0);
                    let escapes = match mode {
                        Mode::Unquoted => true,
                        Mode::Brace { quoted } => {
                            !quoted || matches!(next, Some('$' | '`' | '"' | '\\' | '}' | '\n'))
                        }
                        Mode::Double => matches!(next, Some('$' | '`' | '"' | '\\' | '\n')),
                        Mode::Body => matches!(next, Some('$' | '`' | '\\' | '\n')),
                    };
                    match next {
                        Some('\n') if escapes => self.pos += 1,
                        Some(next) if escapes => {
                            self.pos += 1;
                            literal!(&next.to_string(), true);
                        }
                        _ => literal!("\\", quoted),
                    }
                }
                (Mode::Unquoted | Mode::Brace { quoted: false }, '\'') => {
                    self.pos += 1;
                    let start = self.pos;
                    while self.at(0).is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.at(0).is_none() {
                        return Err(ParseError::Incomplete("\"'\"".into()));
                    }
                    let quoted_text: String = self.chars[start..self.pos].iter().collect();
                    self.pos += 1;
                    flush(&mut parts, &mut text, text_quoted);
                    parts.push(Part::Text {
                        text: quoted_text,
                        quoted: true,
                    });
                }
                (Mode::Unquoted | Mode::Brace { .. }, '"') => {
                    self.pos += 1;
                    let inner = self.word(Mode::Double)?;
                    self.pos += 1;
                    flush(&mut parts, &mut text, text_quoted);
                    if inner.0.is_empty() {
                        parts.push(Part::Text {
                            text: String::new(),
                            quoted: true,
                        });
                    }
                    parts.extend(inner.0);
                }
                (_, '$') => {
                    self.pos += 1;
                    match self.dollar(quoted)? {
                        Some(part) => {
                            flush(&mut parts, &mut text, text_quoted);
                            parts.push(part);
                        }
                        None => literal!("$", quoted),
                    }
                }
                (_, '`') => {
                    self.pos += 1;
                    let part = self.backquote(quoted)?;
                    flush(&mut parts, &mut text, text_quoted);
                    parts.push(part);
                }
                (_, c) => {
                    self.pos += 1;
                    literal!(&c.to_string(), quoted);
                }
            }
        }
    }

    /// What follows a `$`: None when it is a literal `$`.
    fn dollar(&mut self, quoted: bool) -> Result<Option<Part>> {
        match self.at(0) {
            Some('{') => {
                self.pos += 1;
                self.enter()?;
                let param = self.braced_param(quoted)?;
                self.leave();
                Ok(Some(Part::Param {
                    param: Box::new(param),
                    quoted,
                }))
            }
            Some('(') if self.at(1) == Some('(') => match self.arithmetic_end() {
                Closing::At(end) => {
                    let source: String = self.chars[self.pos + 2..end].iter().collect();
                    self.pos = end + 2;
                    self.enter()?;
                    let expr = Parser::new(&source, self.depth, self.max_depth).word(Mode::Body)?;
                    self.leave();
                    Ok(Some(Part::Arith { expr, quoted }))
                }
                Closing::Missing => Err(ParseError::Incomplete("'))'".into())),
                Closing::Otherwise => self.command_substitution(quoted).map(Some),
            },
            Some('(') => self.command_substitution(quoted).map(Some),
            Some(c @ ('?' | '$' | '#' | '@' | '*' | '!' | '-' | '0'..='9')) => {
                self.pos += 1;
                Ok(Some(Part::Param {
                    param: Box::new(Param {
                        name: c.to_string(),
                        op: ParamOp::Value,
                    }),
                    quoted,
                }))
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let name = self.name();
                Ok(Some(Part::Param {
                    param: Box::new(Param {
                        name,
                        op: ParamOp::Value,
                    }),
                    quoted,
                }))
            }
            _ => Ok(None),
        }
    }

    fn name(&mut self) -> String {
        let start = self.pos;
        while self
            .at(0)
            .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
        {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    /// Where the `))` closing a `$((` at `pos` is.
    fn arithmetic_end(&self) -> Closing {
        let mut level = 0usize;
        let mut at = self.pos + 2;
        while let Some(&c) = self.chars.get(at) {
            match c {
                '(' => level += 1,
                ')' if level == 0 => {
                    return if self.chars.get(at + 1) == Some(&')') {
                        Closing::At(at)
                    } else {
                        Closing::Otherwise
                    };
                }
                ')' => level -= 1,
                _ => {}
            }
            at += 1;
        }
        Closing::Missing
    }

    fn command_substitution(&mut self, quoted: bool) -> Result<Part> {
        self.pos += 1;
        self.enter()?;
        let body = self.list()?;
        match self.next()? {
            Token::Op(")") => {}
            Token::End => return Err(ParseError::Incomplete("')'".into())),
            other => return Err(ParseError::Unexpected(other.describe())),
        }
        self.leave();
        Ok(Part::Command {
            body: Arc::new(body),
            quoted,
        })
    }

    fn backquote(&mut self, quoted: bool) -> Result<Part> {
        let mut source = String::new();
        loop {
            match self.at(0) {
                None => return Err(ParseError::Incomplete("'`'".into())),
                Some('`') => break,
                Some('\\') if matches!(self.at(1), Some('$' | '`' | '\\')) => {
                    source.extend(self.at(1));
                    self.pos += 2;
                }
                Some(c) => {
                    source.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        self.enter()?;
        let body = Parser::new(&source, self.depth, self.max_depth).program()?;
        self.leave();
        Ok(Part::Command {
            body: Arc::new(body),
            quoted,
        })
    }

    /// `${…}` after its `{`.
    fn braced_param(&mut self, quoted: bool) -> Result<Param> {
        let length = self.at(0) == Some('#') && !matches!(self.at(1), Some('}') | None);
        if length {
            self.pos += 1;
        }
        let name = match self.at(0) {
            Some(c @ ('?' | '$' | '#' | '@' | '*' | '!' | '-')) => {
                self.pos += 1;
                c.to_string()
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.at(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                self.chars[start..self.pos].iter().collect()
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => self.name(),
            None => return Err(ParseError::Incomplete("'}'".into())),
            Some(_) => {
                return Err(ParseError::Unexpected(
                    "character in ${}: bad substitution".into(),
                ));
            }
        };
        if length {
            return match self.at(0) {
                Some('}') => {
                    self.pos += 1;
                    Ok(Param {
                        name,
                        op: ParamOp::Length,
                    })
                }
                None => Err(ParseError::Incomplete("'}'".into())),
                Some(_) => Err(ParseError::Unexpected(
                    "character in ${#}: bad substitution".into(),
                )),
            };
        }
        let colon = self.at(0) == Some(':');
        let op_at = usize::from(colon);
        let op = match (self.at(op_at), colon) {
            (Some('}'), false) => {
                self.pos += 1;
                return Ok(Param {
                    name,
                    op: ParamOp::Value,
                });
            }
            (None, _) => return Err(ParseError::Incomplete("'}'".into())),
            (Some('-'), _) => Some(TestOp::Default),
            (Some('='), _) => Some(TestOp::Assign),
            (Some('+'), _) => Some(TestOp::Alternative),
            (Some('?'), _) => Some(TestOp::Error),
            (Some('#' | '%'), false) => None,
            (Some(_), _) => {
                return Err(ParseError::Unexpected(
                    "character in ${}: bad substitution".into(),
                ));
            }
        };
        let op = match op {
            Some(test) => {
                self.pos += op_at + 1;
                ParamOp::Test {
                    test,
                    colon,
                    word: self.brace_word(quoted)?,
                }
            }
            None => {
                let suffix = self.at(0) == Some('%');
                let longest = self.at(1) == self.at(0);
                self.pos += 1 + usize::from(longest);
                ParamOp::Trim {
                    suffix,
                    longest,
                    pattern: self.brace_word(quoted)?,
                }
            }
        };
        Ok(Param { name, op })
    }

    fn brace_word(&mut self, quoted: bool) -> Result<Word> {
        let word = self.word(Mode::Brace { quoted })?;
        self.pos += 1;
        Ok(word)
    }

    // --- here-documents ---

    /// Cut the body of a here-document ended by `delimiter` out of the source, after the end of the current line.
    fn here_doc_body(&mut self, delimiter: &str, strip_tabs: bool) -> Result<String> {
        let incomplete = || ParseError::Incomplete(format!("here-document end '{delimiter}'"));
        let line_end = (self.pos..self.chars.len())
            .find(|&at| self.chars[at] == '\n')
            .ok_or_else(incomplete)?;
        let start = line_end + 1;
        let mut at = start;
        let mut body = String::new();
        loop {
            if at >= self.chars.len() {
                return Err(incomplete());
            }
            let end = (at..self.chars.len())
                .find(|&i| self.chars[i] == '\n')
                .unwrap_or(self.chars.len());
            let mut line: &[char] = &self.chars[at..end];
            if strip_tabs {
                while let ['\t', rest @ ..] = line {
                    line = rest;
                }
            }
            if line.iter().copied().eq(delimiter.chars()) {
                let cut_end = (end + 1).min(self.chars.len());
                self.chars.drain(start..cut_end);
                return Ok(body);
            }
            body.extend(line);
            body.push('\n');
            at = end + 1;
        }
    }

    fn redirect(&mut self, fd: Option<u32>, op: RedirectOp, strip_tabs: bool) -> Result<Redirect> {
        let target = match self.next()? {
            Token::Word(word) => word,
            Token::End => return Err(ParseError::Incomplete("a redirection's target".into())),
            other => return Err(ParseError::Unexpected(other.describe())),
        };
        let fd = fd.unwrap_or(match op {
            RedirectOp::Read | RedirectOp::DupInput | RedirectOp::HereDoc => 0,
            _ => 1,
        });
        if op != RedirectOp::HereDoc {
            return Ok(Redirect { fd, op, target });
        }
        let mut delimiter = String::new();
        let mut quoted = false;
        for part in &target.0 {
            match part {
                Part::Text { text, quoted: q } => {
                    delimiter.push_str(text);
                    quoted |= q;
                }
                _ => return Err(ParseError::Unexpected("here-document delimiter".into())),
            }
        }
        let body = self.here_doc_body(&delimiter, strip_tabs)?;
        let target = if quoted {
            Word::quoted(body)
        } else {
            self.enter()?;
            let word = Parser::new(&body, self.depth, self.max_depth).word(Mode::Body)?;
            self.leave();
            word
        };
        Ok(Redirect { fd, op, target })
    }

    // --- grammar ---

    fn program(&mut self) -> Result<List> {
        let list = self.list()?;
        match self.next()? {
            Token::End => Ok(list),
            other => Err(ParseError::Unexpected(other.describe())),
        }
    }

    fn skip_newlines(&mut self) -> Result<()> {
        while *self.peek()? == Token::Newline {
            self.next()?;
        }
        Ok(())
    }

    fn list(&mut self) -> Result<List> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines()?;
            let token = self.peek()?;
            if matches!(token, Token::End | Token::Op(")" | ";;"))
                || token.reserved().is_some_and(|w| LIST_ENDS.contains(&w))
            {
                return Ok(items);
            }
            items.push(self.and_or()?);
            match self.peek()? {
                Token::Op(";") => {
                    self.next()?;
                }
                Token::Newline => {}
                Token::Op("&") => return Err(ParseError::Background),
                _ => return Ok(items),
            }
        }
    }

    fn and_or(&mut self) -> Result<AndOr> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let connector = match self.peek()? {
                Token::Op("&&") => Connector::And,
                Token::Op("||") => Connector::Or,
                _ => return Ok(AndOr { first, rest }),
            };
            self.next()?;
            self.skip_newlines()?;
            rest.push((connector, self.pipeline()?));
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline> {
        let negated = self.peek()?.reserved() == Some("!");
        if negated {
            self.next()?;
        }
        let mut commands = vec![self.command()?];
        while *self.peek()? == Token::Op("|") {
            self.next()?;
            self.skip_newlines()?;
            commands.push(self.command()?);
        }
        Ok(Pipeline { negated, commands })
    }

    fn command(&mut self) -> Result<Command> {
        let compound = match self.peek()? {
            Token::End => return Err(ParseError::Incomplete("a command".into())),
            Token::Op("(") => true,
            token => matches!(
                token.reserved(),
                Some("if" | "while" | "until" | "for" | "case" | "{")
            ),
        };
        if compound {
            self.enter()?;
            let compound = self.compound()?;
            self.leave();
            let redirects = self.redirects()?;
            return Ok(Command::Compound(Box::new(compound), redirects));
        }
        if let Some(word) = self.peek()?.reserved()
            && LIST_ENDS.contains(&word)
        {
            return Err(ParseError::Unexpected(format!("word '{word}'")));
        }
        self.simple()
    }

    fn redirects(&mut self) -> Result<Vec<Redirect>> {
        let mut redirects = Vec::new();
        while let Token::Redirect { fd, op, strip_tabs } = *self.peek()? {
            self.next()?;
            redirects.push(self.redirect(fd, op, strip_tabs)?);
        }
        Ok(redirects)
    }

    fn simple(&mut self) -> Result<Command> {
        let mut simple = Simple::default();
        loop {
            match self.peek()? {
                Token::Redirect { fd, op, strip_tabs } => {
                    let (fd, op, strip_tabs) = (*fd, *op, *strip_tabs);
                    self.next()?;
                    simple.redirects.push(self.redirect(fd, op, strip_tabs)?);
                }
                Token::Word(_) => {
                    let Token::Word(word) = self.next()? else {
                        unreachable!("a word was just peeked")
                    };
                    if simple.words.is_empty()
                        && let Some(assignment) = assignment(&word)
                    {
                        simple.assignments.push(assignment);
                        continue;
                    }
                    let alone = simple.words.is_empty()
                        && simple.assignments.is_empty()
                        && simple.redirects.is_empty();
                    if alone && *self.peek()? == Token::Op("(") {
                        return self.function(word);
                    }
                    simple.words.push(word);
                }
                token => {
                    if simple.words.is_empty()
                        && simple.assignments.is_empty()
                        && simple.redirects.is_empty()
                    {
                        return Err(ParseError::Unexpected(token.describe()));
                    }
                    return Ok(Command::Simple(simple));
                }
            }
        }
    }

    fn function(&mut self, name: Word) -> Result<Command> {
        let name = match name.as_literal() {
            Some(name) if is_name(name) || name.chars().all(|c| c.is_ascii_graphic()) => {
                name.to_owned()
            }
            _ => return Err(ParseError::Unexpected("function name".into())),
        };
        self.next()?;
        self.expect_op(")")?;
        self.skip_newlines()?;
        let body = self.command()?;
        if !matches!(body, Command::Compound(..)) {
            return Err(ParseError::Unexpected("function body".into()));
        }
        Ok(Command::Function(name, Arc::new(body)))
    }

    fn expect_op(&mut self, op: &str) -> Result<()> {
        match self.next()? {
            Token::Op(found) if found == op => Ok(()),
            Token::End => Err(ParseError::Incomplete(format!("'{op}'"))),
            other => Err(ParseError::Unexpected(other.describe())),
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        let token = self.next()?;
        match token.reserved() {
            Some(found) if found == word => Ok(()),
            _ if token == Token::End => Err(ParseError::Incomplete(format!("'{word}'"))),
            _ => Err(ParseError::Unexpected(token.describe())),
        }
    }

    fn compound(&mut self) -> Result<Compound> {
        let token = self.next()?;
        if token == Token::Op("(") {
            let list = self.list()?;
            self.expect_op(")")?;
            return Ok(Compound::Subshell(list));
        }
        match token.reserved() {
            Some("{") => {
                let list = self.list()?;
                self.expect_word("}")?;
                Ok(Compound::Group(list))
            }
            Some("if") => self.if_clause(),
            Some(keyword @ ("while" | "until")) => {
                let until = keyword == "until";
                let condition = self.list()?;
                let body = self.do_group()?;
                Ok(Compound::Loop {
                    until,
                    condition,
                    body,
                })
            }
            Some("for") => self.for_clause(),
            Some("case") => self.case_clause(),
            _ => Err(ParseError::Unexpected(token.describe())),
        }
    }

    fn do_group(&mut self) -> Result<List> {
        self.expect_word("do")?;
        let body = self.list()?;
        self.expect_word("done")?;
        Ok(body)
    }

    fn if_clause(&mut self) -> Result<Compound> {
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let condition = self.list()?;
            self.expect_word("then")?;
            branches.push((condition, self.list()?));
            let token = self.next()?;
            match token.reserved() {
                Some("elif") => continue,
                Some("else") => {
                    otherwise = Some(self.list()?);
                    self.expect_word("fi")?;
                    break;
                }
                Some("fi") => break,
                _ if token == Token::End => return Err(ParseError::Incomplete("'fi'".into())),
                _ => return Err(ParseError::Unexpected(token.describe())),
            }
        }
        Ok(Compound::If {
            branches,
            otherwise,
        })
    }

    fn for_clause(&mut self) -> Result<Compound> {
        let var = match self.next()? {
            Token::Word(word) => match word.as_literal() {
                Some(name) if is_name(name) => name.to_owned(),
                _ => return Err(ParseError::Unexpected("for's variable name".into())),
            },
            Token::End => return Err(ParseError::Incomplete("a variable name".into())),
            other => return Err(ParseError::Unexpected(other.describe())),
        };
        self.skip_newlines()?;
        let mut items = None;
        if self.peek()?.reserved() == Some("in") {
            self.next()?;
            let mut words = Vec::new();
            loop {
                match self.next()? {
                    Token::Word(word) => words.push(word),
                    Token::Op(";") | Token::Newline => break,
                    Token::End => return Err(ParseError::Incomplete("'do'".into())),
                    other => return Err(ParseError::Unexpected(other.describe())),
                }
            }
            items = Some(words);
        } else if *self.peek()? == Token::Op(";") {
            self.next()?;
        }
        self.skip_newlines()?;
        let body = self.do_group()?;
        Ok(Compound::For { var, items, body })
    }

    fn case_clause(&mut self) -> Result<Compound> {
        let subject = match self.next()? {
            Token::Word(word) => word,
            Token::End => return Err(ParseError::Incomplete("a word".into())),
            other => return Err(ParseError::Unexpected(other.describe())),
        };
        self.skip_newlines()?;
        self.expect_word("in")?;
        let mut arms = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.peek()?.reserved() == Some("esac") {
                self.next()?;
                return Ok(Compound::Case { subject, arms });
            }
            if *self.peek()? == Token::Op("(") {
                self.next()?;
            }
            let mut patterns = Vec::new();
            loop {
                match self.next()? {
                    Token::Word(word) => patterns.push(word),
                    Token::End => return Err(ParseError::Incomplete("a pattern".into())),
                    other => return Err(ParseError::Unexpected(other.describe())),
                }
                match self.next()? {
                    Token::Op("|") => {}
                    Token::Op(")") => break,
                    Token::End => return Err(ParseError::Incomplete("')'".into())),
                    other => return Err(ParseError::Unexpected(other.describe())),
                }
            }
            let body = self.list()?;
            arms.push(CaseArm { patterns, body });
            match self.next()? {
                Token::Op(";;") => {}
                token if token.reserved() == Some("esac") => {
                    return Ok(Compound::Case { subject, arms });
                }
                Token::End => return Err(ParseError::Incomplete("'esac'".into())),
                other => return Err(ParseError::Unexpected(other.describe())),
            }
        }
    }
}

/// `NAME=value` as an assignment.
fn assignment(word: &Word) -> Option<(String, Word)> {
    let Some(Part::Text {
        text,
        quoted: false,
    }) = word.0.first()
    else {
        return None;
    };
    let (name, value) = text.split_once('=')?;
    if !is_name(name) {
        return None;
    }
    let mut parts = Vec::new();
    if !value.is_empty() {
        parts.push(Part::Text {
            text: value.to_owned(),
            quoted: false,
        });
    }
    parts.extend(word.0[1..].iter().cloned());
    Some((name.to_owned(), Word(parts)))
}
