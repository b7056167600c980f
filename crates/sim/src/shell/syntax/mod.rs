//! The shell language the simulated `sh` reads: a script parsed into a tree ([`List`]) that [`super::interp`]
//! runs. The parser is a recursive descent over the characters of the script; every construct that nests (compound
//! commands, substitutions, `${…}`) counts against a depth bound, so no input, however deep, can overflow the stack.
//!
//! Here-documents are cut out of the source when their operator is read: their body starts after the next newline
//! of the source, which is where a here-document's body is in every script that does not put a quoted newline
//! between the operator and the end of its line.

mod parser;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

pub(super) use parser::parse;

/// Commands run one after the other (separated by `;` or newlines).
pub(super) type List = Vec<AndOr>;

/// Pipelines joined by `&&` and `||`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AndOr {
    /// The pipeline that always runs.
    pub first: Pipeline,
    /// The pipelines after it, each run or skipped by the status before it.
    pub rest: Vec<(Connector, Pipeline)>,
}

/// How a pipeline of an [`AndOr`] depends on the status before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Connector {
    /// `&&`: runs after a success.
    And,
    /// `||`: runs after a failure.
    Or,
}

/// Commands joined by `|`, perhaps negated by `!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pipeline {
    /// `!`: the status is inverted.
    pub negated: bool,
    /// The stages, the output of each the input of the next.
    pub commands: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Command {
    /// Words to run, with assignments and redirections.
    Simple(Simple),
    /// A compound command and the redirections of all it runs.
    Compound(Box<Compound>, Vec<Redirect>),
    /// `name() body`: the body is kept shared, since every call runs the same tree.
    Function(String, Arc<Command>),
}

/// Assignments, words and redirections: `A=1 cmd arg >file`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Simple {
    /// `NAME=value` before the first word: the command's environment, or the shell's variables when there is no
    /// word.
    pub assignments: Vec<(String, Word)>,
    /// The command's name and arguments, before expansion.
    pub words: Vec<Word>,
    /// Its redirections, applied in order.
    pub redirects: Vec<Redirect>,
}

/// The commands built of lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Compound {
    /// `{ list; }`
    Group(List),
    /// `( list )`
    Subshell(List),
    /// `if c; then b; elif c; then b; else e; fi`
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
    /// `while c; do b; done`, or with `until` the loop that runs while `c` fails.
    Loop {
        until: bool,
        condition: List,
        body: List,
    },
    /// `for var in items; do body; done`; without `in`, over the positional parameters.
    For {
        var: String,
        items: Option<Vec<Word>>,
        body: List,
    },
    /// `case subject in pattern|pattern) body ;; esac`
    Case { subject: Word, arms: Vec<CaseArm> },
}

/// One arm of a `case`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CaseArm {
    /// The patterns, any of which selects the arm.
    pub patterns: Vec<Word>,
    /// What runs when one matches.
    pub body: List,
}

/// A redirection of one of a command's file descriptors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Redirect {
    /// The descriptor redirected (`2>`: 2).
    pub fd: u32,
    /// What is done with the descriptor.
    pub op: RedirectOp,
    /// The file, the descriptor duplicated (`2>&1`: `1`), or a here-document's body.
    pub target: Word,
}

/// What a redirection does with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirectOp {
    /// `>` (and `>|`)
    Write,
    /// `>>`
    Append,
    /// `<` (and `<>`)
    Read,
    /// `>&N`: write where N writes.
    DupOutput,
    /// `<&N`: read what N reads.
    DupInput,
    /// `&>`: both outputs to a file.
    WriteBoth,
    /// `&>>`: both outputs appended to a file.
    AppendBoth,
    /// `<<` and `<<-`: the target is the body.
    HereDoc,
}

/// A word as written: the pieces that expand into zero or more fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Word(pub Vec<Part>);

/// One piece of a [`Word`]; `quoted` pieces are neither split into fields nor matched as patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    /// Literal text.
    Text { text: String, quoted: bool },
    /// `$name`, `${…}`.
    Param { param: Box<Param>, quoted: bool },
    /// `$( … )` or `` `…` ``
    Command { body: Arc<List>, quoted: bool },
    /// `$(( … ))`: the expression is expanded first, then evaluated.
    Arith { expr: Word, quoted: bool },
}

/// A parameter expansion: `$name`, `${name…}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Param {
    /// A variable's name, a positional parameter's number, or one of `?$#@*!-0`.
    pub name: String,
    /// What is done with its value.
    pub op: ParamOp,
}

/// What a parameter expansion does with the parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ParamOp {
    /// `$x`, `${x}`
    Value,
    /// `${#x}`
    Length,
    /// `${x-w}`, `${x:-w}` and the others testing whether `x` is set (`colon`: or empty).
    Test {
        test: TestOp,
        colon: bool,
        word: Word,
    },
    /// `${x#p}`, `${x##p}`, `${x%p}`, `${x%%p}`
    Trim {
        suffix: bool,
        longest: bool,
        pattern: Word,
    },
}

/// The tests of [`ParamOp::Test`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TestOp {
    /// `-`: the word when unset.
    Default,
    /// `=`: the word when unset, also assigned.
    Assign,
    /// `+`: the word when set.
    Alternative,
    /// `?`: an error when unset.
    Error,
}

/// Why a script could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ParseError {
    /// The script ends inside a construct: an interactive shell reads more lines.
    Incomplete(String),
    /// Something is where it cannot be.
    Unexpected(String),
    /// A command run with `&`: there are no background jobs in the simulation.
    Background,
    /// Constructs nest deeper than the bound given to [`parse`].
    TooDeep,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Incomplete(expecting) => {
                write!(
                    f,
                    "syntax error: unexpected end of file (expecting {expecting})"
                )
            }
            Self::Unexpected(what) => write!(f, "syntax error: unexpected {what}"),
            Self::Background => f.write_str("background jobs (&) are not simulated"),
            Self::TooDeep => f.write_str("nesting too deep"),
        }
    }
}

/// Whether `name` can name a variable or a function.
pub(super) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl Word {
    /// A word of quoted text, that expands to exactly `text`.
    pub(super) fn quoted(text: impl Into<String>) -> Self {
        Self(vec![Part::Text {
            text: text.into(),
            quoted: true,
        }])
    }

    /// The word's text when it is one unquoted literal: how reserved words and names are recognised.
    pub(super) fn as_literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [
                Part::Text {
                    text,
                    quoted: false,
                },
            ] => Some(text),
            _ => None,
        }
    }
}
