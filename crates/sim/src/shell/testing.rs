//! Running processes in a test container: a fresh container on a simulated node, and what a process wrote.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::{ContainerEnv, Files, Limits, Sink, Stdio, Stream};
use crate::clock::SimClock;
use crate::machine::Machines;
use crate::network::PodPorts;
use kmm_apiserver::apiserver::streams::HostMounts;

/// What a process wrote, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ran {
    pub stdout: String,
    pub stderr: String,
    pub status: i32,
}

/// A container of the pod `test-pod` on a node no machine backs, with `limits`.
pub(super) fn container_with(limits: Limits) -> ContainerEnv {
    ContainerEnv {
        node: "worker-0".into(),
        machines: Machines::default(),
        mounts: HostMounts::default(),
        files: Files::new("test-pod", limits.file_bytes),
        env: vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOSTNAME".into(), "test-pod".into()),
        ],
        hostname: "test-pod".into(),
        clock: SimClock::new(1.0),
        started: Duration::ZERO,
        limits,
        ports: PodPorts::default(),
    }
}

/// A container with the default limits.
pub(super) fn container() -> ContainerEnv {
    container_with(Limits::default())
}

/// Run `argv` in `container` with `stdin` (None: `/dev/null`; the chunks are all sent, then input ends).
pub(super) async fn run_in(
    container: &ContainerEnv,
    argv: &[&str],
    stdin: Option<Vec<&[u8]>>,
) -> Ran {
    let written: Arc<Mutex<(Vec<u8>, Vec<u8>)>> = Arc::default();
    let kept = written.clone();
    let sink: Sink = Arc::new(move |stream, bytes| {
        let mut kept = kept.lock().unwrap();
        match stream {
            Stream::Stdout => kept.0.extend_from_slice(bytes),
            Stream::Stderr => kept.1.extend_from_slice(bytes),
        }
    });
    let stdin = stdin.map(|chunks| {
        let (tx, rx) = mpsc::channel(chunks.len().max(1));
        for chunk in chunks {
            tx.try_send(chunk.to_vec()).unwrap();
        }
        rx
    });
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let status = super::run(container, &argv, Stdio { stdin, sink }).await;
    let written = written.lock().unwrap();
    Ran {
        stdout: String::from_utf8_lossy(&written.0).into_owned(),
        stderr: String::from_utf8_lossy(&written.1).into_owned(),
        status,
    }
}

/// Run the script `script` with `sh -c` in a fresh container.
pub(super) async fn sh(script: &str) -> Ran {
    run_in(&container(), &["sh", "-c", script], None).await
}

/// One case of a command table: argv, stdout, stderr, exit status.
pub(super) type Case<'a> = (&'a [&'a str], &'a str, &'a str, i32);

/// One case of a command table that reads input: argv, stdin, stdout, stderr, exit status.
pub(super) type CaseWithInput<'a> = (&'a [&'a str], &'a str, &'a str, &'a str, i32);

/// Run each case in `container` (no input) and check what it wrote and how it ended.
pub(super) async fn expect(container: &ContainerEnv, cases: &[Case<'_>]) {
    for (argv, stdout, stderr, status) in cases {
        let ran = run_in(container, argv, None).await;
        assert_eq!(
            (ran.stdout.as_str(), ran.stderr.as_str(), ran.status),
            (*stdout, *stderr, *status),
            "{argv:?}"
        );
    }
}

/// Run each case in `container` with its input and check what it wrote and how it ended.
pub(super) async fn expect_with_input(container: &ContainerEnv, cases: &[CaseWithInput<'_>]) {
    for (argv, stdin, stdout, stderr, status) in cases {
        let ran = run_in(container, argv, Some(vec![stdin.as_bytes()])).await;
        assert_eq!(
            (ran.stdout.as_str(), ran.stderr.as_str(), ran.status),
            (*stdout, *stderr, *status),
            "{argv:?}"
        );
    }
}
