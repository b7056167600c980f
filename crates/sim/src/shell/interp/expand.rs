//! Word expansion: parameters, command substitution and arithmetic; then, for the words of a command, field
//! splitting of unquoted results on `IFS` and pathname expansion against the container's files; quote removal.
//!
//! A field is built as two strings at once: its text, and the pattern it is, where quoted characters are escaped
//! with `\` so that only unquoted `*`, `?` and `[` match as globs.

use futures::future::BoxFuture;

use super::super::io::Output;
use super::super::syntax::{List, Param, ParamOp, Part, TestOp, Word, is_name};
use super::arith::{self, Variables};
use super::pattern::{self, is_glob, unescape};
use super::{Flow, Io, Shell, ended};

/// One field being built.
#[derive(Debug, Default)]
struct Field {
    text: String,
    pattern: String,
    /// It has an unquoted special character: pathname expansion applies.
    glob: bool,
    /// It exists even if empty (`""`, `"$empty"`).
    started: bool,
}

impl Field {
    fn push(&mut self, text: &str, quoted: bool) {
        for c in text.chars() {
            if quoted && matches!(c, '*' | '?' | '[' | ']' | '\\') {
                self.pattern.push('\\');
            }
            if !quoted && matches!(c, '*' | '?' | '[') {
                self.glob = true;
            }
            self.pattern.push(c);
        }
        self.text.push_str(text);
        self.started |= quoted || !text.is_empty();
    }
}

/// The fields a word expands to.
struct Fields {
    done: Vec<Field>,
    current: Field,
    /// Whether unquoted results are split into fields (the words of a command) or kept whole (an assignment).
    split: bool,
    ifs: String,
    limit: usize,
    /// A field grew past `limit`: the expansion fails.
    overflow: bool,
}

impl Fields {
    fn new(split: bool, ifs: String, limit: usize) -> Self {
        Self {
            done: Vec::new(),
            current: Field::default(),
            split,
            ifs,
            limit,
            overflow: false,
        }
    }

    fn push(&mut self, text: &str, quoted: bool) {
        if self.current.text.len() + text.len() > self.limit {
            self.overflow = true;
            return;
        }
        self.current.push(text, quoted);
    }

    /// End the current field, keeping it even when empty.
    fn boundary(&mut self) {
        self.done.push(std::mem::take(&mut self.current));
    }

    /// The result of an expansion: split on `IFS` when unquoted in a command's words.
    fn expanded(&mut self, value: &str, quoted: bool) {
        if quoted || !self.split {
            self.push(value, quoted);
            return;
        }
        let mut after_blank = false;
        let mut plain = String::new();
        for c in value.chars() {
            if !self.ifs.contains(c) {
                plain.push(c);
                after_blank = false;
                continue;
            }
            if !plain.is_empty() {
                self.push(&std::mem::take(&mut plain), false);
            }
            if c.is_whitespace() {
                if self.current.started {
                    self.boundary();
                    after_blank = true;
                }
            } else {
                if self.current.started || !after_blank {
                    self.boundary();
                }
                after_blank = false;
            }
        }
        self.push(&plain, false);
    }

    fn finish(mut self) -> Vec<Field> {
        if self.current.started {
            self.done.push(self.current);
        }
        self.done
    }
}

impl Variables for Shell<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.var(name).map(str::to_owned)
    }

    fn set(&mut self, name: &str, value: i64) {
        self.assign(name, value.to_string());
    }
}

impl<'c> Shell<'c> {
    /// The fields of a command's words.
    pub(super) async fn expand_words(
        &mut self,
        words: &[Word],
        io: &mut Io<'_>,
    ) -> Result<Vec<String>, Flow> {
        let mut argv = Vec::new();
        for word in words {
            for field in self.expand(word, true, io).await? {
                if field.glob && !self.options.noglob {
                    let found = self.glob(&field.pattern);
                    if !found.is_empty() {
                        argv.extend(found);
                        continue;
                    }
                }
                argv.push(field.text);
            }
        }
        Ok(argv)
    }

    /// A word expanded whole, without splitting or pathname expansion: an assignment's value, a redirection's
    /// target, a `case` subject, a here-document.
    pub(super) async fn expand_string(
        &mut self,
        word: &Word,
        io: &mut Io<'_>,
    ) -> Result<String, Flow> {
        let fields = self.expand(word, false, io).await?;
        Ok(fields
            .into_iter()
            .next()
            .map(|f| f.text)
            .unwrap_or_default())
    }

