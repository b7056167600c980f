//! Running the tree: lists, pipelines, compound commands, simple commands and the lookup of a command's name.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::super::commands;
use super::super::fs::{program_of, resolve};
use super::super::io::{Cx, Input, Output};
use super::super::syntax::{AndOr, Command, Compound, Connector, List, Pipeline, Simple};
use super::{Flow, Io, Run, Shell, base_name, ended};

impl<'c> Shell<'c> {
    pub(super) async fn run_list(&mut self, list: &List, io: &mut Io<'_>) -> Run {
        let mut status = self.status;
        for and_or in list {
            status = self.run_and_or(and_or, io).await?;
        }
        Ok(status)
    }

    /// A list run as a condition: its failure does not end the shell under `set -e`.
    async fn run_condition(&mut self, list: &List, io: &mut Io<'_>) -> Run {
        self.errexit_suppressed += 1;
        let run = self.run_list(list, io).await;
        self.errexit_suppressed -= 1;
        run
    }

    pub(super) async fn run_and_or(&mut self, and_or: &AndOr, io: &mut Io<'_>) -> Run {
        let mut status = self
            .run_pipeline(&and_or.first, !and_or.rest.is_empty(), io)
            .await?;
        for (at, (connector, pipeline)) in and_or.rest.iter().enumerate() {
            let runs = match connector {
                Connector::And => status == 0,
                Connector::Or => status != 0,
            };
            if runs {
                let last = at + 1 == and_or.rest.len();
                status = self.run_pipeline(pipeline, !last, io).await?;
            }
        }
        self.status = status;
        Ok(status)
    }

    async fn run_pipeline(
        &mut self,
        pipeline: &Pipeline,
        in_condition: bool,
        io: &mut Io<'_>,
    ) -> Run {
        let suppress = in_condition || pipeline.negated;
        if suppress {
            self.errexit_suppressed += 1;
        }
        let run = match pipeline.commands.as_slice() {
            [command] => self.run_command(command, io).await,
            commands => self.run_stages(commands, io).await,
        };
        if suppress {
            self.errexit_suppressed -= 1;
        }
        let mut status = run?;
        if pipeline.negated {
            status = i32::from(status == 0);
        }
        self.status = status;
        if status != 0 && !suppress && self.errexit_suppressed == 0 && self.options.errexit {
            return Err(Flow::Exit(status));
        }
        Ok(status)
    }

    /// The stages of a pipeline, one after the other, each in a subshell.
    async fn run_stages(&mut self, commands: &[Command], io: &mut Io<'_>) -> Run {
        let mut piped: Option<Input> = None;
        let mut status = 0;
        for (at, command) in commands.iter().enumerate() {
            let last = at + 1 == commands.len();
            let mut captured = (!last).then(|| Output::capture(self.budget.clone()));
            let mut stage = self.subshell()?;
            let run = {
                let stdin = match piped.as_mut() {
                    Some(input) => input,
                    None => &mut *io.stdin,
                };
                let stdout = match captured.as_mut() {
                    Some(output) => output,
                    None => &mut *io.stdout,
                };
                let mut stage_io = Io {
                    stdin,
                    stdout,
                    stderr: &mut *io.stderr,
                };
                stage.run_command(command, &mut stage_io).await
            };
            let stage_status = ended(run)?;
            if stage_status != 0 || !self.options.pipefail {
                status = stage_status;
            }
            piped = captured.map(|output| Input::bytes(output.into_captured()));
        }
        Ok(status)
    }

