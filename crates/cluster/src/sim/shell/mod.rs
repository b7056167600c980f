//! The shell of a simulated container: `kubectl exec` into a pod runs a command here, answered from the machine of
//! the pod's node — its kernel, loaded modules, containerd configuration, shims and images — so what the engine did
//! to a node can be looked at as on a real one.
//!
//! Commands are words, or `sh -c` (or `bash -c`) of a script of such commands joined by `;`, `&&` and `||`, with
//! single and double quotes. The commands are those of [`commands`]; any other answers on standard error that it is
//! not simulated, with status 127 as a shell's "command not found".

mod commands;
mod words;

use crate::apiserver::streams::{ContainerRuntime, ExecOutput};

use super::machine::{Machine, Machines};

impl ContainerRuntime for Machines {
    fn exec(&self, node: &str, command: &[String]) -> Option<ExecOutput> {
        let machine = self.get(node)?;
        Some(run(&machine, command))
    }
}

/// Run `command` (an argument vector, as exec passes it) on `machine`.
pub fn run(machine: &Machine, command: &[String]) -> ExecOutput {
    let mut output = ExecOutput {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
    };
    run_words(machine, command, &mut output);
    output
}

/// Whether a script ended by `exit`, which stops the rest of it.
#[derive(PartialEq)]
enum Flow {
    Next,
    Exit,
}

fn run_words(machine: &Machine, argv: &[String], output: &mut ExecOutput) -> Flow {
    let Some(program) = argv.first() else {
        return Flow::Next;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    match (name, &argv[1..]) {
        ("sh" | "bash", [flag, script, ..]) if flag == "-c" => {
            // `exit` ends the inner shell only.
            run_script(machine, script, output);
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
            output.exit_code = commands::run(machine, name, args, output);
            Flow::Next
        }
    }
}

fn run_script(machine: &Machine, script: &str, output: &mut ExecOutput) -> Flow {
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
        if !skip && run_words(machine, &argv, output) == Flow::Exit {
            return Flow::Exit;
        }
    }
    Flow::Next
}

#[cfg(test)]
mod tests;
