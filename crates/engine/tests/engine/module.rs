//! The whole engine on simulated nodes: Modules reach their nodes through MICs, builds, signs, NMCs and workers,
//! and explain themselves when they cannot.

use k8s_openapi::api::core::v1::{Node, Pod};
use kmm_api::kmm::labels;
use kmm_api::kmm::{ImageState, ModuleImagesConfig};
use kmm_engine::runtime::object_names;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::json;

use super::common::{Harness, PodRecorder, eventually, wait_for};
use super::kmm::*;

const KERNEL_A: &str = "5.14.0-284.30.1.el9_2.x86_64";
const KERNEL_B: &str = "5.14.0-362.8.1.el9_3.x86_64";

fn image(kernel: &str) -> String {
    format!("quay.io/acme/kmod:{kernel}")
}

/// A Module for both kernels of the scenario: a literal mapping for kernel A and a regexp for kernel B.
fn two_mapping_spec() -> serde_json::Value {
    json!({
        "selector": {"kmm": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": "acme_kmod"},
            "kernelMappings": [
                {"literal": KERNEL_A, "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"},
                {"regexp": "^.+\\.el9_3\\..+$", "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"}
            ]
        }}
    })
}

/// A Module whose kernel-B image must be built (and, with `sign`, signed) first.
fn build_spec(image_repo: &str, sign: bool) -> serde_json::Value {
    let mut mapping = json!({
        "regexp": "^.+\\.el9_3\\..+$",
        "containerImage": format!("{image_repo}:${{KERNEL_FULL_VERSION}}"),
        "build": {"dockerfileConfigMap": {"name": "kmod-dockerfile"}},
    });
    if sign {
        mapping["sign"] = json!({
            "keySecret": {"name": "signing-key"},
            "certSecret": {"name": "signing-cert"},
            "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/acme_kmod.ko"],
        });
    }
    json!({
        "selector": {"kmm": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": "acme_kmod"},
            "kernelMappings": [
                {"literal": KERNEL_A, "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"},
                mapping
            ]
        }}
    })
}

