//! Image references as the kubelet and containerd read them: short names pull the fully qualified image the
//! registry holds, the container status names the image as the runtime does, and an image that is no reference
//! never pulls.

use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::common_kubelet::{container, phase, pod, start, waiting_reason};

const SCENARIO: &str = r#"
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 1
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
registry:
  latency: 1s
  images:
    - {name: docker.io/library/busybox:1.36, sizeMiB: 2}
"#;

#[tokio::test(start_paused = true)]
async fn a_short_name_pulls_the_fully_qualified_image() {
    let sim = start(SCENARIO).await;
    sim.create_pod(pod(
        "short",
        "worker-0",
        json!({"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}),
    ))
    .await;
    let p = sim
        .pod_until("short", "running", |p| {
            container(p, "main")
                .and_then(|c| c.state.as_ref())
                .is_some_and(|s| s.running.is_some())
        })
        .await;
    let status = container(&p, "main").expect("the container has a status");
    assert_eq!(status.image, "docker.io/library/busybox:1.36");
    assert!(
        status
            .image_id
            .starts_with("docker.io/library/busybox@sha256:"),
        "{}",
        status.image_id
    );
    let events = sim.events_of("short").await;
    assert!(
        events.iter().any(|(reason, message, _)| reason == "Pulling"
            && message == "Pulling image \"busybox:1.36\""),
        "the kubelet's events name the image as written: {events:?}"
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_image_that_is_no_reference_waits_in_invalid_image_name() {
    let sim = start(SCENARIO).await;
    let image = "not a valid image!!";
    sim.create_pod(pod(
        "bad",
        "worker-0",
        json!({"name": "main", "image": image}),
    ))
    .await;
    let p = sim
        .pod_until("bad", "InvalidImageName", |p| {
            waiting_reason(p).as_deref() == Some("InvalidImageName")
        })
        .await;
    let expected = format!(
        "Failed to apply default image tag {image:?}: couldn't parse image reference {image:?}: invalid reference format"
    );
    let waiting = container(&p, "main")
        .and_then(|c| c.state.as_ref()?.waiting.clone())
        .expect("the container waits");
    assert_eq!(waiting.message.as_deref(), Some(expected.as_str()));
    assert_eq!(phase(&p), "Pending");

    let events: Vec<Event> = Api::<Event>::namespaced(sim.client(), "default")
        .list(&ListParams::default())
        .await
        .expect("events list")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("bad"))
        .collect();
    assert!(
        events.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.reason.as_deref() == Some("InspectFailed")
            && e.message.as_deref() == Some(expected.as_str())),
        "{events:?}"
    );

    // A minute later nothing has changed: no pull was ever tried.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let p = sim.pods().get("bad").await.expect("the pod exists");
    assert_eq!(waiting_reason(&p).as_deref(), Some("InvalidImageName"));
    assert_eq!(phase(&p), "Pending");
    let events = sim.events_of("bad").await;
    assert!(
        events.iter().all(|(reason, _, _)| reason != "Pulling"),
        "{events:?}"
    );
    sim.stop().await;
}
