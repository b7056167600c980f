//! PreflightValidation end to end: Modules checked against a target kernel through their own preflight
//! ModuleImagesConfigs (an image that exists, one that is built, one that is missing, a Module without a mapping),
//! the verdicts as both served versions show them, pushBuiltImage turned on later, and the checks removed with the
//! PreflightValidation.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kmm_api::kmm::preflight::v1beta1;
use kmm_api::kmm::{
    Module, ModuleImagesConfig, PreflightModuleStatus, PreflightValidation, VerificationStage,
    VerificationStatus,
};
use kmm_engine::{kmm::mbsc, kmm::mic, kmm::preflight};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::common::{Harness, eventually, wait_for};

const NS: &str = "acme";
const KERNEL: &str = "5.14.0-284.30.1.el9_2.x86_64";

/// The cluster of `images.yaml` with only the image pipeline and the preflight reconciler running.
async fn start() -> Harness {
    let mut harness = Harness::start("images.yaml").await;
    start_reconcilers(&mut harness);
    harness
}

fn start_reconcilers(harness: &mut Harness) {
    harness.start_with(|ctx, stop| async move {
        tokio::join!(
            mic::run(ctx.clone(), stop.clone()),
            mbsc::run(ctx.clone(), stop.clone()),
            preflight::run(ctx, stop)
        );
    });
}

/// A Module whose one mapping matches `kernel_regexp` and names `image`, built from the scenario's Dockerfile when
/// `build`.
async fn create_module(client: &Client, name: &str, kernel_regexp: &str, image: &str, build: bool) {
    let mut mapping = json!({"regexp": kernel_regexp, "containerImage": image});
    if build {
        mapping["build"] = json!({"dockerfileConfigMap": {"name": "kmod-dockerfile"}});
    }
    let module: Module = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "acme_kmod"},
                "kernelMappings": [mapping],
            }},
        },
    }))
    .expect("a Module");
    Api::<Module>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created");
}

async fn create_preflight(client: &Client, name: &str, push: bool) {
    let preflight: PreflightValidation = serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta2", "kind": "PreflightValidation",
        "metadata": {"name": name},
        "spec": {"kernelVersion": KERNEL, "pushBuiltImage": push},
    }))
    .expect("a PreflightValidation");
    Api::<PreflightValidation>::all(client.clone())
        .create(&PostParams::default(), &preflight)
        .await
        .expect("the PreflightValidation is created");
}

async fn verdicts(client: &Client, name: &str) -> Vec<PreflightModuleStatus> {
    Api::<PreflightValidation>::all(client.clone())
        .get(name)
        .await
        .ok()
        .and_then(|p| p.status)
        .map(|s| s.modules)
        .unwrap_or_default()
}

fn verdict<'s>(
    statuses: &'s [PreflightModuleStatus],
    module: &str,
) -> Option<&'s PreflightModuleStatus> {
    statuses
        .iter()
        .find(|s| s.namespace == NS && s.name == module)
}

/// Every (module, status) a watch of the PreflightValidation saw, in order.
fn record_verdicts(client: &Client) -> Arc<Mutex<Vec<(String, VerificationStatus)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let stream = watcher(
        Api::<PreflightValidation>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let Ok(watcher::Event::Apply(pfv) | watcher::Event::InitApply(pfv)) = event else {
                continue;
            };
            let mut seen = record.lock().expect("the record");
            for status in pfv.status.into_iter().flat_map(|s| s.modules) {
                seen.push((status.name, status.verdict.verification_status));
            }
        }
    });
    seen
}

async fn wait_final(client: &Client, name: &str, module: &str) -> PreflightModuleStatus {
    wait_for(90, &format!("a final verdict on {module}"), || async {
        verdict(&verdicts(client, name).await, module)
            .filter(|s| s.verdict.verification_stage == VerificationStage::Done)
            .cloned()
    })
    .await
}

