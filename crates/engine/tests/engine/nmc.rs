//! The NodeModulesConfig reconciler alone on three simulated workers: NMC objects are written by hand, as the
//! Module reconciler would, and everything is observed through the API and the simulated machines.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, Taint};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kmm_api::kmm::labels;
use kmm_api::kmm::{
    ModprobeSpec, ModuleConfig, NodeModuleSpec, NodeModuleStatus, NodeModulesConfig,
    NodeModulesConfigSpec,
};
use kmm_engine::runtime::shared::SharedWatches;
use kmm_engine::{Context, kmm::nmc};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Harness, eventually, wait_for};

const KERNEL: &str = "5.14.0-284.30.1.el9_2.x86_64";
const A_V1: &str = "quay.io/acme/kmod-a:v1";
const A_V2: &str = "quay.io/acme/kmod-a:v2";
const B_V1: &str = "quay.io/acme/kmod-b:v1";

/// A spec entry for Module `namespace/name`, loading the kernel module `kmod` from `image`.
fn entry(namespace: &str, name: &str, kmod: &str, image: &str) -> NodeModuleSpec {
    NodeModuleSpec {
        name: name.into(),
        namespace: namespace.into(),
        service_account_name: "default".into(),
        image_repo_secret: None,
        tolerations: Vec::new(),
        version: Some("1".into()),
        config: ModuleConfig {
            kernel_version: KERNEL.into(),
            container_image: image.into(),
            image_pull_policy: Default::default(),
            insecure_pull: false,
            in_tree_modules_to_remove: Vec::new(),
            in_tree_module_to_remove: None,
            modprobe: ModprobeSpec {
                module_name: Some(kmod.into()),
                ..Default::default()
            },
        },
    }
}

fn kmod_a() -> NodeModuleSpec {
    entry("acme", "kmod-a", "kmod_a", A_V1)
}

fn kmod_b() -> NodeModuleSpec {
    entry("acme", "kmod-b", "kmod_b", B_V1)
}

/// Create the NMC of `node` with `entries`, owned by the node and labelled as the Module reconciler labels it.
async fn create_nmc(client: &Client, node: &str, entries: Vec<NodeModuleSpec>) {
    let owner = Api::<Node>::all(client.clone())
        .get(node)
        .await
        .expect("the node exists");
    let labels: BTreeMap<String, String> = entries
        .iter()
        .flat_map(|e| {
            [
                labels::module_configured(&e.namespace, &e.name),
                labels::module_in_use(&e.namespace, &e.name),
            ]
        })
        .map(|k| (k, String::new()))
        .collect();
    let nmc = NodeModulesConfig {
        metadata: ObjectMeta {
            name: Some(node.into()),
            labels: Some(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node.into(),
                uid: owner.uid().expect("uid"),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: NodeModulesConfigSpec { modules: entries },
        status: None,
    };
    nmcs(client)
        .create(&PostParams::default(), &nmc)
        .await
        .expect("the NMC is created");
}

/// Replace the spec entries of the NMC of `node`.
async fn set_entries(client: &Client, node: &str, entries: Vec<NodeModuleSpec>) {
    nmcs(client)
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"modules": entries}})),
        )
        .await
        .expect("the NMC spec is patched");
}

fn nmcs(client: &Client) -> Api<NodeModulesConfig> {
    Api::all(client.clone())
}

async fn status_of(client: &Client, node: &str, module: &str) -> Option<NodeModuleStatus> {
    nmcs(client)
        .get_opt(node)
        .await
        .expect("reading the NMC")?
        .status?
        .modules
        .into_iter()
        .find(|m| m.name == module)
}

async fn worker_pods(client: &Client, node: &str) -> Vec<Pod> {
    Api::<Pod>::all(client.clone())
        .list(
            &ListParams::default()
                .labels(labels::WORKER_ACTION)
                .fields(&format!("spec.nodeName={node}")),
        )
        .await
        .expect("listing worker pods")
        .items
}

