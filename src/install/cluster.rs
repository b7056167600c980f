//! Install and uninstall talking to a cluster: server-side apply under one field manager, deletion, and the count
//! of objects each CRD still holds.

use anyhow::Context;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use serde_json::Value;

/// Whether the cluster serves the Prometheus Operator's ServiceMonitor (`monitoring.coreos.com/v1`).
pub async fn serves_service_monitors(client: &kube::Client) -> bool {
    let gvk = GroupVersionKind::gvk("monitoring.coreos.com", "v1", "ServiceMonitor");
    kube::discovery::pinned_kind(client, &gvk).await.is_ok()
}

/// Field manager of what `kmm-tui install --apply` writes.
pub const FIELD_MANAGER: &str = "kmm-tui-install";

/// The API of one object, found through discovery.
async fn api_for(client: &kube::Client, object: &Value) -> anyhow::Result<Api<DynamicObject>> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("the cluster does not serve {kind} ({api_version})"))?;
    Ok(
        match (capabilities.scope, object["metadata"]["namespace"].as_str()) {
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(client.clone(), namespace, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        },
    )
}

fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Apply every object server-side as [`FIELD_MANAGER`], in order, taking over fields other managers set (as
/// `kubectl apply --server-side --force-conflicts`). Returns what was applied, one line per object.
pub async fn apply(client: &kube::Client, objects: &[Value]) -> anyhow::Result<Vec<String>> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut applied = Vec::new();
    for object in objects {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let api = api_for(client, object).await?;
        api.patch(name, &params, &Patch::Apply(object))
            .await
            .with_context(|| format!("applying {}", describe(object)))?;
        applied.push(format!("{} applied", describe(object)));
    }
    Ok(applied)
}

/// Delete every object, in order; objects already gone are skipped. Returns what happened, one line per object.
pub async fn delete(client: &kube::Client, objects: &[Value]) -> anyhow::Result<Vec<String>> {
    let mut deleted = Vec::new();
    for object in objects {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let api = api_for(client, object).await?;
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => deleted.push(format!("{} deleted", describe(object))),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                deleted.push(format!("{} not found", describe(object)));
            }
            Err(error) => {
                return Err(
                    anyhow::Error::new(error).context(format!("deleting {}", describe(object)))
                );
            }
        }
    }
    Ok(deleted)
}

/// For each CRD kmm-tui installs that holds objects in the cluster: its resource (`plural.group`) and how many
/// objects of it exist. CRDs the cluster does not serve hold nothing.
pub async fn crd_contents(client: &kube::Client) -> anyhow::Result<Vec<(String, usize)>> {
    let mut held = Vec::new();
    for crd in kmm_api::crds::all() {
        let spec = &crd.spec;
        let Some(version) = spec
            .versions
            .iter()
            .find(|v| v.storage)
            .or(spec.versions.first())
        else {
            continue;
        };
        let gvk = GroupVersionKind::gvk(&spec.group, &version.name, &spec.names.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &spec.names.plural);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let name = format!("{}.{}", spec.names.plural, spec.group);
        match api.list_metadata(&ListParams::default()).await {
            Ok(list) if !list.items.is_empty() => held.push((name, list.items.len())),
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                return Err(anyhow::Error::new(error).context(format!("counting {name}")));
            }
        }
    }
    Ok(held)
}
