//! The day-0 engine on the embedded cluster and its simulated Machine Config Operator: MachineConfigs handed over
//! by label, images proved, built and signed by the KMM pipeline before a MachineConfig names them, pools rolled,
//! cluster upgrades followed only when asked, and a kill in the middle of a build.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kmm_api::day0::{ClusterVersion, MachineConfig, ModuleDay0};
use kmm_api::kmm::ModuleImagesConfig;
use kmm_api::kmm::labels;
use kmm_engine::day0::handover::NAMESPACE;
use kmm_engine::day0::images::mic_name;
use kmm_engine::{self, Family, Settings};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::common::{Harness, PodRecorder, eventually, wait_for};

const MACHINE_CONFIG: &str = "99-worker-kmod-os";
const OS_NOW: &str = "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)";
const IMAGE_NOW: &str = "registry.local/acme/rhcos-kmod:414.92.202312311229-0";
/// Missing until built; boots `OS_NEXT`.
const IMAGE_NEXT: &str = "registry.local/acme/rhcos-kmod:414.92.202402010000-0";
const OS_NEXT: &str = "Red Hat Enterprise Linux CoreOS 414.92.202402010000-0 (Plow)";
/// Its first build fails (a `buildFailure` fault of the scenario).
const IMAGE_BROKEN: &str = "registry.local/acme/rhcos-kmod:414.92.202402020000-0";
const OS_BROKEN: &str = "Red Hat Enterprise Linux CoreOS 414.92.202402020000-0 (Plow)";
/// The layered image rebuilt for release 4.15.3.
const IMAGE_415: &str = "registry.local/acme/rhcos-kmod:4.15.3";
const OS_415: &str = "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)";
const OS_AUTO_415: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4150000000000000000000000000000000000000000000000000000000000000";
const WORKER: &str = "node-role.kubernetes.io/worker";

/// The day0 test cluster with only the day-0 family running (it brings the image pipeline along).
async fn start() -> Harness {
    let mut harness = Harness::start("day0.yaml").await;
    start_day0(&mut harness);
    harness
}

fn start_day0(harness: &mut Harness) {
    harness.start_with(|ctx, stop| {
        let settings = Settings {
            families: [Family::Day0].into(),
            ..Settings::default()
        };
        kmm_engine::run_reconcilers(Arc::new((*ctx).clone().with_settings(settings)), stop)
    });
}

fn day0s(client: &Client) -> Api<ModuleDay0> {
    Api::namespaced(client.clone(), NAMESPACE)
}

async fn label_machine_config(client: &Client, managed: bool) {
    let value = if managed { json!("true") } else { Value::Null };
    Api::<MachineConfig>::all(client.clone())
        .patch(
            MACHINE_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"machineconfiguration.openshift.io/kmm-managed": value}}})),
        )
        .await
        .expect("label the MachineConfig");
}

async fn os_image_url(client: &Client) -> Option<String> {
    Api::<MachineConfig>::all(client.clone())
        .get(MACHINE_CONFIG)
        .await
        .expect("the MachineConfig")
        .spec
        .os_image_url
}

/// Label the MachineConfig and wait for its ModuleDay0.
async fn hand_over(client: &Client) -> ModuleDay0 {
    label_machine_config(client, true).await;
    let api = day0s(client);
    wait_for(
        30,
        "the ModuleDay0 of the labelled MachineConfig",
        || async { api.get_opt(MACHINE_CONFIG).await.expect("get") },
    )
    .await
}

