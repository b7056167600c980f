//! A Module's DRA driver: once the module is loaded the engine runs the driver's DaemonSet there, creates the
//! Module's DeviceClasses, labels the nodes and counts the driver in the Module's status; preflight lists what each
//! node loses while its module reloads; an ordered upgrade moves the driver off a node before its module reloads;
//! deleting the Module takes it all away before the module is unloaded.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim};
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, NodeModulesConfig};
use kmm_engine::kmm::preflight::losses::{NodeLosses, Observed, node_losses};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{Harness, eventually};
use super::kmm::{condition, create_module, loaded_modules, module, module_events};

const GPU_NODES: [&str; 2] = ["gpu-0", "gpu-1"];
const DRIVER: &str = "gpu.example.com";
const KMOD: &str = "gpu_drv";

fn spec(version: Option<&str>) -> serde_json::Value {
    json!({
        "selector": {"gpu": "yes"},
        "moduleLoader": {"container": {
            "version": version,
            "modprobe": {"moduleName": KMOD},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/acme/gpu-kmod:${KERNEL_FULL_VERSION}"}]
        }},
        "dra": {
            "driverName": DRIVER,
            "serviceAccountName": "gpu-dra",
            "container": {
                "image": "quay.io/acme/gpu-dra-driver:1.0",
                "env": [{"name": "DRIVER_NAME", "value": DRIVER}]
            },
            "deviceClasses": [
                {"name": "gpu.example.com"},
                {"name": "big-gpu.example.com",
                 "selectors": [{"cel": {"expression": "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0"}}]}
            ]
        }
    })
}

async fn driver_daemon_sets(harness: &Harness) -> Vec<DaemonSet> {
    Api::<DaemonSet>::namespaced(harness.client(), "acme")
        .list(&ListParams::default().labels("kmm.node.kubernetes.io/role=dra"))
        .await
        .expect("listing DaemonSets")
        .items
}

async fn driver_pods(harness: &Harness) -> Vec<Pod> {
    Api::<Pod>::namespaced(harness.client(), "acme")
        .list(&ListParams::default().labels("kmm.node.kubernetes.io/role=dra"))
        .await
        .expect("listing pods")
        .items
}

async fn module_classes(harness: &Harness) -> Vec<DeviceClass> {
    Api::<DeviceClass>::all(harness.client())
        .list(&ListParams::default().labels(&format!(
            "{}=gpu,{}=acme",
            labels::MODULE_NAME,
            labels::MODULE_NAMESPACE
        )))
        .await
        .expect("listing DeviceClasses")
        .items
}

/// The nodes carrying `label`.
async fn labelled(harness: &Harness, label: &str) -> BTreeSet<String> {
    Api::<Node>::all(harness.client())
        .list(&ListParams::default().labels(label))
        .await
        .expect("listing nodes")
        .items
        .iter()
        .map(|n| n.name_any())
        .collect()
}

async fn driver_counts(harness: &Harness) -> Option<(i32, i32, i32)> {
    let counts = module(harness, "gpu").await?.status?.dra?;
    Some((
        counts.nodes_matching_selector_number,
        counts.desired_number,
        counts.available_number,
    ))
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|n| n.to_string()).collect()
}

/// A claim on one device of the driver, and a pod on `node` that uses it: the scheduler allocates the claim there
/// from the driver's published devices and reserves it for the pod.
async fn allocated_claim(harness: &Harness, name: &str, node: &str) {
    let claim: ResourceClaim = serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "acme"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }))
    .expect("a claim");
    let claims = Api::<ResourceClaim>::namespaced(harness.client(), "acme");
    claims
        .create(&PostParams::default(), &claim)
        .await
        .expect("the claim is created");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "acme"},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [{"name": "trainer", "image": "quay.io/acme/trainer:1",
                            "resources": {"claims": [{"name": "gpu"}]}}]
        }
    }))
    .expect("a pod");
    Api::<Pod>::namespaced(harness.client(), "acme")
        .create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created");
    eventually(120, "the claim is allocated on the pod's node", || async {
        claims
            .get(name)
            .await
            .ok()
            .and_then(|c| c.status?.allocation?.node_selector)
            .is_some()
    })
    .await;
}

/// What preflight says each node loses on a move to a kernel none runs yet, from what the API shows.
async fn preflight(harness: &Harness) -> Vec<NodeLosses> {
    let client = harness.client();
    let all = ListParams::default();
    let modules = Api::<Module>::all(client.clone())
        .list(&all)
        .await
        .expect("Modules");
    let nodes = Api::<Node>::all(client.clone())
        .list(&all)
        .await
        .expect("nodes");
    let nmcs = Api::<NodeModulesConfig>::all(client.clone())
        .list(&all)
        .await
        .expect("NMCs");
    let claims = Api::<ResourceClaim>::all(client)
        .list(&all)
        .await
        .expect("claims");
    let modules: Vec<&Module> = modules.items.iter().collect();
    let nodes: Vec<&Node> = nodes.items.iter().collect();
    let nmcs: Vec<&NodeModulesConfig> = nmcs.items.iter().collect();
    let claims: Vec<&ResourceClaim> = claims.items.iter().collect();
    node_losses(
        Observed {
            modules: &modules,
            nodes: &nodes,
            nmcs: &nmcs,
            claims: &claims,
        },
        "6.1.0-next",
    )
}

