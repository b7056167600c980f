//! The shell's own commands: those that change the shell itself (`cd`, `export`, `set`, `exit`…), read its input
//! (`read`), or run other commands in it (`eval`, `.`, `exec`, `command`, `env`, `timeout`).

use std::time::Duration;

use futures::future::BoxFuture;

use super::super::fs::resolve;
use super::super::syntax::is_name;
use super::{Flow, Io, Run, Shell, base_name};

/// The names [`Shell::builtin`] answers, for `type` and `command -v`.
const BUILTINS: &[&str] = &[
    ":", ".", "break", "bash", "cd", "command", "continue", "env", "eval", "exec", "exit",
    "export", "local", "pwd", "read", "return", "set", "sh", "shift", "source", "timeout", "trap",
    "type", "unset", "wait",
];

impl<'c> Shell<'c> {
    /// Run `argv` if `name` is a builtin; None otherwise (and for `env` without a command, which is a command of
    /// the simulation).
    /// Boxed, since `command` runs builtins.
    pub(super) fn builtin<'a>(
        &'a mut self,
        name: &'a str,
        argv: &'a [String],
        io: &'a mut Io<'_>,
    ) -> BoxFuture<'a, Option<Run>> {
        Box::pin(self.builtin_unboxed(name, argv, io))
    }

    async fn builtin_unboxed(
        &mut self,
        name: &str,
        argv: &[String],
        io: &mut Io<'_>,
    ) -> Option<Run> {
        let args = &argv[1..];
        Some(match name {
            ":" | "wait" => Ok(0),
            "trap" => {
                self.trap(args);
                Ok(0)
            }
            "exit" => self
                .status_argument("exit", args, io)
                .and_then(|s| Err(Flow::Exit(s))),
            "return" => self
                .status_argument("return", args, io)
                .and_then(|s| Err(Flow::Return(s))),
            "break" | "continue" => self.loop_control(name, args, io),
            "cd" => self.cd(args, io),
            "pwd" => io
                .stdout
                .print(&format!("{}\n", self.cwd))
                .map(|()| 0)
                .map_err(Flow::from),
            "export" => self.export_builtin(args, io),
            "unset" => {
                let functions = args.first().is_some_and(|a| a == "-f");
                for name in args.iter().filter(|a| !a.starts_with('-')) {
                    if functions {
                        self.functions.remove(name);
                    } else {
                        self.vars.remove(name);
                    }
                }
                Ok(0)
            }
            "set" => self.set(args, io),
            "local" => self.local(args, io),
            "shift" => self.shift(args, io),
            "read" => self.read(args, io).await,
            "eval" => {
                let source = args.join(" ");
                match self.enter() {
                    Ok(()) => {
                        let run = self.run_source(&source, io).await;
                        self.leave();
                        run
                    }
                    Err(flow) => Err(flow),
                }
            }
            "." | "source" => self.source(args, io).await,
            "exec" if args.is_empty() => Ok(0),
            "exec" => {
                let env = self.environment();
                match self.run_external(args, env, io).await {
                    Ok(status) => Err(Flow::Exit(status)),
                    Err(flow) => Err(flow),
                }
            }
            "command" => self.command(args, io).await,
            "type" => self.describe(args, false, io),
            "env" => return self.env(args, io).await,
            "timeout" => self.timeout(args, io).await,
            "sh" | "bash" => {
                let env = self.environment();
                self.run_external(argv, env, io).await
            }
            _ => return None,
        })
    }

    /// The status `exit` and `return` end with: their argument, else the last status.
    fn status_argument(&self, name: &str, args: &[String], io: &mut Io<'_>) -> Result<i32, Flow> {
        match args.first() {
            None => Ok(self.status),
            Some(arg) => match arg.parse::<i64>() {
                Ok(status) => Ok((status & 0xff) as i32),
                Err(_) => {
                    self.complain(io, &format!("{name}: Illegal number: {arg}"))?;
                    Err(Flow::Error(2))
                }
            },
        }
    }

    fn loop_control(&self, name: &str, args: &[String], io: &mut Io<'_>) -> Run {
        let count = match args.first().map(|a| a.parse::<usize>()) {
            None => 1,
            Some(Ok(count)) if count > 0 => count,
            Some(_) => {
                self.complain(io, &format!("{name}: Illegal number: {}", args[0]))?;
                return Err(Flow::Error(2));
            }
        };
        if self.loops == 0 {
            return Ok(0);
        }
        let count = count.min(self.loops);
        Err(if name == "break" {
            Flow::Break(count)
        } else {
            Flow::Continue(count)
        })
    }

    fn cd(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let args: Vec<&String> = args
            .iter()
            .filter(|a| !matches!(a.as_str(), "-L" | "-P"))
            .collect();
        let (target, announce) = match args.first().map(|a| a.as_str()) {
            None => (self.var("HOME").unwrap_or("/").to_owned(), false),
            Some("-") => (self.var("OLDPWD").unwrap_or(&self.cwd).to_owned(), true),
            Some(dir) => (dir.to_owned(), false),
        };
        let path = resolve(&self.cwd, &target);
        if !self.container.files.is_dir(&path) {
            let why = match self.container.files.get(&path) {
                Some(_) => "Not a directory",
                None => "No such file or directory",
            };
            self.complain(io, &format!("cd: {target}: {why}"))?;
            return Ok(1);
        }
        if announce {
            io.stdout.print(&format!("{path}\n"))?;
        }
        let old = std::mem::replace(&mut self.cwd, path.clone());
        self.assign("OLDPWD", old);
        self.assign("PWD", path);
        self.export("PWD");
        Ok(0)
    }

    fn export_builtin(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let names: Vec<&String> = args.iter().filter(|a| a.as_str() != "-p").collect();
        if names.is_empty() {
            let mut listing = String::new();
            let mut env = self.environment();
            env.sort();
            for (name, value) in env {
                listing.push_str(&format!("export {name}={}\n", quote(&value)));
            }
            io.stdout.print(&listing)?;
            return Ok(0);
        }
        let mut status = 0;
        for arg in names {
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (arg.as_str(), None),
            };
            if !is_name(name) {
                self.complain(io, &format!("export: {name}: bad variable name"))?;
                status = 1;
                continue;
            }
            if let Some(value) = value {
                self.set_var(name, value.to_owned(), io)?;
            }
            self.export(name);
        }
        Ok(status)
    }

    fn set(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        if args.is_empty() {
            let mut vars: Vec<(&String, &str)> = self
                .vars
                .iter()
                .filter_map(|(name, var)| Some((name, var.value.as_deref()?)))
                .collect();
            vars.sort();
            let listing: String = vars
                .into_iter()
                .map(|(name, value)| format!("{name}={}\n", quote(value)))
                .collect();
            io.stdout.print(&listing)?;
            return Ok(0);
        }
        let mut rest = args;
        while let Some((arg, tail)) = rest.split_first() {
            if arg == "--" {
                self.positional = tail.to_vec();
                return Ok(0);
            }
            let on = arg.starts_with('-');
            let Some(flags) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) else {
                self.positional = rest.to_vec();
                return Ok(0);
            };
            rest = tail;
            if flags == "o" {
                let Some((option, tail)) = rest.split_first() else {
                    return Ok(0);
                };
                rest = tail;
                if !self.options.set_named(option, on) {
                    self.complain(io, &format!("set: -o {option}: not simulated"))?;
                    return Err(Flow::Error(2));
                }
                continue;
            }
            for flag in flags.chars() {
                if !self.options.set_flag(flag, on) {
                    self.complain(io, &format!("set: -{flag}: not simulated"))?;
                    return Err(Flow::Error(2));
                }
            }
        }
        Ok(0)
    }

    /// `trap action condition…`: only the `EXIT` (or `0`) action ever runs, when the shell ends, since no signal
    /// is ever sent to a simulated process.
    fn trap(&mut self, args: &[String]) {
        let (action, conditions) = match args {
            [] => return,
            [first, rest @ ..] if first == "-" => (None, rest),
            [_] => (None, args),
            [action, rest @ ..] => (Some(action.clone()).filter(|a| !a.is_empty()), rest),
        };
        if conditions.iter().any(|c| c == "EXIT" || c == "0") {
            self.exit_trap = action;
        }
    }

    /// `local name[=value]…`: the names get back their values when the function returns.
    fn local(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        if self.locals.is_empty() {
            self.complain(io, "local: not in a function")?;
            return Ok(2);
        }
        for arg in args {
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (arg.as_str(), None),
            };
            if !is_name(name) {
                self.complain(io, &format!("local: {name}: bad variable name"))?;
                return Ok(2);
            }
            let old = self.vars.get(name).cloned();
            if let Some(frame) = self.locals.last_mut()
                && !frame.iter().any(|(saved, _)| saved == name)
            {
                frame.push((name.to_owned(), old));
            }
            if let Some(value) = value {
                self.set_var(name, value.to_owned(), io)?;
            }
        }
        Ok(0)
    }

    fn shift(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let count = match args.first().map(|a| a.parse::<usize>()) {
            None => 1,
            Some(Ok(count)) => count,
            Some(Err(_)) => {
                self.complain(io, &format!("shift: Illegal number: {}", args[0]))?;
                return Err(Flow::Error(2));
            }
        };
        if count > self.positional.len() {
            self.complain(io, "shift: can't shift that many")?;
            return Ok(1);
        }
        self.positional.drain(..count);
        Ok(0)
    }

    /// `read [-r] [-p prompt] [name…]`: one line of standard input, split on `IFS` into the names.
    async fn read(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let mut raw = false;
        let mut names = Vec::new();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-r" => raw = true,
                "-p" => {
                    if let Some(prompt) = rest.next() {
                        io.stderr.print(prompt)?;
                    }
                }
                name if is_name(name) => names.push(name.to_owned()),
                other => {
                    self.complain(io, &format!("read: {other}: invalid option or name"))?;
                    return Ok(2);
                }
            }
        }
        let mut line = String::new();
        let mut complete = false;
        while let Some(bytes) = io.stdin.line().await {
            self.check_length(line.len() + bytes.len(), io)?;
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            complete = text.ends_with('\n');
            if complete {
                text.pop();
            }
            if raw {
                line.push_str(&text);
                break;
            }
            let continued = unescape_read(&text, &mut line);
            if !(continued && complete) {
                break;
            }
        }
        if names.is_empty() {
            self.set_var("REPLY", line, io)?;
        } else {
            let values = split_read(&line, &self.ifs(), names.len());
            for (at, name) in names.iter().enumerate() {
                let value = values.get(at).cloned().unwrap_or_default();
                self.set_var(name, value, io)?;
            }
        }
        Ok(if complete { 0 } else { 1 })
    }

    async fn source(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let Some((file, args)) = args.split_first() else {
            self.complain(io, ".: filename argument required")?;
            return Ok(2);
        };
        let script = match self.container.files.read(&resolve(&self.cwd, file)) {
            Ok(script) => String::from_utf8_lossy(&script).into_owned(),
            Err(error) => {
                self.complain(io, &format!(".: {file}: {error}"))?;
                return Err(Flow::Error(1));
            }
        };
        self.enter()?;
        let saved =
            (!args.is_empty()).then(|| std::mem::replace(&mut self.positional, args.to_vec()));
        let run = self.run_source(&script, io).await;
        if let Some(saved) = saved {
            self.positional = saved;
        }
        self.leave();
        match run {
            Err(Flow::Return(status)) => Ok(status),
            run => run,
        }
    }

    /// `command [-v|-V] name args…`: describe a name, or run it without looking for a function.
    async fn command(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        match args.first().map(String::as_str) {
            Some("-v") => return self.describe(&args[1..], true, io),
            Some("-V") => return self.describe(&args[1..], false, io),
            None => return Ok(0),
            _ => {}
        }
        let name = base_name(&args[0]);
        if let Some(run) = self.builtin(name, args, io).await {
            return run;
        }
        let env = self.environment();
        self.run_external(args, env, io).await
    }

    /// `type` and `command -v`: what each name runs. The commands of the simulation cannot be listed here, so a
    /// name that is not the shell's own is found only as a script file.
    fn describe(&self, names: &[String], short: bool, io: &mut Io<'_>) -> Run {
        let mut status = 0;
        for name in names {
            let path = resolve(&self.cwd, name);
            let line = if self.functions.contains_key(name.as_str()) {
                if short {
                    name.clone()
                } else {
                    format!("{name} is a shell function")
                }
            } else if BUILTINS.contains(&name.as_str()) {
                if short {
                    name.clone()
                } else {
                    format!("{name} is a shell builtin")
                }
            } else if name.contains('/') && self.container.files.read(&path).is_ok() {
                if short {
                    name.clone()
                } else {
                    format!("{name} is {name}")
                }
            } else {
                status = 1;
                if !short {
                    self.complain(io, &format!("type: {name}: not found"))?;
                }
                continue;
            };
            io.stdout.print(&format!("{line}\n"))?;
        }
        Ok(status)
    }

    /// `env [-i] [-u name] [name=value…] command…`; without a command, None: `env` is then a command of the
    /// simulation listing the environment.
    async fn env(&mut self, args: &[String], io: &mut Io<'_>) -> Option<Run> {
        let mut env = self.environment();
        let mut rest = args;
        while let Some((arg, tail)) = rest.split_first() {
            match arg.as_str() {
                "-i" | "-" => env.clear(),
                "-u" => {
                    let (name, tail) = tail.split_first()?;
                    env.retain(|(n, _)| n != name);
                    rest = tail;
                    continue;
                }
                "--" => {
                    rest = tail;
                    break;
                }
                assignment if assignment.contains('=') && !assignment.starts_with('-') => {
                    let (name, value) = assignment.split_once('=')?;
                    env.retain(|(n, _)| n != name);
                    env.push((name.to_owned(), value.to_owned()));
                }
                _ => break,
            }
            rest = tail;
        }
        if rest.is_empty() {
            return None;
        }
        Some(self.run_external(rest, env, io).await)
    }

    /// `timeout DURATION command…`: the command, stopped with status 124 once `DURATION` of simulated time passed.
    async fn timeout(&mut self, args: &[String], io: &mut Io<'_>) -> Run {
        let mut rest = args;
        while let Some((arg, tail)) = rest.split_first() {
            match arg.as_str() {
                "-s" | "-k" | "--signal" | "--kill-after" => {
                    rest = tail.get(1..).unwrap_or_default()
                }
                flag if flag.starts_with('-') && flag.len() > 1 => rest = tail,
                _ => break,
            }
        }
        let Some((duration, command)) = rest.split_first() else {
            self.complain(io, "timeout: missing operand")?;
            return Ok(125);
        };
        let Some(limit) = parse_duration(duration) else {
            self.complain(io, &format!("timeout: invalid time interval '{duration}'"))?;
            return Ok(125);
        };
        if command.is_empty() {
            self.complain(io, "timeout: missing operand")?;
            return Ok(125);
        }
        let clock = self.container.clock;
        let env = self.environment();
        tokio::select! {
            run = self.run_external(command, env, io) => run,
            () = clock.sleep(limit) => Ok(124),
        }
    }
}