/// Point the handed-over ModuleDay0 at `image` for `os`, built from the scenario's Dockerfile.
async fn map_to_built(client: &Client, os: &str, image: &str, trigger: bool) {
    let patch = json!({"spec": {"osMapping": {
        "literal": os,
        "containerImage": image,
        "build": {"dockerfileConfigMap": {"name": "kmod-os-dockerfile"}},
        "clusterUpgradeTriggerNodeUpgrade": trigger,
    }}});
    day0s(client)
        .patch(
            MACHINE_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .expect("edit the ModuleDay0");
}

/// (status, reason, message) of condition `type_` of the ModuleDay0 `name`.
async fn condition(client: &Client, name: &str, type_: &str) -> Option<(String, String, String)> {
    let day0 = day0s(client).get_opt(name).await.ok()??;
    let status = day0.status?;
    if status.observed_generation != day0.metadata.generation {
        return None;
    }
    let c = status.conditions.into_iter().find(|c| c.type_ == type_)?;
    Some((c.status, c.reason, c.message))
}

async fn wait_condition(
    client: &Client,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> String {
    let what = format!("ModuleDay0 {name}: {type_}={status} ({reason})");
    wait_for(120, &what, || async {
        condition(client, name, type_)
            .await
            .filter(|(s, r, _)| s == status && r == reason)
            .map(|(_, _, message)| message)
    })
    .await
}

async fn worker_os_images(client: &Client) -> BTreeSet<String> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels(WORKER))
        .await
        .expect("nodes")
        .items
        .iter()
        .filter_map(|n| Some(n.status.as_ref()?.node_info.as_ref()?.os_image.clone()))
        .collect()
}

async fn wait_workers_on(client: &Client, os: &str) {
    let what = format!("every worker reports {os}");
    eventually(180, &what, || async {
        worker_os_images(client).await == BTreeSet::from([os.to_owned()])
    })
    .await;
}

/// Reasons of the events about the ModuleDay0 `name`.
async fn day0_event_reasons(client: &Client, name: &str) -> BTreeSet<String> {
    Api::<Event>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("ModuleDay0") && r.name.as_deref() == Some(name)
            })
        })
        .filter_map(|e| e.reason)
        .collect()
}

fn build_pods(client: &Client) -> PodRecorder {
    PodRecorder::start(
        client.clone(),
        &format!("{}=BuildImage", labels::RESOURCE_TYPE),
        |pod: &Pod| pod.name_any(),
    )
}

#[tokio::test(start_paused = true)]
async fn a_label_hands_a_machine_config_over_and_a_second_module_day0_never_acts() {
    let harness = start().await;
    let client = harness.client();

    let day0 = hand_over(&client).await;
    assert_eq!(day0.spec.os_mapping.literal, OS_NOW);
    assert_eq!(day0.spec.os_mapping.container_image, IMAGE_NOW);
    assert_eq!(
        day0.spec.machine_config_pool_selector,
        [(WORKER.to_owned(), String::new())].into()
    );
    assert!(
        day0.metadata.owner_references.is_none(),
        "owned by nothing a user deletes by accident"
    );
    let message = wait_condition(&client, MACHINE_CONFIG, "Available", "True", "Applied").await;
    assert!(message.contains("all 2 nodes of pool worker"), "{message}");
    let recorded = day0s(&client)
        .get(MACHINE_CONFIG)
        .await
        .expect("get")
        .status
        .expect("status");
    assert_eq!(recorded.machine_config.as_deref(), Some(MACHINE_CONFIG));

    let second: ModuleDay0 = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleDay0",
        "metadata": {"name": "second", "namespace": NAMESPACE},
        "spec": {
            "osMapping": {"literal": OS_NEXT, "containerImage": IMAGE_NEXT,
                          "build": {"dockerfileConfigMap": {"name": "kmod-os-dockerfile"}}},
            "machineConfigPoolSelector": {WORKER: ""},
        },
    }))
    .expect("ModuleDay0");
    day0s(&client)
        .create(&PostParams::default(), &second)
        .await
        .expect("create");
    let message = wait_condition(&client, "second", "Degraded", "True", "PoolAlreadyManaged").await;
    assert!(
        message.contains(&format!("{NAMESPACE}/{MACHINE_CONFIG}")),
        "{message}"
    );
    let mics: Api<ModuleImagesConfig> = Api::namespaced(client.clone(), NAMESPACE);
    assert!(
        mics.get_opt(&mic_name("second"))
            .await
            .expect("get")
            .is_none(),
        "the second one starts no image work"
    );
    assert_eq!(os_image_url(&client).await.as_deref(), Some(IMAGE_NOW));

    label_machine_config(&client, false).await;
    eventually(30, "the ModuleDay0 goes with the label", || async {
        day0s(&client)
            .get_opt(MACHINE_CONFIG)
            .await
            .expect("get")
            .is_none()
    })
    .await;
    wait_condition(&client, "second", "Degraded", "True", "NoMachineConfig").await;
    assert!(
        mics.get_opt(&mic_name("second"))
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        os_image_url(&client).await.as_deref(),
        Some(IMAGE_NOW),
        "the MachineConfig stays as it is"
    );
    harness.shutdown().await;
}