async fn node(client: &Client, name: &str) -> Node {
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
        .expect("a boot ID")
}

async fn has_label(client: &Client, node_name: &str, key: &str) -> bool {
    node(client, node_name).await.labels().contains_key(key)
}

fn ready_label(module: &str) -> String {
    labels::node_ready("acme", module)
}

/// Kernel modules loaded on the simulated machine of `node`.
fn lsmod(harness: &Harness, node: &str) -> BTreeSet<String> {
    harness
        .cluster
        .simulation()
        .expect("a simulation")
        .world()
        .machines
        .get(node)
        .map(|m| m.modules)
        .unwrap_or_default()
}

/// Wait until `module` is loaded on `node` with `image`, recorded in the current boot, its worker gone and the node
/// labelled.
async fn wait_loaded(harness: &Harness, node_name: &str, module: &str, kmod: &str, image: &str) {
    let client = harness.client();
    eventually(
        300,
        &format!("{module} loaded on {node_name} from {image}"),
        || {
            let client = client.clone();
            async move {
                let boot = boot_id(&node(&client, node_name).await);
                let recorded = status_of(&client, node_name, module)
                    .await
                    .is_some_and(|s| {
                        s.boot_id.as_deref() == Some(boot.as_str())
                            && s.config.is_some_and(|c| c.container_image == image)
                    });
                recorded
                    && lsmod(harness, node_name).contains(kmod)
                    && worker_pods(&client, node_name).await.is_empty()
                    && has_label(&client, node_name, &ready_label(module)).await
            }
        },
    )
    .await;
}

/// Every worker pod the API ever showed, in order of appearance, and how many pods one (node, module) pair had at
/// once at most.
#[derive(Clone, Default)]
struct WorkerLog(Arc<Mutex<WorkerLogState>>);

#[derive(Default)]
struct WorkerLogState {
    /// (node, namespace/module, action) per pod, in order of first sight.
    started: Vec<(String, String, String)>,
    seen: BTreeSet<String>,
    live: BTreeMap<(String, String), BTreeSet<String>>,
    most_at_once: usize,
}

impl WorkerLog {
    fn follow(client: &Client) -> Self {
        let log = Self::default();
        let follower = log.clone();
        let api = Api::<Pod>::all(client.clone());
        tokio::spawn(async move {
            let mut events = watcher(
                api,
                watcher::Config::default().labels(labels::WORKER_ACTION),
            )
            .boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                        follower.applied(&pod)
                    }
                    Ok(watcher::Event::Delete(pod)) => follower.deleted(&pod),
                    _ => {}
                }
            }
        });
        log
    }

    fn key(pod: &Pod) -> (String, String) {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        let module = format!(
            "{}/{}",
            pod.namespace().unwrap_or_default(),
            pod.labels()
                .get(labels::MODULE_NAME)
                .cloned()
                .unwrap_or_default()
        );
        (node, module)
    }

    fn applied(&self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        let key = Self::key(pod);
        let mut state = self.0.lock().expect("log");
        if state.seen.insert(uid.clone()) {
            let action = pod
                .labels()
                .get(labels::WORKER_ACTION)
                .cloned()
                .unwrap_or_default();
            state.started.push((key.0.clone(), key.1.clone(), action));
        }
        let live = state.live.entry(key).or_default();
        live.insert(uid);
        let count = live.len();
        state.most_at_once = state.most_at_once.max(count);
    }

    fn deleted(&self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        if let Some(live) = self.0.lock().expect("log").live.get_mut(&Self::key(pod)) {
            live.remove(&uid);
        }
    }

    /// The actions of the workers started for `namespace/module` on `node`, in order.
    fn actions(&self, node: &str, module: &str) -> Vec<String> {
        self.0
            .lock()
            .expect("log")
            .started
            .iter()
            .filter(|(n, m, _)| n == node && m == module)
            .map(|(_, _, action)| action.clone())
            .collect()
    }

    fn started_on(&self, node: &str) -> usize {
        self.0
            .lock()
            .expect("log")
            .started
            .iter()
            .filter(|(n, _, _)| n == node)
            .count()
    }

    fn most_at_once(&self) -> usize {
        self.0.lock().expect("log").most_at_once
    }
}