async fn wait_loaded_everywhere(harness: &Harness, name: &str, nodes: &[&str], secs: u64) {
    for node in nodes {
        eventually(secs, &format!("{name} ready on {node}"), || {
            node_ready(harness, node, name)
        })
        .await;
    }
    eventually(secs, &format!("{name} Available"), || async {
        condition(harness, name, "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_module_with_two_kernel_mappings_reaches_nodes_on_both_kernels() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let workers = PodRecorder::start(harness.client(), labels::WORKER_ACTION, |pod| {
        pod.metadata.name.clone().unwrap_or_default()
    });
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;

    let mic = mic(&harness, "kmod").await.expect("one MIC per Module");
    let mut images: Vec<&str> = mic
        .spec
        .images
        .iter()
        .map(|i| i.spec.image.as_str())
        .collect();
    images.sort();
    assert_eq!(images, [image(KERNEL_A), image(KERNEL_B)]);
    assert!(
        mic.status
            .as_ref()
            .expect("MIC status")
            .images_states
            .iter()
            .all(|s| s.status == ImageState::Exists)
    );
    assert_eq!(
        entry_image(&harness, "kmm-a-0", "kmod").await,
        Some(image(KERNEL_A))
    );
    assert_eq!(
        entry_image(&harness, "kmm-b-0", "kmod").await,
        Some(image(KERNEL_B))
    );
    assert!(
        nmc(&harness, "other-0").await.is_none(),
        "an unselected node gets no NMC"
    );
    assert!(loaded_modules(&harness, "kmm-a-0").contains(&"acme_kmod".to_owned()));
    assert!(loaded_modules(&harness, "kmm-b-0").contains(&"acme_kmod".to_owned()));
    let created = workers.record().created;
    for node in ["kmm-a-0", "kmm-b-0"] {
        assert!(
            created.contains(&object_names::worker_pod_name(node, "kmod")),
            "a worker pod loaded the module on {node}: {created:?}"
        );
    }

    let status = module(&harness, "kmod")
        .await
        .and_then(|m| m.status)
        .expect("status");
    let counts = status.module_loader.expect("moduleLoader counters");
    assert_eq!(
        (
            counts.nodes_matching_selector_number,
            counts.desired_number,
            counts.available_number
        ),
        (2, 2, 2)
    );
    let (_, reason, message) = condition(&harness, "kmod", "Available")
        .await
        .expect("Available");
    assert_eq!(reason, "Loaded");
    assert_eq!(message, "loaded on 2 of 2 targeted nodes");
    eventually(30, "a ModuleLoaded event on the Module", || async {
        module_events(&harness, "kmod", "ModuleLoaded")
            .await
            .iter()
            .any(|note| note == "Loaded into the kernel on every node that has an entry")
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_image_with_a_build_section_is_built_then_loaded() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let builds = PodRecorder::start(
        harness.client(),
        &format!("{}=BuildImage", labels::RESOURCE_TYPE),
        |pod| pod.metadata.name.clone().unwrap_or_default(),
    );
    create_module(&harness, "kmod", build_spec("quay.io/acme/built", false)).await;
    let built = format!("quay.io/acme/built:{KERNEL_B}");
    eventually(
        120,
        "the image is found missing and needs building",
        || async { image_state(&harness, "kmod", &built).await == Some(ImageState::NeedsBuilding) },
    )
    .await;
    // The other kernel's image may still be under its pull check; the Module
    // reports the missing image once its status catches up with the MIC.
    let message = wait_for(120, "Available names the missing image", || async {
        condition(&harness, "kmod", "Available")
            .await
            .filter(|(_, reason, _)| reason == "ImageMissing")
            .map(|(_, _, message)| message)
    })
    .await;
    assert!(
        message.contains(&format!("{built} NeedsBuilding")),
        "{message}"
    );
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 600).await;
    assert_eq!(
        image_state(&harness, "kmod", &built).await,
        Some(ImageState::Exists)
    );
    assert_eq!(entry_image(&harness, "kmm-b-0", "kmod").await, Some(built));
    assert_eq!(builds.record().created.len(), 1, "one build");
    harness.shutdown().await;
}

/// A build whose Dockerfile ConfigMap does not exist never starts: the Module says which ConfigMap to create
/// (`Degraded`, reason `InvalidReference`, one Warning Event), and once it exists the image is built and loaded.
#[tokio::test(start_paused = true)]
async fn a_build_whose_dockerfile_is_missing_says_what_to_create_and_goes_on_once_it_exists() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let mut spec = build_spec("quay.io/acme/unbuilt", false);
    spec["moduleLoader"]["container"]["kernelMappings"][1]["build"]["dockerfileConfigMap"]["name"] =
        json!("absent-dockerfile");
    create_module(&harness, "kmod", spec).await;
    let message = wait_for(120, "Degraded names the missing ConfigMap", || async {
        condition(&harness, "kmod", "Degraded")
            .await
            .filter(|(status, reason, _)| status == "True" && reason == "InvalidReference")
            .map(|(_, _, message)| message)
    })
    .await;
    assert!(
        message.contains("ConfigMap acme/absent-dockerfile"),
        "{message}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
    let told = module_events(&harness, "kmod", "InvalidReference").await;
    assert_eq!(told.len(), 1, "one Event, not one per pass: {told:?}");

    let config_map: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "absent-dockerfile", "namespace": "acme"},
        "data": {"dockerfile": "FROM quay.io/acme/base-builder:9.3\nRUN make"},
    }))
    .expect("a ConfigMap");
    Api::namespaced(harness.client(), "acme")
        .create(&PostParams::default(), &config_map)
        .await
        .expect("the ConfigMap is created");
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 600).await;
    assert!(
        condition(&harness, "kmod", "Degraded")
            .await
            .is_some_and(|(status, _, _)| status == "False"),
        "Degraded clears with its cause"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_image_without_a_build_section_is_explained_and_gets_no_entry() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let mut spec = two_mapping_spec();
    spec["moduleLoader"]["container"]["kernelMappings"][1]["containerImage"] =
        json!("quay.io/acme/nobody-built-this:${KERNEL_FULL_VERSION}");
    create_module(&harness, "kmod", spec).await;
    let missing = format!("quay.io/acme/nobody-built-this:{KERNEL_B}");
    eventually(300, "kmod ready on kmm-a-0", || {
        node_ready(&harness, "kmm-a-0", "kmod")
    })
    .await;
    let message = wait_for(300, "a Degraded condition naming the image", || async {
        condition(&harness, "kmod", "Degraded")
            .await
            .filter(|(status, reason, _)| status == "True" && reason == "ImageMissing")
            .map(|(_, _, message)| message)
    })
    .await;
    assert!(message.contains(&missing), "{message}");
    assert!(message.contains("no build section"), "{message}");
    assert_eq!(
        entry_image(&harness, "kmm-b-0", "kmod").await,
        None,
        "no entry without an image"
    );
    assert!(!node_ready(&harness, "kmm-b-0", "kmod").await);
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_image_with_build_and_sign_is_built_signed_then_loaded() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let work = PodRecorder::start(harness.client(), labels::RESOURCE_TYPE, |pod| {
        pod.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::RESOURCE_TYPE).cloned())
            .unwrap_or_default()
    });
    create_module(&harness, "kmod", build_spec("quay.io/acme/signed", true)).await;
    let signed = format!("quay.io/acme/signed:{KERNEL_B}");
    eventually(600, "the image needs signing after its build", || async {
        image_state(&harness, "kmod", &signed).await == Some(ImageState::NeedsSigning)
    })
    .await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 900).await;
    let record = work.record();
    assert_eq!(record.most_alive.get("BuildImage"), Some(&1), "{record:?}");
    assert_eq!(record.most_alive.get("SignImage"), Some(&1), "{record:?}");
    let build_at = record.created.iter().position(|n| n.contains("-build-"));
    let sign_at = record.created.iter().position(|n| n.contains("-sign-"));
    assert!(
        build_at < sign_at && build_at.is_some(),
        "build, then sign: {:?}",
        record.created
    );
    assert_eq!(entry_image(&harness, "kmm-b-0", "kmod").await, Some(signed));
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_kernel_upgrade_moves_the_module_and_leaves_nothing_for_the_old_kernel() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    let configs = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "MachineConfig"),
        "machineconfigs",
    );
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "99-worker-os", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"osImageURL": "quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000"}
    }))
    .expect("a MachineConfig");
    Api::<DynamicObject>::all_with(harness.client(), &configs)
        .create(&PostParams::default(), &config)
        .await
        .expect("the MachineConfig is created");
    eventually(
        1800,
        "kmm-a-0 runs the new kernel with the new image loaded",
        || async {
            entry_image(&harness, "kmm-a-0", "kmod").await == Some(image(KERNEL_B))
                && node_ready(&harness, "kmm-a-0", "kmod").await
                && nmc(&harness, "kmm-a-0").await.is_some_and(|n| {
                    n.status.is_some_and(|s| {
                        s.modules.iter().all(|m| {
                            m.config
                                .as_ref()
                                .is_some_and(|c| c.kernel_version == KERNEL_B)
                        })
                    })
                })
        },
    )
    .await;
    assert!(loaded_modules(&harness, "kmm-a-0").contains(&"acme_kmod".to_owned()));
    eventually(300, "the MIC lists only the new kernel's image", || async {
        mic(&harness, "kmod")
            .await
            .is_some_and(|m: ModuleImagesConfig| {
                m.spec
                    .images
                    .iter()
                    .map(|i| i.spec.image.clone())
                    .collect::<Vec<_>>()
                    == [image(KERNEL_B)]
            })
    })
    .await;
    let pods: Api<Pod> = Api::all(harness.client());
    let leftovers: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
        .into_iter()
        .filter(|p| {
            p.spec.as_ref().is_some_and(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
                    .any(|c| c.image.as_deref() == Some(image(KERNEL_A).as_str()))
            })
        })
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(
        leftovers.is_empty(),
        "pods for the old kernel remain: {leftovers:?}"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_rebooted_node_gets_its_module_loaded_again() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    let boot_id = power_cycle(&harness, "kmm-a-0");
    assert!(
        loaded_modules(&harness, "kmm-a-0").is_empty(),
        "a reboot unloads everything"
    );
    eventually(
        300,
        "the module is loaded again on the new boot",
        || async {
            loaded_modules(&harness, "kmm-a-0").contains(&"acme_kmod".to_owned())
                && nmc(&harness, "kmm-a-0").await.is_some_and(|n| {
                    n.status.is_some_and(|s| {
                        s.modules
                            .iter()
                            .any(|m| m.boot_id.as_deref() == Some(boot_id.as_str()))
                    })
                })
        },
    )
    .await;
    eventually(60, "ready again", || {
        node_ready(&harness, "kmm-a-0", "kmod")
    })
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_tainted_node_loses_its_ready_label_and_the_condition_names_the_taint() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]}});
    Api::<Node>::all(harness.client())
        .patch("kmm-a-0", &PatchParams::default(), &Patch::Merge(&taint))
        .await
        .expect("tainting the node");
    eventually(120, "the ready label is withheld", || async {
        !node_ready(&harness, "kmm-a-0", "kmod").await
    })
    .await;
    let message = wait_for(120, "the Ready condition names the taint", || async {
        condition(&harness, "kmod", "Ready")
            .await
            .map(|(_, _, message)| message)
            .filter(|m| m.contains("kmm-a-0 has taint maintenance=true:NoSchedule"))
    })
    .await;
    assert!(message.contains("NodeUnschedulable"), "{message}");
    assert!(
        node_ready(&harness, "kmm-b-0", "kmod").await,
        "the other node keeps its module"
    );
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn bumping_an_image_generation_rechecks_it() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    let pullers = PodRecorder::start(harness.client(), labels::IMAGE_OWNER, |pod| {
        pod.spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default()
    });
    let mics: Api<ModuleImagesConfig> = Api::namespaced(harness.client(), "acme");
    let mut current = mics.get("kmod").await.expect("the MIC");
    let index = current
        .spec
        .images
        .iter()
        .position(|i| i.spec.image == image(KERNEL_A))
        .expect("kernel A's image");
    current.spec.images[index].generation = Some(2);
    mics.replace("kmod", &PostParams::default(), &current)
        .await
        .expect("bumping the generation");
    eventually(300, "observedGeneration catches up with Exists", || async {
        mic(&harness, "kmod")
            .await
            .and_then(|m| m.status)
            .is_some_and(|s| {
                s.images_states.iter().any(|i| {
                    i.image == image(KERNEL_A)
                        && i.observed_generation == Some(2)
                        && i.status == ImageState::Exists
                })
            })
    })
    .await;
    let record = pullers.record();
    assert_eq!(
        record.most_alive.get(&image(KERNEL_A)),
        Some(&1),
        "one new pull pod for the re-checked image: {record:?}"
    );
    assert_eq!(
        record.most_alive.get(&image(KERNEL_B)),
        None,
        "the other image is not re-checked"
    );
    let generation = mic(&harness, "kmod").await.expect("MIC").spec.images[index].generation;
    assert_eq!(
        generation,
        Some(2),
        "the Module reconciler keeps the bumped generation"
    );
    harness.shutdown().await;
}