// Real time on two threads, unlike its neighbours on paused time: the kill lands while passes race each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_is_built_once_through_a_kill_then_the_pool_rolls_onto_it() {
    let mut harness = start().await;
    let client = harness.client();
    let builds = build_pods(&client);
    hand_over(&client).await;
    map_to_built(&client, OS_NEXT, IMAGE_NEXT, false).await;

    wait_condition(&client, MACHINE_CONFIG, "Progressing", "True", "Building").await;
    assert_eq!(
        os_image_url(&client).await.as_deref(),
        Some(IMAGE_NOW),
        "never before the image exists"
    );
    harness.kill_engine().await;
    start_day0(&mut harness);

    eventually(120, "the MachineConfig names the built image", || async {
        os_image_url(&client).await.as_deref() == Some(IMAGE_NEXT)
    })
    .await;
    let message = wait_condition(&client, MACHINE_CONFIG, "Progressing", "True", "Rolling").await;
    assert!(message.contains("of 2 nodes updated to"), "{message}");
    wait_workers_on(&client, OS_NEXT).await;
    let message = wait_condition(&client, MACHINE_CONFIG, "Available", "True", "Applied").await;
    assert!(message.contains(IMAGE_NEXT), "{message}");
    eventually(
        30,
        "OsImageApplied, Rolling and Applied events (the kill may have cut the Building one short)",
        || async {
            let reasons = day0_event_reasons(&client, MACHINE_CONFIG).await;
            ["OsImageApplied", "Rolling", "Applied"]
                .iter()
                .all(|reason| reasons.contains(*reason))
        },
    )
    .await;
    let status = day0s(&client)
        .get(MACHINE_CONFIG)
        .await
        .expect("get")
        .status
        .expect("status");
    assert_eq!(status.applied_image.as_deref(), Some(IMAGE_NEXT));
    assert_eq!(
        builds.record().created.len(),
        1,
        "one build: {:?}",
        builds.record().created
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_signed_image_is_built_then_signed_before_the_machine_config_names_it() {
    let harness = start().await;
    let client = harness.client();
    let builds = build_pods(&client);
    let signs = PodRecorder::start(
        client.clone(),
        &format!("{}=SignImage", labels::RESOURCE_TYPE),
        |pod: &Pod| pod.name_any(),
    );
    hand_over(&client).await;
    let patch = json!({"spec": {"osMapping": {
        "literal": OS_NEXT,
        "containerImage": IMAGE_NEXT,
        "build": {"dockerfileConfigMap": {"name": "kmod-os-dockerfile"}},
        "sign": {
            "unsignedImage": format!("{IMAGE_NEXT}-unsigned"),
            "keySecret": {"name": "signing-key"},
            "certSecret": {"name": "signing-cert"},
            "filesToSign": ["/opt/lib/modules/5.14.0-284.52.1.el9_2.x86_64/acme.ko"],
        },
    }}});
    day0s(&client)
        .patch(
            MACHINE_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .expect("edit the ModuleDay0");

    eventually(120, "the MachineConfig names the signed image", || async {
        os_image_url(&client).await.as_deref() == Some(IMAGE_NEXT)
    })
    .await;
    assert_eq!(builds.record().created.len(), 1);
    assert_eq!(
        signs.record().created.len(),
        1,
        "signed before the MachineConfig moved"
    );
    wait_workers_on(&client, OS_NEXT).await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_build_leaves_the_machine_config_alone_and_says_why() {
    let harness = start().await;
    let client = harness.client();
    hand_over(&client).await;
    map_to_built(&client, OS_BROKEN, IMAGE_BROKEN, false).await;

    let message = wait_condition(&client, MACHINE_CONFIG, "Degraded", "True", "BuildFailed").await;
    assert!(message.contains("exit status 2"), "{message}");
    assert!(
        message.contains(&format!("left on {IMAGE_NOW}")),
        "{message}"
    );
    assert_eq!(os_image_url(&client).await.as_deref(), Some(IMAGE_NOW));
    eventually(30, "a BuildFailed event on the ModuleDay0", || async {
        day0_event_reasons(&client, MACHINE_CONFIG)
            .await
            .contains("BuildFailed")
    })
    .await;
    assert_eq!(
        worker_os_images(&client).await,
        BTreeSet::from([OS_NOW.to_owned()])
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cluster_upgrade_rebuilds_and_rolls_the_pool_only_when_opted_in() {
    let harness = start().await;
    let client = harness.client();
    let builds = build_pods(&client);
    hand_over(&client).await;
    map_to_built(&client, OS_NOW, IMAGE_NOW, false).await;
    wait_condition(&client, MACHINE_CONFIG, "Available", "True", "Applied").await;

    Api::<ClusterVersion>::all(client.clone())
        .patch(
            "version",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"desiredUpdate": {"version": "4.15.3"}}})),
        )
        .await
        .expect("start the upgrade");
    let message = wait_condition(
        &client,
        MACHINE_CONFIG,
        "Available",
        "True",
        "LayeredImageKept",
    )
    .await;
    assert!(
        message.contains("4.15.3") && message.contains(IMAGE_NOW),
        "{message}"
    );
    assert_eq!(os_image_url(&client).await.as_deref(), Some(IMAGE_NOW));
    assert!(
        builds.record().created.is_empty(),
        "no build without opting in"
    );

    map_to_built(&client, OS_NOW, IMAGE_NOW, true).await;
    let build = wait_for(60, "a build for the new release", || async {
        let pods = Api::<Pod>::namespaced(client.clone(), NAMESPACE)
            .list(&ListParams::default().labels(&format!("{}=BuildImage", labels::RESOURCE_TYPE)))
            .await
            .expect("pods");
        pods.items.into_iter().next()
    })
    .await;
    let args = serde_json::to_string(&build.spec.expect("spec").containers[0].args).expect("args");
    assert!(args.contains(&format!("OS_AUTO={OS_AUTO_415}")), "{args}");
    assert!(
        args.contains("DTK_AUTO=quay.io/openshift-release-dev/driver-toolkit:4.15.3"),
        "{args}"
    );
    assert!(args.contains(IMAGE_415), "{args}");
    eventually(120, "the MachineConfig names the rebuilt image", || async {
        os_image_url(&client).await.as_deref() == Some(IMAGE_415)
    })
    .await;
    wait_workers_on(&client, OS_415).await;
    wait_condition(&client, MACHINE_CONFIG, "Available", "True", "Applied").await;
    assert_eq!(builds.record().created.len(), 1);
    harness.shutdown().await;
}

// Real time: on paused time the demo's simulation would race ahead of the engine without end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_scenarios_hand_their_labelled_machine_configs_over() {
    // The demo's zone-b pool runs a 4.15 image on a 4.14 cluster: it keeps its layered image.
    for (scenario, config, reason, says) in [
        (
            "day0",
            MACHINE_CONFIG,
            "Applied",
            "all 6 nodes of pool worker",
        ),
        (
            "demo",
            "99-zone-b-os-image",
            "LayeredImageKept",
            "the pool stays on the layered image",
        ),
    ] {
        let mut harness = Harness::start(scenario).await;
        start_day0(&mut harness);
        let client = harness.client();
        let what = format!("{scenario}: ModuleDay0 {config} is Available ({reason})");
        let message = wait_for(60, &what, || async {
            condition(&client, config, "Available")
                .await
                .filter(|(s, r, _)| s == "True" && r == reason)
                .map(|(_, _, m)| m)
        })
        .await;
        assert!(message.contains(says), "{scenario}: {message}");
        harness.shutdown().await;
    }
}