/// The NMC reconciler, with the shared node watch it subscribes to.
async fn run_nmc(context: Arc<Context>, stop: CancellationToken) {
    let shared = SharedWatches::new();
    let nmcs = nmc::run(context.clone(), &shared, stop.clone());
    tokio::join!(shared.run(context.client.clone(), stop), nmcs);
}

async fn start() -> (Harness, WorkerLog) {
    let mut harness = Harness::start("nmc.yaml").await;
    harness.start_with(run_nmc);
    let log = WorkerLog::follow(&harness.client());
    (harness, log)
}

#[tokio::test(start_paused = true)]
async fn an_entry_is_loaded_by_a_worker_recorded_and_labelled() {
    let (harness, log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-0", vec![kmod_a()]).await;

    let pod = wait_for(60, "the loader pod", || {
        let client = client.clone();
        async move { worker_pods(&client, "worker-0").await.into_iter().next() }
    })
    .await;
    assert_eq!(pod.name_any(), "kmm-worker-worker-0-kmod-a");
    assert_eq!(pod.namespace().as_deref(), Some("acme"));
    assert_eq!(pod.labels()[labels::WORKER_ACTION], "Load");
    assert_eq!(pod.labels()[labels::MODULE_NAME], "kmod-a");
    assert!(
        pod.finalizers().is_empty(),
        "a worker is deleted in one write"
    );
    let owner = &pod.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("NodeModulesConfig", "worker-0", Some(true))
    );
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some("worker-0"));
    assert_eq!(spec.restart_policy.as_deref(), Some("OnFailure"));
    let init = &spec.init_containers.as_ref().expect("init containers")[0];
    assert_eq!(
        (init.name.as_str(), init.image.as_deref()),
        ("image-extractor", Some(A_V1))
    );
    let worker = &spec.containers[0];
    assert_eq!(worker.name, "worker");
    assert_eq!(
        worker.args.as_deref(),
        Some(
            &[
                "kmod".to_owned(),
                "load".into(),
                "/etc/kmm-worker/config.yaml".into()
            ][..]
        )
    );
    let config: ModuleConfig =
        serde_saphyr::from_str(&pod.annotations()[labels::WORKER_CONFIG]).expect("config");
    assert_eq!(config, kmod_a().config);

    wait_loaded(&harness, "worker-0", "kmod-a", "kmod_a", A_V1).await;
    let boot = boot_id(&node(&client, "worker-0").await);
    let status = status_of(&client, "worker-0", "kmod-a")
        .await
        .expect("a status entry");
    assert_eq!(status.boot_id.as_deref(), Some(boot.as_str()));
    assert_eq!(status.version.as_deref(), Some("1"));
    assert_eq!(status.service_account_name, "default");
    assert_eq!(
        node(&client, "worker-0").await.labels()[&labels::node_version_ready("acme", "kmod-a")],
        "1"
    );
    assert_eq!(log.actions("worker-0", "acme/kmod-a"), ["Load"]);
    assert!(
        lsmod(&harness, "worker-1").is_empty(),
        "other nodes are untouched"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_new_config_on_the_same_kernel_unloads_first_then_loads() {
    let (harness, log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-0", vec![kmod_a()]).await;
    wait_loaded(&harness, "worker-0", "kmod-a", "kmod_a", A_V1).await;

    let mut changed = kmod_a();
    changed.config.container_image = A_V2.into();
    set_entries(&client, "worker-0", vec![changed]).await;
    wait_loaded(&harness, "worker-0", "kmod-a", "kmod_a", A_V2).await;
    assert_eq!(
        log.actions("worker-0", "acme/kmod-a"),
        ["Load", "Unload", "Load"]
    );
    assert_eq!(log.most_at_once(), 1);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_removed_entry_is_unloaded_unlabelled_and_the_empty_nmc_deleted() {
    let (harness, log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-1", vec![kmod_a()]).await;
    wait_loaded(&harness, "worker-1", "kmod-a", "kmod_a", A_V1).await;

    // As the Module reconciler does: the entry and its module-configured label go, the in-use label stays.
    nmcs(&client)
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {labels::module_configured("acme", "kmod-a"): null}},
                "spec": {"modules": []},
            })),
        )
        .await
        .expect("the entry is removed");
    eventually(300, "the empty NMC is deleted", || {
        let client = client.clone();
        async move {
            nmcs(&client)
                .get_opt("worker-1")
                .await
                .expect("get")
                .is_none()
        }
    })
    .await;
    assert!(!lsmod(&harness, "worker-1").contains("kmod_a"));
    assert!(!has_label(&client, "worker-1", &ready_label("kmod-a")).await);
    assert!(
        !has_label(
            &client,
            "worker-1",
            &labels::node_version_ready("acme", "kmod-a")
        )
        .await
    );
    assert_eq!(log.actions("worker-1", "acme/kmod-a"), ["Load", "Unload"]);
    assert!(worker_pods(&client, "worker-1").await.is_empty());
    // The unload is on record on the node.
    let unloaded: Vec<String> = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("ModuleUnloaded"))
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Node") && r.name.as_deref() == Some("worker-1")
            })
        })
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(unloaded, ["Module acme/kmod-a unloaded from the kernel"]);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_reboot_reloads_the_module_in_the_new_boot() {
    let (harness, log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-2", vec![kmod_a(), kmod_b()]).await;
    wait_loaded(&harness, "worker-2", "kmod-a", "kmod_a", A_V1).await;
    wait_loaded(&harness, "worker-2", "kmod-b", "kmod_b", B_V1).await;
    let before = boot_id(&node(&client, "worker-2").await);

    let world = harness
        .cluster
        .simulation()
        .expect("simulation")
        .world()
        .clone();
    world.machines.with("worker-2", |m| {
        let (kernel, os, url) = (
            m.kernel_version.clone(),
            m.os_image.clone(),
            m.os_image_url.clone(),
        );
        m.reboot(&kernel, &os, url.as_deref());
    });
    let _ = world.machine_changed.send("worker-2".into());
    assert!(
        lsmod(&harness, "worker-2").is_empty(),
        "the reboot unloaded everything"
    );

    eventually(120, "the node reports its new boot", || {
        let client = client.clone();
        let before = before.clone();
        async move { boot_id(&node(&client, "worker-2").await) != before }
    })
    .await;
    wait_loaded(&harness, "worker-2", "kmod-a", "kmod_a", A_V1).await;
    wait_loaded(&harness, "worker-2", "kmod-b", "kmod_b", B_V1).await;
    let after = boot_id(&node(&client, "worker-2").await);
    assert_ne!(after, before);
    for module in ["kmod-a", "kmod-b"] {
        let status = status_of(&client, "worker-2", module)
            .await
            .expect("status");
        assert_eq!(status.boot_id.as_deref(), Some(after.as_str()), "{module}");
        assert_eq!(
            log.actions("worker-2", &format!("acme/{module}")),
            ["Load", "Load"],
            "{module} was loaded again, never unloaded"
        );
    }
    harness.shutdown().await;
}

async fn set_taints(client: &Client, node: &str, taints: Vec<Taint>) {
    Api::<Node>::all(client.clone())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .expect("the taints are set");
}

#[tokio::test(start_paused = true)]
async fn an_untolerated_taint_removes_the_ready_label_until_it_goes() {
    let (harness, log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-0", vec![kmod_a()]).await;
    wait_loaded(&harness, "worker-0", "kmod-a", "kmod_a", A_V1).await;
    let started = log.started_on("worker-0");

    let maintenance = Taint {
        key: "maintenance".into(),
        value: Some("true".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    };
    set_taints(&client, "worker-0", vec![maintenance]).await;
    eventually(60, "the ready label is removed", || {
        let client = client.clone();
        async move { !has_label(&client, "worker-0", &ready_label("kmod-a")).await }
    })
    .await;
    // A new configuration is not acted on while the node is tainted.
    let mut changed = kmod_a();
    changed.config.container_image = A_V2.into();
    set_entries(&client, "worker-0", vec![changed.clone()]).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        log.started_on("worker-0"),
        started,
        "no worker while tainted"
    );
    assert!(
        lsmod(&harness, "worker-0").contains("kmod_a"),
        "still loaded"
    );

    set_entries(&client, "worker-0", vec![kmod_a()]).await;
    set_taints(&client, "worker-0", Vec::new()).await;
    eventually(60, "the ready label is back", || {
        let client = client.clone();
        async move { has_label(&client, "worker-0", &ready_label("kmod-a")).await }
    })
    .await;
    assert_eq!(
        log.started_on("worker-0"),
        started,
        "nothing needed reloading"
    );

    // A tolerated taint changes nothing.
    let mut tolerant = kmod_a();
    tolerant.tolerations = vec![k8s_openapi::api::core::v1::Toleration {
        key: Some("maintenance".into()),
        operator: Some("Exists".into()),
        ..Default::default()
    }];
    set_entries(&client, "worker-0", vec![tolerant]).await;
    set_taints(
        &client,
        "worker-0",
        vec![Taint {
            key: "maintenance".into(),
            value: Some("true".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }],
    )
    .await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(has_label(&client, "worker-0", &ready_label("kmod-a")).await);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn orphan_workers_and_unbacked_in_use_labels_are_collected_by_namespace() {
    let (harness, _log) = start().await;
    let client = harness.client();
    create_nmc(&client, "worker-1", vec![kmod_a()]).await;
    wait_loaded(&harness, "worker-1", "kmod-a", "kmod_a", A_V1).await;

    // A worker of a same-named Module of another namespace, in neither spec nor status, running until deleted.
    let orphan = Pod {
        metadata: ObjectMeta {
            name: Some("kmm-worker-worker-1-kmod-a".into()),
            namespace: Some("other".into()),
            labels: Some(BTreeMap::from([
                (labels::WORKER_ACTION.to_owned(), "Load".to_owned()),
                (labels::MODULE_NAME.to_owned(), "kmod-a".to_owned()),
            ])),
            finalizers: Some(vec![labels::WORKER_FINALIZER.to_owned()]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("worker-1".into()),
            containers: vec![Container {
                name: "server".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    Api::<Pod>::namespaced(client.clone(), "other")
        .create(&PostParams::default(), &orphan)
        .await
        .expect("the orphan is created");
    let in_use = |ns: &str, name: &str| labels::module_in_use(ns, name);
    nmcs(&client)
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                in_use("other", "kmod-a"): "",
                in_use("other", "gone"): "",
            }}})),
        )
        .await
        .expect("labels added");

    eventually(60, "the orphan is deleted", || {
        let client = client.clone();
        async move {
            Api::<Pod>::namespaced(client, "other")
                .get_opt("kmm-worker-worker-1-kmod-a")
                .await
                .expect("get")
                .is_none()
        }
    })
    .await;
    eventually(60, "unbacked in-use labels are removed", || {
        let client = client.clone();
        async move {
            let nmc = nmcs(&client).get("worker-1").await.expect("nmc");
            let labels = nmc.labels();
            !labels.contains_key(&in_use("other", "kmod-a"))
                && !labels.contains_key(&in_use("other", "gone"))
        }
    })
    .await;
    let nmc = nmcs(&client).get("worker-1").await.expect("nmc");
    assert!(nmc.labels().contains_key(&in_use("acme", "kmod-a")));
    assert!(
        lsmod(&harness, "worker-1").contains("kmod_a"),
        "the configured module stays"
    );
    assert!(has_label(&client, "worker-1", &ready_label("kmod-a")).await);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killed_and_restarted_it_never_doubles_a_worker_and_converges() {
    let mut harness = Harness::start("nmc.yaml").await;
    let client = harness.client();
    let log = WorkerLog::follow(&client);
    let nodes = ["worker-0", "worker-1", "worker-2"];
    for node in nodes {
        create_nmc(&client, node, vec![kmod_a(), kmod_b()]).await;
    }
    for cut in [90, 170, 40, 260, 130, 310, 70, 220] {
        harness.start_with(run_nmc);
        tokio::time::sleep(Duration::from_millis(cut)).await;
        harness.kill_engine().await;
    }
    harness.start_with(run_nmc);
    for node in nodes {
        wait_loaded(&harness, node, "kmod-a", "kmod_a", A_V1).await;
        wait_loaded(&harness, node, "kmod-b", "kmod_b", B_V1).await;
        for module in ["acme/kmod-a", "acme/kmod-b"] {
            assert_eq!(log.actions(node, module), ["Load"], "{node} {module}");
        }
    }
    assert_eq!(log.most_at_once(), 1);

    // A restart on a converged cluster changes nothing.
    let before: Vec<_> = nmcs(&client)
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|n| (n.name_any(), n.resource_version()))
        .collect();
    harness.kill_engine().await;
    harness.start_with(run_nmc);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after: Vec<_> = nmcs(&client)
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|n| (n.name_any(), n.resource_version()))
        .collect();
    assert_eq!(before, after, "nothing written");
    assert_eq!(log.started_on("worker-0"), 2);
    harness.shutdown().await;
}

/// An entry written for a kernel the node does not run (the node rebooted into another one before the Module
/// wrote its entry for it) starts no loader, which could only fail; once the entry is for the node's kernel, one
/// loader loads it. (A loader that crash-loops from an outdated template is replaced: see the decision table.)
#[tokio::test(start_paused = true)]
async fn an_entry_for_another_kernel_waits_for_one_for_the_nodes_kernel() {
    let (harness, log) = start().await;
    let client = harness.client();
    let mut wrong_kernel = kmod_a();
    wrong_kernel.config.kernel_version = "6.0.0".into();
    create_nmc(&client, "worker-0", vec![wrong_kernel]).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        worker_pods(&client, "worker-0").await.is_empty(),
        "no loader for a kernel the node does not run"
    );
    assert!(status_of(&client, "worker-0", "kmod-a").await.is_none());

    set_entries(&client, "worker-0", vec![kmod_a()]).await;
    wait_loaded(&harness, "worker-0", "kmod-a", "kmod_a", A_V1).await;
    assert_eq!(log.actions("worker-0", "acme/kmod-a"), ["Load"]);
    assert_eq!(log.most_at_once(), 1);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_workers_of_a_deleted_nmc_are_released_to_the_garbage_collector() {
    let (harness, _log) = start().await;
    let client = harness.client();
    let missing = entry("acme", "kmod-c", "kmod_c", "quay.io/acme/kmod-c:missing");
    create_nmc(&client, "worker-2", vec![missing]).await;
    let pod = wait_for(60, "a loader waiting for its image", || {
        let client = client.clone();
        async move { worker_pods(&client, "worker-2").await.into_iter().next() }
    })
    .await;
    // Upstream KMM's workers carry a finalizer; the engine releases it once their NMC is gone.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    pods.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": [labels::WORKER_FINALIZER]}})),
    )
    .await
    .expect("the finalizer is added");

    nmcs(&client)
        .delete("worker-2", &Default::default())
        .await
        .expect("the NMC is deleted");
    eventually(120, "the worker pod is gone", || {
        let client = client.clone();
        async move { worker_pods(&client, "worker-2").await.is_empty() }
    })
    .await;
    harness.shutdown().await;
}
