//! The node side of the Machine Config Operator (the machine-config daemon): moves one node to the configuration
//! its `desiredConfig` annotation names.
//!
//! When the configuration boots another OS image: mark the node `Working`, cordon it, drain it (evict every pod
//! except DaemonSet pods and mirror pods, and wait for them to go), take the machine down for a reboot, boot it
//! into the new OS image (kernel and OS from the scenario's `osImages`), wait for the node to report Ready on its
//! new boot, then uncordon it and mark it `Done` with the new `currentConfig`. An OS image the scenario does not
//! know cannot be pulled: the node is left cordoned and `Degraded` with the reason, which stops the pool's
//! rollout. A configuration that boots nothing new only updates the annotations.
//!
//! Every step is idempotent and decided from the API and the machine, so an update interrupted by a restart
//! picks up where it stopped.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::render;
use crate::scheduler::events::{Recorder, Severity};
use crate::{MANAGER, World};
use kmm_api::day0::MachineConfig;
use kmm_api::day0::node_update::{
    CURRENT_CONFIG, DEGRADED, DESIRED_CONFIG, DONE, REASON, STATE, WORKING,
};

/// How long a machine takes to reboot, in simulated time.
pub(crate) const REBOOT_TIME: Duration = Duration::from_secs(90);
/// How long a drain may take before the update gives up.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a rebooted node may take to report Ready before the update gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// Wait between eviction attempts a disruption budget refused.
const EVICTION_RETRY: Duration = Duration::from_secs(5);
/// Annotation of mirror pods (static pods as the API shows them), which a drain leaves alone.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Component name of the node update in events.
const COMPONENT: &str = "machineconfigdaemon";

/// Why an update stopped; becomes the node's `reason` annotation.
struct Failure(String);

impl From<kube::Error> for Failure {
    fn from(error: kube::Error) -> Self {
        Failure(error.to_string())
    }
}

/// Move `node` to its desired configuration; returns the node name when done (or given up).
pub(crate) async fn update(world: Arc<World>, node: String) -> String {
    let update = Update {
        nodes: Api::all(world.client.clone()),
        recorder: Recorder::new(world.client.clone(), COMPONENT),
        world,
        node,
    };
    if let Err(Failure(reason)) = update.run().await {
        tracing::warn!(node = %update.node, %reason, "node update failed");
        update.degrade(&reason).await;
    }
    update.node
}

struct Update {
    world: Arc<World>,
    nodes: Api<Node>,
    recorder: Recorder,
    node: String,
}

impl Update {
    async fn run(&self) -> Result<(), Failure> {
        let node = self.nodes.get(&self.node).await?;
        let annotations = node.annotations();
        let Some(desired) = annotations.get(DESIRED_CONFIG).cloned() else {
            return Ok(());
        };
        let state = annotations.get(STATE).cloned().unwrap_or_default();
        if state == DONE && annotations.get(CURRENT_CONFIG) == Some(&desired) {
            return Ok(());
        }
        let config = Api::<MachineConfig>::all(self.world.client.clone())
            .get_opt(&desired)
            .await?
            .ok_or_else(|| {
                Failure(format!(
                    "machineconfig.machineconfiguration.openshift.io \"{desired}\" not found"
                ))
            })?;
        let running = self
            .world
            .machines
            .get(&self.node)
            .and_then(|m| render::running_os_image_url(&self.world, &m));
        let target = match config.spec.os_image_url {
            Some(url) if Some(&url) != running.as_ref() => url,
            _ => {
                let we_cordoned = state == WORKING || state == DEGRADED;
                return self.finish(&node, &desired, we_cordoned).await;
            }
        };
        self.annotate(json!({STATE: WORKING, REASON: null})).await?;
        self.cordon().await?;
        self.drain().await?;
        let image = self
            .world
            .scenario
            .os_images
            .iter()
            .find(|i| i.url == target)
            .cloned()
            .ok_or_else(|| {
                Failure(format!(
                    "failed to update OS to {target}: error pulling the OS image: manifest unknown: {target} is not a known OS image"
                ))
            })?;
        self.event(
            &node,
            Severity::Normal,
            "Reboot",
            &format!("Node will reboot into config {desired}"),
        )
        .await;
        self.set_machine_ready(false);
        self.world.clock.sleep(REBOOT_TIME).await;
        let boot_id = self
            .world
            .machines
            .with(&self.node, |m| {
                m.reboot(&image.kernel_version, &image.os_image, Some(&image.url));
                m.ready = true;
                m.boot_id.clone()
            })
            .ok_or_else(|| Failure(format!("no machine backs node {}", self.node)))?;
        self.notify();
        self.wait_ready(&boot_id).await?;
        self.finish(&node, &desired, true).await
    }

    /// Record the configuration as current and the node as done; uncordon it when the update cordoned it.
    async fn finish(&self, node: &Node, desired: &str, uncordon: bool) -> Result<(), Failure> {
        let mut patch = json!({"metadata": {"annotations": {
            CURRENT_CONFIG: desired, STATE: DONE, REASON: null,
        }}});
        if uncordon {
            patch["spec"] = json!({"unschedulable": null});
        }
        self.patch(patch).await?;
        self.event(
            node,
            Severity::Normal,
            "NodeDone",
            &format!(
                "Setting node {}, currentConfig {desired} to Done",
                self.node
            ),
        )
        .await;
        Ok(())
    }

