//! The JSONPath dialect Kubernetes uses in `additionalPrinterColumns` (and `kubectl -o jsonpath`).
//!
//! Paths start at the object without a `$` (one is tolerated): `.a.b`, `.a[0]`, `.a[-1]`, `.a[1:3]`,
//! `.a[*].b`, `.a.*`, `..b`, `['a.b']`, `.a[?(@.type=="Ready")].status` (with `==`, `!=`, `<`, `<=`, `>`,
//! `>=`, or a bare `@.x` that tests for presence) and backslash escapes in names
//! (`.metadata.labels.app\.kubernetes\.io/name`). Evaluation never fails: what is missing simply yields
//! no values, which is how the server treats printer columns.

use std::cmp::Ordering;

use serde_json::Value;

/// Why a path expression could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath {expression:?}: {reason}")]
pub struct JsonPathError {
    expression: String,
    reason: String,
}

/// A parsed path, ready to be evaluated against many objects.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// A member of an object.
    Field(String),
    /// Every member of an object or element of an array.
    Wildcard,
    /// An array element; negative counts from the end.
    Index(i64),
    /// Array elements from `start` (inclusive) to `end` (exclusive), Python-style.
    Slice(Option<i64>, Option<i64>),
    /// The current value and everything nested in it (`..`).
    Descendants,
    /// The array elements for which a condition holds.
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    comparison: Option<(Comparison, Operand)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    /// A path relative to the element under test (`@.a.b`).
    Current(Vec<Step>),
    Literal(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// Comparison operators, longest first so that `<=` is not read as `<`.
const COMPARISONS: [(&str, Comparison); 6] = [
    ("==", Comparison::Equal),
    ("!=", Comparison::NotEqual),
    ("<=", Comparison::LessOrEqual),
    (">=", Comparison::GreaterOrEqual),
    ("<", Comparison::Less),
    (">", Comparison::Greater),
];

impl JsonPath {
    /// Parses an expression such as `.status.conditions[?(@.type=="Ready")].status`. A whole expression
    /// wrapped in `{}` (the template form) is accepted too.
    pub fn parse(expression: &str) -> Result<Self, JsonPathError> {
        let fail = |reason: String| JsonPathError {
            expression: expression.to_owned(),
            reason,
        };
        let mut body = expression.trim();
        if let Some(inner) = body.strip_prefix('{').and_then(|b| b.strip_suffix('}')) {
            body = inner.trim();
        }
        body = body.strip_prefix('$').unwrap_or(body);
        let steps = parse_steps(body).map_err(fail)?;
        Ok(Self { steps })
    }

    /// Every value the path reaches in `root`, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        apply_steps(&self.steps, root)
    }

    /// The first value the path reaches, which is what a printer column shows.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }
}

fn apply_steps<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        current = current
            .into_iter()
            .flat_map(|v| apply_step(step, v))
            .collect();
    }
    current
}

fn apply_step<'a>(step: &Step, value: &'a Value) -> Vec<&'a Value> {
    match (step, value) {
        (Step::Field(name), Value::Object(map)) => map.get(name).into_iter().collect(),
        (Step::Wildcard, Value::Object(map)) => map.values().collect(),
        (Step::Wildcard, Value::Array(items)) => items.iter().collect(),
        (Step::Index(index), Value::Array(items)) => resolve_index(*index, items.len())
            .and_then(|i| items.get(i))
            .into_iter()
            .collect(),
        (Step::Slice(start, end), Value::Array(items)) => {
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let clamp = |bound: i64| {
                let from_start = if bound < 0 { bound + len } else { bound };
                usize::try_from(from_start.clamp(0, len)).unwrap_or(0)
            };
            let start = clamp(start.unwrap_or(0));
            let end = clamp(end.unwrap_or(len));
            items
                .get(start..end.max(start))
                .unwrap_or_default()
                .iter()
                .collect()
        }
        (Step::Descendants, _) => descendants(value),
        (Step::Filter(filter), Value::Array(items)) => {
            items.iter().filter(|item| filter.holds(item)).collect()
        }
        _ => Vec::new(),
    }
}

fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let resolved = if index < 0 { index + len } else { index };
    usize::try_from(resolved).ok()
}

/// `value` and everything nested in it, depth first, without recursion.
fn descendants(value: &Value) -> Vec<&Value> {
    let mut found = Vec::new();
    let mut pending = vec![value];
    while let Some(next) = pending.pop() {
        found.push(next);
        match next {
            Value::Object(map) => pending.extend(map.values().rev()),
            Value::Array(items) => pending.extend(items.iter().rev()),
            _ => {}
        }
    }
    found
}

impl Filter {
    fn holds(&self, item: &Value) -> bool {
        let Some(left) = self.left.resolve(item) else {
            return false;
        };
        let Some((comparison, right)) = &self.comparison else {
            return true;
        };
        let Some(right) = right.resolve(item) else {
            return false;
        };
        let ordering = compare(left, right);
        match comparison {
            Comparison::Equal => ordering == Some(Ordering::Equal),
            Comparison::NotEqual => ordering != Some(Ordering::Equal),
            Comparison::Less => ordering == Some(Ordering::Less),
            Comparison::LessOrEqual => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
            Comparison::Greater => ordering == Some(Ordering::Greater),
            Comparison::GreaterOrEqual => {
                matches!(ordering, Some(Ordering::Greater | Ordering::Equal))
            }
        }
    }
}

impl Operand {
    fn resolve<'a>(&'a self, item: &'a Value) -> Option<&'a Value> {
        match self {
            Self::Current(steps) => apply_steps(steps, item).into_iter().next(),
            Self::Literal(value) => Some(value),
        }
    }
}

/// Numbers compare numerically and strings lexically; other values are only equal or not.
fn compare(left: &Value, right: &Value) -> Option<Ordering> {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => (left == right).then_some(Ordering::Equal),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Parsing.
// ---------------------------------------------------------------------------------------------------------

/// Reads steps until the end of `text`.
fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    let mut cursor = Cursor { text, pos: 0 };
    let mut steps = Vec::new();
    while let Some(c) = cursor.peek() {
        match c {
            '.' => {
                cursor.bump();
                let descend = cursor.peek() == Some('.');
                if descend {
                    cursor.bump();
                    steps.push(Step::Descendants);
                }
                let name = cursor.field_name();
                let bracket_follows = cursor.peek() == Some('[');
                match name.as_str() {
                    // A lone `.` is the object itself; `.[0]` and `..[0]` index it.
                    "" if bracket_follows || (!descend && cursor.peek().is_none()) => {}
                    "" => return Err(format!("expected a name at {}", cursor.pos)),
                    "*" => steps.push(Step::Wildcard),
                    _ => steps.push(Step::Field(name)),
                }
            }
            '[' => {
                cursor.bump();
                steps.push(cursor.bracket()?);
            }
            c if c.is_whitespace() => cursor.bump(),
            other => {
                return Err(format!(
                    "expected '.' or '[' at {}, found {other:?}",
                    cursor.pos
                ));
            }
        }
    }
    Ok(steps)
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        self.skip_blanks();
        if self.peek() == Some(wanted) {
            self.bump();
            Ok(())
        } else {
            Err(format!("expected {wanted:?} at {}", self.pos))
        }
    }

    /// A member name after `.`: up to the next separator, with `\x` standing for `x`.
    fn field_name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            if c == '\\' {
                self.bump();
                if let Some(escaped) = self.peek() {
                    name.push(escaped);
                    self.bump();
                }
                continue;
            }
            if c.is_whitespace() || matches!(c, '.' | '[' | ']' | ',' | '{' | '}' | '$' | '@') {
                break;
            }
            name.push(c);
            self.bump();
        }
        name
    }

    /// The inside of `[...]`, the opening bracket already read.
    fn bracket(&mut self) -> Result<Step, String> {
        self.skip_blanks();
        let step = match self.peek() {
            Some('*') => {
                self.bump();
                Step::Wildcard
            }
            Some('?') => {
                self.bump();
                self.expect('(')?;
                let body = self.filter_body()?;
                Step::Filter(Box::new(parse_filter(body)?))
            }
            Some(quote @ ('\'' | '"')) => {
                self.bump();
                Step::Field(self.quoted(quote)?)
            }
            _ => {
                let end = self
                    .rest()
                    .find(']')
                    .ok_or_else(|| format!("unclosed '[' at {}", self.pos))?;
                let inside = self.rest()[..end].trim().to_owned();
                self.pos += end;
                parse_index_or_slice(&inside)?
            }
        };
        self.expect(']')?;
        Ok(step)
    }

    /// A string up to the closing `quote`, with `\x` standing for `x`.
    fn quoted(&mut self, quote: char) -> Result<String, String> {
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(format!("unterminated string at {}", self.pos)),
                Some('\\') => {
                    self.bump();
                    if let Some(escaped) = self.peek() {
                        text.push(escaped);
                        self.bump();
                    }
                }
                Some(c) if c == quote => {
                    self.bump();
                    return Ok(text);
                }
                Some(c) => {
                    text.push(c);
                    self.bump();
                }
            }
        }
    }

    /// The condition of `[?( ... )]`, up to the `)` that closes it (quotes are skipped over).
    fn filter_body(&mut self) -> Result<&str, String> {
        let start = self.pos;
        let mut quote = None;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            let at = self.pos;
            self.bump();
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), '\\') => self.bump(),
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') if depth == 0 => return Ok(&self.text[start..at]),
                (None, ')') => depth -= 1,
                (None, _) => {}
            }
        }
        Err(format!("unclosed filter starting at {start}"))
    }
}

