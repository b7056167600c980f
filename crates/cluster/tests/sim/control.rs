//! The simulated control plane: the scheduler binds pods as kube-scheduler does, and the Machine Config Operator
//! rolls pools onto a new OS image one node at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kmm_api::day0::node_update;
use kmm_api::day0::{ClusterVersion, MachineConfig, MachineConfigPool};
use kmm_cluster::sim::{mco, scheduler};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use crate::common_control::{Sim, eventually, wait_for};

const OS_414: (&str, &str, &str) = (
    "5.14.0-284.el9.x86_64",
    "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)",
    "quay.io/openshift/rhcos:414",
);
const OS_415: (&str, &str, &str) = (
    "5.14.0-362.el9.x86_64",
    "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)",
    "quay.io/openshift/rhcos:415",
);

/// A scenario whose OS images the Machine Config Operator can boot; nodes are added by each test.
fn scenario(seed: u64) -> String {
    format!(
        r#"
seed: {seed}
timeScale: 10
osImages:
  - {{url: "{}", kernelVersion: "{}", osImage: "{}", release: 4.14.0}}
  - {{url: "{}", kernelVersion: "{}", osImage: "{}", release: 4.15.0}}
"#,
        OS_414.2, OS_414.0, OS_414.1, OS_415.2, OS_415.0, OS_415.1
    )
}

fn worker() -> Value {
    json!({"node-role.kubernetes.io/worker": ""})
}

async fn create_pod(client: &kube::Client, name: &str, spec: Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "registry.example/app:1"}]);
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec,
    }))
    .expect("a pod");
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created")
}

async fn get_pod(client: &kube::Client, name: &str) -> Pod {
    Api::<Pod>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .expect("the pod exists")
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone())
}

fn scheduled_condition(pod: &Pod) -> Option<(String, String, String)> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

/// Messages of the events with `reason` about the object `name`.
async fn events(client: &kube::Client, name: &str, reason: &str) -> Vec<String> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events list")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .map(|e| e.message.unwrap_or_default())
        .collect()
}

async fn wait_bound(client: &kube::Client, name: &str) -> String {
    wait_for(60, &format!("{name} is bound"), || async {
        node_of(&get_pod(client, name).await)
    })
    .await
}