/// `value` quoted for the shell to read back, as `set` and `export` list it.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// Add `text` to `line` with `read`'s backslashes removed; true when it ends with a backslash: the line goes on.
fn unescape_read(text: &str, line: &mut String) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            line.push(c);
            continue;
        }
        match chars.next() {
            Some(next) => line.push(next),
            None => return true,
        }
    }
    false
}

/// `line` split on `ifs` into at most `count` values, the last taking the rest of the line.
fn split_read(line: &str, ifs: &str, count: usize) -> Vec<String> {
    let is_blank = |c: char| ifs.contains(c) && c.is_whitespace();
    let mut values = Vec::new();
    let mut rest = line.trim_start_matches(is_blank);
    while values.len() + 1 < count && !rest.is_empty() {
        let end = rest.find(|c: char| ifs.contains(c)).unwrap_or(rest.len());
        values.push(rest[..end].to_owned());
        rest = rest[end..].trim_start_matches(is_blank);
        if let Some(c) = rest.chars().next()
            && ifs.contains(c)
        {
            rest = rest[c.len_utf8()..].trim_start_matches(is_blank);
        }
    }
    values.push(rest.trim_end_matches(is_blank).to_owned());
    values
}

/// `5`, `1.5`, `30s`, `2m`, `1h`, `1d`.
fn parse_duration(text: &str) -> Option<Duration> {
    let (number, unit) = match text.char_indices().last()? {
        (at, c @ ('s' | 'm' | 'h' | 'd')) => (&text[..at], c),
        _ => (text, 's'),
    };
    let seconds: f64 = number.parse().ok()?;
    let scale = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 1.0,
    };
    Duration::try_from_secs_f64(seconds * scale).ok()
}
