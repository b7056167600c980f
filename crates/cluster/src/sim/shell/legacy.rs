//! The fixed command set exec ran before the shell of [`super::interp`]: kept until every caller runs processes.
//!
//! The shell of a simulated container: `kubectl exec` into a pod runs a command here, answered from the machine of
//! the pod's node — its kernel, loaded modules, containerd configuration, shims and images — so what the engine did
//! to a node can be looked at as on a real one.
//!
//! Commands are words, or `sh -c` (or `bash -c`) of a script of such commands joined by `;`, `&&` and `||`, with
//! single and double quotes. The commands are those of [`commands`]; any other answers on standard error that it is
//! not simulated, with status 127 as a shell's "command not found".

mod commands;
mod words;

use crate::apiserver::streams::{ContainerRuntime, ExecOutput, HostMounts};

use crate::sim::machine::{Machine, Machines};

impl ContainerRuntime for Machines {
    fn exec(&self, node: &str, mounts: &HostMounts, command: &[String]) -> Option<ExecOutput> {
        let machine = self.get(node)?;
        Some(run(&machine, mounts, command))
    }
}

/// A container as its commands see it: the machine of its node, and what of the node's files it mounts.
pub struct Container<'a> {
    /// The machine of the container's node.
    pub machine: &'a Machine,
    /// The node's paths the container reaches, and where.
    pub mounts: &'a HostMounts,
}

/// Run `command` (an argument vector, as exec passes it) in a container on `machine` with `mounts`.
pub fn run(machine: &Machine, mounts: &HostMounts, command: &[String]) -> ExecOutput {
    let container = Container { machine, mounts };
    let mut output = ExecOutput {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
    };
    run_words(&container, command, &mut output);
    output
}

/// Whether a script ended by `exit`, which stops the rest of it.
#[derive(PartialEq)]
enum Flow {
    Next,
    Exit,
}

fn run_words(container: &Container<'_>, argv: &[String], output: &mut ExecOutput) -> Flow {
    let Some(program) = argv.first() else {
        return Flow::Next;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    match (name, &argv[1..]) {
        ("sh" | "bash", [flag, script, ..]) if flag == "-c" => {
            // `exit` ends the inner shell only.
            run_script(container, script, output);
            Flow::Next
        }
        ("exit", args) => {
            output.exit_code = match args.first().map(|a| a.parse::<i32>()) {
                None => output.exit_code,
                Some(Ok(code)) => code & 0xff,
                Some(Err(_)) => {
                    output
                        .stderr
                        .push_str(&format!("sh: exit: Illegal number: {}\n", args[0]));
                    2
                }
            };
            Flow::Exit
        }
        (name, args) => {
            output.exit_code = commands::run(container, name, args, output);
            Flow::Next
        }
    }
}

fn run_script(container: &Container<'_>, script: &str, output: &mut ExecOutput) -> Flow {
    let parsed = match words::parse(script) {
        Ok(parsed) => parsed,
        Err(why) => {
            output.stderr.push_str(&format!("sh: {why}\n"));
            output.exit_code = 2;
            return Flow::Next;
        }
    };
    for (condition, argv) in parsed {
        let skip = match condition {
            words::When::Always => false,
            words::When::Succeeded => output.exit_code != 0,
            words::When::Failed => output.exit_code == 0,
        };
        if !skip && run_words(container, &argv, output) == Flow::Exit {
            return Flow::Exit;
        }
    }
    Flow::Next
}

#[cfg(test)]
mod tests;
