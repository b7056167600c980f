//! The kubelet as a user sees it through the API: pulls and pull policies, back-offs and their events, restart
//! policies and phases, image garbage collection, node status and registration, reboots and faults.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node};
use kmm_cluster::EmbeddedOptions;
use kmm_cluster::sim::SIM_NAMESPACE;
use kube::api::{Api, DeleteParams, ListParams, LogParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::common_kubelet::{
    Sim, container, node_condition, phase, pod, start, start_with, waiting_reason,
};

const KERNEL: &str = "5.14.0-284.el9.x86_64";

/// One or more nodes and a registry with a few images of known sizes.
fn scenario(extra: &str) -> String {
    format!(
        r#"
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 2
    labels: {{node-role.kubernetes.io/worker: ""}}
    taints: [{{key: dedicated, value: kmods, effect: NoSchedule}}]
    kernelVersion: {KERNEL}
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
    diskGiB: 1
registry:
  latency: 1s
  bandwidthMiBPerSecond: 100
  images:
    - {{name: quay.io/org/app:1, sizeMiB: 100}}
    - {{name: quay.io/org/small:1, sizeMiB: 10}}
    - {{name: quay.io/org/medium:1, sizeMiB: 50}}
    - {{name: quay.io/org/big-a:1, sizeMiB: 300}}
    - {{name: quay.io/org/big-b:1, sizeMiB: 300}}
    - {{name: quay.io/org/big-c:1, sizeMiB: 300}}
    - {{name: quay.io/org/private:1, sizeMiB: 20, pullSecret: regcred}}
{extra}
"#
    )
}

/// A container that serves until its pod is deleted.
fn server(image: &str) -> serde_json::Value {
    json!({"name": "main", "image": image})
}

/// A container that runs a command and exits.
fn job(image: &str) -> serde_json::Value {
    json!({"name": "main", "image": image, "command": ["/bin/true"]})
}

/// A pod that runs `image`'s command once.
fn job_pod(name: &str, node: &str, image: &str) -> serde_json::Value {
    let mut p = pod(name, node, job(image));
    p["spec"]["restartPolicy"] = json!("Never");
    p
}

fn running(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    container(pod, "main")
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}

fn reasons(events: &[(String, String, i32)]) -> Vec<&str> {
    events.iter().map(|(r, _, _)| r.as_str()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_missing_image_backs_off_with_the_kubelets_events() {
    let sim = start(&scenario("")).await;
    sim.create_pod(pod("missing", "worker-0", server("quay.io/org/nope:1")))
        .await;
    let p = sim
        .pod_until("missing", "ImagePullBackOff", |p| {
            waiting_reason(p).as_deref() == Some("ImagePullBackOff")
        })
        .await;
    assert_eq!(phase(&p), "Pending");
    let message = container(&p, "main")
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with("Back-off pulling image \"quay.io/org/nope:1\": ErrImagePull:")
            && message.contains("not found"),
        "{message}"
    );
    let events = sim.events_of("missing").await;
    let has = |reason: &str, text: &str| {
        events
            .iter()
            .any(|(r, m, _)| r == reason && m.contains(text))
    };
    assert!(
        has("Pulling", "Pulling image \"quay.io/org/nope:1\""),
        "{events:?}"
    );
    assert!(
        has(
            "Failed",
            "Failed to pull image \"quay.io/org/nope:1\": rpc error: code = NotFound"
        ),
        "{events:?}"
    );
    assert!(has("Failed", "Error: ErrImagePull"), "{events:?}");
    assert!(
        has("BackOff", "Back-off pulling image \"quay.io/org/nope:1\""),
        "{events:?}"
    );
    assert!(has("Failed", "Error: ImagePullBackOff"), "{events:?}");

    // The kubelet retries after its back-off: the Pulling event is counted again.
    let started = sim.world.clock.now();
    loop {
        let events = sim.events_of("missing").await;
        if events.iter().any(|(r, _, c)| r == "Pulling" && *c >= 3) {
            break;
        }
        assert!(
            sim.world.clock.now() - started < Duration::from_secs(120),
            "three pulls within 10 s + 20 s of back-off: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        sim.world.clock.now() - started >= Duration::from_secs(25),
        "the retries waited 10 s then 20 s"
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn if_not_present_uses_the_image_on_the_node_and_always_pulls_again() {
    let sim = start(&scenario("")).await;
    sim.create_pod(pod("first", "worker-0", server("quay.io/org/app:1")))
        .await;
    sim.pod_until("first", "running", running).await;
    let events = sim.events_of("first").await;
    assert!(
        events.iter().any(|(r, m, _)| r == "Pulled"
            && m.starts_with("Successfully pulled image \"quay.io/org/app:1\" in ")
            && m.ends_with(&format!("Image size: {} bytes.", 100 * 1024 * 1024))),
        "{events:?}"
    );
    assert_eq!(
        reasons(&events),
        ["Pulling", "Pulled", "Created", "Started"],
        "{events:?}"
    );

    sim.create_pod(pod("second", "worker-0", server("quay.io/org/app:1")))
        .await;
    sim.pod_until("second", "running", running).await;
    let events = sim.events_of("second").await;
    assert_eq!(
        reasons(&events),
        ["Pulled", "Created", "Started"],
        "{events:?}"
    );
    assert_eq!(
        events[0].1,
        "Container image \"quay.io/org/app:1\" already present on machine"
    );

    let mut always = server("quay.io/org/app:1");
    always["imagePullPolicy"] = json!("Always");
    sim.create_pod(pod("third", "worker-0", always)).await;
    sim.pod_until("third", "running", running).await;
    assert_eq!(
        reasons(&sim.events_of("third").await),
        ["Pulling", "Pulled", "Created", "Started"]
    );

    // The other node does not have it.
    sim.create_pod(pod("elsewhere", "worker-1", server("quay.io/org/app:1")))
        .await;
    sim.pod_until("elsewhere", "running", running).await;
    assert_eq!(reasons(&sim.events_of("elsewhere").await)[0], "Pulling");
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn never_without_the_image_is_err_image_never_pull() {
    let sim = start(&scenario("")).await;
    let mut never = server("quay.io/org/app:1");
    never["imagePullPolicy"] = json!("Never");
    sim.create_pod(pod("never", "worker-0", never)).await;
    let p = sim
        .pod_until("never", "ErrImageNeverPull", |p| {
            waiting_reason(p).as_deref() == Some("ErrImageNeverPull")
        })
        .await;
    assert_eq!(phase(&p), "Pending");
    let events = sim.events_of("never").await;
    assert!(
        events.iter().any(|(r, m, _)| r == "ErrImageNeverPull"
            && m == "Container image \"quay.io/org/app:1\" is not present with pull policy of Never"),
        "{events:?}"
    );
    assert!(!reasons(&events).contains(&"Pulling"), "{events:?}");
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_private_image_needs_its_pull_secret() {
    let sim = start(&scenario("")).await;
    sim.create_pod(pod(
        "anonymous",
        "worker-0",
        server("quay.io/org/private:1"),
    ))
    .await;
    let p = sim
        .pod_until("anonymous", "ErrImagePull or back-off", |p| {
            matches!(
                waiting_reason(p).as_deref(),
                Some("ErrImagePull" | "ImagePullBackOff")
            )
        })
        .await;
    let message = container(&p, "main")
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone())
        .unwrap_or_default();
    assert!(message.contains("401 Unauthorized"), "{message}");

    let mut with_secret = pod("authorized", "worker-0", server("quay.io/org/private:1"));
    with_secret["spec"]["imagePullSecrets"] = json!([{"name": "regcred"}]);
    sim.create_pod(with_secret).await;
    sim.pod_until("authorized", "running", running).await;
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_registry_outage_fails_pulls_until_it_ends() {
    let sim = start(&scenario(
        "faults:\n  - {kind: registryOutage, from: 0s, to: 60s}\n  - {kind: pullFailure, image: quay.io/org/small:1, nodes: [worker-1]}",
    ))
    .await;
    sim.create_pod(pod("outage", "worker-0", server("quay.io/org/app:1")))
        .await;
    let p = sim
        .pod_until("outage", "ImagePullBackOff", |p| {
            waiting_reason(p).as_deref() == Some("ImagePullBackOff")
        })
        .await;
    let message = container(&p, "main")
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone())
        .unwrap_or_default();
    assert!(message.contains("connection refused"), "{message}");
    sim.pod_until("outage", "running once the registry is back", running)
        .await;
    assert!(sim.world.clock.now() >= Duration::from_secs(60));

    sim.create_pod(pod("faulty", "worker-1", server("quay.io/org/small:1")))
        .await;
    sim.pod_until("faulty", "ImagePullBackOff", |p| {
        waiting_reason(p).as_deref() == Some("ImagePullBackOff")
    })
    .await;
    sim.create_pod(pod("fine", "worker-0", server("quay.io/org/small:1")))
        .await;
    sim.pod_until("fine", "running", running).await;
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn image_gc_evicts_unused_images_least_recently_used_first() {
    let sim = start(&scenario("")).await;
    // 1 GiB disk: big-a (in use) + big-b (unused, older) + small (unused, newer) fit under 85 %.
    sim.create_pod(pod("uses-a", "worker-0", server("quay.io/org/big-a:1")))
        .await;
    sim.pod_until("uses-a", "running", running).await;
    for (name, image) in [
        ("old-b", "quay.io/org/big-b:1"),
        ("new-small", "quay.io/org/small:1"),
    ] {
        sim.create_pod(job_pod(name, "worker-0", image)).await;
        sim.pod_until(name, "Succeeded", |p| phase(p) == "Succeeded")
            .await;
    }
    let before = sim.recorded_images("worker-0").await;
    assert_eq!(before.len(), 4, "{before:?}");

    // big-c pushes usage to ~89 %: GC must free down to 80 % (819 MiB): big-b (the oldest unused) goes, which is
    // enough; big-a is in use and the pause image is pinned.
    sim.create_pod(pod("uses-c", "worker-0", server("quay.io/org/big-c:1")))
        .await;
    sim.pod_until("uses-c", "running", running).await;
    let mut after = Vec::new();
    for _ in 0..100 {
        after = sim.recorded_images("worker-0").await;
        if !after.iter().any(|i| i.contains("big-b")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        after,
        [
            "quay.io/org/big-a:1",
            "quay.io/org/big-c:1",
            "quay.io/org/small:1",
            "registry.k8s.io/pause:3.10"
        ]
    );
    let node = sim
        .node_until("worker-0", "images without big-b", |n| {
            let images = n
                .status
                .as_ref()
                .and_then(|s| s.images.clone())
                .unwrap_or_default();
            images.len() == 4
        })
        .await;
    let names: Vec<String> = node
        .status
        .and_then(|s| s.images)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| i.names.and_then(|n| n.last().cloned()))
        .collect();
    assert!(!names.iter().any(|n| n.contains("big-b")), "{names:?}");
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn phases_follow_the_restart_policy() {
    let sim = start(&scenario("")).await;
    let failing = |name: &str, policy: &str, exit: &str| {
        let mut p = job_pod(name, "worker-0", "quay.io/org/small:1");
        p["spec"]["restartPolicy"] = json!(policy);
        p["metadata"]["annotations"] = json!({"sim.kmm-tui.io/exit-code": exit});
        p
    };
    sim.create_pod(failing("never-fails", "Never", "1")).await;
    let p = sim
        .pod_until("never-fails", "Failed", |p| phase(p) == "Failed")
        .await;
    let c = container(&p, "main").expect("a status");
    let terminated = c
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!((terminated.exit_code, c.restart_count), (1, 0));

    sim.create_pod(failing("on-failure-succeeds", "OnFailure", "0"))
        .await;
    let p = sim
        .pod_until("on-failure-succeeds", "Succeeded", |p| {
            phase(p) == "Succeeded"
        })
        .await;
    let ready = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready").cloned())
        .expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("PodCompleted"))
    );

    sim.create_pod(failing("crash-loop", "Always", "2")).await;
    let p = sim
        .pod_until("crash-loop", "CrashLoopBackOff after restarts", |p| {
            waiting_reason(p).as_deref() == Some("CrashLoopBackOff")
                && container(p, "main").is_some_and(|c| c.restart_count >= 2)
        })
        .await;
    assert_eq!(phase(&p), "Running");
    let c = container(&p, "main").expect("a status");
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("last state");
    assert_eq!(last.exit_code, 2);
    let message = c
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref()?.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with("back-off ")
            && message.contains("restarting failed container=main pod=crash-loop_default("),
        "{message}"
    );
    let events = sim.events_of("crash-loop").await;
    assert!(
        events.iter().any(|(r, m, _)| r == "BackOff"
            && m.starts_with(
                "Back-off restarting failed container main in pod crash-loop_default("
            )),
        "{events:?}"
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn init_containers_run_first_then_the_pod_is_ready() {
    let sim = start(&scenario("")).await;
    let mut p = pod("with-init", "worker-1", server("quay.io/org/app:1"));
    p["spec"]["initContainers"] = json!([
        {"name": "first", "image": "quay.io/org/small:1", "command": ["sh", "-c", "echo set up"]},
        {"name": "second", "image": "quay.io/org/medium:1", "command": ["mkdir", "-p", "/data"]}
    ]);
    sim.create_pod(p).await;
    let p = sim.pod_until("with-init", "running", running).await;
    let status = p.status.clone().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let init = status.init_container_statuses.expect("init statuses");
    for c in &init {
        let t = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .expect("terminated");
        assert_eq!(
            (t.exit_code, t.reason.as_deref()),
            (0, Some("Completed")),
            "{}",
            c.name
        );
    }
    let first_done = init[0]
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref()?.finished_at.clone());
    let second_start = init[1]
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref()?.started_at.clone());
    assert!(first_done <= second_start);
    let conditions: Vec<(String, String)> = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    for kind in ["Initialized", "ContainersReady", "Ready", "PodScheduled"] {
        assert!(
            conditions.contains(&(kind.into(), "True".into())),
            "{kind}: {conditions:?}"
        );
    }
    assert!(status.pod_ip.is_some_and(|ip| ip.starts_with("10.128.1.")));
    assert_eq!(status.host_ip.as_deref(), Some("10.0.0.3"));
    let events = sim.events_of("with-init").await;
    let started: Vec<&str> = events
        .iter()
        .filter(|(r, _, _)| r == "Started")
        .map(|(_, m, _)| m.as_str())
        .collect();
    assert_eq!(
        started,
        [
            "Started container first",
            "Started container second",
            "Started container main"
        ]
    );
    sim.stop().await;
}

/// The kubelet writes a pod's status when simulated time is about to pass, not at every step of the same moment:
/// a pod whose image is on the node reaches the API as running, then as finished — two writes, where one write per
/// step (the sandbox, the start, the exit) made three.
#[tokio::test(start_paused = true)]
async fn a_pod_status_is_written_once_per_moment() {
    let sim = start(&scenario("")).await;
    let image = "quay.io/org/small:1";
    sim.create_pod(job_pod("puller", "worker-0", image)).await;
    sim.pod_until("puller", "Succeeded", |p| phase(p) == "Succeeded")
        .await;

    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let watched = seen.clone();
    let config = watcher::Config::default().fields("metadata.name=present");
    let mut stream = Box::pin(watcher(sim.pods(), config));
    let follow = tokio::spawn(async move {
        while let Some(Ok(event)) = stream.next().await {
            if let watcher::Event::Apply(pod) = event {
                let running = container(&pod, "main")
                    .and_then(|c| c.state.as_ref())
                    .is_some_and(|s| s.running.is_some());
                let entry = (phase(&pod).to_string(), running);
                watched.lock().expect("not poisoned").push(entry);
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    sim.create_pod(job_pod("present", "worker-0", image)).await;
    sim.pod_until("present", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    follow.abort();
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(
        seen,
        [
            ("Pending".to_string(), false),
            ("Running".to_string(), true),
            ("Succeeded".to_string(), false)
        ],
        "created, then one write per moment"
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn node_status_reports_the_machine() {
    let sim = start(&scenario("kubelet: {nodeStatusMaxImages: 2}")).await;
    for (name, image) in [
        ("s", "quay.io/org/small:1"),
        ("m", "quay.io/org/medium:1"),
        ("a", "quay.io/org/app:1"),
    ] {
        sim.create_pod(job_pod(name, "worker-1", image)).await;
        sim.pod_until(name, "Succeeded", |p| phase(p) == "Succeeded")
            .await;
    }
    let node = sim
        .node_until("worker-1", "two images reported", |n| {
            n.status
                .as_ref()
                .and_then(|s| s.images.as_ref())
                .is_some_and(|i| i.first().and_then(|i| i.size_bytes) == Some(100 * 1024 * 1024))
        })
        .await;
    let status = node.status.clone().expect("status");
    let sizes: Vec<i64> = status
        .images
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.size_bytes)
        .collect();
    assert_eq!(sizes, [100 * 1024 * 1024, 50 * 1024 * 1024]);
    let info = status.node_info.expect("nodeInfo");
    assert_eq!(info.kernel_version, KERNEL);
    assert_eq!(
        info.os_image,
        "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)"
    );
    assert_eq!(info.container_runtime_version, "containerd://1.7.13");
    assert_eq!(
        (info.operating_system.as_str(), info.architecture.as_str()),
        ("linux", "amd64")
    );
    assert!(info.kubelet_version.starts_with("v1."));
    assert_eq!(info.machine_id.len(), 32);
    let record = sim.machine_record("worker-1").await.data.expect("data");
    assert_eq!(record.get("bootID"), Some(&info.boot_id));
    assert!(
        record
            .get("config.toml")
            .is_some_and(|c| c.contains("io.containerd.grpc.v1.cri"))
    );
    assert_eq!(node_condition(&node, "Ready").as_deref(), Some("True"));
    let labels = node.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kubernetes.io/hostname").map(String::as_str),
        Some("worker-1")
    );
    assert_eq!(
        labels.get("kubernetes.io/os").map(String::as_str),
        Some("linux")
    );
    assert_eq!(
        labels.get("kubernetes.io/arch").map(String::as_str),
        Some("amd64")
    );
    assert!(labels.contains_key("node-role.kubernetes.io/worker"));
    let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
    assert_eq!(taints.len(), 1);
    assert_eq!(
        (taints[0].key.as_str(), taints[0].effect.as_str()),
        ("dedicated", "NoSchedule")
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn container_logs_are_served_and_go_with_the_pod() {
    let sim = start(&scenario("")).await;
    let mut logged = job_pod("logged", "worker-0", "quay.io/org/small:1");
    logged["spec"]["containers"][0]["command"] = json!(["echo", "module", "ready"]);
    sim.create_pod(logged).await;
    sim.pod_until("logged", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    let log = sim
        .pods()
        .logs("logged", &LogParams::default())
        .await
        .expect("pods/log");
    assert!(
        log.contains("module ready"),
        "the container wrote its lines: {log:?}"
    );
    let last = sim
        .pods()
        .logs(
            "logged",
            &LogParams {
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .expect("pods/log with tailLines");
    assert_eq!(
        last.trim_end(),
        log.trim_end().lines().last().unwrap_or_default()
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn deleting_a_pod_stops_its_containers() {
    let sim = start(&scenario("")).await;
    sim.create_pod(pod("doomed", "worker-0", server("quay.io/org/app:1")))
        .await;
    sim.pod_until("doomed", "running", running).await;
    sim.pods()
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("deleted");
    for _ in 0..200 {
        if sim
            .events_of("doomed")
            .await
            .iter()
            .any(|(r, m, _)| r == "Killing" && m == "Stopping container main")
        {
            sim.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no Killing event: {:?}", sim.events_of("doomed").await);
}

#[tokio::test(start_paused = true)]
async fn a_reboot_takes_the_node_down_and_restarts_its_containers() {
    let sim = start(&scenario("")).await;
    sim.create_pod(pod("survivor", "worker-0", server("quay.io/org/app:1")))
        .await;
    sim.pod_until("survivor", "running", running).await;
    let old_boot = sim.world.machines.get("worker-0").expect("machine").boot_id;

    sim.world.machines.with("worker-0", |m| m.ready = false);
    let _ = sim.world.machine_changed.send("worker-0".into());
    sim.node_until("worker-0", "not ready", |n| {
        node_condition(n, "Ready").as_deref() == Some("False")
    })
    .await;

    sim.world.machines.with("worker-0", |m| {
        m.reboot("5.14.0-362.el9.x86_64", "RHCOS 415", None);
        m.ready = true;
    });
    let _ = sim.world.machine_changed.send("worker-0".into());
    let node = sim
        .node_until("worker-0", "ready on the new kernel", |n| {
            node_condition(n, "Ready").as_deref() == Some("True")
                && n.status
                    .as_ref()
                    .and_then(|s| s.node_info.as_ref())
                    .is_some_and(|i| i.kernel_version == "5.14.0-362.el9.x86_64")
        })
        .await;
    let boot = node
        .status
        .and_then(|s| s.node_info)
        .map(|i| i.boot_id)
        .unwrap_or_default();
    assert_ne!(boot, old_boot);

    let p = sim
        .pod_until("survivor", "restarted after the reboot", |p| {
            running(p) && container(p, "main").is_some_and(|c| c.restart_count == 1)
        })
        .await;
    let last = container(&p, "main")
        .and_then(|c| c.last_state.as_ref()?.terminated.clone())
        .expect("the container died with the reboot");
    assert_eq!(
        (last.exit_code, last.reason.as_deref()),
        (255, Some("Unknown"))
    );
    let events: Vec<Event> = Api::<Event>::namespaced(sim.client(), "default")
        .list(&ListParams::default())
        .await
        .expect("events")
        .items;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Rebooted")
                && e.involved_object.name.as_deref() == Some("worker-0"))
    );
    sim.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_node_not_ready_fault_holds_the_node_unknown_for_its_window() {
    let sim = start(&scenario(
        "faults:\n  - {kind: nodeNotReady, node: worker-1, from: 30s, to: 90s}",
    ))
    .await;
    sim.node_until("worker-1", "unknown", |n| {
        node_condition(n, "Ready").as_deref() == Some("Unknown")
    })
    .await;
    assert!(sim.world.clock.now() >= Duration::from_secs(30));
    sim.node_until("worker-1", "ready again", |n| {
        node_condition(n, "Ready").as_deref() == Some("True")
    })
    .await;
    assert!(sim.world.clock.now() >= Duration::from_secs(90));
    let other = Api::<Node>::all(sim.client())
        .get("worker-0")
        .await
        .expect("worker-0");
    assert_eq!(node_condition(&other, "Ready").as_deref(), Some("True"));
    sim.stop().await;
}

#[tokio::test]
async fn a_restarted_simulation_adopts_its_machines() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = || EmbeddedOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let text = scenario("timeScale: 1000").replace("timeScale: 10\n", "");
    let sim = start_with(&text, options()).await;
    sim.create_pod(job_pod("puller", "worker-0", "quay.io/org/medium:1"))
        .await;
    sim.pod_until("puller", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    let boot = sim.world.machines.get("worker-0").expect("machine").boot_id;
    for _ in 0..200 {
        if sim.recorded_images("worker-0").await.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let node_rv = Api::<Node>::all(sim.client())
        .get("worker-0")
        .await
        .expect("node")
        .metadata
        .resource_version;
    sim.stop().await;

    let sim: Sim = start_with(&text, options()).await;
    let machine = sim.world.machines.get("worker-0").expect("adopted machine");
    assert_eq!(machine.boot_id, boot);
    assert!(machine.images.contains("quay.io/org/medium:1"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = Api::<Node>::all(sim.client())
        .get("worker-0")
        .await
        .expect("node");
    assert_eq!(
        again.metadata.resource_version, node_rv,
        "nothing changed, nothing written"
    );
    let maps = Api::<ConfigMap>::namespaced(sim.client(), SIM_NAMESPACE)
        .list(&ListParams::default())
        .await
        .expect("records");
    // The machine's record, the registry's, and the namespace's root CA.
    assert_eq!(maps.items.len(), 3);
    sim.stop().await;
}
