//! Label and field selectors, parsed, printed and matched the way kube-apiserver does.
//!
//! Clients (`kubectl get -l`, `kube::Api::list` with `ListParams::labels`, informers) send selectors as
//! strings in the `labelSelector` and `fieldSelector` query parameters; controllers hold them as
//! `metav1.LabelSelector` objects. Both must select exactly what a real cluster would select, and reject
//! exactly what it would reject with a message the client recognises, so the grammar, the validation and
//! the error wording below follow kube-apiserver's.

use std::fmt;

use serde_json::{Map, Value};

use crate::api::validation::names::{label_value_errors, qualified_name_errors};

/// Why a selector was rejected; the message is what the server returns in its `BadRequest` status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// Joins several validation failures the way the server aggregates field errors: a lone error stands
    /// as it is, several are listed in brackets.
    fn aggregate(mut messages: Vec<String>) -> Option<Self> {
        match messages.len() {
            0 => None,
            1 => messages.pop().map(Self::new),
            _ => Some(Self::new(format!("[{}]", messages.join(", ")))),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Field-error wording for rejected label keys and values.
// ---------------------------------------------------------------------------------------------------------

/// `<path>: Invalid value: "<value>": <details>`, the server's field-error form.
fn invalid_value(path: &str, value: &str, details: &[String]) -> String {
    format!("{path}: Invalid value: {value:?}: {}", details.join("; "))
}

/// Renders a list of values the way the server prints a rejected string slice.
fn invalid_values(path: &str, values: &[String], detail: &str) -> String {
    let listed: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!(
        "{path}: Invalid value: []string{{{}}}: {detail}",
        listed.join(", ")
    )
}

// ---------------------------------------------------------------------------------------------------------
// Label selectors.
// ---------------------------------------------------------------------------------------------------------

/// How one requirement compares a label against its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One comma-separated term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and free of duplicates, so that equal requirements compare and print equally.
    values: Vec<String>,
}

impl Requirement {
    /// Validates a requirement as the server does, reporting every problem at once.
    fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut problems = Vec::new();
        let key_errors = qualified_name_errors(key);
        if !key_errors.is_empty() {
            problems.push(invalid_value("key", key, &key_errors));
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => problems.push(invalid_values(
                "values",
                &values,
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                problems.push(invalid_values(
                    "values",
                    &values,
                    "exact-match compatibility requires one single value",
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                problems.push(invalid_values(
                    "values",
                    &values,
                    "values set must be empty for exists and does not exist",
                ))
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    problems.push(invalid_values(
                        "values",
                        &values,
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        problems.push(format!(
                            "values[{i}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let value_errors = label_value_errors(value);
            if !value_errors.is_empty() {
                problems.push(invalid_value(
                    &format!("values[{i}][{key}]"),
                    value,
                    &value_errors,
                ));
            }
        }
        if let Some(error) = SelectorError::aggregate(problems) {
            return Err(error);
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Self {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let label = labels
            .and_then(|l| l.get(&self.key))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        let has_value = |v: &String| self.values.binary_search(v).is_ok();
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                label.is_some_and(|v| has_value(&v))
            }
            Operator::NotEquals | Operator::NotIn => !label.is_some_and(|v| has_value(&v)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [bound]) = (label, self.values.as_slice()) else {
                    return false;
                };
                match (actual.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(actual), Ok(bound)) if self.operator == Operator::GreaterThan => {
                        actual > bound
                    }
                    (Ok(actual), Ok(bound)) => actual < bound,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let joined = self.values.join(",");
        match self.operator {
            Operator::Exists | Operator::DoesNotExist => Ok(()),
            Operator::Equals => write!(f, "={joined}"),
            Operator::DoubleEquals => write!(f, "=={joined}"),
            Operator::NotEquals => write!(f, "!={joined}"),
            Operator::GreaterThan => write!(f, ">{joined}"),
            Operator::LessThan => write!(f, "<{joined}"),
            Operator::In => write!(f, " in ({joined})"),
            Operator::NotIn => write!(f, " notin ({joined})"),
        }
    }
}

/// A label selector: every requirement must hold for an object to be selected.
///
/// Requirements are kept sorted by key (stably), as the server keeps them, so the printed form is
/// canonical and parses back to the same selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    /// A missing (`null`) `metav1.LabelSelector` selects nothing rather than everything.
    selects_nothing: bool,
}

impl LabelSelector {
    /// Parses the query-string syntax (`a=b,c!=d,e in (f,g),!h,i>3`).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = LabelParser::new(s).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            selects_nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` (`{matchLabels, matchExpressions}`), as controllers hold them in
    /// `spec.selector`. `null` selects nothing; an empty object selects everything.
    pub fn from_label_selector(v: &Value) -> Result<Self, SelectorError> {
        let object = match v {
            Value::Null => {
                return Ok(Self {
                    requirements: Vec::new(),
                    selects_nothing: true,
                });
            }
            Value::Object(object) => object,
            other => {
                return Err(SelectorError::new(format!(
                    "a label selector must be an object, not {other}"
                )));
            }
        };
        let mut requirements = Vec::new();
        if let Some(labels) = non_null(object.get("matchLabels")) {
            let labels = labels
                .as_object()
                .ok_or_else(|| SelectorError::new("matchLabels must be an object of strings"))?;
            for (key, value) in labels {
                let value = value.as_str().ok_or_else(|| {
                    SelectorError::new(format!("matchLabels[{key}] must be a string"))
                })?;
                requirements.push(Requirement::new(
                    key,
                    Operator::Equals,
                    vec![value.to_owned()],
                )?);
            }
        }
        if let Some(expressions) = non_null(object.get("matchExpressions")) {
            let expressions = expressions
                .as_array()
                .ok_or_else(|| SelectorError::new("matchExpressions must be a list"))?;
            for expression in expressions {
                requirements.push(requirement_from_expression(expression)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            selects_nothing: false,
        })
    }

    /// Whether an object carrying `labels` (its `metadata.labels`, absent when it has none) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.selects_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector selects every object, so callers can skip filtering.
    pub fn is_everything(&self) -> bool {
        !self.selects_nothing && self.requirements.is_empty()
    }
}

fn non_null(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// One `matchExpressions` entry: `{key, operator: In|NotIn|Exists|DoesNotExist, values}`.
fn requirement_from_expression(expression: &Value) -> Result<Requirement, SelectorError> {
    let text = |field: &str| {
        expression
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let operator = match text("operator") {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{other:?} is not a valid label selector operator"
            )));
        }
    };
    let values = match non_null(expression.get("values")) {
        None => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| SelectorError::new("matchExpressions values must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(SelectorError::new("matchExpressions values must be a list")),
    };
    Requirement::new(text("key"), operator, values)
}

impl fmt::Display for LabelSelector {
    /// The canonical query-string form. A selector that selects nothing has no query-string form and
    /// prints as the empty string, as the server prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

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
struct LabelParser<'a> {
    tokens: Vec<Token<'a>>,
    position: usize,
}

impl<'a> LabelParser<'a> {
    fn new(s: &'a str) -> Self {
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

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
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

// ---------------------------------------------------------------------------------------------------------
// Field selectors.
// ---------------------------------------------------------------------------------------------------------

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    equal: bool,
    /// Unescaped.
    value: String,
}

/// A field selector: every term must hold. Which fields may be used depends on the resource, so the
/// server checks [`FieldSelector::fields`] itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    /// Sorted by their printed form, so that equal selectors compare and print equally.
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `a.b=v,c!=w` (also `==`); `\`, `,` and `=` in values are escaped with a backslash.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for part in split_unescaped_commas(s)
            .into_iter()
            .filter(|p| !p.is_empty())
        {
            let (field, operator, raw_value) = split_term(part).ok_or_else(|| {
                SelectorError::new(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ))
            })?;
            terms.push(FieldTerm {
                field: field.to_owned(),
                equal: operator != "!=",
                value: unescape_field_value(raw_value)?,
            });
        }
        terms.sort_by_cached_key(ToString::to_string);
        Ok(Self { terms })
    }

    /// The field names the selector refers to, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Whether an object is selected; `lookup` gives a field's value, and a field it cannot give
    /// compares as the empty string, as on the server.
    pub fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let actual = lookup(&term.field).unwrap_or_default();
            (actual == term.value) == term.equal
        })
    }

    /// Whether the selector selects every object.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }
}

impl fmt::Display for FieldTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = if self.equal { "=" } else { "!=" };
        write!(
            f,
            "{}{operator}{}",
            self.field,
            escape_field_value(&self.value)
        )
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form: terms sorted, `==` printed as `=`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

/// Splits on commas that are not escaped; escapes stay in the parts.
fn split_unescaped_commas(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Splits a term at its first operator (`!=`, `==` or `=`).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        ["!=", "==", "="]
            .into_iter()
            .find(|op| term[i..].starts_with(op))
            .map(|op| (&term[..i], op, &term[i + op.len()..]))
    })
}

fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('\\' | ',' | '=')) => value.push(escaped),
                Some(other) => {
                    return Err(SelectorError::new(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
                None => {
                    return Err(SelectorError::new(
                        "invalid field selector: invalid escape sequence: \\",
                    ));
                }
            },
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {c}"
                )));
            }
            other => value.push(other),
        }
    }
    Ok(value)
}

fn escape_field_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn error_of(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(selector) => panic!("{s:?} parsed as {selector}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parses_and_prints_canonically() {
        let cases = [
            ("", ""),
            ("a=b", "a=b"),
            ("a==b", "a==b"),
            (" a != b ", "a!=b"),
            (
                "x in (foo,,baz),y,z notin ()",
                "x in (,baz,foo),y,z notin ()",
            ),
            ("b=1,a=2", "a=2,b=1"),
            ("!a,b", "!a,b"),
            ("a>3,b<4", "a>3,b<4"),
            ("a=", "a="),
            ("in in (in,notin)", "in in (in,notin)"),
            ("example.com/app.kind in (x)", "example.com/app.kind in (x)"),
            ("a in (b,b)", "a in (b)"),
            ("a in (,)", "a in ()"),
            ("a=b\0garbage", "a=b"),
        ];
        for (input, expected) in cases {
            let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(selector.to_string(), expected, "{input:?}");
        }
    }

    #[test]
    fn rejects_like_the_server() {
        let cases = [
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("a,", "found '', expected: identifier after ','"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'",
            ),
            (
                "a in b",
                "unable to parse requirement: found 'b' expected: '('",
            ),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a in (=",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a in (b,,)",
                "unable to parse requirement: found ')', expected: ',', or identifier",
            ),
            (
                "a=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!=a",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            (
                "!(a)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            (
                "a>b",
                "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(error_of(input), expected, "{input:?}");
        }
    }

    #[test]
    fn validates_keys_and_values() {
        assert_eq!(
            error_of("a=-b"),
            "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty \
             string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
             '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        let name_rule = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            error_of("-a=b"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"-a\": name part {name_rule}"
            )
        );
        assert_eq!(
            error_of("a/b/c"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {name_rule} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )
        );
        let long = "x".repeat(64);
        assert_eq!(
            error_of(&long),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
            )
        );
        assert!(error_of("Example.com/a").contains("prefix part a lowercase RFC 1123 subdomain"));
        assert!(error_of("/a").contains("prefix part must be non-empty"));
        assert!(LabelSelector::parse(&format!("a={}", "v".repeat(63))).is_ok());
        assert_eq!(
            error_of(&format!("a={}", "v".repeat(64))),
            "unable to parse requirement: values[0][a]: Invalid value: \"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\": must be no more than 63 characters"
        );
        assert!(error_of("a=b_").starts_with(
            "unable to parse requirement: values[0][a]: Invalid value: \"b_\": a valid label must be an empty string"
        ));
        assert!(
            error_of("a>1_")
                .starts_with("unable to parse requirement: [values[0]: Invalid value: \"1_\"")
        );
        assert!(error_of("a..b/c=d").contains("prefix part a lowercase RFC 1123 subdomain"));
        assert!(
            error_of("b<-4")
                .starts_with("unable to parse requirement: values[0][b]: Invalid value: \"-4\"")
        );
        assert!(LabelSelector::parse("app.kubernetes.io/name=x_y.z-1").is_ok());
    }

    #[test]
    fn matches_each_operator() {
        let l = labels(json!({"app": "web", "tier": "front", "n": "5", "junk": "x5"}));
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("missing!=db", true),
            ("app in (db,web)", true),
            ("app notin (db,web)", false),
            ("missing notin (x)", true),
            ("missing in (x)", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("n>4", true),
            ("n>5", false),
            ("n<6", true),
            ("junk>1", false),
            ("missing<9", false),
            ("app=web,tier=back", false),
            ("missing=", false),
        ];
        for (selector, expected) in cases {
            let parsed =
                LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(parsed.matches(Some(&l)), expected, "{selector}");
        }
        assert!(LabelSelector::parse("!app").is_ok_and(|s| s.matches(None)));
        assert!(LabelSelector::parse("app").is_ok_and(|s| !s.matches(None)));
    }

    #[test]
    fn converts_metav1_label_selectors() {
        let selector = LabelSelector::from_label_selector(&json!({
            "matchLabels": {"tier": "front", "app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }));
        let selector = selector.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            selector.to_string(),
            "app=web,env in (dev,prod),!legacy,tier=front"
        );
        assert!(selector.matches(Some(&labels(
            json!({"app": "web", "tier": "front", "env": "dev"})
        ))));
        assert!(!selector.matches(Some(&labels(
            json!({"app": "web", "tier": "front", "env": "qa"})
        ))));

        let everything = LabelSelector::from_label_selector(&json!({}));
        assert!(
            everything
                .as_ref()
                .is_ok_and(|s| s.is_everything() && s.matches(None))
        );
        let nothing = LabelSelector::from_label_selector(&Value::Null);
        assert!(
            nothing
                .as_ref()
                .is_ok_and(|s| !s.is_everything() && !s.matches(None))
        );

        let errors = [
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
                "\"Gt\" is not a valid label selector operator",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
                "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
                "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist",
            ),
            (
                json!({"matchLabels": {"a": "b c"}}),
                "values[0][a]: Invalid value: \"b c\": a valid label must be an empty string",
            ),
            (
                json!({"matchLabels": {"-": "b"}}),
                "key: Invalid value: \"-\": name part",
            ),
        ];
        for (input, expected) in errors {
            match LabelSelector::from_label_selector(&input) {
                Ok(s) => panic!("{input} accepted as {s}"),
                Err(e) => assert!(e.to_string().starts_with(expected), "{input}: {e}"),
            }
        }
    }

    #[test]
    fn field_selectors_parse_match_and_print() {
        let selector = FieldSelector::parse("status.phase!=Failed,metadata.name==a\\,b\\=c\\\\")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            selector.fields().collect::<Vec<_>>(),
            ["metadata.name", "status.phase"]
        );
        assert_eq!(
            selector.to_string(),
            "metadata.name=a\\,b\\=c\\\\,status.phase!=Failed"
        );
        let object = |name: &'static str, phase: &'static str| {
            move |field: &str| match field {
                "metadata.name" => Some(name.to_owned()),
                "status.phase" => Some(phase.to_owned()),
                _ => None,
            }
        };
        assert!(selector.matches(object("a,b=c\\", "Running")));
        assert!(!selector.matches(object("a,b=c\\", "Failed")));
        assert!(!selector.matches(object("a", "Running")));

        let missing = FieldSelector::parse("spec.nodeName=").unwrap_or_else(|e| panic!("{e}"));
        assert!(missing.matches(|_| None));
        assert!(FieldSelector::parse("").is_ok_and(|s| s.is_everything()));
        assert!(FieldSelector::parse(",,").is_ok_and(|s| s.is_everything()));

        let errors = [
            ("a", "invalid selector: 'a'; can't understand 'a'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "a=b=c",
                "invalid field selector: unescaped character in value: =",
            ),
            (
                "a=b\\x",
                "invalid field selector: invalid escape sequence: \\x",
            ),
            (
                "a=b\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
        ];
        for (input, expected) in errors {
            match FieldSelector::parse(input) {
                Ok(s) => panic!("{input:?} accepted as {s}"),
                Err(e) => assert_eq!(e.to_string(), expected, "{input:?}"),
            }
        }
    }

    // ----- properties -----

    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-e]".prop_map(String::from),
            "[a-z][a-z0-9._-]{0,5}[a-z0-9]",
            ("[a-z]{1,4}(\\.[a-z]{1,3})?", "[A-Za-z0-9]{1,4}")
                .prop_map(|(p, n)| format!("{p}/{n}")),
            Just("in".to_owned()),
        ]
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-c]",
            "[A-Za-z0-9][A-Za-z0-9._-]{0,4}[A-Za-z0-9]",
            Just("notin".to_owned())
        ]
    }

    fn operator_strategy() -> impl Strategy<Value = Operator> {
        prop_oneof![
            Just(Operator::Equals),
            Just(Operator::DoubleEquals),
            Just(Operator::NotEquals),
            Just(Operator::In),
            Just(Operator::NotIn),
            Just(Operator::Exists),
            Just(Operator::DoesNotExist),
            Just(Operator::GreaterThan),
            Just(Operator::LessThan),
        ]
    }

    /// Random requirements together with the data needed to evaluate them directly.
    fn requirement_strategy() -> impl Strategy<Value = (String, Operator, Vec<String>)> {
        (
            key_strategy(),
            operator_strategy(),
            prop::collection::vec(value_strategy(), 1..4),
            0i64..20,
        )
            .prop_map(|(key, operator, values, number)| {
                let values = match operator {
                    Operator::Exists | Operator::DoesNotExist => Vec::new(),
                    Operator::GreaterThan | Operator::LessThan => vec![number.to_string()],
                    Operator::In | Operator::NotIn => values,
                    _ => values.into_iter().take(1).collect(),
                };
                (key, operator, values)
            })
    }

    fn label_map_strategy() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::btree_map(
            key_strategy(),
            prop_oneof![value_strategy(), (-25i64..25).prop_map(|n| n.to_string())],
            0..6,
        )
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
    }

    /// The meaning of one requirement, written independently of `Requirement::matches`.
    fn holds(
        key: &str,
        operator: Operator,
        values: &[String],
        labels: &Map<String, Value>,
    ) -> bool {
        let actual = labels.get(key).and_then(Value::as_str);
        let listed = |a: &str| values.iter().any(|v| v == a);
        let number = |s: &str| s.parse::<i64>().ok();
        match operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => actual.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => actual.is_none_or(|a| !listed(a)),
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan => {
                matches!((actual.and_then(number), number(&values[0])), (Some(a), Some(b)) if a > b)
            }
            Operator::LessThan => {
                matches!((actual.and_then(number), number(&values[0])), (Some(a), Some(b)) if a < b)
            }
        }
    }

    proptest! {
        #[test]
        fn label_parsing_never_panics(s in "\\PC{0,40}") {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn label_parsing_never_panics_on_selector_alphabet(s in "[a-c!=(), <>/.in\\-_0-9]{0,30}") {
            if let Ok(selector) = LabelSelector::parse(&s) {
                let reparsed = LabelSelector::parse(&selector.to_string());
                prop_assert_eq!(reparsed, Ok(selector));
            }
        }

        #[test]
        fn field_parsing_never_panics(s in "\\PC{0,40}") {
            if let Ok(selector) = FieldSelector::parse(&s) {
                let reparsed = FieldSelector::parse(&selector.to_string());
                prop_assert_eq!(reparsed, Ok(selector));
            }
        }

        #[test]
        fn display_round_trips_and_matching_agrees(
            specs in prop::collection::vec(requirement_strategy(), 0..5),
            maps in prop::collection::vec(label_map_strategy(), 1..6),
        ) {
            let mut requirements = Vec::new();
            for (key, operator, values) in &specs {
                let requirement = Requirement::new(key, *operator, values.clone());
                prop_assert!(requirement.is_ok(), "{:?}", requirement);
                requirements.extend(requirement);
            }
            requirements.sort_by(|a, b| a.key.cmp(&b.key));
            let selector = LabelSelector { requirements, selects_nothing: false };
            let printed = selector.to_string();
            prop_assert_eq!(LabelSelector::parse(&printed), Ok(selector.clone()), "{}", printed);
            for map in &maps {
                let expected = specs.iter().all(|(k, op, vs)| holds(k, *op, vs, map));
                prop_assert_eq!(selector.matches(Some(map)), expected, "{} on {:?}", printed, map);
            }
        }

        #[test]
        fn field_values_round_trip_through_escaping(value in "[a-z,=\\\\]{0,10}", field in "[a-z.]{1,8}") {
            let selector = FieldSelector::parse(&format!("{field}={}", escape_field_value(&value)));
            prop_assert!(selector.is_ok());
            let selector = selector.unwrap_or_default();
            prop_assert!(selector.matches(|f| (f == field).then(|| value.clone())));
        }
    }
}