/// A rebuild (a raised image generation in the ModuleDay0's ModuleImagesConfig, as the console writes it) is kept by
/// the engine and builds a failed image again, which the pool then rolls onto; before it, the ModuleDay0 stays
/// degraded.
#[tokio::test(start_paused = true)]
async fn a_rebuild_builds_a_failed_image_again_and_the_pool_rolls_onto_it() {
    let harness = start().await;
    let client = harness.client();
    hand_over(&client).await;
    map_to_built(&client, OS_BROKEN, IMAGE_BROKEN, false).await;
    wait_condition(&client, MACHINE_CONFIG, "Degraded", "True", "BuildFailed").await;
    let mics: Api<ModuleImagesConfig> = Api::namespaced(client.clone(), NAMESPACE);
    let mic = mics.get(&mic_name(MACHINE_CONFIG)).await.expect("the MIC");
    let mut images = mic.spec.images.clone();
    images[0].generation = Some(images[0].generation.unwrap_or(1) + 1);
    mics.patch(
        &mic_name(MACHINE_CONFIG),
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"images": images}})),
    )
    .await
    .expect("the rebuild is written");

    wait_workers_on(&client, OS_BROKEN).await;
    assert_eq!(os_image_url(&client).await.as_deref(), Some(IMAGE_BROKEN));
    wait_condition(&client, MACHINE_CONFIG, "Available", "True", "Applied").await;
    harness.shutdown().await;
}

