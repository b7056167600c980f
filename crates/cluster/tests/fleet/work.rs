//! ManifestWork through the spoke's work agent: manifests applied by server-side apply under the agent's own
//! field manager, feedback from the spoke's objects, removal of what leaves a work or goes with it, and a refused
//! manifest reported with the spoke's reason.

use k8s_openapi::api::core::v1::ConfigMap;
use kmm_api::kmm::Module;
use kmm_api::ocm::names;
use kmm_api::ocm::work::{ManifestWork, ManifestWorkSpec};
use kmm_cluster::sim::ocm::work::MANAGER;
use kmm_testing::wait::{eventually, wait_for};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::{small, started};

const SPOKE: &str = "spoke-1";

fn config_map(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"hello": "fleet"}
    })
}

fn module(name: &str) -> Value {
    json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "sample"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/acme/sample:${KERNEL_FULL_VERSION}"}]
            }},
            "selector": {"node-role.kubernetes.io/worker": ""}
        }
    })
}

/// A work for `spoke-1` holding `manifests`, reading back the Module `sample`'s loader counts.
fn work(name: &str, manifests: Vec<Value>, extra: Value) -> ManifestWork {
    let mut spec = json!({
        "workload": {"manifests": manifests},
        "manifestConfigs": [{
            "resourceIdentifier": {"group": "kmm.sigs.x-k8s.io", "resource": "modules", "name": "sample", "namespace": "default"},
            "feedbackRules": [
                {"type": "WellKnownStatus"},
                {"type": "JSONPaths", "jsonPaths": [{"name": "kernels", "path": ".status.kernels"}]}
            ]
        }]
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let spec: ManifestWorkSpec = serde_json::from_value(spec).unwrap();
    let mut work = ManifestWork::new(name, spec);
    work.metadata.namespace = Some(SPOKE.to_owned());
    work
}

async fn condition(works: &Api<ManifestWork>, name: &str, type_: &str) -> Option<String> {
    let work = works.get_opt(name).await.ok()??;
    work.condition(type_).map(|c| c.status.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_applies_reports_feedback_and_removes_what_leaves() {
    let fleet = started(small()).await;
    let works: Api<ManifestWork> = Api::namespaced(fleet.hub().client(), SPOKE);
    let spoke = fleet.spoke(SPOKE).unwrap().client();
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    let modules: Api<Module> = Api::namespaced(spoke.clone(), "default");
    works
        .create(
            &PostParams::default(),
            &work(
                "sample",
                vec![config_map("greeting"), module("sample")],
                json!({}),
            ),
        )
        .await
        .unwrap();
    eventually(20, "the work to be applied and available", || async {
        condition(&works, "sample", names::WORK_APPLIED)
            .await
            .as_deref()
            == Some("True")
            && condition(&works, "sample", names::WORK_AVAILABLE)
                .await
                .as_deref()
                == Some("True")
    })
    .await;
    let greeting = config_maps.get("greeting").await.unwrap();
    let managers: Vec<String> = greeting
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert_eq!(
        managers,
        vec![MANAGER.to_owned()],
        "applied server-side by the work agent alone"
    );
    modules.get("sample").await.unwrap();

    // What the spoke's engine would report on the Module comes back to the hub.
    modules
        .patch_status(
            "sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "moduleLoader": {"nodesMatchingSelectorNumber": 3, "desiredNumber": 3, "availableNumber": 2},
                "kernels": ["5.14.0-284.30.1.el9_2.x86_64"]
            }})),
        )
        .await
        .unwrap();
    let available = wait_for(20, "the Module's loader counts as feedback", || async {
        let work = works.get("sample").await.ok()?;
        work.feedback(1, "AvailableNumber").and_then(|v| v.integer)
    })
    .await;
    assert_eq!(available, 2);
    let work_now = works.get("sample").await.unwrap();
    assert_eq!(
        work_now
            .feedback(1, "DesiredNumber")
            .and_then(|v| v.integer),
        Some(3)
    );
    assert_eq!(
        work_now
            .feedback(1, "kernels")
            .and_then(|v| v.json_raw.clone())
            .as_deref(),
        Some(r#"["5.14.0-284.30.1.el9_2.x86_64"]"#)
    );

    // The ConfigMap leaves the work: it leaves the spoke; the Module stays.
    works
        .patch(
            "sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"manifests": [module("sample")]}}})),
        )
        .await
        .unwrap();
    eventually(20, "the ConfigMap to be deleted from the spoke", || async {
        config_maps.get_opt("greeting").await.unwrap().is_none()
    })
    .await;
    assert!(modules.get_opt("sample").await.unwrap().is_some());

    // The work goes: so does everything it applied, and then the work itself.
    works
        .delete("sample", &DeleteParams::default())
        .await
        .unwrap();
    eventually(20, "the Module to be deleted with its work", || async {
        modules.get_opt("sample").await.unwrap().is_none()
            && works.get_opt("sample").await.unwrap().is_none()
    })
    .await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaning_work_leaves_its_objects_when_deleted() {
    let fleet = started(small()).await;
    let works: Api<ManifestWork> = Api::namespaced(fleet.hub().client(), SPOKE);
    let config_maps: Api<ConfigMap> =
        Api::namespaced(fleet.spoke(SPOKE).unwrap().client(), "default");
    works
        .create(
            &PostParams::default(),
            &work(
                "kept",
                vec![config_map("kept")],
                json!({"deleteOption": {"propagationPolicy": "Orphan"}}),
            ),
        )
        .await
        .unwrap();
    eventually(20, "the work to be applied", || async {
        condition(&works, "kept", names::WORK_APPLIED)
            .await
            .as_deref()
            == Some("True")
    })
    .await;
    works
        .delete("kept", &DeleteParams::default())
        .await
        .unwrap();
    eventually(20, "the work to be gone", || async {
        works.get_opt("kept").await.unwrap().is_none()
    })
    .await;
    assert!(
        config_maps.get_opt("kept").await.unwrap().is_some(),
        "an orphaned object stays on the spoke"
    );
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_the_spoke_refuses_reports_why_and_the_rest_applies() {
    let fleet = started(small()).await;
    let works: Api<ManifestWork> = Api::namespaced(fleet.hub().client(), SPOKE);
    let config_maps: Api<ConfigMap> =
        Api::namespaced(fleet.spoke(SPOKE).unwrap().client(), "default");
    let mut refused = module("sample");
    refused["spec"]["moduleLoader"]["container"]["kernelMappings"][0]["regexp"] = json!("([");
    works
        .create(
            &PostParams::default(),
            &work("mixed", vec![config_map("fine"), refused], json!({})),
        )
        .await
        .unwrap();
    let work = wait_for(20, "the work to report the refusal", || async {
        let work = works.get("mixed").await.ok()?;
        (work.condition(names::WORK_APPLIED)?.status == "False").then_some(work)
    })
    .await;
    let manifests = work.status.unwrap().resource_status.unwrap().manifests;
    let applied = |ordinal: i32| {
        manifests
            .iter()
            .find(|m| m.resource_meta.ordinal == ordinal)
            .and_then(|m| m.conditions.iter().find(|c| c.type_ == names::WORK_APPLIED))
            .cloned()
            .unwrap()
    };
    assert_eq!(applied(0).status, "True");
    let refusal = applied(1);
    assert_eq!(refusal.status, "False");
    assert_eq!(refusal.reason, names::REASON_MANIFEST_APPLY_FAILED);
    assert!(refusal.message.contains("422"), "{}", refusal.message);
    assert!(
        refusal.message.contains("regexp"),
        "the spoke's reason: {}",
        refusal.message
    );
    assert!(config_maps.get_opt("fine").await.unwrap().is_some());
    fleet.shutdown().await;
}
