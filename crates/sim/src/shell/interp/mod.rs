//! Runs a process: its argument vector, and the scripts of `sh -c`, of script files and of an interactive `sh`.
//!
//! The shell runs the tree of [`super::syntax`] in simulated time, as an async task: a command that waits (on
//! `sleep`, on input) costs nothing while it waits, and dropping the future kills the process.
//!
//! Pipelines run stage by stage, not side by side: each stage's standard output is captured whole and becomes the
//! next stage's input; only the first stage reads the process's standard input and only the last writes to its
//! output. A stage that never ends (`yes | head -1`) therefore runs until a limit stops the process. Redirections to
//! files likewise capture the command's output and write it to the file when the command is done.
//!
//! Every simple command and loop iteration is a step; a process that takes [`Limits::steps_without_wait`] steps
//! without simulated time passing or input being waited for is stopped, as is one nesting deeper than
//! [`Limits::depth`] or writing more than [`Limits::output_bytes`].
//!
//! [`Limits::steps_without_wait`]: super::Limits::steps_without_wait
//! [`Limits::depth`]: super::Limits::depth
//! [`Limits::output_bytes`]: super::Limits::output_bytes

mod arith;
mod builtins;
mod exec;
mod expand;
mod pattern;
mod redirect;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::io::{Budget, Input, Output, OutputLimit};
use super::syntax::{self, Command, ParseError};
use super::{ContainerEnv, Stdio, Stream};

/// Run `argv` as a process of `container`; returns its exit status. `sh` and `bash` (by any path) run the shell;
/// any other argument vector is one command, run without parsing, as an exec runs it.
pub(super) async fn run_process(container: &ContainerEnv, argv: &[String], stdio: Stdio) -> i32 {
    let budget = Budget::new(container.limits.output_bytes);
    let mut stdin = stdio.stdin.map_or_else(Input::null, Input::live);
    let mut stdout = Output::stdio(Stream::Stdout, stdio.sink.clone(), budget.clone());
    let mut stderr = Output::stdio(Stream::Stderr, stdio.sink.clone(), budget.clone());
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
    };
    let Some(program) = argv.first() else {
        return 0;
    };
    let mut shell = Shell::new(container, container.env.clone(), budget, program.clone());
    match shell.run_argv(argv, &mut io).await {
        Ok(status) => status,
        Err(Flow::Stop { status, message }) => {
            (stdio.sink)(Stream::Stderr, format!("sh: {message}\n").as_bytes());
            status
        }
        Err(flow) => flow.status(),
    }
}

/// The process's standard streams as a command sees them, after its redirections.
pub(super) struct Io<'a> {
    /// What the command reads.
    pub stdin: &'a mut Input,
    /// Where its output goes.
    pub stdout: &'a mut Output,
    /// Where its errors go.
    pub stderr: &'a mut Output,
}

/// How running a command ended, when it did not simply end with a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Flow {
    /// `break N`, counting the loops still to leave.
    Break(usize),
    /// `continue N`.
    Continue(usize),
    /// `return`: ends a function or a sourced file.
    Return(i32),
    /// `exit` and `set -e`: ends the shell (a subshell, a nested `sh`).
    Exit(i32),
    /// An error that ends a shell running a script, but only the command line of an interactive one; its message
    /// is already written.
    Error(i32),
    /// A limit reached: ends the whole process, whatever shells it nests; the message is written when it ends.
    Stop { status: i32, message: String },
}

impl Flow {
    /// The status a shell ends with when this ends it.
    fn status(&self) -> i32 {
        match self {
            Self::Break(_) | Self::Continue(_) => 0,
            Self::Return(status) | Self::Exit(status) | Self::Error(status) => *status,
            Self::Stop { status, .. } => *status,
        }
    }
}

/// What running something gives: its status, or how it broke off.
pub(super) type Run = Result<i32, Flow>;

/// A write refused by the output limit, as what it does to the process.
impl From<OutputLimit> for Flow {
    fn from(limit: OutputLimit) -> Self {
        Flow::Stop {
            status: 1,
            message: format!("output limit of {} bytes reached", limit.bytes),
        }
    }
}