/// The value of label `key` on node `name`.
async fn node_label(harness: &Harness, name: &str, key: &str) -> Option<String> {
    node(harness, name)
        .await
        .metadata
        .labels
        .and_then(|labels| labels.get(key).cloned())
}

#[tokio::test(start_paused = true)]
async fn an_ordered_upgrade_moves_the_worker_then_the_schedule_label() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    let mut spec = two_mapping_spec();
    spec["moduleLoader"]["container"]["version"] = json!("v1");
    Api::<Node>::all(harness.client())
        .patch(
            "kmm-a-0",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {labels::version_module("acme", "kmod"): "v1"}}}),
            ),
        )
        .await
        .expect("the node asks for v1");
    create_module(&harness, "kmod", spec).await;
    eventually(300, "kmod ready on kmm-a-0", || {
        node_ready(&harness, "kmm-a-0", "kmod")
    })
    .await;
    let worker = labels::version_worker_pod("acme", "kmod");
    let schedule = labels::version_schedule_pod("acme", "kmod");
    eventually(
        60,
        "the schedule label follows the worker label",
        || async { node_label(&harness, "kmm-a-0", &schedule).await.as_deref() == Some("v1") },
    )
    .await;
    assert_eq!(
        node_label(&harness, "kmm-a-0", &worker).await.as_deref(),
        Some("v1")
    );

    // Asking for v2 moves both labels to it (the schedule label off first, then the worker label, which comes
    // back on v2 once v1 is unloaded, and the schedule label after it).
    Api::<Node>::all(harness.client())
        .patch(
            "kmm-a-0",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {labels::version_module("acme", "kmod"): "v2"}}}),
            ),
        )
        .await
        .expect("the node asks for v2");
    eventually(300, "both labels on v2", || async {
        node_label(&harness, "kmm-a-0", &schedule).await.as_deref() == Some("v2")
            && node_label(&harness, "kmm-a-0", &worker).await.as_deref() == Some("v2")
    })
    .await;
    harness.shutdown().await;
}

