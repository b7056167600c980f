//! Arithmetic expansion, `$(( … ))`: signed 64-bit integers with C's operators and precedence, variables by name,
//! assignments. Evaluated while it is parsed; the operand a `&&`, `||` or `?:` skips is parsed without effects.

/// The variables an expression reads and assigns.
pub(super) trait Variables {
    fn get(&self, name: &str) -> Option<String>;
    fn set(&mut self, name: &str, value: i64);
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Number(i64),
    Name(String),
    Op(&'static str),
}

/// Operators, longest first.
const OPERATORS: &[&str] = &[
    "<<=", ">>=", "<=", ">=", "==", "!=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "(", ")",
    "?", ":",
];

/// Binary operators by precedence, loosest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", "<=", ">", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

fn tokens(source: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    'next: while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = at;
            while at < chars.len() && chars[at].is_ascii_alphanumeric() {
                at += 1;
            }
            let text: String = chars[start..at].iter().collect();
            tokens.push(Token::Number(
                number(&text).ok_or_else(|| format!("bad number: {text}"))?,
            ));
            continue;
        }
        if c == '_' || c.is_ascii_alphabetic() {
            let start = at;
            while at < chars.len() && (chars[at] == '_' || chars[at].is_ascii_alphanumeric()) {
                at += 1;
            }
            tokens.push(Token::Name(chars[start..at].iter().collect()));
            continue;
        }
        for op in OPERATORS {
            if op
                .chars()
                .enumerate()
                .all(|(i, o)| chars.get(at + i) == Some(&o))
            {
                tokens.push(Token::Op(op));
                at += op.len();
                continue 'next;
            }
        }
        return Err(format!("unexpected character '{c}'"));
    }
    Ok(tokens)
}

