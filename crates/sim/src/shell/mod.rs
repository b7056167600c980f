//! The processes of simulated containers: what a container's command, an `exec` into it and an interactive shell
//! attached to it run. A small POSIX shell ([`syntax`], [`interp`]) runs the commands of [`commands`] in the
//! container's own files ([`fs`]), with the node's files and runtime only through its `hostPath` mounts, in
//! simulated time: `sleep` waits on the simulation's clock, so a `while true; do date; sleep 5; done` costs nothing
//! between its iterations.
//!
//! Everything stays inside the simulation: no host file, process or network is ever touched. A command that is not
//! simulated says so (`<command>: not simulated`, status 127) rather than answering wrongly, and every resource a
//! script can grow — steps without waiting, output, files, nesting — is bounded by [`Limits`].

mod commands;
mod fs;
mod interp;
mod io;
mod syntax;
#[cfg(test)]
mod testing;

use std::time::Duration;

use tokio::sync::mpsc;

use super::clock::SimClock;
use super::machine::Machines;
use super::network::PodPorts;
use kmm_apiserver::apiserver::streams::HostMounts;

pub(crate) use fs::Files;
pub(crate) use io::{Sink, Stream};

/// The bounds every process of a simulated container is held to, so that no script, however hostile, costs the
/// simulation more than a known amount of memory or time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Commands and loop iterations a process may run without waiting (on `sleep` or input) before it is stopped.
    pub steps_without_wait: u64,
    /// Bytes a process may write on its standard output and error, together.
    pub output_bytes: u64,
    /// Bytes the container's own files may hold, together.
    pub file_bytes: u64,
    /// How deep functions, subshells, substitutions and nested `sh` may nest.
    pub depth: usize,
    /// Longest word (after expansion) or variable value, in bytes.
    pub word_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            steps_without_wait: 100_000,
            output_bytes: 64 << 20,
            file_bytes: 64 << 20,
            depth: 64,
            word_bytes: 1 << 20,
        }
    }
}

/// A running container as its processes see it. Cloned into every process it runs (its main process and each
/// exec); the clones share the container's files.
#[derive(Clone)]
pub struct ContainerEnv {
    /// The node it runs on.
    pub node: String,
    /// The machines, read afresh by each command that looks at the node (`uname`, `lsmod`, `crictl`).
    pub machines: Machines,
    /// The node's paths the container reaches, and where.
    pub mounts: HostMounts,
    /// The container's own files, shared by all its processes.
    pub files: Files,
    /// The environment its processes start with (the container spec's `env`, already resolved), in order.
    pub env: Vec<(String, String)>,
    /// Its host name: the pod's name.
    pub hostname: String,
    /// The simulation's clock: `sleep` and `date` read it.
    pub clock: SimClock,
    /// When the container started, in simulated time (for `uptime`).
    pub started: Duration,
    /// What its processes may cost.
    pub limits: Limits,
    /// The ports its pod listens on, shared with the pod's other containers.
    pub ports: PodPorts,
}

/// A process's standard streams.
pub(crate) struct Stdio {
    /// Standard input, chunk by chunk as it arrives; the channel closing is the end of input. None reads as
    /// `/dev/null`.
    pub stdin: Option<mpsc::Receiver<Vec<u8>>>,
    /// Where standard output and error go, as they are written.
    pub sink: Sink,
}

/// Run `argv` (as a container's command or an exec passes it) as a process of `container` until it exits; returns
/// its exit status. Dropping the future kills the process.
pub(crate) async fn run(container: &ContainerEnv, argv: &[String], stdio: Stdio) -> i32 {
    interp::run_process(container, argv, stdio).await
}