async fn wait_unschedulable(client: &kube::Client, name: &str) -> String {
    wait_for(60, &format!("{name} is reported unschedulable"), || async {
        match scheduled_condition(&get_pod(client, name).await) {
            Some((status, reason, message)) if status == "False" && reason == "Unschedulable" => {
                Some(message)
            }
            _ => None,
        }
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_pod_for_tainted_nodes_stays_pending_until_a_node_fits() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    for i in 0..3 {
        sim.add_node(
            &format!("gpu-{i}"),
            json!({"gpu": "true"}),
            json!([{"key": "key", "value": "value", "effect": "NoSchedule"}]),
            OS_414,
        )
        .await;
    }
    for i in 0..9 {
        sim.add_node(&format!("cpu-{i}"), json!({}), json!([]), OS_414)
            .await;
    }
    let _scheduler = scheduler::spawn(sim.world.clone());
    create_pod(&client, "trainer", json!({"nodeSelector": {"gpu": "true"}})).await;

    let message = wait_unschedulable(&client, "trainer").await;
    assert_eq!(
        message,
        "0/12 nodes are available: 3 node(s) had untolerated taint {key: value}, 9 node(s) didn't match Pod's node affinity/selector. preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling."
    );
    let pod = get_pod(&client, "trainer").await;
    assert_eq!(node_of(&pod), None);
    assert_eq!(pod.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    eventually(10, "one FailedScheduling event", || async {
        events(&client, "trainer", "FailedScheduling").await == [message.clone()]
    })
    .await;

    // A node change that helps nobody retries the pod without repeating the event.
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            "cpu-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"rack": "r1"}}})),
        )
        .await
        .expect("label");
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(
        events(&client, "trainer", "FailedScheduling").await.len(),
        1
    );
    assert_eq!(node_of(&get_pod(&client, "trainer").await), None);

    // Untainting one GPU node lets the pod in.
    nodes
        .patch(
            "gpu-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .expect("untaint");
    assert_eq!(wait_bound(&client, "trainer").await, "gpu-1");
    let pod = get_pod(&client, "trainer").await;
    assert_eq!(
        scheduled_condition(&pod).map(|c| c.0).as_deref(),
        Some("True")
    );
    eventually(10, "a Scheduled event", || async {
        events(&client, "trainer", "Scheduled").await
            == ["Successfully assigned default/trainer to gpu-1"]
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn selectors_affinity_tolerations_and_readiness_decide_the_node() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    sim.add_node("a", json!({"zone": "a", "cores": "8"}), json!([]), OS_414)
        .await;
    sim.add_node(
        "b",
        json!({"zone": "b", "cores": "32"}),
        json!([{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
        OS_414,
    )
    .await;
    sim.add_node("c", json!({"zone": "c"}), json!([]), OS_414)
        .await;
    sim.set_ready("c", false).await;
    sim.add_node(
        "d",
        json!({"zone": "a"}),
        json!([{"key": "evict", "effect": "NoExecute"}]),
        OS_414,
    )
    .await;
    let _scheduler = scheduler::spawn(sim.world.clone());

    let required = |expressions: Value, fields: Value| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions, "matchFields": fields}]}}})
    };
    create_pod(
        &client,
        "by-selector",
        json!({"nodeSelector": {"zone": "a"}}),
    )
    .await;
    create_pod(
        &client,
        "big",
        json!({"affinity": required(json!([{"key": "cores", "operator": "Gt", "values": ["16"]}]), json!([])),
               "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]}),
    )
    .await;
    create_pod(
        &client,
        "anywhere-but-a",
        json!({"affinity": required(json!([]), json!([{"key": "metadata.name", "operator": "NotIn", "values": ["a"]},
                                                    {"key": "metadata.name", "operator": "NotIn", "values": ["b"]}])),
               "tolerations": [{"operator": "Exists"}]}),
    )
    .await;
    create_pod(
        &client,
        "wants-c",
        json!({"affinity": required(json!([]), json!([{"key": "metadata.name", "operator": "In", "values": ["c"]}])),
               "tolerations": [{"key": "evict", "operator": "Exists", "effect": "NoSchedule"}]}),
    )
    .await;
    create_pod(&client, "preassigned", json!({"nodeName": "c"})).await;
    create_pod(
        &client,
        "other-scheduler",
        json!({"schedulerName": "my-scheduler"}),
    )
    .await;

    assert_eq!(wait_bound(&client, "by-selector").await, "a");
    assert_eq!(wait_bound(&client, "big").await, "b");
    let anywhere = wait_bound(&client, "anywhere-but-a").await;
    assert!(anywhere == "c" || anywhere == "d", "{anywhere}");
    assert_eq!(
        wait_unschedulable(&client, "wants-c").await,
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: infra}, 1 node(s) had untolerated taint {evict: }, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
    let preassigned = get_pod(&client, "preassigned").await;
    assert_eq!(node_of(&preassigned).as_deref(), Some("c"));
    assert!(events(&client, "preassigned", "Scheduled").await.is_empty());
    let other = get_pod(&client, "other-scheduler").await;
    assert_eq!(node_of(&other), None);
    assert_eq!(scheduled_condition(&other), None);

    // The node becomes Ready: the waiting pod goes there.
    sim.set_ready("c", true).await;
    assert_eq!(wait_bound(&client, "wants-c").await, "c");

    // A cordoned node takes nothing new.
    Api::<Node>::all(client.clone())
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    create_pod(&client, "late", json!({"nodeSelector": {"zone": "a"}})).await;
    let message = wait_unschedulable(&client, "late").await;
    assert!(
        message.contains("1 node(s) were unschedulable") && message.starts_with("0/4 nodes"),
        "{message}"
    );
}

/// Where each of `count` pods lands on four identical nodes.
async fn spread(seed: u64, count: usize) -> BTreeMap<String, String> {
    let sim = Sim::start(&scenario(seed)).await;
    let client = sim.client();
    for i in 0..4 {
        sim.add_node(&format!("w-{i}"), worker(), json!([]), OS_414)
            .await;
    }
    let _scheduler = scheduler::spawn(sim.world.clone());
    let mut placement = BTreeMap::new();
    for i in 0..count {
        let name = format!("p-{i:02}");
        create_pod(&client, &name, json!({})).await;
        let node = wait_bound(&client, &name).await;
        placement.insert(name, node);
    }
    placement
}

#[tokio::test(start_paused = true)]
async fn binding_spreads_pods_and_the_seed_makes_it_reproducible() {
    let first = spread(3, 12).await;
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for node in first.values() {
        *per_node.entry(node.as_str()).or_default() += 1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [3, 3, 3, 3]);
    assert_eq!(
        spread(3, 12).await,
        first,
        "the same seed binds the same way"
    );
}

/// The most nodes seen unavailable (cordoned or not Ready) at once, from a watch on nodes.
fn watch_unavailability(client: &kube::Client) -> Arc<Mutex<(BTreeSet<String>, usize)>> {
    let seen = Arc::new(Mutex::new((BTreeSet::new(), 0)));
    let record = seen.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    tokio::spawn(async move {
        let mut stream = watcher(nodes, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(Ok(node)) = stream.next().await {
            let ready = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "True");
            let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
            let mut guard = record.lock().expect("lock");
            if ready && !cordoned {
                guard.0.remove(&node.name_any());
            } else {
                guard.0.insert(node.name_any());
            }
            guard.1 = guard.1.max(guard.0.len());
        }
    });
    seen
}

/// Pods a drain should have moved that are still on a machine when it goes down, by node.
fn watch_drains(sim: &Sim) -> Arc<Mutex<Vec<String>>> {
    let left_behind = Arc::new(Mutex::new(Vec::new()));
    let record = left_behind.clone();
    let world = sim.world.clone();
    let pods: Api<Pod> = Api::all(sim.client());
    let mut changed = world.machine_changed.subscribe();
    tokio::spawn(async move {
        while let Ok(node) = changed.recv().await {
            if world.machines.get(&node).is_some_and(|m| m.ready) {
                continue;
            }
            let on_node = ListParams::default().fields(&format!("spec.nodeName={node}"));
            for pod in pods.list(&on_node).await.expect("pods").items {
                let kept = pod.owner_references().iter().any(|o| o.kind == "DaemonSet")
                    || pod
                        .annotations()
                        .contains_key("kubernetes.io/config.mirror");
                if !kept {
                    record.lock().expect("lock").push(pod.name_any());
                }
            }
        }
    });
    left_behind
}

async fn pool(client: &kube::Client, name: &str) -> Option<MachineConfigPool> {
    Api::<MachineConfigPool>::all(client.clone())
        .get_opt(name)
        .await
        .expect("pool get")
}

fn pool_count(pool: &MachineConfigPool, field: &str) -> i64 {
    serde_json::to_value(&pool.status).expect("status")[field]
        .as_i64()
        .unwrap_or(-1)
}

fn pool_condition(pool: &MachineConfigPool, type_: &str) -> (String, String) {
    let status = serde_json::to_value(&pool.status).expect("status");
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .unwrap_or_default()
}

async fn wait_pool_updated(client: &kube::Client, name: &str, machines: i64) -> MachineConfigPool {
    wait_for(600, &format!("pool {name} updated"), || async {
        pool(client, name).await.filter(|p| {
            pool_count(p, "updatedMachineCount") == machines
                && pool_count(p, "machineCount") == machines
                && pool_condition(p, "Updated").0 == "True"
        })
    })
    .await
}

async fn apply_machine_config(client: &kube::Client, name: &str, url: &str) {
    let config: MachineConfig = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"osImageURL": url},
    }))
    .expect("a MachineConfig");
    Api::<MachineConfig>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&config),
        )
        .await
        .expect("the MachineConfig is applied");
}

