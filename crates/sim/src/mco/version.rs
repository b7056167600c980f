//! The cluster's version (`ClusterVersion/version`), as the cluster-version operator keeps it: the release the
//! cluster runs decides the OS image of every pool that no MachineConfig overrides, so asking for another
//! release (`spec.desiredUpdate.version`) rolls the pools onto that release's OS image. Releases map to OS
//! images through the scenario's `osImages[].release`.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::{MANAGER, World};
use kmm_api::day0::{ClusterVersion, ClusterVersionSpec};

/// The name of the one ClusterVersion.
pub(crate) const NAME: &str = "version";

/// The release a cluster reports when its scenario names none.
const DEFAULT_RELEASE: &str = "4.14.0";

/// Create `ClusterVersion/version` when it is missing, at the release of the nodes' OS image.
pub(crate) async fn ensure(world: &World) -> kube::Result<()> {
    let api: Api<ClusterVersion> = Api::all(world.client.clone());
    if api.get_opt(NAME).await?.is_some() {
        return Ok(());
    }
    let release = initial_release(world);
    let cluster_id =
        uuid::Builder::from_random_bytes(rand::Rng::random(&mut world.rng("clusterversion")))
            .into_uuid()
            .to_string();
    let version = ClusterVersion {
        metadata: ObjectMeta {
            name: Some(NAME.into()),
            ..ObjectMeta::default()
        },
        spec: ClusterVersionSpec {
            other: [("clusterID".to_string(), json!(cluster_id))].into(),
        },
        status: None,
    };
    match api.create(&PostParams::default(), &version).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
        Err(error) => return Err(error),
    }
    let now = super::now();
    let status = json!({
        "desired": {"version": release},
        "history": [{
            "state": "Completed", "version": release, "verified": false,
            "startedTime": now, "completionTime": now,
        }],
        "conditions": [
            condition("Available", "True", &format!("Done applying {release}"), &now),
            condition("Progressing", "False", &format!("Cluster version is {release}"), &now),
        ],
    });
    patch_status(&api, status).await
}

/// The release the cluster is at (or moving to).
pub(crate) fn desired_release(version: Option<&ClusterVersion>) -> Option<String> {
    version?.status.as_ref()?.desired.as_ref()?.version.clone()
}

/// The OS image URL of a release, when the scenario knows it.
pub(crate) fn release_os_image_url(world: &World, release: &str) -> Option<String> {
    world
        .scenario
        .os_images
        .iter()
        .find(|image| image.release.as_deref() == Some(release))
        .map(|image| image.url.clone())
}

/// Namespace of the ConfigMap naming the release's OS image.
pub(crate) const OS_IMAGE_NAMESPACE: &str = "openshift-machine-config-operator";
/// The ConfigMap naming the release's OS image, as OpenShift publishes it from the release payload.
pub(crate) const OS_IMAGE_CONFIG_MAP: &str = "machine-config-osimageurl";

/// Publish the OS image of `release` (the one the cluster moves to) in
/// `openshift-machine-config-operator/machine-config-osimageurl` (`releaseVersion`, `baseOSContainerImage`,
/// `osImageURL`), as the release payload does on OpenShift, so that builds can resolve `OS_AUTO`.
pub(crate) async fn publish_os_image(world: &World, release: &str, url: &str) -> kube::Result<()> {
    let namespaces: Api<Namespace> = Api::all(world.client.clone());
    if namespaces.get_opt(OS_IMAGE_NAMESPACE).await?.is_none() {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(OS_IMAGE_NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error),
        }
    }
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": OS_IMAGE_CONFIG_MAP, "namespace": OS_IMAGE_NAMESPACE},
        "data": {"releaseVersion": release, "baseOSContainerImage": url, "osImageURL": url},
    });
    let params = PatchParams::apply(MANAGER).force();
    Api::<ConfigMap>::namespaced(world.client.clone(), OS_IMAGE_NAMESPACE)
        .patch(OS_IMAGE_CONFIG_MAP, &params, &Patch::Apply(&config_map))
        .await
        .map(drop)
}

/// Accept a new `spec.desiredUpdate`, and complete the current update once every pool is updated.
pub(crate) async fn reconcile(
    world: &World,
    version: &ClusterVersion,
    pools_updated: bool,
) -> kube::Result<()> {
    let current = serde_json::to_value(&version.status).unwrap_or(Value::Null);
    let desired = desired_release(Some(version));
    let requested = version
        .spec
        .other
        .get("desiredUpdate")
        .and_then(|u| u.get("version"))
        .and_then(Value::as_str);
    let mut history = current["history"].as_array().cloned().unwrap_or_default();
    let now = super::now();
    let api: Api<ClusterVersion> = Api::all(world.client.clone());
    if let Some(requested) = requested.filter(|r| desired.as_deref() != Some(*r)) {
        let image = version.spec.other["desiredUpdate"].get("image").cloned();
        let mut release = json!({"version": requested});
        if let Some(image) = image.filter(|i| !i.is_null()) {
            release["image"] = image;
        }
        let mut entry = json!({"state": "Partial", "startedTime": now, "completionTime": null,
            "version": requested, "verified": false});
        if let Some(image) = release.get("image") {
            entry["image"] = image.clone();
        }
        history.insert(0, entry);
        let mut status = json!({
            "desired": release,
            "history": history,
            "conditions": [
                condition("Available", "True", &format!("Done applying {}", desired.unwrap_or_default()), &now),
                condition("Progressing", "True", &format!("Working towards {requested}"), &now),
            ],
        });
        if let Some(generation) = version.metadata.generation {
            status["observedGeneration"] = json!(generation);
        }
        return patch_status(&api, status).await;
    }
    let partial = history
        .first()
        .is_some_and(|entry| entry["state"] == "Partial");
    if partial && pools_updated {
        let release = desired.unwrap_or_default();
        history[0]["state"] = json!("Completed");
        history[0]["completionTime"] = json!(now);
        let status = json!({
            "history": history,
            "conditions": [
                condition("Available", "True", &format!("Done applying {release}"), &now),
                condition("Progressing", "False", &format!("Cluster version is {release}"), &now),
            ],
        });
        return patch_status(&api, status).await;
    }
    Ok(())
}

/// The release of the first node group whose OS image the scenario maps to one (a layered image carrying the same
/// OS ships in no release, so the first image of that OS with a release counts).
fn initial_release(world: &World) -> String {
    world
        .scenario
        .nodes
        .iter()
        .find_map(|group| {
            world
                .scenario
                .os_images
                .iter()
                .filter(|image| image.os_image == group.os_image)
                .find_map(|image| image.release.clone())
        })
        .unwrap_or_else(|| DEFAULT_RELEASE.to_string())
}

fn condition(type_: &str, status: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": status, "message": message, "lastTransitionTime": now})
}

async fn patch_status(api: &Api<ClusterVersion>, status: Value) -> kube::Result<()> {
    let params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    api.patch_status(NAME, &params, &Patch::Merge(&json!({"status": status})))
        .await
        .map(drop)
}
