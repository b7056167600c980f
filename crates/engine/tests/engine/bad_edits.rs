//! An edit of a loaded Module that the engine cannot act on (a typo in a mapping's template, a missing pull secret,
//! a missing Dockerfile) takes nothing away: every node keeps its NodeModulesConfig entry, worker pod, labels and
//! loaded module, and the Module says what is wrong (field and value) in its `Degraded` condition and one Event.

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use kmm_api::kmm::{Module, labels};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{Harness, eventually, wait_for};
use super::kmm::*;

const NODES: [&str; 2] = ["kmm-a-0", "kmm-b-0"];

/// One regexp mapping for both kernels of the scenario, as most fleets write it.
fn one_mapping_spec(image: &str) -> serde_json::Value {
    json!({
        "selector": {"kmm": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": "acme_kmod"},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": image}]
        }}
    })
}

/// A Module loaded on both nodes, with what each node runs: (entry image, worker pod UIDs).
async fn loaded_module(harness: &Harness) -> Vec<(Option<String>, Vec<String>)> {
    create_module(
        harness,
        "kmod",
        one_mapping_spec("quay.io/acme/kmod:${KERNEL_FULL_VERSION}"),
    )
    .await;
    for node in NODES {
        eventually(300, &format!("kmod ready on {node}"), || {
            node_ready(harness, node, "kmod")
        })
        .await;
    }
    eventually(300, "kmod Available", || async {
        condition(harness, "kmod", "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    running(harness).await
}

/// What each node runs of the Module: its entry's image and the UIDs of its worker pods.
async fn running(harness: &Harness) -> Vec<(Option<String>, Vec<String>)> {
    let pods = Api::<Pod>::all(harness.client())
        .list(&ListParams::default().labels(labels::MODULE_NAME))
        .await
        .expect("listing worker pods")
        .items;
    let mut running = Vec::new();
    for node in NODES {
        let workers = pods
            .iter()
            .filter(|pod| pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .filter_map(|pod| pod.metadata.uid.clone())
            .collect();
        running.push((entry_image(harness, node, "kmod").await, workers));
    }
    running
}

async fn edit(harness: &Harness, patch: serde_json::Value) {
    Api::<Module>::namespaced(harness.client(), "acme")
        .patch("kmod", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the edit is admitted");
}

/// The `Degraded` message once it is `True` with `reason`.
async fn degraded(harness: &Harness, reason: &str) -> String {
    wait_for(120, &format!("Degraded {reason}"), || async {
        condition(harness, "kmod", "Degraded")
            .await
            .filter(|(status, found, _)| status == "True" && found == reason)
            .map(|(_, _, message)| message)
    })
    .await
}

/// Nothing the nodes run moved, a minute (simulated) after the edit.
async fn nothing_was_taken_away(harness: &Harness, before: &[(Option<String>, Vec<String>)]) {
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert_eq!(
        running(harness).await,
        before,
        "entries and workers as they were"
    );
    for node in NODES {
        assert!(
            loaded_modules(harness, node).contains(&"acme_kmod".to_owned()),
            "acme_kmod still loaded on {node}"
        );
        assert!(
            node_ready(harness, node, "kmod").await,
            "{node} keeps its ready label"
        );
    }
    let unloads: Vec<_> = Api::<Event>::all(harness.client())
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("ModuleUnloaded"))
        .filter_map(|event| event.note)
        .collect();
    assert!(unloads.is_empty(), "nothing was unloaded: {unloads:?}");
}

#[tokio::test(start_paused = true)]
async fn a_template_typo_in_a_loaded_module_unloads_nothing_and_names_the_field() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let before = loaded_module(&harness).await;
    edit(
        &harness,
        json!({"spec": one_mapping_spec("quay.io/acme/kmod:${KERNEL_XYZ")}),
    )
    .await;
    let message = degraded(&harness, "InvalidKernelMapping").await;
    assert!(
        message.contains(
            "spec.moduleLoader.container.kernelMappings[0].containerImage \"quay.io/acme/kmod:${KERNEL_XYZ\""
        ),
        "{message}"
    );
    nothing_was_taken_away(&harness, &before).await;
    let (status, _, available) = condition(&harness, "kmod", "Available")
        .await
        .expect("Available");
    assert_eq!(status, "True", "what runs still runs: {available}");
    assert_eq!(
        module_events(&harness, "kmod", "InvalidKernelMapping")
            .await
            .len(),
        1,
        "one Event, not one per pass"
    );

    // Fixing the typo moves the nodes on to what the spec now says.
    edit(
        &harness,
        json!({"spec": one_mapping_spec("quay.io/acme/kmod:${KERNEL_FULL_VERSION}")}),
    )
    .await;
    eventually(120, "Degraded clears with its cause", || async {
        condition(&harness, "kmod", "Degraded")
            .await
            .is_some_and(|(status, _, _)| status == "False")
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_edit_naming_a_missing_pull_secret_unloads_nothing_until_it_exists() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let before = loaded_module(&harness).await;
    // A new tag for every kernel and a pull secret that is not there.
    let mut spec = one_mapping_spec("quay.io/acme/kmod:${KERNEL_FULL_VERSION}-v2");
    spec["imageRepoSecret"] = json!({"name": "absent-pull-secret"});
    edit(&harness, json!({ "spec": spec })).await;
    let message = degraded(&harness, "InvalidReference").await;
    assert!(
        message.contains(
            "spec.imageRepoSecret.name \"absent-pull-secret\": Secret acme/absent-pull-secret does not exist"
        ),
        "{message}"
    );
    nothing_was_taken_away(&harness, &before).await;
    assert_eq!(
        module_events(&harness, "kmod", "InvalidReference")
            .await
            .len(),
        1,
        "one Event, not one per pass"
    );

    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "absent-pull-secret", "namespace": "acme"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "e30="},
    }))
    .expect("a Secret");
    Api::<Secret>::namespaced(harness.client(), "acme")
        .create(&PostParams::default(), &secret)
        .await
        .expect("the Secret is created");
    eventually(120, "Degraded clears once the Secret exists", || async {
        condition(&harness, "kmod", "Degraded")
            .await
            .is_some_and(|(status, reason, _)| status == "False" || reason != "InvalidReference")
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_edit_whose_dockerfile_is_missing_keeps_the_loaded_image() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let before = loaded_module(&harness).await;
    let mut spec = one_mapping_spec("quay.io/acme/unbuilt:${KERNEL_FULL_VERSION}");
    spec["moduleLoader"]["container"]["kernelMappings"][0]["build"] =
        json!({"dockerfileConfigMap": {"name": "absent-dockerfile"}});
    edit(&harness, json!({ "spec": spec })).await;
    let message = degraded(&harness, "InvalidReference").await;
    assert!(
        message.contains("ConfigMap acme/absent-dockerfile"),
        "{message}"
    );
    nothing_was_taken_away(&harness, &before).await;
    harness.shutdown().await;
}