    /// Run one command; boxed, since commands nest.
    pub(super) fn run_command<'a>(
        &'a mut self,
        command: &'a Command,
        io: &'a mut Io<'_>,
    ) -> BoxFuture<'a, Run> {
        Box::pin(async move {
            match command {
                Command::Simple(simple) => self.run_simple(simple, io).await,
                Command::Compound(compound, redirects) => {
                    self.enter()?;
                    let run = match self.open_redirects(redirects, io).await {
                        Ok(Ok(mut opened)) => {
                            let run = self.run_compound(compound, &mut opened.io(io)).await;
                            self.close_redirects(opened, run, io)
                        }
                        Ok(Err(status)) => Ok(status),
                        Err(flow) => Err(flow),
                    };
                    self.leave();
                    run
                }
                Command::Function(name, body) => {
                    self.functions.insert(name.clone(), body.clone());
                    Ok(0)
                }
            }
        })
    }

    async fn run_compound(&mut self, compound: &Compound, io: &mut Io<'_>) -> Run {
        match compound {
            Compound::Group(list) => self.run_list(list, io).await,
            Compound::Subshell(list) => {
                let mut subshell = self.subshell()?;
                let run = subshell.run_list(list, io).await;
                subshell.finish(run, io).await
            }
            Compound::If {
                branches,
                otherwise,
            } => {
                for (condition, body) in branches {
                    if self.run_condition(condition, io).await? == 0 {
                        return self.run_list(body, io).await;
                    }
                }
                match otherwise {
                    Some(body) => self.run_list(body, io).await,
                    None => Ok(0),
                }
            }
            Compound::Loop {
                until,
                condition,
                body,
            } => {
                self.loops += 1;
                let run = self.run_loop(*until, condition, body, io).await;
                self.loops -= 1;
                run
            }
            Compound::For { var, items, body } => {
                let items = match items {
                    Some(words) => self.expand_words(words, io).await?,
                    None => self.positional.clone(),
                };
                self.loops += 1;
                let run = self.run_for(var, &items, body, io).await;
                self.loops -= 1;
                run
            }
            Compound::Case { subject, arms } => {
                let subject = self.expand_string(subject, io).await?;
                for arm in arms {
                    for pattern in &arm.patterns {
                        let pattern = self.expand_pattern(pattern, io).await?;
                        if super::pattern::matches(&pattern, &subject) {
                            return self.run_list(&arm.body, io).await;
                        }
                    }
                }
                Ok(0)
            }
        }
    }

    async fn run_loop(
        &mut self,
        until: bool,
        condition: &List,
        body: &List,
        io: &mut Io<'_>,
    ) -> Run {
        let mut status = 0;
        loop {
            self.step().await?;
            let holds = self.run_condition(condition, io).await? == 0;
            if holds == until {
                return Ok(status);
            }
            match loop_body(self.run_list(body, io).await)? {
                Next::Status(s) => status = s,
                Next::Continue => status = 0,
                Next::Break => return Ok(0),
            }
        }
    }

    async fn run_for(&mut self, var: &str, items: &[String], body: &List, io: &mut Io<'_>) -> Run {
        let mut status = 0;
        for item in items {
            self.step().await?;
            self.assign(var, item.clone());
            match loop_body(self.run_list(body, io).await)? {
                Next::Status(s) => status = s,
                Next::Continue => status = 0,
                Next::Break => return Ok(0),
            }
        }
        Ok(status)
    }

    async fn run_simple(&mut self, simple: &Simple, io: &mut Io<'_>) -> Run {
        self.step().await?;
        self.substituted = None;
        let argv = self.expand_words(&simple.words, io).await?;
        let mut assignments = Vec::with_capacity(simple.assignments.len());
        for (name, value) in &simple.assignments {
            let value = self.expand_string(value, io).await?;
            assignments.push((name.as_str(), value));
        }
        if argv.is_empty() {
            let status = self.substituted.unwrap_or(0);
            for (name, value) in assignments {
                self.set_var(name, value, io)?;
            }
            return match self.open_redirects(&simple.redirects, io).await? {
                Ok(opened) => self.close_redirects(opened, Ok(status), io),
                Err(status) => Ok(status),
            };
        }
        if self.options.xtrace {
            io.stderr.print(&format!("+ {}\n", argv.join(" ")))?;
        }
        if argv == ["exec"] && !simple.redirects.is_empty() {
            self.complain(
                io,
                "exec: redirecting the shell's own streams is not simulated",
            )?;
            return Ok(2);
        }
        let mut opened = match self.open_redirects(&simple.redirects, io).await? {
            Ok(opened) => opened,
            Err(status) => return Ok(status),
        };
        let saved: Vec<(String, Option<super::Var>)> = assignments
            .iter()
            .map(|(name, _)| ((*name).to_owned(), self.vars.get(*name).cloned()))
            .collect();
        for (name, value) in assignments {
            self.set_var(name, value, io)?;
            self.export(name);
        }
        let run = {
            let mut inner = opened.io(io);
            let run = self.run_argv(&argv, &mut inner).await;
            self.note_wait(inner.stdin);
            run
        };
        for (name, old) in saved {
            self.restore(name, old);
        }
        let run = self.close_redirects(opened, run, io);
        if self.budget.exhausted() {
            return Err(Flow::from(super::OutputLimit {
                bytes: self.budget.limit(),
            }));
        }
        run
    }

    /// Run a command by its name: a function, a builtin, a script file, or a command of the simulation.
    pub(super) async fn run_argv(&mut self, argv: &[String], io: &mut Io<'_>) -> Run {
        let Some(program) = argv.first() else {
            return Ok(0);
        };
        let name = base_name(program);
        if let Some(body) = self.functions.get(name).cloned() {
            return self.call_function(&body, &argv[1..], io).await;
        }
        if let Some(run) = self.builtin(name, argv, io).await {
            return run;
        }
        let env = self.environment();
        self.run_external(argv, env, io).await
    }

    async fn call_function(
        &mut self,
        body: &Arc<Command>,
        args: &[String],
        io: &mut Io<'_>,
    ) -> Run {
        self.enter()?;
        let saved = std::mem::replace(&mut self.positional, args.to_vec());
        self.locals.push(Vec::new());
        let run = self.run_command(body, io).await;
        for (name, old) in self.locals.pop().unwrap_or_default() {
            self.restore(name, old);
        }
        self.positional = saved;
        self.leave();
        match run {
            Err(Flow::Return(status)) => Ok(status),
            run => run,
        }
    }

    /// Run what a process would run for `argv` with the environment `env`: a nested shell, a script file, or a
    /// command of the simulation; neither functions nor builtins (what `env`, `timeout` and `exec` reach).
    pub(super) fn run_external<'a>(
        &'a mut self,
        argv: &'a [String],
        env: Vec<(String, String)>,
        io: &'a mut Io<'_>,
    ) -> BoxFuture<'a, Run> {
        Box::pin(async move {
            let Some(program) = argv.first() else {
                return Ok(0);
            };
            let name = base_name(program);
            if matches!(name, "sh" | "bash") {
                return self.nested_shell(&argv[1..], env, io).await;
            }
            let mut name = name.to_owned();
            if program.contains('/') {
                let path = resolve(&self.cwd, program);
                if let Ok(contents) = self.container.files.read(&path) {
                    match program_of(&contents) {
                        // A copy of a simulated program runs that program.
                        Some(copied) => copied.clone_into(&mut name),
                        None => {
                            let script = String::from_utf8_lossy(&contents).into_owned();
                            let mut child = self.child(env, program.clone())?;
                            child.positional = argv[1..].to_vec();
                            return ended(child.run_source(&script, io).await);
                        }
                    }
                }
            }
            let ran = {
                let mut cx = Cx {
                    container: self.container,
                    stdin: &mut *io.stdin,
                    stdout: &mut *io.stdout,
                    stderr: &mut *io.stderr,
                    cwd: &self.cwd,
                    env: &env,
                    slept: self.slept(),
                };
                commands::run(&mut cx, &name, &argv[1..]).await
            };
            match ran {
                Some(status) => Ok(status),
                None => {
                    io.stderr.print(&format!("{program}: not simulated\n"))?;
                    Ok(127)
                }
            }
        })
    }

    /// `sh`: `-c script [name [args…]]`, a script file, or commands read from standard input.
    async fn nested_shell(
        &mut self,
        args: &[String],
        env: Vec<(String, String)>,
        io: &mut Io<'_>,
    ) -> Run {
        let mut shell = self.child(env, "sh".to_owned())?;
        let mut command = false;
        let mut rest = args;
        while let Some((arg, tail)) = rest.split_first() {
            let Some(flags) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) else {
                break;
            };
            rest = tail;
            if flags == "-" || flags.is_empty() {
                break;
            }
            let on = arg.starts_with('-');
            for flag in flags.chars() {
                match flag {
                    'c' => command = true,
                    'i' | 's' | 'l' => {}
                    'o' => {
                        let Some((option, tail)) = rest.split_first() else {
                            continue;
                        };
                        rest = tail;
                        if !shell.options.set_named(option, on) {
                            self.complain(io, &format!("-o {option}: not simulated"))?;
                            return Ok(2);
                        }
                    }
                    flag if shell.options.set_flag(flag, on) => {}
                    other => {
                        self.complain(io, &format!("-{other}: invalid option"))?;
                        return Ok(2);
                    }
                }
            }
        }
        if command {
            let Some((script, rest)) = rest.split_first() else {
                self.complain(io, "-c requires an argument")?;
                return Ok(2);
            };
            if let Some((name, args)) = rest.split_first() {
                shell.arg0 = name.clone();
                shell.positional = args.to_vec();
            }
            let run = shell.run_source(script, io).await;
            return shell.finish(run, io).await;
        }
        if let Some((file, args)) = rest.split_first() {
            let path = resolve(&self.cwd, file);
            let Ok(script) = self.container.files.read(&path) else {
                self.complain(io, &format!("cannot open {file}: No such file"))?;
                return Ok(127);
            };
            shell.arg0 = file.clone();
            shell.positional = args.to_vec();
            let script = String::from_utf8_lossy(&script).into_owned();
            let run = shell.run_source(&script, io).await;
            return shell.finish(run, io).await;
        }
        let run = shell.interactive(io).await;
        shell.finish(run, io).await
    }
}

impl Shell<'_> {
    /// Put a variable back as it was before an assignment for one command, or `local`.
    fn restore(&mut self, name: String, old: Option<super::Var>) {
        match old {
            Some(var) => self.vars.insert(name, var),
            None => self.vars.remove(&name),
        };
    }
}

/// What a loop does after its body ran.
enum Next {
    Status(i32),
    Continue,
    Break,
}

/// How a loop's body ended, for the loop: `break`/`continue` of more loops go on out as one less.
fn loop_body(run: Run) -> Result<Next, Flow> {
    match run {
        Ok(status) => Ok(Next::Status(status)),
        Err(Flow::Break(n)) if n <= 1 => Ok(Next::Break),
        Err(Flow::Break(n)) => Err(Flow::Break(n - 1)),
        Err(Flow::Continue(n)) if n <= 1 => Ok(Next::Continue),
        Err(Flow::Continue(n)) => Err(Flow::Continue(n - 1)),
        Err(flow) => Err(flow),
    }
}
