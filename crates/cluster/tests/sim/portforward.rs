//! `pods/portforward` over kube-rs: the servers images run listen on their ports inside the pod, and a client's
//! forwarded connection reaches them; a port nothing listens on is refused on its error channel, and listeners go
//! with their pod.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, DeleteParams, LogParams};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::common_kubelet::{ONE_WORKER, Sim, phase, pod, start_with};
use crate::exec::https_client;

/// The one-worker world with the images of nginx, redis and busybox.
fn scenario() -> String {
    format!(
        "{ONE_WORKER}    - {{name: docker.io/library/nginx:latest, sizeMiB: 60}}\n    - {{name: docker.io/library/redis:latest, sizeMiB: 40}}\n    - {{name: docker.io/library/busybox:1.36, sizeMiB: 2}}\n"
    )
}

async fn running_pod(sim: &Sim, manifest: serde_json::Value) {
    let name = manifest["metadata"]["name"].as_str().unwrap().to_owned();
    sim.create_pod(manifest).await;
    sim.pod_until(&name, "it runs", |p| phase(p) == "Running")
        .await;
}

/// Read from `stream` until what was read contains `end`.
async fn read_until(stream: &mut (impl AsyncRead + Unpin), end: &str) -> String {
    let mut read = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&read).contains(end) {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .expect("the forwarded port answers")
            .unwrap();
        assert!(n > 0, "the connection ended before {end:?}: {read:?}");
        read.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(read).unwrap()
}

#[tokio::test]
async fn forwarded_ports_reach_the_servers_listening_in_the_pod() {
    let sim: Sim = start_with(
        &scenario(),
        EmbeddedOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(https_client(&sim).await, "default");

    // nginx's welcome page over a forwarded port 80; the request closes the connection, which ends the session.
    running_pod(
        &sim,
        pod(
            "web",
            "worker-0",
            json!({"name": "nginx", "image": "nginx"}),
        ),
    )
    .await;
    let mut forward = pods
        .portforward("web", &[80])
        .await
        .expect("portforward is served");
    let mut port = forward.take_stream(80).expect("port 80 was asked for");
    port.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(20), port.read_to_string(&mut answer))
        .await
        .expect("the answer ends")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("<h1>Welcome to nginx!</h1>"), "{answer}");
    drop(port);
    forward.abort();

    // Two ports in one session, to two containers of one pod, which share its network.
    running_pod(
        &sim,
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "both", "namespace": "default"},
            "spec": {"nodeName": "worker-0", "containers": [
                {"name": "nginx", "image": "nginx"},
                {"name": "redis", "image": "redis"},
            ]}
        }),
    )
    .await;
    let mut forward = pods.portforward("both", &[6379, 80]).await.unwrap();
    let mut redis = forward.take_stream(6379).unwrap();
    let mut web = forward.take_stream(80).unwrap();
    redis.write_all(b"PING\r\n").await.unwrap();
    assert_eq!(read_until(&mut redis, "\r\n").await, "+PONG\r\n");
    web.write_all(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(
        read_until(&mut web, "</html>")
            .await
            .starts_with("HTTP/1.1 404 Not Found\r\n")
    );
    web.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(
        read_until(&mut web, "</html>")
            .await
            .contains("Welcome to nginx!"),
        "the connection is kept alive"
    );
    forward.abort();

    // A port nothing listens on: the kubelet's refusal on its error channel.
    let mut forward = pods.portforward("web", &[1236]).await.unwrap();
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        forward.take_error(1236).expect("its error channel"),
    )
    .await
    .expect("the refusal comes")
    .expect("an error message");
    assert!(
        error.starts_with("error forwarding port 1236 to pod "),
        "{error}"
    );
    assert!(error.ends_with("connection refused"), "{error}");
    forward.abort();

    // `nc -l -p 1234`: what is sent through the forward is what it prints, so the container's log.
    running_pod(
        &sim,
        pod(
            "listener",
            "worker-0",
            json!({"name": "main", "image": "busybox:1.36", "command": ["nc", "-l", "-p", "1234"]}),
        ),
    )
    .await;
    let mut forward = pods.portforward("listener", &[1234]).await.unwrap();
    let mut port = forward.take_stream(1234).unwrap();
    port.write_all(b"sent through the forward\n").await.unwrap();
    let mut log = String::new();
    for _ in 0..400 {
        log = pods.logs("listener", &LogParams::default()).await.unwrap();
        if !log.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(log, "sent through the forward\n");
    forward.abort();

    // A pod that does not run has no port to forward to.
    sim.create_pod(pod(
        "nowhere",
        "no-such-node",
        json!({"name": "nginx", "image": "nginx"}),
    ))
    .await;
    let refused = pods
        .portforward("nowhere", &[80])
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("is not running"), "{refused}");

    // Listeners go with their pod.
    assert!(
        sim.world
            .containers
            .network()
            .connect("default", "web", 80)
            .is_some()
    );
    pods.delete("web", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    for _ in 0..400 {
        if sim
            .world
            .containers
            .network()
            .connect("default", "web", 80)
            .is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        sim.world
            .containers
            .network()
            .connect("default", "web", 80)
            .is_none(),
        "nginx stopped listening with its pod"
    );
    sim.stop().await;
}
