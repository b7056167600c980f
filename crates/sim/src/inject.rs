//! Faults injected while the simulation runs, through the API: the ConfigMap `kmm-tui-sim/faults`.
//!
//! Each data entry is one fault in the syntax of a scenario's `faults:` list, for example
//!
//! ```sh
//! kubectl -n kmm-tui-sim create configmap faults --from-literal=outage='{kind: registryOutage}'
//! kubectl -n kmm-tui-sim patch configmap faults --type merge -p '{"data":{"outage":null}}'
//! ```
//!
//! The key is the injector's name for the fault. Times count from when the simulation first reads the entry, so a
//! window without `to` (`{kind: nodeNotReady, node: worker-3}`) lasts until the entry is removed, and one with `to:
//! 5m` closes five simulated minutes later; pull, containerd and build failures hold while their entry is there.
//! An instant fault (`removeImage`, `reboot`, `closeWatches`) happens at its `at` (at once without one), and the
//! simulation then removes its entry, so that a restarted simulation does not make it happen again. Changing an
//! entry's text makes it a new fault that starts counting anew. Each entry taken in or turned down is recorded as
//! an Event on the ConfigMap (`FaultInjected`, `FaultRejected` with the reason).
//!
//! Going through the API rather than a handle of the process means one way works for an embedded cluster in the
//! same process, for `kmm-tui serve`, and for kubectl.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::task::JoinHandle;

use super::faults::Injected;
use super::scenario::Fault;
use super::scheduler::events::{Recorder, Severity};
use super::{MANAGER, SIM_NAMESPACE, World};

/// Name of the ConfigMap (in [`SIM_NAMESPACE`]) whose entries are the injected faults.
pub const FAULTS_CONFIG_MAP: &str = "faults";

/// The component the Events about injected faults name.
const COMPONENT: &str = "kmm-tui-sim";

/// Follow the faults ConfigMap until the simulation stops.
pub fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(follow(world))
}

async fn follow(world: Arc<World>) {
    let api: Api<ConfigMap> = Api::namespaced(world.client.clone(), SIM_NAMESPACE);
    let mut changes = watcher::watch_object(api, FAULTS_CONFIG_MAP)
        .default_backoff()
        .boxed();
    let recorder = Recorder::new(world.client.clone(), COMPONENT);
    // Entries already answered with an Event, so that each is reported once.
    let mut reported: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let next = tokio::select! {
            () = world.stop.cancelled() => return,
            next = changes.next() => next,
        };
        match next {
            Some(Ok(config_map)) => {
                take_in(&world, &recorder, config_map.as_ref(), &mut reported).await;
            }
            Some(Err(error)) => tracing::debug!(%error, "watching the faults ConfigMap"),
            None => return,
        }
    }
}

/// Make the entries of `config_map` the injected faults, reporting each new entry.
async fn take_in(
    world: &World,
    recorder: &Recorder,
    config_map: Option<&ConfigMap>,
    reported: &mut BTreeMap<String, String>,
) {
    let entries = config_map.and_then(|c| c.data.clone()).unwrap_or_default();
    let nodes: BTreeSet<String> = world.scenario.node_names().into_iter().collect();
    let mut faults = Vec::new();
    let mut news = Vec::new();
    for (key, text) in &entries {
        let parsed = parse(text, &nodes);
        if reported.get(key) != Some(text) {
            news.push((key.clone(), parsed.clone()));
        }
        if let Ok(fault) = parsed {
            faults.push((key.clone(), text.clone(), fault));
        }
    }
    world.faults.set_injected(faults, world.clock.now());
    reported.retain(|key, _| entries.contains_key(key));
    let Some(config_map) = config_map else {
        return;
    };
    for (key, parsed) in news {
        let text = &entries[&key];
        reported.insert(key.clone(), text.clone());
        let (severity, reason, message) = match parsed {
            Ok(_) => (Severity::Normal, "FaultInjected", format!("{key}: {text}")),
            Err(error) => {
                tracing::warn!(%key, %error, "injected fault not taken");
                (
                    Severity::Warning,
                    "FaultRejected",
                    format!("{key}: {error}"),
                )
            }
        };
        if let Err(error) = recorder
            .record(config_map.object_ref(&()), severity, reason, &message)
            .await
        {
            tracing::debug!(%error, "recording an injected fault");
        }
    }
}

/// One entry's fault, checked against the scenario's nodes.
pub fn parse(text: &str, nodes: &BTreeSet<String>) -> Result<Fault, String> {
    let fault: Fault = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    fault.check(nodes).map_err(|e| format!("fault{e}"))?;
    Ok(fault)
}

/// Remove the entry of an instant fault that has happened, unless it changed meanwhile (then it is a new fault).
pub async fn remove_fired(world: &World, fired: &Injected) {
    let api: Api<ConfigMap> = Api::namespaced(world.client.clone(), SIM_NAMESPACE);
    let patch = json!([
        {"op": "test", "path": format!("/data/{}", fired.key), "value": fired.text},
        {"op": "remove", "path": format!("/data/{}", fired.key)},
    ]);
    let patch: json_patch::Patch = match serde_json::from_value(patch) {
        Ok(patch) => patch,
        Err(error) => {
            tracing::warn!(%error, "a JSON patch removing an injected fault");
            return;
        }
    };
    let params = PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PatchParams::default()
    };
    if let Err(error) = api
        .patch(FAULTS_CONFIG_MAP, &params, &Patch::Json::<()>(patch))
        .await
    {
        tracing::debug!(key = %fired.key, %error, "removing a fired fault");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn entries_read_as_scenario_faults_and_name_known_nodes() {
        let nodes: BTreeSet<String> = ["w-0".to_owned()].into();
        assert!(matches!(
            parse("{kind: registryOutage}", &nodes),
            Ok(Fault::RegistryOutage {
                from: Duration::ZERO,
                to: Duration::MAX
            })
        ));
        assert!(matches!(
            parse("{kind: nodeNotReady, node: w-0, to: 2m}", &nodes),
            Ok(Fault::NodeNotReady { to, .. }) if to == Duration::from_secs(120)
        ));
        assert!(matches!(
            parse("{kind: reboot, node: w-0}", &nodes),
            Ok(Fault::Reboot {
                at: Duration::ZERO,
                ..
            })
        ));
        assert!(matches!(
            parse("{kind: closeWatches}", &nodes),
            Ok(Fault::CloseWatches { .. })
        ));
        let unknown = parse("{kind: reboot, node: w-9}", &nodes).unwrap_err();
        assert!(
            unknown.contains("fault.node: no node is named w-9"),
            "{unknown}"
        );
        assert!(parse("{kind: meteorStrike}", &nodes).is_err());
    }
}
