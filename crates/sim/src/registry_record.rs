//! The ConfigMap `kmm-tui-sim/registry`: the images pushed to the simulated registry and the ones it lost, so that a
//! simulation restarted on a durable store (`kmm-tui serve --state-dir`) finds the images its builds pushed, as a
//! real registry keeps them whatever happens to the cluster.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use super::registry::Changes;
use super::{MANAGER, SIM_NAMESPACE, World};

/// Name of the ConfigMap.
pub const RECORD: &str = "registry";

/// Key of the record's data: the [`Changes`] as JSON.
const KEY: &str = "changes";

/// Take over what the record says (nothing when there is none: a first start).
pub async fn adopt(world: &World) -> anyhow::Result<()> {
    if !world.records_registry {
        return Ok(());
    }
    let api: Api<ConfigMap> = Api::namespaced(world.client.clone(), SIM_NAMESPACE);
    let recorded = match api.get_opt(RECORD).await {
        Ok(found) => found,
        // The namespace is made at registration, after this: a first start.
        Err(kube::Error::Api(status)) if status.code == 404 => None,
        Err(error) => return Err(error.into()),
    };
    let Some(text) = recorded.and_then(|c| c.data?.remove(KEY)) else {
        return Ok(());
    };
    let changes: Changes = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("the registry record {SIM_NAMESPACE}/{RECORD}: {e}"))?;
    world.registry.adopt(&changes);
    *world.registry_recorded.lock().await = world.registry.changes().0;
    Ok(())
}

/// Write the record when the registry changed since it was last written. Writes are one at a time and each writes
/// the registry as it is then, so the record never goes back to an older state. A failed write is logged; the next
/// change writes everything again.
pub async fn persist(world: &World) {
    if !world.records_registry {
        return;
    }
    let mut written = world.registry_recorded.lock().await;
    let (count, changes) = world.registry.changes();
    if *written == count {
        return;
    }
    let text = match serde_json::to_string(&changes) {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(%error, "the registry record cannot be written");
            return;
        }
    };
    let record = ConfigMap {
        metadata: ObjectMeta {
            name: Some(RECORD.to_owned()),
            namespace: Some(SIM_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([(KEY.to_owned(), text)].into()),
        ..ConfigMap::default()
    };
    let api: Api<ConfigMap> = Api::namespaced(world.client.clone(), SIM_NAMESPACE);
    match api
        .patch(
            RECORD,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&record),
        )
        .await
    {
        Ok(_) => *written = count,
        Err(error) => tracing::warn!(%error, "writing the registry record"),
    }
}