/// A Module whose deletion waits for a node that cannot unload it (NotReady) says so, rather than still claiming
/// it is loaded everywhere; once the node is back, the Module goes.
#[tokio::test(start_paused = true)]
async fn a_deleting_module_says_what_it_waits_for() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    hold_not_ready(&harness, "kmm-a-0").await;
    eventually(120, "kmm-a-0 NotReady", || async {
        !kmm_engine::runtime::nodes::is_ready(&node(&harness, "kmm-a-0").await)
    })
    .await;
    Api::<kmm_api::kmm::Module>::namespaced(harness.client(), "acme")
        .delete("kmod", &Default::default())
        .await
        .expect("deleting the Module");
    let (_, reason, message) = wait_for(120, "Available names the deletion", || async {
        condition(&harness, "kmod", "Available")
            .await
            .filter(|(status, reason, _)| status == "False" && reason == "Deleting")
    })
    .await;
    assert_eq!(reason, "Deleting");
    assert!(
        message.contains("being deleted") && message.contains("kmm-a-0"),
        "{message}"
    );
    end_faults(&harness).await;
    eventually(300, "the Module is gone", || async {
        module(&harness, "kmod").await.is_none()
    })
    .await;
    harness.shutdown().await;
}

/// Removing `moduleLoader` from a Module moves every condition to the new generation, saying what that means.
#[tokio::test(start_paused = true)]
async fn removing_the_module_loader_answers_the_new_generation() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    Api::<kmm_api::kmm::Module>::namespaced(harness.client(), "acme")
        .patch(
            "kmod",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"moduleLoader": null}})),
        )
        .await
        .expect("removing the loader");
    let generation = module(&harness, "kmod")
        .await
        .and_then(|m| m.metadata.generation)
        .expect("a generation");
    eventually(120, "every condition at the new generation", || async {
        module(&harness, "kmod")
            .await
            .and_then(|m| m.status)
            .is_some_and(|status| {
                !status.conditions.is_empty()
                    && status
                        .conditions
                        .iter()
                        .all(|c| c.observed_generation == Some(generation))
            })
    })
    .await;
    let (status, reason, message) = condition(&harness, "kmod", "Available")
        .await
        .expect("Available");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "NoModuleLoader")
    );
    assert!(
        message.contains("spec.moduleLoader is not set"),
        "{message}"
    );
    harness.shutdown().await;
}