/// Events with `reason` about the MachineConfig.
async fn machine_config_events(client: &Client, reason: &str) -> Vec<Event> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("MachineConfig")
                        && r.name.as_deref() == Some(MACHINE_CONFIG)
                })
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_missing_namespace_is_told_once_on_the_machine_config_and_the_hand_over_follows_its_creation()
 {
    let mut harness = Harness::start("day0.yaml").await;
    let client = harness.client();
    let namespaces = Api::<Namespace>::all(client.clone());
    namespaces
        .delete(NAMESPACE, &DeleteParams::default())
        .await
        .expect("the namespace is deleted");
    eventually(60, "the namespace is gone", || async {
        namespaces.get_opt(NAMESPACE).await.expect("get").is_none()
    })
    .await;
    start_day0(&mut harness);
    label_machine_config(&client, true).await;

    let note = wait_for(60, "an Event saying the namespace is missing", || async {
        machine_config_events(&client, "NamespaceMissing")
            .await
            .into_iter()
            .find_map(|e| e.note)
    })
    .await;
    assert!(
        note.contains(&format!("kubectl create namespace {NAMESPACE}")),
        "{note}"
    );
    // Two minutes of retries later: still one Event, published once.
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
    let told = machine_config_events(&client, "NamespaceMissing").await;
    assert_eq!(told.len(), 1, "{told:#?}");
    assert!(told[0].series.is_none(), "{:?}", told[0].series);
    assert!(
        day0s(&client)
            .get_opt(MACHINE_CONFIG)
            .await
            .expect("get")
            .is_none()
    );

    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the namespace is created");
    wait_for(400, "the hand-over once the namespace exists", || async {
        day0s(&client).get_opt(MACHINE_CONFIG).await.expect("get")
    })
    .await;
    assert_eq!(
        machine_config_events(&client, "ModuleDay0Created")
            .await
            .len(),
        1
    );
    harness.shutdown().await;
}