/// The steps a process has taken, shared by all the shells it nests.
#[derive(Debug, Default)]
struct Steps {
    /// Since it last waited.
    busy: AtomicU64,
    /// Since it started: the count that decides when to yield.
    total: AtomicU64,
    /// Whether a command slept in simulated time since the shell last looked (see [`Cx::sleep`]).
    slept: AtomicBool,
}

/// A shell variable.
#[derive(Debug, Clone)]
struct Var {
    /// None for a name exported before it was given a value.
    value: Option<String>,
    exported: bool,
    /// When it was first set: the environment lists variables in that order.
    order: u64,
}

/// The options of `set`.
#[derive(Debug, Clone, Copy, Default)]
struct Options {
    /// `-e`: a failing command ends the shell.
    errexit: bool,
    /// `-u`: expanding an unset variable is an error.
    nounset: bool,
    /// `-x`: commands are written to standard error before they run.
    xtrace: bool,
    /// `-f`: no pathname expansion.
    noglob: bool,
    /// `-o pipefail`: a pipeline fails when any of its stages does.
    pipefail: bool,
}

impl Options {
    /// Set the option of a `set` or `sh` flag; false for a flag that is not simulated. `h`, `m` and `b` (command
    /// hashing, job control, job notices) change nothing the simulation shows, and are accepted.
    fn set_flag(&mut self, flag: char, on: bool) -> bool {
        match flag {
            'e' => self.errexit = on,
            'u' => self.nounset = on,
            'x' => self.xtrace = on,
            'f' => self.noglob = on,
            'h' | 'm' | 'b' => {}
            _ => return false,
        }
        true
    }

    /// Set the option `set -o name` names; false for one that is not simulated.
    fn set_named(&mut self, name: &str, on: bool) -> bool {
        match name {
            "errexit" => self.set_flag('e', on),
            "nounset" => self.set_flag('u', on),
            "xtrace" => self.set_flag('x', on),
            "noglob" => self.set_flag('f', on),
            "pipefail" => {
                self.pipefail = on;
                true
            }
            "hashall" | "monitor" | "notify" => true,
            _ => false,
        }
    }
}

/// The process ids `$$` answers, one per shell process.
static NEXT_PID: AtomicU32 = AtomicU32::new(1);

/// How often a busy process gives its thread back to the runtime, in steps.
const YIELD_EVERY: u64 = 64;

/// One shell: its variables, functions, parameters and options. A subshell is a clone.
#[derive(Clone)]
pub(super) struct Shell<'c> {
    container: &'c ContainerEnv,
    vars: HashMap<String, Var>,
    next_order: u64,
    functions: HashMap<String, Arc<Command>>,
    arg0: String,
    positional: Vec<String>,
    /// `$?`
    status: i32,
    /// The status of the last command substitution of the simple command being expanded: the status of a command
    /// that only assigns.
    substituted: Option<i32>,
    cwd: String,
    options: Options,
    budget: Arc<Budget>,
    pid: u32,
    steps: Arc<Steps>,
    /// How deep functions, subshells, substitutions and compound commands nest here.
    depth: usize,
    /// How many loops enclose the command running: what `break` and `continue` may leave.
    loops: usize,
    /// Above zero while running a condition, where a failure does not end the shell under `set -e`.
    errexit_suppressed: usize,
    /// For each function running, the variables it made `local` and what they were before.
    locals: Vec<Vec<(String, Option<Var>)>>,
    /// What `trap … EXIT` set to run when this shell ends.
    exit_trap: Option<String>,
}