/// Three workers on 4.14 and a master, each worker running an ordinary pod, a DaemonSet pod and a mirror pod.
async fn pool_cluster(sim: &Sim) {
    let client = sim.client();
    for i in 0..3 {
        sim.add_node(&format!("worker-{i}"), worker(), json!([]), OS_414)
            .await;
    }
    sim.add_node(
        "master-0",
        json!({"node-role.kubernetes.io/master": ""}),
        json!([]),
        OS_414,
    )
    .await;
    let daemon_set: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}},
    }))
    .expect("a DaemonSet");
    let daemon_set = Api::<DaemonSet>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &daemon_set)
        .await
        .expect("the DaemonSet is created");
    let owner = daemon_set
        .controller_owner_ref(&())
        .expect("an owner reference");
    for i in 0..3 {
        let node = format!("worker-{i}");
        create_pod(&client, &format!("app-{i}"), json!({"nodeName": node})).await;
        let agent: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("agent-{i}"), "labels": {"app": "agent"}, "ownerReferences": [owner]},
            "spec": {"nodeName": node, "containers": [{"name": "a", "image": "agent:1"}]},
        }))
        .expect("a pod");
        let mirror: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("static-{i}"), "annotations": {"kubernetes.io/config.mirror": "x"}},
            "spec": {"nodeName": node, "containers": [{"name": "s", "image": "static:1"}]},
        }))
        .expect("a pod");
        let pods = Api::<Pod>::namespaced(client.clone(), "default");
        for pod in [agent, mirror] {
            pods.create(&PostParams::default(), &pod)
                .await
                .expect("the pod is created");
        }
    }
}

