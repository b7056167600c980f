//! Containers run their commands: a script's loops, sleeps (simulated time), output and exit status become the
//! container's log and state, and exec and attach reach the very container over kube-rs, standard input included.

use k8s_openapi::api::core::v1::Pod;
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, AttachParams, LogParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common_kubelet::{ONE_WORKER, Sim, container, phase, pod, start_with};
use crate::exec::https_client;

/// The one-worker world with the short image names clients use, and their images' defaults.
fn scenario() -> String {
    format!(
        "{ONE_WORKER}    - {{name: docker.io/library/busybox:1.36, sizeMiB: 2}}\n    - {{name: docker.io/library/alpine:latest, sizeMiB: 4}}\n"
    )
}

/// A pod on `worker-0` that never restarts, with one container.
fn run_once(name: &str, container: Value) -> Value {
    let mut manifest = pod(name, "worker-0", container);
    manifest["spec"]["restartPolicy"] = json!("Never");
    manifest
}

/// The exit code of the pod's container `main` once it has terminated.
fn exit_code(pod: &Pod) -> Option<i32> {
    let state = container(pod, "main")?.state.as_ref()?;
    Some(state.terminated.as_ref()?.exit_code)
}

fn running(pod: &Pod) -> bool {
    container(pod, "main").is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// Everything `command` writes on stdout when it is given `input` on stdin, and its exit code.
async fn exec_with_input(
    pods: &Api<Pod>,
    pod: &str,
    command: &[&str],
    input: &[u8],
) -> (Vec<u8>, i32) {
    let params = AttachParams::default().stdin(true).stderr(false);
    let mut process = pods
        .exec(pod, command.iter().copied(), &params)
        .await
        .expect("exec is served");
    let mut stdin = process.stdin().expect("stdin was asked for");
    let mut stdout = process.stdout().expect("stdout was asked for");
    let status = process.take_status().expect("a status");
    stdin.write_all(input).await.expect("input is sent");
    // The end of input, as v5 of the protocol says it (a closed channel).
    stdin.shutdown().await.expect("input is closed");
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).await.expect("stdout is read");
    let status = status.await.expect("a status");
    let code = match status.status.as_deref() {
        Some("Success") => 0,
        _ => status
            .details
            .and_then(|d| d.causes)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.message)
            .and_then(|m| m.parse().ok())
            .unwrap_or(-1),
    };
    (out, code)
}

#[tokio::test]
async fn containers_run_their_commands_and_clients_reach_them() {
    let sim: Sim = start_with(
        &scenario(),
        EmbeddedOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(https_client(&sim).await, "default");

    // A script's loop, its sleeps and its exit status; its output on both streams is the container's log.
    let mut script = run_once(
        "script",
        json!({"name": "main", "image": "busybox:1.36", "command": ["sh", "-c",
            "for i in $(seq 1 3); do echo \"tick $i of $POD\"; sleep 2; done; echo done >&2; exit 3"],
            "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}),
    );
    script["metadata"]["labels"] = json!({"app": "script"});
    sim.create_pod(script).await;
    let ended = sim
        .pod_until("script", "its script exits", |p| exit_code(p).is_some())
        .await;
    assert_eq!(exit_code(&ended), Some(3));
    assert_eq!(phase(&ended), "Failed");
    let log = sim
        .pods()
        .logs("script", &LogParams::default())
        .await
        .unwrap();
    assert_eq!(
        log,
        "tick 1 of script\ntick 2 of script\ntick 3 of script\ndone\n"
    );

    // An image's default command: alpine's `sh` reads no input and exits at once, successfully.
    sim.create_pod(run_once(
        "defaults",
        json!({"name": "main", "image": "alpine"}),
    ))
    .await;
    let done = sim
        .pod_until("defaults", "alpine's shell exits", |p| {
            exit_code(p).is_some()
        })
        .await;
    assert_eq!((exit_code(&done), phase(&done)), (Some(0), "Succeeded"));

    // A container that waits forever costs nothing, and exec runs scripts, interactive shells and tar in it.
    sim.create_pod(pod(
        "idle",
        "worker-0",
        json!({"name": "main", "image": "alpine", "command": ["tail", "-f", "/dev/null"]}),
    ))
    .await;
    sim.pod_until("idle", "its container runs", running).await;
    let (out, code) = exec_with_input(
        &pods,
        "idle",
        &["sh"],
        b"echo test string 1\nfor i in 1 2; do echo \"n $i\"; done\nexit 4\n",
    )
    .await;
    assert_eq!(
        (String::from_utf8_lossy(&out).as_ref(), code),
        ("test string 1\nn 1\nn 2\n", 4)
    );

    // kubectl cp's way in and out: a tar on stdin extracted under a directory, then archived again.
    let archive = {
        let mut builder = tar::Builder::new(Vec::new());
        let data = b"data for pod";
        let mut header = tar::Header::new_gnu();
        header.set_path("foo.txt").unwrap();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, &data[..]).unwrap();
        builder.into_inner().unwrap()
    };
    let (_, code) = exec_with_input(&pods, "idle", &["tar", "xf", "-", "-C", "/"], &archive).await;
    assert_eq!(code, 0);
    let (content, _) = exec_with_input(&pods, "idle", &["cat", "/foo.txt"], b"").await;
    assert_eq!(content, b"data for pod");
    let (copied, code) = exec_with_input(
        &pods,
        "idle",
        &["tar", "cf", "-", "-C", "/", "foo.txt"],
        b"",
    )
    .await;
    assert_eq!(code, 0);
    let mut entries = tar::Archive::new(&copied[..]);
    let mut entry = entries
        .entries()
        .unwrap()
        .next()
        .expect("one entry")
        .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
    assert_eq!(text, "data for pod");

    // attach reaches the main process's standard input when the spec keeps one open.
    sim.create_pod(pod(
        "shell",
        "worker-0",
        json!({"name": "main", "image": "busybox:1.36", "stdin": true, "command": ["sh"]}),
    ))
    .await;
    sim.pod_until("shell", "its shell runs", running).await;
    let mut attached = pods
        .attach("shell", &AttachParams::default().stdin(true).stderr(false))
        .await
        .expect("attach is served");
    let mut stdin = attached.stdin().expect("stdin was asked for");
    let mut stdout = attached.stdout().expect("stdout was asked for");
    stdin
        .write_all(b"echo attached to $HOSTNAME\n")
        .await
        .unwrap();
    let mut line = vec![0u8; "attached to shell\n".len()];
    stdout
        .read_exact(&mut line)
        .await
        .expect("the shell answers");
    assert_eq!(line, b"attached to shell\n");
    attached.abort();
    sim.stop().await;
}
