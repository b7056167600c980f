//! The kernels of the cluster's OS images, read on the cluster: one short pod per image named by a MachineConfig or
//! the release, the answer recorded in `openshift-kmm/kmm-tui-os-image-kernels`, no pod left behind, images no
//! longer named dropped — under the RBAC the controller is installed with, and across a kill in the middle.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kmm_api::day0::MachineConfig;
use kmm_api::kmm::os_image_kernels::{
    self, CONFIG_MAP, IMAGE_ANNOTATION, NAMESPACE, OsImageKernel, POD_LABEL,
};
use kmm_engine::runtime::rbac::EngineRbac;
use kmm_engine::{Context, Family, PodImages, Settings};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::common::{Harness, PodRecorder, eventually, wait_for};

/// The layered image MachineConfig `99-worker-kmod-os` names, in the registry.
const IMAGE_NOW: &str = "registry.local/acme/rhcos-kmod:414.92.202312311229-0";
/// The release the cluster is at, and its OS image.
const RELEASE_414: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4140000000000000000000000000000000000000000000000000000000000000";
/// The next release's OS image: a kernel no node runs.
const RELEASE_415: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4150000000000000000000000000000000000000000000000000000000000000";
/// A layered image not built yet: it cannot be pulled.
const IMAGE_NEXT: &str = "registry.local/acme/rhcos-kmod:414.92.202402010000-0";
const KERNEL_414: &str = "5.14.0-284.30.1.el9_2.x86_64";
const KERNEL_415: &str = "5.14.0-362.8.1.el9_3.x86_64";

fn day0_only() -> Settings {
    Settings {
        families: [Family::Day0].into(),
        ..Settings::default()
    }
}

/// A MachineConfig of a role no pool selects, so naming an image rolls no node.
async fn name_image(client: &Client, name: &str, image: &str) {
    let config: MachineConfig = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "infra"}},
        "spec": {"osImageURL": image},
    }))
    .expect("a MachineConfig");
    Api::<MachineConfig>::all(client.clone())
        .create(&PostParams::default(), &config)
        .await
        .expect("the MachineConfig is created");
}

/// The record, by image.
async fn recorded(client: &Client) -> BTreeMap<String, OsImageKernel> {
    let record = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .get_opt(CONFIG_MAP)
        .await
        .expect("reading the record");
    os_image_kernels::parse(record.as_ref().and_then(|r| r.data.as_ref()))
        .expect("the record parses")
        .into_iter()
        .map(|entry| (entry.image.clone(), entry))
        .collect()
}

async fn readers(client: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(POD_LABEL))
        .await
        .expect("listing pods")
        .items
}

fn record_readers(client: &Client) -> PodRecorder {
    PodRecorder::start(client.clone(), POD_LABEL, |pod: &Pod| {
        pod.annotations()
            .get(IMAGE_ANNOTATION)
            .cloned()
            .unwrap_or_default()
    })
}