#[tokio::test(start_paused = true)]
async fn a_dra_driver_and_its_device_classes_follow_the_module_and_leave_with_it() {
    let mut harness = Harness::start("dra.yaml").await;
    harness.start_engine();
    create_module(&harness, "gpu", spec(None)).await;
    let target = labels::dra_target_label("acme", "gpu");
    let ready = labels::dra_ready_label("acme", "gpu");

    // Module loaded → driver DaemonSet on the loaded nodes → driver pods ready → labels and counts.
    eventually(600, "the driver is ready on both gpu nodes", || async {
        labelled(&harness, &ready).await == names(&GPU_NODES)
    })
    .await;
    assert_eq!(labelled(&harness, &target).await, names(&GPU_NODES));
    let daemon_sets = driver_daemon_sets(&harness).await;
    assert_eq!(daemon_sets.len(), 1, "one DaemonSet per Module");
    let daemon_set = &daemon_sets[0];
    assert!(daemon_set.name_any().starts_with("gpu-dra-"));
    assert_eq!(daemon_set.owner_references()[0].kind, "Module");
    let pod_spec = daemon_set
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .expect("a pod template");
    assert_eq!(pod_spec.service_account_name.as_deref(), Some("gpu-dra"));
    let selector = pod_spec.node_selector.unwrap_or_default();
    assert!(selector.contains_key(&target));
    assert!(selector.contains_key(&labels::node_ready("acme", "gpu")));
    let pods = driver_pods(&harness).await;
    let placed: BTreeSet<String> = pods
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    assert_eq!(
        placed,
        names(&GPU_NODES),
        "no driver where the module is not"
    );
    eventually(120, "the Module counts its driver", || async {
        driver_counts(&harness).await == Some((2, 2, 2))
    })
    .await;
    assert_eq!(
        condition(&harness, "gpu", "DRASupported")
            .await
            .map(|(status, reason, _)| (status, reason)),
        Some(("True".to_owned(), "Supported".to_owned()))
    );

    // The DeviceClasses select the driver's devices first and are labelled as the Module's.
    let classes = module_classes(&harness).await;
    let class_names: BTreeSet<String> = classes.iter().map(|c| c.name_any()).collect();
    assert_eq!(
        class_names,
        names(&["gpu.example.com", "big-gpu.example.com"])
    );
    for class in &classes {
        let first = class
            .spec
            .selectors
            .iter()
            .flatten()
            .find_map(|s| s.cel.as_ref())
            .map(|c| c.expression.clone());
        assert_eq!(
            first.as_deref(),
            Some("device.driver == \"gpu.example.com\"")
        );
    }

    // Preflight: each gpu node loses the driver, gpu-0 also the claim allocated there; the other node nothing.
    allocated_claim(&harness, "training", "gpu-0").await;
    let losses = preflight(&harness).await;
    let lost = |node: &str| {
        losses
            .iter()
            .find(|l| l.node == node)
            .map(|l| {
                (
                    l.dra_drivers.clone(),
                    l.claims.clone(),
                    l.device_plugins.clone(),
                )
            })
            .expect("the node is listed")
    };
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        lost("gpu-0"),
        (strings(&["acme/gpu"]), strings(&["acme/training"]), vec![])
    );
    assert_eq!(lost("gpu-1"), (strings(&["acme/gpu"]), vec![], vec![]));
    assert_eq!(lost("other-0"), (vec![], vec![], vec![]));

    // A class taken out of the spec goes.
    let modules = Api::<Module>::namespaced(harness.client(), "acme");
    modules
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"dra": {"deviceClasses": [{"name": "gpu.example.com"}]}}}),
            ),
        )
        .await
        .expect("one class fewer");
    eventually(120, "the dropped class is deleted", || async {
        let left: BTreeSet<String> = module_classes(&harness)
            .await
            .iter()
            .map(|c| c.name_any())
            .collect();
        left == names(&["gpu.example.com"])
    })
    .await;

    // Deleting the Module takes the driver, its labels and its classes away, then unloads the module.
    modules
        .delete("gpu", &DeleteParams::default())
        .await
        .expect("deleting the Module");
    eventually(600, "the Module is gone", || async {
        module(&harness, "gpu").await.is_none()
    })
    .await;
    assert!(driver_daemon_sets(&harness).await.is_empty());
    assert!(driver_pods(&harness).await.is_empty());
    assert!(module_classes(&harness).await.is_empty());
    assert!(labelled(&harness, &target).await.is_empty());
    assert!(labelled(&harness, &ready).await.is_empty());
    for name in GPU_NODES {
        assert!(loaded_modules(&harness, name).is_empty(), "{name} unloaded");
    }
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn on_a_cluster_older_than_1_34_the_module_loads_and_says_its_driver_needs_1_34() {
    let mut harness = Harness::start_announcing("dra.yaml", Some(33)).await;
    harness.start_engine();
    create_module(&harness, "gpu", spec(None)).await;
    eventually(600, "the module is loaded on the gpu nodes", || async {
        GPU_NODES
            .iter()
            .all(|node| loaded_modules(&harness, node).contains(&KMOD.to_owned()))
    })
    .await;
    eventually(120, "the Module says DRA needs 1.34", || async {
        condition(&harness, "gpu", "DRASupported").await
            == Some((
                "False".to_owned(),
                "DRAUnsupported".to_owned(),
                "DRA needs Kubernetes 1.34 or later; this cluster runs 1.33".to_owned(),
            ))
    })
    .await;
    eventually(60, "a Warning Event says so", || async {
        module_events(&harness, "gpu", "DRAUnsupported")
            .await
            .iter()
            .any(|note| note.contains("needs Kubernetes 1.34"))
    })
    .await;
    // A while later: still no driver, and the one Event.
    tokio::time::sleep(std::time::Duration::from_secs(300)).await;
    assert!(driver_daemon_sets(&harness).await.is_empty());
    assert!(
        labelled(&harness, &labels::dra_target_label("acme", "gpu"))
            .await
            .is_empty()
    );
    assert_eq!(
        module_events(&harness, "gpu", "DRAUnsupported").await.len(),
        1
    );
    // Its finalizer does not trip over the DeviceClasses such a cluster does not serve.
    Api::<Module>::namespaced(harness.client(), "acme")
        .delete("gpu", &DeleteParams::default())
        .await
        .expect("deleting the Module");
    eventually(600, "the Module is gone", || async {
        module(&harness, "gpu").await.is_none()
    })
    .await;
    harness.shutdown().await;
}

