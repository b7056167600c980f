//! `pods/exec` through kube-rs over HTTPS, as any client program runs a command in a pod: the simulated container
//! answers from its node's machine, and the exit status comes back as kubectl and kube-rs read it.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, AttachParams};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::common_kubelet::{ONE_WORKER as SCENARIO, Sim, container, pod, start_with};

const KERNEL: &str = "5.14.0-284.el9.x86_64";

/// A client of the HTTPS endpoint: exec needs a connection to upgrade, which the in-process client has not.
pub(crate) async fn https_client(sim: &Sim) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(sim.cluster.kubeconfig().expect("served over HTTPS"))
        .expect("a valid kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}

/// What `command` writes on stdout and the Status that ends it.
async fn exec(pods: &Api<Pod>, command: &[&str]) -> (String, String, Status) {
    let params = AttachParams::default().stderr(true);
    let mut process = pods
        .exec("app", command.iter().copied(), &params)
        .await
        .expect("exec is served");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let mut out = process.stdout().expect("stdout was asked for");
    let mut err = process.stderr().expect("stderr was asked for");
    let status = process.take_status().expect("a status");
    let (read_out, read_err) = tokio::join!(
        out.read_to_string(&mut stdout),
        err.read_to_string(&mut stderr)
    );
    read_out.expect("stdout is read");
    read_err.expect("stderr is read");
    let status = status.await.expect("the command's status");
    process.join().await.expect("the session ends cleanly");
    (stdout, stderr, status)
}

/// The first cause of a failed command's Status: where kubectl reads the exit code.
fn exit_code(status: &Status) -> (&str, &str) {
    let cause = status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|c| c.first())
        .expect("a cause");
    (
        cause.reason.as_deref().unwrap_or(""),
        cause.message.as_deref().unwrap_or(""),
    )
}

#[tokio::test]
async fn exec_answers_from_the_nodes_machine() {
    let sim = start_with(
        SCENARIO,
        EmbeddedOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .await;
    sim.create_pod(pod(
        "app",
        "worker-0",
        json!({"name": "main", "image": "quay.io/org/app:1"}),
    ))
    .await;
    sim.pod_until("app", "its container runs", |p| {
        container(p, "main").is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    })
    .await;
    // A module as the kernel module worker's effect leaves it on the machine.
    sim.world
        .machines
        .with("worker-0", |m| m.modules.insert("acme_accel".to_owned()));
    let pods: Api<Pod> = Api::namespaced(https_client(&sim).await, "default");

    let (kernel, _, status) = exec(&pods, &["uname", "-r"]).await;
    assert_eq!(kernel, format!("{KERNEL}\n"));
    assert_eq!(status.status.as_deref(), Some("Success"), "{status:?}");

    let (modules, _, _) = exec(&pods, &["lsmod"]).await;
    assert!(
        modules
            .lines()
            .any(|l| l.split_whitespace().next() == Some("acme_accel")),
        "{modules}"
    );

    let (_, _, failed) = exec(&pods, &["sh", "-c", "echo no; exit 3"]).await;
    assert_eq!(failed.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(exit_code(&failed), ("ExitCode", "3"));

    // The node's runtime socket is not in the container: its images (every namespace's) are not listed.
    let (images, refused, status) = exec(&pods, &["crictl", "images"]).await;
    assert_eq!(images, "", "an unprivileged container lists no node images");
    assert!(refused.contains("containerd.sock"), "{refused}");
    assert_eq!(exit_code(&status), ("ExitCode", "1"));

    let (_, complaint, missing) = exec(&pods, &["vi"]).await;
    assert!(complaint.contains("not simulated"), "{complaint}");
    assert_eq!(exit_code(&missing), ("ExitCode", "127"));

    // attach shows what the container writes from now on.
    let mut attached = pods
        .attach("app", &AttachParams::default().stdin(false).stderr(false))
        .await
        .expect("attach is served");
    let mut out = attached.stdout().expect("stdout was asked for");
    let server = sim.cluster.server().clone();
    let mut line = [0u8; 6];
    let read = out.read_exact(&mut line);
    tokio::pin!(read);
    // The line is written until the session has subscribed and passed it on.
    let mut writes = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        tokio::select! {
            done = &mut read => { done.expect("attach streams the line"); break; }
            _ = writes.tick() => server.logs().append("default", "app", "main", "2026-01-01T00:00:00Z", "hello"),
        }
    }
    assert_eq!(&line, b"hello\n");
    attached.abort();
    sim.stop().await;
}