impl<'c> Shell<'c> {
    /// A shell process starting with `env` exported, in `/`.
    fn new(
        container: &'c ContainerEnv,
        env: Vec<(String, String)>,
        budget: Arc<Budget>,
        arg0: String,
    ) -> Self {
        let mut shell = Self {
            container,
            vars: HashMap::new(),
            next_order: 0,
            functions: HashMap::new(),
            arg0,
            positional: Vec::new(),
            status: 0,
            substituted: None,
            cwd: "/".to_owned(),
            options: Options::default(),
            budget,
            pid: NEXT_PID.fetch_add(1, Ordering::Relaxed),
            steps: Arc::default(),
            depth: 0,
            loops: 0,
            errexit_suppressed: 0,
            locals: Vec::new(),
            exit_trap: None,
        };
        for (name, value) in env {
            shell.assign(&name, value);
            shell.export(&name);
        }
        if let Some(pwd) = shell.var("PWD")
            && container.files.is_dir(pwd)
        {
            shell.cwd = pwd.to_owned();
        }
        shell
    }

    /// A new shell process started by this one (`sh`, a script file): it gets `env` as its environment, this
    /// shell's directory and the process's limits, but none of its variables or functions.
    fn child(&self, env: Vec<(String, String)>, arg0: String) -> Result<Self, Flow> {
        let mut child = Self::new(self.container, env, self.budget.clone(), arg0);
        child.cwd = self.cwd.clone();
        child.steps = self.steps.clone();
        child.depth = self.depth;
        child.enter()?;
        Ok(child)
    }

    /// A subshell: a copy of this shell whose changes are its own.
    fn subshell(&self) -> Result<Self, Flow> {
        let mut child = self.clone();
        child.loops = 0;
        child.exit_trap = None;
        child.enter()?;
        Ok(child)
    }

    /// One level deeper; refused past the limit.
    fn enter(&mut self) -> Result<(), Flow> {
        self.depth += 1;
        if self.depth > self.container.limits.depth {
            return Err(Flow::Stop {
                status: 2,
                message: "nesting too deep".to_owned(),
            });
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Count a step: a simple command or a loop iteration.
    async fn step(&mut self) -> Result<(), Flow> {
        let total = self.steps.total.fetch_add(1, Ordering::Relaxed) + 1;
        if total.is_multiple_of(YIELD_EVERY) {
            tokio::task::yield_now().await;
        }
        let busy = self.steps.busy.fetch_add(1, Ordering::Relaxed) + 1;
        let limit = self.container.limits.steps_without_wait;
        if busy > limit {
            return Err(Flow::Stop {
                status: 124,
                message: format!(
                    "stopped after {limit} steps without waiting (a loop that never sleeps)"
                ),
            });
        }
        Ok(())
    }

    /// The process waited (simulated time passed, or input was waited for): its busy count starts again.
    fn waited(&self) {
        self.steps.busy.store(0, Ordering::Relaxed);
    }

    /// Whether the command that just ran waited: slept in simulated time, or for input on `stdin`. Only these
    /// count, never real time passing, so a busy loop is stopped however loaded the machine is.
    fn note_wait(&self, stdin: &mut Input) {
        if stdin.take_waited() | self.steps.slept.swap(false, Ordering::Relaxed) {
            self.waited();
        }
    }

    /// Where the commands it runs record that they slept.
    fn slept(&self) -> &AtomicBool {
        &self.steps.slept
    }

    /// Write `sh: message` on `io`'s standard error.
    fn complain(&self, io: &mut Io<'_>, message: &str) -> Result<(), Flow> {
        io.stderr.print(&format!("sh: {message}\n"))?;
        Ok(())
    }

    // --- variables ---

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).and_then(|var| var.value.as_deref())
    }

    /// Set a variable without checking its size (the values of the environment, of loops over known words).
    fn assign(&mut self, name: &str, value: String) {
        match self.vars.get_mut(name) {
            Some(var) => var.value = Some(value),
            None => {
                self.next_order += 1;
                self.vars.insert(
                    name.to_owned(),
                    Var {
                        value: Some(value),
                        exported: false,
                        order: self.next_order,
                    },
                );
            }
        }
    }

    /// Set a variable, refusing a value longer than [`Limits::word_bytes`](super::Limits::word_bytes).
    fn set_var(&mut self, name: &str, value: String, io: &mut Io<'_>) -> Result<(), Flow> {
        self.check_length(value.len(), io)?;
        self.assign(name, value);
        Ok(())
    }