fn annotation(node: &Node, key: &str) -> String {
    node.annotations().get(key).cloned().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_new_os_image_reboots_a_pool_one_node_at_a_time() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    pool_cluster(&sim).await;
    let _status = sim.spawn_node_status();
    let _mco = mco::spawn(sim.world.clone());
    let before = wait_pool_updated(&client, "worker", 3).await;
    wait_pool_updated(&client, "master", 1).await;
    let boots: BTreeMap<String, String> = sim
        .world
        .machines
        .lock()
        .iter()
        .map(|(n, m)| (n.clone(), m.boot_id.clone()))
        .collect();
    let unavailability = watch_unavailability(&client);
    let drains = watch_drains(&sim);

    apply_machine_config(&client, "99-worker-os", OS_415.2).await;
    let after = loop {
        let p = wait_pool_updated(&client, "worker", 3).await;
        if pool_condition(&p, "Updated").1 != pool_condition(&before, "Updated").1 {
            break p;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };

    let target = serde_json::to_value(&after.status).expect("status")["configuration"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(target.starts_with("rendered-worker-"), "{target}");
    let rendered = Api::<MachineConfig>::all(client.clone())
        .get(&target)
        .await
        .expect("the rendered MachineConfig");
    assert_eq!(rendered.spec.os_image_url.as_deref(), Some(OS_415.2));
    let nodes: Api<Node> = Api::all(client.clone());
    for i in 0..3 {
        let name = format!("worker-{i}");
        let machine = sim.world.machines.get(&name).expect("the machine");
        assert_eq!(machine.kernel_version, OS_415.0);
        assert_eq!(machine.os_image, OS_415.1);
        assert_eq!(machine.os_image_url.as_deref(), Some(OS_415.2));
        assert_ne!(machine.boot_id, boots[&name], "{name} rebooted");
        let node = nodes.get(&name).await.expect("the node");
        let info = node
            .status
            .as_ref()
            .and_then(|s| s.node_info.clone())
            .expect("nodeInfo");
        assert_eq!(
            (info.kernel_version.as_str(), info.boot_id.as_str()),
            (OS_415.0, machine.boot_id.as_str())
        );
        assert_eq!(annotation(&node, node_update::CURRENT_CONFIG), target);
        assert_eq!(annotation(&node, node_update::DESIRED_CONFIG), target);
        assert_eq!(annotation(&node, node_update::STATE), node_update::DONE);
        assert_ne!(node.spec.and_then(|s| s.unschedulable), Some(true));
    }
    let master = sim.world.machines.get("master-0").expect("the master");
    assert_eq!(
        (master.kernel_version.as_str(), master.boot_id.as_str()),
        (OS_414.0, boots["master-0"].as_str())
    );

    let (_, most) = *unavailability.lock().expect("lock");
    assert_eq!(most, 1, "nodes went down one at a time");
    assert!(
        drains.lock().expect("lock").is_empty(),
        "pods were drained before every reboot"
    );
    let pods: BTreeSet<String> = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    for i in 0..3 {
        assert!(!pods.contains(&format!("app-{i}")), "app-{i} was evicted");
        assert!(
            pods.contains(&format!("agent-{i}")),
            "DaemonSet pod agent-{i} stays"
        );
        assert!(
            pods.contains(&format!("static-{i}")),
            "mirror pod static-{i} stays"
        );
    }
    assert_eq!(events(&client, "worker-0", "Reboot").await.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn max_unavailable_lets_that_many_nodes_update_together() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    for i in 0..4 {
        sim.add_node(&format!("worker-{i}"), worker(), json!([]), OS_414)
            .await;
    }
    let _status = sim.spawn_node_status();
    let _mco = mco::spawn(sim.world.clone());
    wait_pool_updated(&client, "worker", 4).await;
    Api::<MachineConfigPool>::all(client.clone())
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxUnavailable": "50%"}})),
        )
        .await
        .expect("maxUnavailable");
    let unavailability = watch_unavailability(&client);
    apply_machine_config(&client, "99-worker-os", OS_415.2).await;
    eventually(600, "all workers on the new kernel", || async {
        (0..4).all(|i| {
            sim.world
                .machines
                .get(&format!("worker-{i}"))
                .is_some_and(|m| m.kernel_version == OS_415.0)
        })
    })
    .await;
    wait_pool_updated(&client, "worker", 4).await;
    assert_eq!(unavailability.lock().expect("lock").1, 2);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_os_image_degrades_the_pool_and_stops_the_rollout() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    pool_cluster(&sim).await;
    let _status = sim.spawn_node_status();
    let _mco = mco::spawn(sim.world.clone());
    wait_pool_updated(&client, "worker", 3).await;
    let boot = sim.world.machines.get("worker-0").expect("machine").boot_id;

    apply_machine_config(&client, "99-worker-os", "quay.io/nowhere/rhcos:999").await;
    let degraded = wait_for(600, "the pool is degraded", || async {
        pool(&client, "worker")
            .await
            .filter(|p| pool_count(p, "degradedMachineCount") == 1)
    })
    .await;
    let (status, message) = pool_condition(&degraded, "Degraded");
    assert_eq!(status, "True");
    assert!(
        message.starts_with("Node worker-0 is reporting: ")
            && message.contains("quay.io/nowhere/rhcos:999"),
        "{message}"
    );
    assert_eq!(pool_condition(&degraded, "NodeDegraded").0, "True");
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get("worker-0").await.expect("node");
    assert_eq!(annotation(&node, node_update::STATE), node_update::DEGRADED);
    assert!(annotation(&node, node_update::REASON).contains("manifest unknown"));
    assert_eq!(
        sim.world.machines.get("worker-0").expect("machine").boot_id,
        boot,
        "no reboot"
    );

    // The rollout stopped: the other workers were not touched.
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
    for name in ["worker-1", "worker-2"] {
        let node = nodes.get(name).await.expect("node");
        assert_eq!(annotation(&node, node_update::STATE), node_update::DONE);
        assert_ne!(
            annotation(&node, node_update::DESIRED_CONFIG),
            annotation(
                &nodes.get("worker-0").await.expect("node"),
                node_update::DESIRED_CONFIG
            )
        );
        assert_ne!(node.spec.and_then(|s| s.unschedulable), Some(true));
    }

    // Pointing the MachineConfig at a known image recovers the pool.
    apply_machine_config(&client, "99-worker-os", OS_415.2).await;
    eventually(600, "every worker on the new OS", || async {
        (0..3).all(|i| {
            sim.world
                .machines
                .get(&format!("worker-{i}"))
                .is_some_and(|m| m.os_image_url.as_deref() == Some(OS_415.2))
        })
    })
    .await;
    let recovered = wait_pool_updated(&client, "worker", 3).await;
    assert_eq!(pool_condition(&recovered, "Degraded").0, "False");
}

#[tokio::test(start_paused = true)]
async fn a_cluster_upgrade_moves_pools_to_the_release_os_image() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    for i in 0..2 {
        sim.add_node(&format!("worker-{i}"), worker(), json!([]), OS_414)
            .await;
    }
    let _status = sim.spawn_node_status();
    let _mco = mco::spawn(sim.world.clone());
    wait_pool_updated(&client, "worker", 2).await;
    let versions: Api<ClusterVersion> = Api::all(client.clone());
    let version = versions.get("version").await.expect("the ClusterVersion");
    let status = serde_json::to_value(&version.status).expect("status");
    assert_eq!(status["desired"]["version"], "4.14.0");

    versions
        .patch(
            "version",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"desiredUpdate": {"version": "4.15.0"}}})),
        )
        .await
        .expect("upgrade");
    eventually(600, "the upgrade completes", || async {
        let status = serde_json::to_value(versions.get("version").await.expect("cv").status)
            .expect("status");
        status["desired"]["version"] == "4.15.0"
            && status["history"][0]["version"] == "4.15.0"
            && status["history"][0]["state"] == "Completed"
            && status["history"][1]["version"] == "4.14.0"
    })
    .await;
    // Once converged, the operator writes nothing more.
    let revision = || async {
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .expect("nodes");
        let pools = Api::<MachineConfigPool>::all(client.clone())
            .list(&ListParams::default())
            .await
            .expect("pools");
        let objects: Vec<Option<String>> = nodes
            .items
            .iter()
            .map(|n| n.resource_version())
            .chain(pools.items.iter().map(|p| p.resource_version()))
            .collect();
        objects
    };
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    let settled = revision().await;
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
    assert_eq!(revision().await, settled, "no writes once converged");
    for i in 0..2 {
        let machine = sim
            .world
            .machines
            .get(&format!("worker-{i}"))
            .expect("machine");
        assert_eq!(machine.kernel_version, OS_415.0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_restarted_operator_continues_the_rollout() {
    let sim = Sim::start(&scenario(1)).await;
    let client = sim.client();
    for i in 0..3 {
        sim.add_node(&format!("worker-{i}"), worker(), json!([]), OS_414)
            .await;
    }
    let _status = sim.spawn_node_status();
    let first = mco::spawn(sim.world.clone());
    wait_pool_updated(&client, "worker", 3).await;
    let unavailability = watch_unavailability(&client);
    apply_machine_config(&client, "99-worker-os", OS_415.2).await;
    eventually(600, "the second node is rebooting", || async {
        sim.world.machines.get("worker-1").is_some_and(|m| !m.ready)
    })
    .await;
    first.abort();
    let _ = first.await;

    let _second = mco::spawn(sim.world.clone());
    eventually(600, "every worker on the new kernel", || async {
        (0..3).all(|i| {
            sim.world
                .machines
                .get(&format!("worker-{i}"))
                .is_some_and(|m| m.kernel_version == OS_415.0 && m.ready)
        })
    })
    .await;
    wait_pool_updated(&client, "worker", 3).await;
    assert_eq!(unavailability.lock().expect("lock").1, 1);
    let reboots = events(&client, "worker-0", "Reboot").await.len();
    assert_eq!(reboots, 1, "a finished node is not rebooted again");
}
