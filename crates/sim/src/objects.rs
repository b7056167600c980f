//! Applying a scenario's objects: checked all together with a server-side dry run before the simulation starts,
//! then applied with server-side apply, so a scenario with one bad object starts nothing.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::Value;

use super::{MANAGER, World};

/// Dry-run every object (creating the namespaces they live in), failing on the first the server refuses.
pub(crate) async fn check(world: &World) -> anyhow::Result<()> {
    for (index, manifest) in world.scenario.manifests.iter().enumerate() {
        apply_one(world, index, manifest, true).await?;
    }
    Ok(())
}

/// Apply every object.
pub(crate) async fn apply(world: &World) -> anyhow::Result<()> {
    for (index, manifest) in world.scenario.manifests.iter().enumerate() {
        apply_one(world, index, manifest, false).await?;
    }
    Ok(())
}

async fn apply_one(
    world: &World,
    index: usize,
    manifest: &Value,
    dry_run: bool,
) -> anyhow::Result<()> {
    let api_version = manifest
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let describe = format!(
        "scenario {}: objects[{index}] ({kind} {name})",
        world.scenario.source
    );
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let rt = world
        .server
        .registry()
        .by_kind(group, kind)
        .ok_or_else(|| {
            anyhow::anyhow!("{describe}: the cluster serves no {kind} in {api_version:?}")
        })?;
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &rt.plural);
    let api: Api<DynamicObject> = if rt.namespaced {
        let namespace = manifest
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        ensure_namespace(world, namespace).await?;
        Api::namespaced_with(world.client.clone(), namespace, &resource)
    } else {
        Api::all_with(world.client.clone(), &resource)
    };
    let object: DynamicObject =
        serde_json::from_value(manifest.clone()).map_err(|e| anyhow::anyhow!("{describe}: {e}"))?;
    let mut params = PatchParams::apply(MANAGER).force();
    params.dry_run = dry_run;
    api.patch(name, &params, &Patch::Apply(&object))
        .await
        .map_err(|e| anyhow::anyhow!("{describe}: {e}"))?;
    Ok(())
}

async fn ensure_namespace(world: &World, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(world.client.clone());
    if namespaces.get_opt(name).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(&ns))
            .await?;
    }
    Ok(())
}