    fn check_length(&self, bytes: usize, io: &mut Io<'_>) -> Result<(), Flow> {
        let limit = self.container.limits.word_bytes;
        if bytes > limit {
            self.complain(io, &format!("word longer than {limit} bytes"))?;
            return Err(Flow::Error(2));
        }
        Ok(())
    }

    fn export(&mut self, name: &str) {
        match self.vars.get_mut(name) {
            Some(var) => var.exported = true,
            None => {
                self.next_order += 1;
                self.vars.insert(
                    name.to_owned(),
                    Var {
                        value: None,
                        exported: true,
                        order: self.next_order,
                    },
                );
            }
        }
    }

    /// The exported variables, in the order they were first set: the environment commands see.
    fn environment(&self) -> Vec<(String, String)> {
        let mut exported: Vec<(&String, &Var)> = self
            .vars
            .iter()
            .filter(|(_, var)| var.exported && var.value.is_some())
            .collect();
        exported.sort_by_key(|(_, var)| var.order);
        exported
            .into_iter()
            .map(|(name, var)| (name.clone(), var.value.clone().unwrap_or_default()))
            .collect()
    }

    fn ifs(&self) -> String {
        self.var("IFS").unwrap_or(" \t\n").to_owned()
    }

    // --- scripts ---

    /// Parse and run `source` in this shell (`eval`, `.`, the script of `sh -c`).
    async fn run_source(&mut self, source: &str, io: &mut Io<'_>) -> Run {
        match syntax::parse(source, self.container.limits.depth) {
            Ok(list) => self.run_list(&list, io).await,
            Err(error) => {
                self.complain(io, &error.to_string())?;
                Err(Flow::Error(2))
            }
        }
    }

    /// The status this shell ends with after `run`, once its `EXIT` trap ran (not when a limit stopped the
    /// process).
    async fn finish(&mut self, run: Run, io: &mut Io<'_>) -> Run {
        let status = ended(run)?;
        let Some(action) = self.exit_trap.take() else {
            return Ok(status);
        };
        self.status = status;
        match self.run_source(&action, io).await {
            Err(flow @ Flow::Stop { .. }) => Err(flow),
            Err(Flow::Exit(status)) => Ok(status),
            _ => Ok(status),
        }
    }

    /// Read commands from standard input and run each as soon as it is complete, until the input ends or `exit`.
    async fn interactive(&mut self, io: &mut Io<'_>) -> Run {
        let mut pending = String::new();
        loop {
            let line = io.stdin.line().await;
            if io.stdin.take_waited() {
                self.waited();
            }
            let Some(line) = line else {
                if !pending.trim().is_empty() {
                    let error = ParseError::Incomplete("more input".into());
                    self.complain(io, &error.to_string())?;
                    return Ok(2);
                }
                return Ok(self.status);
            };
            pending.push_str(&String::from_utf8_lossy(&line));
            if let Err(error) = self.check_length(pending.len(), io) {
                pending.clear();
                self.status = error.status();
                continue;
            }
            let list = match syntax::parse(&pending, self.container.limits.depth) {
                Err(ParseError::Incomplete(_)) => continue,
                Err(error) => {
                    pending.clear();
                    self.complain(io, &error.to_string())?;
                    self.status = 2;
                    continue;
                }
                Ok(list) => list,
            };
            pending.clear();
            for and_or in &list {
                match self.run_and_or(and_or, io).await {
                    Ok(_) | Err(Flow::Break(_) | Flow::Continue(_)) => {}
                    Err(Flow::Return(status) | Flow::Error(status)) => {
                        self.status = status;
                        break;
                    }
                    Err(flow @ (Flow::Exit(_) | Flow::Stop { .. })) => return Err(flow),
                }
            }
        }
    }
}

/// The last component of a command's name: `/bin/echo` is `echo`.
fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// A status from a shell that ended: what `sh`, a subshell or a script file returns to the one that ran it.
fn ended(run: Run) -> Run {
    match run {
        Err(flow @ Flow::Stop { .. }) => Err(flow),
        Err(flow) => Ok(flow.status()),
        ok => ok,
    }
}