/// A literal number: decimal, `0x` hexadecimal or `0` octal.
fn number(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// Evaluate `source`, nesting parentheses and operators at most `max_depth` deep.
pub(super) fn eval(
    source: &str,
    vars: &mut dyn Variables,
    max_depth: usize,
) -> Result<i64, String> {
    let mut parser = Parser {
        tokens: tokens(source)?,
        at: 0,
        vars,
        skip: false,
        depth: 0,
        max_depth,
    };
    if parser.tokens.is_empty() {
        return Ok(0);
    }
    let value = parser.assignment()?;
    match parser.tokens.get(parser.at) {
        None => Ok(value),
        Some(token) => Err(format!("unexpected {token:?}")),
    }
}

struct Parser<'v> {
    tokens: Vec<Token>,
    at: usize,
    vars: &'v mut dyn Variables,
    /// Parsing an operand that is not evaluated.
    skip: bool,
    depth: usize,
    max_depth: usize,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn value_of(&self, name: &str) -> Result<i64, String> {
        match self.vars.get(name) {
            None => Ok(0),
            Some(value) if value.trim().is_empty() => Ok(0),
            Some(value) => number(&value).ok_or_else(|| format!("{name}: not a number: {value}")),
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err("expression nests too deep".to_owned());
        }
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn assignment(&mut self) -> Result<i64, String> {
        if let (Some(Token::Name(name)), Some(Token::Op(op))) =
            (self.tokens.get(self.at), self.tokens.get(self.at + 1))
            && op.ends_with('=')
            && !matches!(*op, "==" | "!=" | "<=" | ">=")
        {
            let (name, op) = (name.clone(), *op);
            self.at += 2;
            let right = self.nested(Self::assignment)?;
            let value = if op == "=" {
                right
            } else {
                apply(&op[..op.len() - 1], self.value_of(&name)?, right)?
            };
            if !self.skip {
                self.vars.set(&name, value);
            }
            return Ok(value);
        }
        self.conditional()
    }

    fn conditional(&mut self) -> Result<i64, String> {
        let condition = self.binary(0)?;
        if self.peek_op() != Some("?") {
            return Ok(condition);
        }
        self.at += 1;
        let skip = self.skip;
        self.skip = skip || condition == 0;
        let then = self.nested(Self::assignment)?;
        if self.peek_op() != Some(":") {
            return Err("expected ':'".to_owned());
        }
        self.at += 1;
        self.skip = skip || condition != 0;
        let otherwise = self.nested(Self::conditional)?;
        self.skip = skip;
        Ok(if condition != 0 { then } else { otherwise })
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        let Some(ops) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut left = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|op| ops.contains(op)) {
            self.at += 1;
            let skip = self.skip;
            if (op == "&&" && left == 0) || (op == "||" && left != 0) {
                self.skip = true;
            }
            let right = self.binary(level + 1)?;
            self.skip = skip;
            left = match op {
                "&&" => i64::from(left != 0 && right != 0),
                "||" => i64::from(left != 0 || right != 0),
                _ if self.skip => 0,
                _ => apply(op, left, right)?,
            };
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<i64, String> {
        match self.peek_op() {
            Some(op @ ("-" | "+" | "!" | "~")) => {
                self.at += 1;
                let value = self.nested(Self::unary)?;
                Ok(match op {
                    "-" => value.wrapping_neg(),
                    "!" => i64::from(value == 0),
                    "~" => !value,
                    _ => value,
                })
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<i64, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Number(value)) => Ok(value),
            Some(Token::Name(name)) => {
                if self.skip {
                    Ok(0)
                } else {
                    self.value_of(&name)
                }
            }
            Some(Token::Op("(")) => {
                let value = self.nested(Self::assignment)?;
                if self.peek_op() != Some(")") {
                    return Err("expected ')'".to_owned());
                }
                self.at += 1;
                Ok(value)
            }
            Some(token) => Err(format!("unexpected {token:?}")),
            None => Err("expression expected".to_owned()),
        }
    }
}

fn apply(op: &str, left: i64, right: i64) -> Result<i64, String> {
    Ok(match op {
        "+" => left.wrapping_add(right),
        "-" => left.wrapping_sub(right),
        "*" => left.wrapping_mul(right),
        "/" | "%" if right == 0 => return Err("division by zero".to_owned()),
        "/" => left.wrapping_div(right),
        "%" => left.wrapping_rem(right),
        "<<" => left.wrapping_shl(right as u32),
        ">>" => left.wrapping_shr(right as u32),
        "&" => left & right,
        "|" => left | right,
        "^" => left ^ right,
        "<" => i64::from(left < right),
        "<=" => i64::from(left <= right),
        ">" => i64::from(left > right),
        ">=" => i64::from(left >= right),
        "==" => i64::from(left == right),
        "!=" => i64::from(left != right),
        _ => return Err(format!("unknown operator {op}")),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    impl Variables for HashMap<String, String> {
        fn get(&self, name: &str) -> Option<String> {
            HashMap::get(self, name).cloned()
        }
        fn set(&mut self, name: &str, value: i64) {
            self.insert(name.to_owned(), value.to_string());
        }
    }

    #[test]
    fn expressions_follow_c_precedence() {
        let mut vars = HashMap::from([("x".to_owned(), "7".to_owned())]);
        let cases = [
            ("1+2*3", 7),
            ("(1+2)*3", 9),
            ("x % 4", 3),
            ("-x + 10", 3),
            ("x > 5 && x < 10", 1),
            ("0 || 0", 0),
            ("x == 7 ? 1 : 2", 1),
            ("0x10 + 010", 24),
            ("", 0),
            ("y", 0),
            ("0 && 1/0", 0),
        ];
        for (source, expected) in cases {
            assert_eq!(eval(source, &mut vars, 32), Ok(expected), "{source}");
        }
        assert_eq!(eval("x += 3", &mut vars, 32), Ok(10));
        assert_eq!(vars["x"], "10");
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        let mut vars = HashMap::new();
        assert_eq!(
            eval("1/0", &mut vars, 32),
            Err("division by zero".to_owned())
        );
        assert!(eval("1 +", &mut vars, 32).is_err());
        assert!(eval("(1", &mut vars, 32).is_err());
        assert!(eval(&"(".repeat(10_000), &mut vars, 32).is_err());
        assert!(eval(&"-".repeat(10_000), &mut vars, 32).is_err());
        assert_eq!(
            eval("(-9223372036854775807 - 1) / -1", &mut vars, 32).ok(),
            Some(i64::MIN)
        );
    }
}