    async fn degrade(&self, reason: &str) {
        if let Err(error) = self
            .annotate(json!({STATE: DEGRADED, REASON: reason}))
            .await
        {
            tracing::warn!(node = %self.node, %error, "cannot mark the node degraded");
        }
        if let Ok(node) = self.nodes.get(&self.node).await {
            self.event(&node, Severity::Warning, "OSUpdateFailed", reason)
                .await;
        }
    }

    async fn cordon(&self) -> kube::Result<()> {
        self.patch(json!({"spec": {"unschedulable": true}})).await
    }

    /// Evict every pod a drain moves, then wait until they are gone.
    async fn drain(&self) -> Result<(), Failure> {
        let pods: Api<Pod> = Api::all(self.world.client.clone());
        let on_node = ListParams::default().fields(&format!("spec.nodeName={}", self.node));
        let evictable: Vec<Pod> = pods
            .list(&on_node)
            .await?
            .items
            .into_iter()
            .filter(is_drained)
            .collect();
        let deadline = self.world.clock.now() + DRAIN_TIMEOUT;
        for pod in &evictable {
            let namespace = pod.namespace().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(self.world.client.clone(), &namespace);
            let name = pod.name_any();
            loop {
                match api.evict(&name, &EvictParams::default()).await {
                    Ok(_) => break,
                    Err(kube::Error::Api(status)) if status.code == 404 => break,
                    Err(kube::Error::Api(status))
                        if status.code == 429 && self.world.clock.now() < deadline =>
                    {
                        self.world.clock.sleep(EVICTION_RETRY).await;
                    }
                    Err(error) => {
                        return Err(Failure(format!(
                            "failed to drain node {}: error when evicting pod {namespace}/{name}: {error}",
                            self.node
                        )));
                    }
                }
            }
            let uid = pod.uid().unwrap_or_default();
            let remaining = self
                .world
                .clock
                .to_real(deadline.saturating_sub(self.world.clock.now()));
            let gone = tokio::time::timeout(
                remaining,
                await_condition(api.clone(), &name, conditions::is_deleted(&uid)),
            )
            .await;
            if !matches!(gone, Ok(Ok(_))) {
                return Err(Failure(format!(
                    "failed to drain node {}: pod {namespace}/{name} was not deleted after {}s",
                    self.node,
                    DRAIN_TIMEOUT.as_secs()
                )));
            }
        }
        if let Ok(node) = self.nodes.get(&self.node).await {
            self.event(&node, Severity::Normal, "Drain", "Drain complete")
                .await;
        }
        Ok(())
    }

    /// Wait until the node reports Ready on the boot `boot_id`.
    async fn wait_ready(&self, boot_id: &str) -> Result<(), Failure> {
        let booted = |node: Option<&Node>| {
            let Some(status) = node.and_then(|n| n.status.as_ref()) else {
                return false;
            };
            let ready = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            ready
                && status
                    .node_info
                    .as_ref()
                    .is_some_and(|i| i.boot_id == boot_id)
        };
        let waited = tokio::time::timeout(
            self.world.clock.to_real(READY_TIMEOUT),
            await_condition(self.nodes.clone(), &self.node, booted),
        )
        .await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Failure(format!(
                "node {} did not report Ready after rebooting within {}s",
                self.node,
                READY_TIMEOUT.as_secs()
            ))),
        }
    }

    fn set_machine_ready(&self, ready: bool) {
        self.world.machines.with(&self.node, |m| m.ready = ready);
        self.notify();
    }

    fn notify(&self) {
        // Nobody listening is fine: the kubelet reads the machine when it starts.
        let _ = self.world.machine_changed.send(self.node.clone());
    }

    async fn annotate(&self, annotations: Value) -> kube::Result<()> {
        self.patch(json!({"metadata": {"annotations": annotations}}))
            .await
    }

    async fn patch(&self, patch: Value) -> kube::Result<()> {
        let params = PatchParams {
            field_manager: Some(MANAGER.to_string()),
            ..PatchParams::default()
        };
        self.nodes
            .patch(&self.node, &params, &Patch::Merge(&patch))
            .await
            .map(drop)
    }

    async fn event(&self, node: &Node, severity: Severity, reason: &str, message: &str) {
        if let Err(error) = self
            .recorder
            .record(node.object_ref(&()), severity, reason, message)
            .await
        {
            tracing::debug!(node = %self.node, %error, "event not recorded");
        }
    }
}

/// A drain moves every pod except DaemonSet pods (their controller would put them back) and mirror pods (the
/// node runs them itself); pods already terminating are simply waited for.
fn is_drained(pod: &Pod) -> bool {
    let daemon_set = pod
        .owner_references()
        .iter()
        .any(|o| o.kind == "DaemonSet" && o.controller == Some(true));
    !daemon_set && !pod.annotations().contains_key(MIRROR_ANNOTATION)
}