    /// A word expanded as a pattern: quoted characters match only themselves.
    pub(super) async fn expand_pattern(
        &mut self,
        word: &Word,
        io: &mut Io<'_>,
    ) -> Result<String, Flow> {
        let fields = self.expand(word, false, io).await?;
        Ok(fields
            .into_iter()
            .next()
            .map(|f| f.pattern)
            .unwrap_or_default())
    }

    async fn expand(
        &mut self,
        word: &Word,
        split: bool,
        io: &mut Io<'_>,
    ) -> Result<Vec<Field>, Flow> {
        let mut fields = Fields::new(split, self.ifs(), self.container.limits.word_bytes);
        let mut parts = word.0.as_slice();
        if let Some((
            Part::Text {
                text,
                quoted: false,
            },
            rest,
        )) = parts.split_first()
            && let Some(after) = text.strip_prefix('~')
            && (after.is_empty() || after.starts_with('/'))
            && let Some(home) = self.var("HOME")
        {
            fields.push(home, true);
            fields.push(after, false);
            parts = rest;
        }
        self.expand_into(parts, &mut fields, io).await?;
        Ok(fields.finish())
    }

    /// Expand `parts` into `fields`; boxed, since a part may hold a word.
    fn expand_into<'a>(
        &'a mut self,
        parts: &'a [Part],
        fields: &'a mut Fields,
        io: &'a mut Io<'_>,
    ) -> BoxFuture<'a, Result<(), Flow>> {
        Box::pin(async move {
            for part in parts {
                match part {
                    Part::Text { text, quoted } => fields.push(text, *quoted),
                    Part::Param { param, quoted } => {
                        self.expand_param(param, *quoted, fields, io).await?
                    }
                    Part::Command { body, quoted } => {
                        let output = self.substitute(body, io).await?;
                        fields.expanded(&output, *quoted);
                    }
                    Part::Arith { expr, quoted } => {
                        let source = self.expand_string(expr, io).await?;
                        let depth = self.container.limits.depth;
                        match arith::eval(&source, self, depth) {
                            Ok(value) => fields.expanded(&value.to_string(), *quoted),
                            Err(error) => {
                                self.complain(
                                    io,
                                    &format!("arithmetic expression: {error}: \"{source}\""),
                                )?;
                                return Err(Flow::Error(2));
                            }
                        }
                    }
                }
                if fields.overflow {
                    self.check_length(usize::MAX, io)?;
                }
            }
            Ok(())
        })
    }

    /// The value of a parameter; None when it is not set.
    fn param_value(&self, name: &str) -> Option<String> {
        match name {
            "?" => Some(self.status.to_string()),
            "$" => Some(self.pid.to_string()),
            "#" => Some(self.positional.len().to_string()),
            "0" => Some(self.arg0.clone()),
            "-" => Some(
                [
                    (self.options.errexit, 'e'),
                    (self.options.nounset, 'u'),
                    (self.options.xtrace, 'x'),
                    (self.options.noglob, 'f'),
                ]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, flag)| *flag)
                .collect(),
            ),
            "!" => None,
            "@" | "*" => (!self.positional.is_empty()).then(|| self.positional.join(" ")),
            digits if digits.chars().all(|c| c.is_ascii_digit()) => {
                let at: usize = digits.parse().ok()?;
                self.positional.get(at.checked_sub(1)?).cloned()
            }
            name => self.var(name).map(str::to_owned),
        }
    }

    /// The value of a parameter that must be set under `set -u`.
    fn required_value(&self, name: &str, io: &mut Io<'_>) -> Result<String, Flow> {
        match self.param_value(name) {
            Some(value) => Ok(value),
            None if self.options.nounset && !matches!(name, "@" | "*") => {
                self.complain(io, &format!("{name}: parameter not set"))?;
                Err(Flow::Error(2))
            }
            None => Ok(String::new()),
        }
    }

    async fn expand_param(
        &mut self,
        param: &Param,
        quoted: bool,
        fields: &mut Fields,
        io: &mut Io<'_>,
    ) -> Result<(), Flow> {
        let name = param.name.as_str();
        match &param.op {
            ParamOp::Value if matches!(name, "@" | "*") => {
                self.expand_positional(name, quoted, fields)
            }
            ParamOp::Value => {
                let value = self.required_value(name, io)?;
                fields.expanded(&value, quoted);
            }
            ParamOp::Length => {
                let length = match name {
                    "@" | "*" => self.positional.len(),
                    _ => self.required_value(name, io)?.chars().count(),
                };
                fields.expanded(&length.to_string(), quoted);
            }
            ParamOp::Test { test, colon, word } => {
                let value = self.param_value(name);
                let set = value.as_ref().is_some_and(|v| !(*colon && v.is_empty()));
                match (test, set) {
                    (TestOp::Default | TestOp::Assign | TestOp::Error, true) => {
                        fields.expanded(&value.unwrap_or_default(), quoted);
                    }
                    (TestOp::Alternative, false) => {}
                    (TestOp::Default | TestOp::Alternative, _) => {
                        self.enter()?;
                        let run = self.expand_into(&word.0, fields, io).await;
                        self.leave();
                        run?;
                    }
                    (TestOp::Assign, false) => {
                        let value = self.expand_string(word, io).await?;
                        if !is_name(name) {
                            self.complain(io, &format!("{name}: cannot assign in this way"))?;
                            return Err(Flow::Error(2));
                        }
                        self.set_var(name, value.clone(), io)?;
                        fields.expanded(&value, quoted);
                    }
                    (TestOp::Error, false) => {
                        let mut message = self.expand_string(word, io).await?;
                        if message.is_empty() {
                            message = "parameter not set".to_owned();
                        }
                        self.complain(io, &format!("{name}: {message}"))?;
                        return Err(Flow::Error(2));
                    }
                }
            }
            ParamOp::Trim {
                suffix,
                longest,
                pattern,
            } => {
                let value = self.required_value(name, io)?;
                let pattern = self.expand_pattern(pattern, io).await?;
                fields.expanded(&pattern::trim(&value, &pattern, *suffix, *longest), quoted);
            }
        }
        Ok(())
    }

    /// `$@` and `$*`: `"$@"` is one field per parameter, `"$*"` one field of them all.
    fn expand_positional(&self, name: &str, quoted: bool, fields: &mut Fields) {
        if quoted && name == "*" || !fields.split {
            let separator = match name {
                "*" => self
                    .ifs()
                    .chars()
                    .next()
                    .map(String::from)
                    .unwrap_or_default(),
                _ => " ".to_owned(),
            };
            fields.expanded(&self.positional.join(&separator), quoted);
            return;
        }
        for (at, value) in self.positional.iter().enumerate() {
            if at > 0 && (quoted || fields.current.started) {
                fields.boundary();
            }
            fields.expanded(value, quoted);
        }
    }

    /// The output of `body` run in a subshell, without its trailing newlines.
    async fn substitute(&mut self, body: &List, io: &mut Io<'_>) -> Result<String, Flow> {
        let mut subshell = self.subshell()?;
        let mut output = Output::capture(self.budget.clone());
        let run = {
            let mut inner = Io {
                stdin: &mut *io.stdin,
                stdout: &mut output,
                stderr: &mut *io.stderr,
            };
            subshell.run_list(body, &mut inner).await
        };
        self.substituted = Some(ended(run)?);
        let bytes = output.into_captured();
        self.check_length(bytes.len(), io)?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }

    /// The paths matching `pattern`, sorted; relative to the working directory unless it is absolute.
    fn glob(&self, pattern: &str) -> Vec<String> {
        let files = &self.container.files;
        let absolute = pattern.starts_with('/');
        let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
        let root = if absolute { "/" } else { "" };
        let mut found = vec![(
            root.to_owned(),
            if absolute {
                "/".to_owned()
            } else {
                self.cwd.clone()
            },
        )];
        for (at, component) in components.iter().enumerate() {
            let mut next = Vec::new();
            for (shown, path) in &found {
                if is_glob(component) {
                    let Ok(names) = files.list(path) else {
                        continue;
                    };
                    let hidden = unescape(component).starts_with('.');
                    for name in names {
                        if (hidden || !name.starts_with('.')) && pattern::matches(component, &name)
                        {
                            next.push((join(shown, &name), join(path, &name)));
                        }
                    }
                } else {
                    let name = unescape(component);
                    let full = join(path, &name);
                    if files.get(&full).is_some() {
                        next.push((join(shown, &name), full));
                    }
                }
            }
            if at + 1 < components.len() || pattern.ends_with('/') {
                next.retain(|(_, path)| files.is_dir(path));
            }
            found = next;
        }
        let mut shown: Vec<String> = found
            .into_iter()
            .map(|(shown, _)| {
                if pattern.ends_with('/') {
                    shown + "/"
                } else {
                    shown
                }
            })
            .collect();
        shown.sort();
        shown
    }
}

fn join(dir: &str, name: &str) -> String {
    match dir {
        "" => name.to_owned(),
        dir if dir.ends_with('/') => format!("{dir}{name}"),
        dir => format!("{dir}/{name}"),
    }
}