fn assert_one_pod_per_image(recorder: &PodRecorder) {
    let record = recorder.record();
    let mut names = record.created.clone();
    names.sort();
    names.dedup();
    assert_eq!(
        names.len(),
        record.created.len(),
        "a pod created twice: {:?}",
        record.created
    );
    assert!(
        record.most_alive.values().all(|most| *most <= 1),
        "two pods for one image: {:?}",
        record.most_alive
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_config_s_os_image_gets_its_kernel_recorded_and_no_pod_is_left() {
    let mut harness = Harness::start("day0.yaml").await;
    let client = harness.client();
    let rbac = EngineRbac::for_families(&crate::rbac::lease(), &[Family::Day0]);
    let token = crate::rbac::install(&harness, &rbac).await;
    let engine_client = harness
        .cluster
        .client_with_token(&token)
        .expect("a client presenting the token");
    harness.start_context(
        Context::new(engine_client, PodImages::default(), Some("test".into()))
            .with_settings(day0_only()),
    );
    let pods = record_readers(&client);
    name_image(&client, "99-infra-next-os", RELEASE_415).await;
    name_image(&client, "99-infra-unbuilt-os", IMAGE_NEXT).await;

    let record = wait_for(120, "every named image answered", || async {
        let record = recorded(&client).await;
        (record.len() == 4 && record.values().all(OsImageKernel::resolved)).then_some(record)
    })
    .await;
    let kernel = |image: &str| record[image].kernel.clone();
    assert_eq!(
        kernel(RELEASE_415).as_deref(),
        Some(KERNEL_415),
        "{record:?}"
    );
    assert_eq!(
        record[RELEASE_415].named_by,
        ["MachineConfig 99-infra-next-os"]
    );
    assert_eq!(kernel(IMAGE_NOW).as_deref(), Some(KERNEL_414));
    assert_eq!(
        record[IMAGE_NOW].named_by,
        ["MachineConfig 99-worker-kmod-os"]
    );
    assert_eq!(kernel(RELEASE_414).as_deref(), Some(KERNEL_414));
    assert_eq!(record[RELEASE_414].named_by, ["release 4.14.12"]);
    let failure = record[IMAGE_NEXT].failure.clone().unwrap_or_default();
    assert!(
        failure.contains("ErrImagePull") || failure.contains("ImagePullBackOff"),
        "{failure}"
    );
    assert_eq!(record[IMAGE_NEXT].kernel, None);

    eventually(60, "no reading pod is left", || async {
        readers(&client).await.is_empty()
    })
    .await;
    assert_one_pod_per_image(&pods);

    Api::<MachineConfig>::all(client.clone())
        .delete("99-infra-next-os", &DeleteParams::default())
        .await
        .expect("the MachineConfig is deleted");
    eventually(
        60,
        "the image no longer named leaves the record",
        || async {
            let record = recorded(&client).await;
            record.len() == 3 && !record.contains_key(RELEASE_415)
        },
    )
    .await;
    assert_one_pod_per_image(&pods);
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_reading_and_restarted_it_converges_without_a_second_pod() {
    let mut harness = Harness::start("day0.yaml").await;
    let client = harness.client();
    let pods = record_readers(&client);
    let start = |harness: &mut Harness| {
        let context = (*harness.context()).clone().with_settings(day0_only());
        harness.start_context(context);
    };
    start(&mut harness);
    name_image(&client, "99-infra-next-os", RELEASE_415).await;
    wait_for(60, "a reading pod", || async {
        readers(&client).await.into_iter().next()
    })
    .await;
    harness.kill_engine().await;
    start(&mut harness);

    eventually(120, "the next release's kernel is recorded", || async {
        recorded(&client)
            .await
            .get(RELEASE_415)
            .is_some_and(|entry| entry.kernel.as_deref() == Some(KERNEL_415))
    })
    .await;
    eventually(60, "no reading pod is left", || async {
        readers(&client).await.is_empty()
    })
    .await;
    assert_one_pod_per_image(&pods);
    harness.shutdown().await;
}

/// An engine that may not list MachineConfigs (a role without them) cannot read the OS images; told to stop while
/// its pass on the cluster's ClusterVersion waits for that list, it stops at once rather than at its shutdown limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_cannot_list_machine_configs_still_stops_at_once() {
    let mut harness = Harness::start("day0.yaml").await;
    let mut rbac = EngineRbac::for_families(&crate::rbac::lease(), &[Family::Day0]);
    if let Some(rules) = rbac.cluster_role.rules.as_mut() {
        for rule in rules.iter_mut() {
            if let Some(resources) = rule.resources.as_mut() {
                resources.retain(|resource| resource != "machineconfigs");
            }
        }
        rules.retain(|rule| rule.resources.as_ref().is_none_or(|r| !r.is_empty()));
    }
    let token = crate::rbac::install(&harness, &rbac).await;
    let engine_client = harness
        .cluster
        .client_with_token(&token)
        .expect("a client presenting the token");
    harness.start_context(
        Context::new(engine_client, PodImages::default(), Some("test".into()))
            .with_settings(day0_only()),
    );
    // Long enough for the ClusterVersion to be listed and its pass to start waiting for the MachineConfigs.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stopped = tokio::time::timeout(Duration::from_secs(10), harness.stop_engine()).await;
    assert!(
        stopped.is_ok(),
        "the engine still runs 10 s after it was told to stop"
    );
    harness.shutdown().await;
}
