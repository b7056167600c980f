//! Runs a process: its argument vector, and the scripts of `sh -c` and of an interactive `sh`.

use super::io::{Budget, Cx, Input, Output};
use super::{ContainerEnv, Stdio, Stream, commands};

/// Run `argv` as a process of `container`; returns its exit status.
pub async fn run_process(container: &ContainerEnv, argv: &[String], stdio: Stdio) -> i32 {
    let budget = Budget::new(container.limits.output_bytes);
    let mut stdin = stdio.stdin.map_or_else(Input::null, Input::live);
    let mut stdout = Output::stdio(Stream::Stdout, stdio.sink.clone(), budget.clone());
    let mut stderr = Output::stdio(Stream::Stderr, stdio.sink, budget);
    let mut cx = Cx {
        container,
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        cwd: "/",
        env: &container.env,
    };
    let Some((name, args)) = argv.split_first() else {
        return 0;
    };
    commands::run(&mut cx, name, args).await.unwrap_or(127)
}