/// After a reboot the NodeModulesConfig status no longer claims the module loaded under the old boot, and the
/// Module does not count the node as available until its module is loaded again.
#[tokio::test(start_paused = true)]
async fn a_reboot_takes_the_loaded_claim_with_it() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    harness.start_engine();
    create_module(&harness, "kmod", two_mapping_spec()).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    let old_boot = nmc(&harness, "kmm-a-0")
        .await
        .and_then(|n| n.status)
        .and_then(|s| s.modules.first().and_then(|m| m.boot_id.clone()))
        .expect("a loaded status with its boot");
    // The node stays NotReady after its reboot, so the module cannot be loaded again yet.
    hold_not_ready(&harness, "kmm-a-0").await;
    let new_boot = power_cycle(&harness, "kmm-a-0");
    assert_ne!(new_boot, old_boot);
    eventually(120, "no status entry of the old boot", || async {
        nmc(&harness, "kmm-a-0").await.is_some_and(|n| {
            n.status.is_none_or(|s| {
                s.modules
                    .iter()
                    .all(|m| m.boot_id.as_deref() != Some(old_boot.as_str()))
            })
        })
    })
    .await;
    eventually(120, "the Module counts one node available", || async {
        module(&harness, "kmod")
            .await
            .and_then(|m| m.status?.module_loader)
            .is_some_and(|counts| counts.available_number == 1)
    })
    .await;
    end_faults(&harness).await;
    wait_loaded_everywhere(&harness, "kmod", &["kmm-a-0", "kmm-b-0"], 300).await;
    harness.shutdown().await;
}

/// Hold `node` NotReady, through the simulation's faults ConfigMap, until [`end_faults`].
async fn hold_not_ready(harness: &Harness, node: &str) {
    let not_ready: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "faults", "namespace": "kmm-tui-sim"},
        "data": {"hold": format!("{{kind: nodeNotReady, node: {node}}}")},
    }))
    .expect("a ConfigMap");
    Api::namespaced(harness.client(), "kmm-tui-sim")
        .create(&PostParams::default(), &not_ready)
        .await
        .expect("injecting the fault");
}

/// End every fault [`hold_not_ready`] injected.
async fn end_faults(harness: &Harness) {
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(harness.client(), "kmm-tui-sim")
        .delete("faults", &Default::default())
        .await
        .expect("ending the fault");
}