fn parse_index_or_slice(inside: &str) -> Result<Step, String> {
    let number = |s: &str| -> Result<Option<i64>, String> {
        let s = s.trim();
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse()
                .map(Some)
                .map_err(|_| format!("{s:?} is not an array index"))
        }
    };
    match inside.split(':').collect::<Vec<_>>().as_slice() {
        [index] => number(index)?
            .map(Step::Index)
            .ok_or_else(|| "empty brackets".to_owned()),
        [start, end] => Ok(Step::Slice(number(start)?, number(end)?)),
        _ => Err(format!("unsupported array subscript {inside:?}")),
    }
}

/// `@.x`, or `<operand> <comparison> <operand>`.
fn parse_filter(body: &str) -> Result<Filter, String> {
    match find_comparison(body) {
        None => Ok(Filter {
            left: parse_operand(body)?,
            comparison: None,
        }),
        Some((at, symbol, comparison)) => Ok(Filter {
            left: parse_operand(&body[..at])?,
            comparison: Some((comparison, parse_operand(&body[at + symbol.len()..])?)),
        }),
    }
}

/// The first comparison operator outside quotes and brackets.
fn find_comparison(body: &str) -> Option<(usize, &'static str, Comparison)> {
    let mut quote = None;
    let mut escaped = false;
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => {
                if let Some((symbol, comparison)) = COMPARISONS
                    .iter()
                    .find(|(symbol, _)| body[i..].starts_with(symbol))
                {
                    return Some((i, symbol, *comparison));
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_operand(text: &str) -> Result<Operand, String> {
    let text = text.trim();
    if let Some(path) = text.strip_prefix('@') {
        return Ok(Operand::Current(parse_steps(path)?));
    }
    if let Some(quote @ ('\'' | '"')) = text.chars().next() {
        let mut cursor = Cursor { text, pos: 1 };
        let literal = cursor.quoted(quote)?;
        if !cursor.rest().trim().is_empty() {
            return Err(format!("unexpected text after string in {text:?}"));
        }
        return Ok(Operand::Literal(Value::String(literal)));
    }
    match text {
        "true" => Ok(Operand::Literal(Value::Bool(true))),
        "false" => Ok(Operand::Literal(Value::Bool(false))),
        "null" => Ok(Operand::Literal(Value::Null)),
        _ => serde_json::from_str::<serde_json::Number>(text)
            .map(|n| Operand::Literal(Value::Number(n)))
            .map_err(|_| format!("cannot understand filter operand {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {
                "name": "web-0",
                "labels": {"app.kubernetes.io/name": "web", "tier": "front"},
            },
            "spec": {"containers": [
                {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "envoy", "ports": [{"containerPort": 9901}]}
            ]},
            "status": {
                "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}
                ],
                "weights": [1, 2.5, 3]
            }
        })
    }

    #[test]
    fn evaluates_paths() {
        let object = pod();
        let cases: &[(&str, Value)] = &[
            (".metadata.name", json!(["web-0"])),
            ("$.metadata.name", json!(["web-0"])),
            ("{.metadata.name}", json!(["web-0"])),
            (
                ".metadata.labels.app\\.kubernetes\\.io/name",
                json!(["web"]),
            ),
            (".metadata.labels['app.kubernetes.io/name']", json!(["web"])),
            (".spec.containers[0].image", json!(["nginx"])),
            (".spec.containers[-1].name", json!(["sidecar"])),
            (".spec.containers[5].name", json!([])),
            (".spec.containers[*].name", json!(["app", "sidecar"])),
            (".spec.containers[0:1].name", json!(["app"])),
            (".spec.containers[1:].name", json!(["sidecar"])),
            (
                ".spec.containers[*].ports[*].containerPort",
                json!([80, 9901]),
            ),
            ("..containerPort", json!([80, 9901])),
            (".metadata.labels.*", json!(["web", "front"])),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                json!(["False"]),
            ),
            (
                ".status.conditions[?(@.type == 'Ready')].reason",
                json!(["ContainersNotReady"]),
            ),
            (
                ".status.conditions[?(@.type!=\"Ready\")].type",
                json!(["Initialized"]),
            ),
            (".status.conditions[?(@.reason)].type", json!(["Ready"])),
            (".status.weights[?(@ > 1)]", json!([2.5, 3])),
            (".status.weights[?(@ <= 2.5)]", json!([1, 2.5])),
            (
                ".spec.containers[?(@.ports[0].containerPort>=1000)].name",
                json!(["sidecar"]),
            ),
            (".status.conditions[?(@.type==\"a)]b\")].type", json!([])),
            (".metadata.missing.deeper", json!([])),
            (".metadata.name.deeper", json!([])),
            ("", json!([object.clone()])),
        ];
        for (expression, expected) in cases {
            let path = JsonPath::parse(expression).unwrap_or_else(|e| panic!("{e}"));
            let found: Vec<Value> = path.find(&object).into_iter().cloned().collect();
            assert_eq!(Value::Array(found), *expected, "{expression}");
        }
    }

    #[test]
    fn rejects_malformed_expressions() {
        for expression in [
            "metadata.name",
            ".a[",
            ".a[x]",
            ".a[1:2:3]",
            ".a[?(@.b==)]",
            ".a[?(@.b==\"x)]",
            ".a[?(@.b==x)]",
            ".a['b]",
            ".a..",
        ] {
            assert!(
                JsonPath::parse(expression).is_err(),
                "{expression} should be rejected"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_and_evaluating_never_panic(expression in "[.\\[\\]a-c0-9*?@()=!<>'\" :$-]{0,24}") {
            if let Ok(path) = JsonPath::parse(&expression) {
                let _ = path.find(&pod());
            }
        }

        #[test]
        fn parsing_never_panics_on_any_text(expression in "\\PC{0,30}") {
            let _ = JsonPath::parse(&expression);
        }
    }

    #[test]
    fn first_gives_the_first_match() {
        let object = pod();
        let path = JsonPath::parse(".spec.containers[*].image").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(path.first(&object), Some(&json!("nginx")));
    }
}