/// The module version each driver DaemonSet runs for, with the nodes its pods are on.
async fn drivers_by_version(harness: &Harness) -> Vec<(String, BTreeSet<String>)> {
    let version_label = labels::version_schedule_pod("acme", "gpu");
    let pods = driver_pods(harness).await;
    let mut versions: Vec<(String, BTreeSet<String>)> = driver_daemon_sets(harness)
        .await
        .iter()
        .map(|ds| {
            let version = ds.labels().get(&version_label).cloned().unwrap_or_default();
            let uid = ds.uid().unwrap_or_default();
            let nodes = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter(|p| p.owner_references().iter().any(|o| o.uid == uid))
                .filter_map(|p| p.spec.as_ref()?.node_name.clone())
                .collect();
            (version, nodes)
        })
        .collect();
    versions.sort();
    versions
}

/// Fail if a driver pod is on a node whose machine has the module unloaded: the driver must leave first.
async fn assert_no_driver_without_its_module(harness: &Harness) {
    for pod in driver_pods(harness).await {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        assert!(
            loaded_modules(harness, &node).iter().any(|m| m == KMOD),
            "driver pod {} is on {node}, whose module is unloaded",
            pod.name_any()
        );
    }
}

async fn ask_for_version(harness: &Harness, node: &str, version: &str) {
    Api::<Node>::all(harness.client())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {labels::version_module("acme", "gpu"): version}}}),
            ),
        )
        .await
        .expect("labelling the node with a module version");
}

#[tokio::test(start_paused = true)]
async fn an_ordered_upgrade_moves_the_driver_off_a_node_before_its_module_reloads() {
    let mut harness = Harness::start("dra.yaml").await;
    harness.start_engine();
    for node in GPU_NODES {
        ask_for_version(&harness, node, "v1").await;
    }
    create_module(&harness, "gpu", spec(Some("v1"))).await;
    eventually(600, "the v1 driver runs on both nodes", || async {
        drivers_by_version(&harness).await == vec![("v1".to_owned(), names(&GPU_NODES))]
    })
    .await;

    // The Module moves to v2 and gpu-0 follows: its v1 driver leaves before the module reloads, and the v2 driver
    // comes from a second DaemonSet once the v2 module is loaded.
    Api::<Module>::namespaced(harness.client(), "acme")
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"moduleLoader": {"container": {"version": "v2"}}}})),
        )
        .await
        .expect("the Module moves to v2");
    ask_for_version(&harness, "gpu-0", "v2").await;
    eventually(600, "gpu-0 runs the v2 driver, gpu-1 still v1", || async {
        assert_no_driver_without_its_module(&harness).await;
        drivers_by_version(&harness).await
            == vec![
                ("v1".to_owned(), names(&["gpu-1"])),
                ("v2".to_owned(), names(&["gpu-0"])),
            ]
            && driver_counts(&harness).await == Some((2, 2, 2))
    })
    .await;

    // Once the last node has moved, the v1 DaemonSet runs nowhere and is deleted.
    ask_for_version(&harness, "gpu-1", "v2").await;
    eventually(
        600,
        "only the v2 DaemonSet is left, on both nodes",
        || async {
            assert_no_driver_without_its_module(&harness).await;
            drivers_by_version(&harness).await == vec![("v2".to_owned(), names(&GPU_NODES))]
        },
    )
    .await;
    harness.shutdown().await;
}