async fn preflight_mics(client: &Client) -> Vec<String> {
    Api::<ModuleImagesConfig>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("MICs are listed")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| name.ends_with("-preflight"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn every_module_gets_a_verdict_and_the_checks_go_with_the_preflight() {
    let harness = start().await;
    let client = harness.client();
    let el9_2 = r"^.+\.el9_2\..+$";
    create_module(
        &client,
        "exists",
        el9_2,
        "quay.io/acme/kmod:${KERNEL_FULL_VERSION}",
        false,
    )
    .await;
    create_module(
        &client,
        "builds",
        el9_2,
        "quay.io/acme/pf-built:${KERNEL_FULL_VERSION}",
        true,
    )
    .await;
    create_module(
        &client,
        "absent",
        el9_2,
        "quay.io/acme/absent:${KERNEL_FULL_VERSION}",
        false,
    )
    .await;
    create_module(
        &client,
        "nomap",
        r"^6\.",
        "quay.io/acme/kmod:${KERNEL_FULL_VERSION}",
        false,
    )
    .await;
    let seen = record_verdicts(&client);
    create_preflight(&client, "upgrade", true).await;

    let exists = wait_final(&client, "upgrade", "exists").await;
    assert_eq!(
        exists.verdict.verification_status,
        VerificationStatus::Success
    );
    assert_eq!(
        exists.verdict.status_reason.as_deref(),
        Some("verified image exists")
    );
    let nomap = wait_final(&client, "upgrade", "nomap").await;
    assert_eq!(
        nomap.verdict.verification_status,
        VerificationStatus::Failure
    );
    assert_eq!(
        nomap.verdict.status_reason.as_deref(),
        Some(format!("mapping not found for kernel {KERNEL}").as_str())
    );
    let absent = wait_final(&client, "upgrade", "absent").await;
    assert_eq!(
        absent.verdict.verification_status,
        VerificationStatus::Failure
    );
    assert!(
        absent
            .verdict
            .status_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("verified image does not exist")),
        "{absent:?}"
    );
    let builds = wait_final(&client, "upgrade", "builds").await;
    assert_eq!(
        builds.verdict.verification_status,
        VerificationStatus::Success,
        "{builds:?}"
    );
    let mbsc = Api::<kmm_api::kmm::ModuleBuildSignConfig>::namespaced(client.clone(), NS)
        .get("builds-preflight")
        .await
        .expect("the build went through the check's ModuleBuildSignConfig");
    assert!(
        mbsc.status
            .iter()
            .flat_map(|s| &s.images)
            .any(|o| o.image == format!("quay.io/acme/pf-built:{KERNEL}")),
        "{mbsc:?}"
    );
    {
        let seen = seen.lock().expect("the record");
        assert!(
            seen.contains(&("builds".to_owned(), VerificationStatus::InProgress)),
            "the build was told as in progress first: {seen:?}"
        );
    }
    assert_eq!(
        preflight_mics(&client).await,
        ["absent-preflight", "builds-preflight", "exists-preflight"],
        "one check per Module with a mapping"
    );

    // The v1beta1 view keys the same verdicts by namespace/name (and by name).
    let old = Api::<v1beta1::PreflightValidation>::all(client.clone())
        .get("upgrade")
        .await
        .expect("the v1beta1 view is served");
    assert_eq!(old.spec.kernel_version, KERNEL);
    let statuses = old.status.expect("a status").cr_statuses;
    assert_eq!(
        statuses.get("acme/exists").map(|v| v.verification_status),
        Some(VerificationStatus::Success)
    );
    assert_eq!(
        statuses.get("nomap").map(|v| v.verification_status),
        Some(VerificationStatus::Failure)
    );
    // A v1beta1 status write lands in the stored v1beta2 list.
    Api::<v1beta1::PreflightValidation>::all(client.clone())
        .patch_status(
            "upgrade",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
        )
        .await
        .expect("a v1beta1 write is accepted");
    assert_eq!(
        verdicts(&client, "upgrade").await.len(),
        4,
        "the list survives a v1beta1 write"
    );

    Api::<PreflightValidation>::all(client.clone())
        .delete("upgrade", &DeleteParams::background())
        .await
        .expect("the PreflightValidation is deleted");
    eventually(
        30,
        "the checks are collected with the PreflightValidation",
        || async { preflight_mics(&client).await.is_empty() },
    )
    .await;
    harness.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_image_built_without_pushing_is_built_again_once_pushing_is_turned_on() {
    let mut harness = start().await;
    let client = harness.client();
    let image = "quay.io/acme/pf-later:${KERNEL_FULL_VERSION}";
    create_module(&client, "later", r"^.+\.el9_2\..+$", image, true).await;
    create_preflight(&client, "dry", false).await;
    // Killed once the check started, the engine picks the check up where the cluster says it is.
    eventually(30, "the check starts", || async {
        preflight_mics(&client).await == ["later-preflight"]
    })
    .await;
    harness.kill_engine().await;
    start_reconcilers(&mut harness);
    let unpushed = wait_final(&client, "dry", "later").await;
    assert_eq!(
        unpushed.verdict.verification_status,
        VerificationStatus::Success
    );
    assert!(
        unpushed
            .verdict
            .status_reason
            .as_deref()
            .is_some_and(|r| r.contains("not pushed")),
        "{unpushed:?}"
    );

    Api::<PreflightValidation>::all(client.clone())
        .patch(
            "dry",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"pushBuiltImage": true}})),
        )
        .await
        .expect("pushing is turned on");
    eventually(90, "the image is built again and pushed", || async {
        verdict(&verdicts(&client, "dry").await, "later")
            .is_some_and(|s| s.verdict.status_reason.as_deref() == Some("verified image exists"))
    })
    .await;
    harness.shutdown().await;
}

/// The demo's planned upgrade: `acme-accel` builds for the next kernel but cannot sign an image it did not push;
/// `nvme-tuning` has no image for it. Once pushing is on, `acme-accel` is ready.
#[tokio::test(start_paused = true)]
async fn the_demos_planned_upgrade_is_ready_once_builds_are_pushed() {
    let mut harness = Harness::start("demo").await;
    harness.start_engine();
    let client = harness.client();
    let accel = wait_final(&client, "upgrade-4-16", "acme-accel").await;
    assert_eq!(
        accel.verdict.verification_status,
        VerificationStatus::Failure
    );
    let reason = accel.verdict.status_reason.unwrap_or_default();
    assert!(
        reason.starts_with("verified image does not exist and build/sign failed")
            && reason.contains("sign pod"),
        "{reason}"
    );
    let nvme = wait_final(&client, "upgrade-4-16", "nvme-tuning").await;
    assert_eq!(
        nvme.verdict.verification_status,
        VerificationStatus::Failure,
        "{nvme:?}"
    );
    Api::<PreflightValidation>::all(client.clone())
        .patch(
            "upgrade-4-16",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"pushBuiltImage": true}})),
        )
        .await
        .expect("pushing is turned on");
    eventually(120, "acme-accel is ready for the next kernel", || async {
        verdict(&verdicts(&client, "upgrade-4-16").await, "acme-accel")
            .is_some_and(|s| s.verdict.status_reason.as_deref() == Some("verified image exists"))
    })
    .await;
    harness.shutdown().await;
}
