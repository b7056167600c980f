//! Faults injected at run time through the ConfigMap `kmm-tui-sim/faults`, and the registry record that lets a
//! restarted simulation keep the images its builds pushed.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod};
use kmm_cluster::sim::SIM_NAMESPACE;
use kmm_cluster::sim::inject::FAULTS_CONFIG_MAP;
use kmm_cluster::sim::registry_record;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchParams};
use serde_json::{Value, json};

const SCENARIO: &str = r#"
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 2
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: RHCOS 414
registry:
  images:
    - {name: quay.io/org/app:1, sizeMiB: 10}
"#;

async fn start(options: EmbeddedOptions) -> EmbeddedCluster {
    let scenario = Scenario::parse(SCENARIO, "inject.yaml", None).expect("a valid scenario");
    EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..options
    })
    .await
    .expect("the embedded cluster starts")
}

fn faults(client: &kube::Client) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), SIM_NAMESPACE)
}

/// Set (`Some`) or remove (`None`) the entry `key` of the faults ConfigMap.
async fn inject(client: &kube::Client, key: &str, fault: Option<&str>) {
    let written = match fault {
        Some(fault) => {
            let config_map = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": FAULTS_CONFIG_MAP, "namespace": SIM_NAMESPACE},
                "data": {key: fault},
            });
            faults(client)
                .patch(
                    FAULTS_CONFIG_MAP,
                    &PatchParams::apply("test"),
                    &Patch::Apply(&config_map),
                )
                .await
        }
        None => {
            faults(client)
                .patch(
                    FAULTS_CONFIG_MAP,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {key: null}})),
                )
                .await
        }
    };
    written.expect("the faults ConfigMap is written");
}

/// Poll `check` every 100 ms (tokio time) for up to ten minutes.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..6000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {what}");
}

fn ready(node: &Node) -> Option<bool> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    Some(ready.status == "True")
}

async fn node(client: &kube::Client, name: &str) -> Node {
    Api::<Node>::all(client.clone())
        .get(name)
        .await
        .expect("the node")
}

fn boot_id(node: &Node) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.boot_id.clone())
        .unwrap_or_default()
}

fn pull_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "worker-0",
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": "quay.io/org/app:1", "command": ["true"]}]
        }
    }))
    .expect("a pod")
}

/// The waiting reason of the pod's container, if it waits.
async fn waiting_reason(client: &kube::Client, name: &str) -> Option<String> {
    let pod = Api::<Pod>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .ok()?;
    let statuses = pod.status?.container_statuses?;
    statuses
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

async fn phase(client: &kube::Client, name: &str) -> Option<String> {
    Api::<Pod>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .ok()?
        .status?
        .phase
}

#[tokio::test(start_paused = true)]
async fn windows_hold_until_their_entry_goes_and_instant_faults_happen_once() {
    let cluster = start(EmbeddedOptions::default()).await;
    let client = cluster.client();

    inject(
        &client,
        "worker-0-down",
        Some("{kind: nodeNotReady, node: worker-0}"),
    )
    .await;
    until("worker-0 NotReady", || async {
        ready(&node(&client, "worker-0").await) == Some(false)
    })
    .await;
    inject(&client, "worker-0-down", None).await;
    until("worker-0 Ready again", || async {
        ready(&node(&client, "worker-0").await) == Some(true)
    })
    .await;

    inject(&client, "outage", Some("{kind: registryOutage}")).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pull_pod("puller"))
        .await
        .expect("the pod is created");
    until("the pull fails during the outage", || async {
        matches!(
            waiting_reason(&client, "puller").await.as_deref(),
            Some("ErrImagePull" | "ImagePullBackOff")
        )
    })
    .await;
    inject(&client, "outage", None).await;
    until("the pull succeeds once the outage is over", || async {
        phase(&client, "puller").await.as_deref() == Some("Succeeded")
    })
    .await;

    let before = boot_id(&node(&client, "worker-1").await);
    inject(&client, "crash", Some("{kind: reboot, node: worker-1}")).await;
    until("worker-1 down", || async {
        ready(&node(&client, "worker-1").await) == Some(false)
    })
    .await;
    until("worker-1 up on a new boot", || async {
        let node = node(&client, "worker-1").await;
        ready(&node) == Some(true) && boot_id(&node) != before
    })
    .await;
    until("the fired entry is removed", || async {
        let data = faults(&client)
            .get(FAULTS_CONFIG_MAP)
            .await
            .ok()
            .and_then(|c| c.data);
        data.is_none_or(|d| !d.contains_key("crash"))
    })
    .await;
    let rebooted = boot_id(&node(&client, "worker-1").await);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        boot_id(&node(&client, "worker-1").await),
        rebooted,
        "one reboot, not two"
    );

    inject(&client, "typo", Some("{kind: reboot, node: worker-7}")).await;
    until("the entry is rejected with an Event", || async {
        let events: Api<Event> = Api::namespaced(client.clone(), SIM_NAMESPACE);
        events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("FaultRejected")
                    && e.message.as_deref().is_some_and(|m| m.contains("worker-7"))
            })
    })
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn close_watches_ends_every_open_watch() {
    let cluster = start(EmbeddedOptions::default()).await;
    let client = cluster.client();
    let nodes: Api<Node> = Api::all(client.clone());
    let version = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let mut watch = nodes
        .watch(&WatchParams::default().timeout(290), &version)
        .await
        .expect("a watch")
        .boxed();
    inject(&client, "cut", Some("{kind: closeWatches}")).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while watch.next().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the watch is still open");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_restarted_simulation_keeps_the_images_pushed_to_its_registry() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = || EmbeddedOptions {
        state_dir: Some(dir.path().to_path_buf()),
        ..EmbeddedOptions::default()
    };
    let cluster = start(options()).await;
    let world = cluster.simulation().expect("a simulation").world().clone();
    let built = format!("sha256:{}", "b".repeat(64));
    world.registry.push("quay.io/org/built:1", 1024, &built);
    world.registry.remove("quay.io/org/app:1");
    registry_record::persist(&world).await;
    cluster.shutdown().await;

    let cluster = start(options()).await;
    let registry = &cluster.simulation().expect("a simulation").world().registry;
    assert!(registry.exists("quay.io/org/built:1"), "the pushed image");
    assert_eq!(
        registry.digest("quay.io/org/built:1"),
        Some(built),
        "at the digest it was pushed with"
    );
    assert!(!registry.exists("quay.io/org/app:1"), "the removed image");
    let record: Value = serde_json::to_value(
        faults(&cluster.client())
            .get(registry_record::RECORD)
            .await
            .expect("the record"),
    )
    .expect("JSON");
    assert!(record.pointer("/data/changes").is_some(), "{record}");
    cluster.shutdown().await;
}
