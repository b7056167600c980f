//! The scheduler of the simulated cluster: binds pending pods to nodes through `pods/{name}/binding`, as
//! kube-scheduler does, so every component above it (the engine, the console, kubectl) sees pods scheduled the
//! way a real cluster schedules them.
//!
//! It serves pods whose `schedulerName` is `default-scheduler` (or empty) and whose `spec.nodeName` is empty.
//! A node qualifies when it passes the filters of [`filter`] (cordon, taints and tolerations, readiness, node
//! selector and required node affinity, free devices of extended resources, and devices for its ResourceClaims,
//! see [`dra`]); among qualifying nodes the one running the fewest pods wins, ties broken by the scenario's seed. A
//! pod's claims are allocated and reserved for it before it is bound, and [`release`] gives them back when it is
//! gone. A pod no node can run stays Pending with `PodScheduled=False`, reason `Unschedulable`
//! and kube-scheduler's message, plus a `FailedScheduling` event whenever that message changes; it is tried again
//! whenever nodes or pods change. Everything it decides from is in the API, so a restart loses nothing.

pub(crate) mod dra;
pub(crate) mod events;
pub(crate) mod filter;
mod release;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, PodCondition};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::task::JoinHandle;

use super::{MANAGER, World};
use events::{Recorder, Severity};

/// The scheduler name pods ask for (an empty name means this one too).
pub(crate) const SCHEDULER_NAME: &str = "default-scheduler";

/// Start the scheduler, and the release of the claims of pods that are gone; they run until the world stops.
pub fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut scheduler = Scheduler {
            recorder: Recorder::new(world.client.clone(), SCHEDULER_NAME),
            rng: world.rng("scheduler"),
            bound: HashMap::new(),
            world: world.clone(),
        };
        tokio::join!(scheduler.run(), release::run(world));
    })
}

/// A stream that yields whenever a kind of `resource.k8s.io` changes, so pods waiting for devices are tried again.
fn changes_of<K>(client: &kube::Client) -> futures::stream::BoxStream<'static, Seen>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .filter_map(|event| async move { event.ok().map(|_| Seen::Node) })
        .boxed()
}

struct Scheduler {
    world: Arc<World>,
    recorder: Recorder,
    rng: ChaCha8Rng,
    /// Pods bound by this scheduler whose binding the pod watch has not shown yet: uid → node.
    bound: HashMap<String, String>,
}

impl Scheduler {
    async fn run(&mut self) {
        let pods = self.world.watches.pods.store();
        let nodes = self.world.watches.nodes.store();
        let pod_events = self
            .world
            .watches
            .pods
            .subscribe_with(|change| match change {
                watcher::Event::Apply(pod) => Seen::Pod(pod.uid(), is_ours_to_schedule(pod)),
                watcher::Event::Delete(pod) => Seen::Pod(pod.uid(), false),
                _ => Seen::Everything,
            });
        let node_events = self.world.watches.nodes.subscribe_with(|_| Seen::Node);
        let client = &self.world.client;
        let mut events = futures::stream::select_all([
            pod_events.boxed(),
            node_events.boxed(),
            changes_of::<ResourceSlice>(client),
            changes_of::<ResourceClaim>(client),
            changes_of::<DeviceClass>(client),
        ]);
        // Pods waiting for this scheduler, by UID, as the pod events show them; a pass is due when there are any
        // (a change of any pod or node may make room for them) or after a relist.
        let mut unscheduled: HashSet<String> = HashSet::new();
        let mut relisted = true;
        loop {
            let mut seen = |event: Seen| match event {
                Seen::Pod(Some(uid), true) => {
                    unscheduled.insert(uid);
                }
                Seen::Pod(Some(uid), false) => {
                    unscheduled.remove(&uid);
                }
                Seen::Pod(None, _) | Seen::Node => {}
                Seen::Everything => relisted = true,
            };
            tokio::select! {
                () = self.world.stop.cancelled() => return,
                next = events.next() => match next {
                    Some(event) => seen(event),
                    None => return,
                },
            }
            while let Some(Some(event)) = events.next().now_or_never() {
                seen(event);
            }
            if (unscheduled.is_empty() && !relisted)
                || pods.wait_until_ready().now_or_never().is_none()
                || nodes.wait_until_ready().now_or_never().is_none()
            {
                continue;
            }
            unscheduled = self.pass(&pods, &nodes).await;
            relisted = false;
        }
    }

    /// Try every pending pod once, oldest first; returns the UIDs of the pods that were waiting for this scheduler
    /// when it started.
    async fn pass(&mut self, pods: &Store<Pod>, nodes: &Store<Node>) -> HashSet<String> {
        let pods = pods.state();
        let ours: HashSet<String> = pods
            .iter()
            .filter(|p| is_ours_to_schedule(p))
            .filter_map(|p| p.uid())
            .collect();
        let waiting: HashSet<String> = pods
            .iter()
            .filter(|p| node_name(p).is_none())
            .filter_map(|p| p.uid())
            .collect();
        self.bound.retain(|uid, _| waiting.contains(uid));
        let mut pending: Vec<&Arc<Pod>> = pods
            .iter()
            .filter(|p| is_ours_to_schedule(p))
            .filter(|p| p.uid().is_none_or(|uid| !self.bound.contains_key(&uid)))
            .collect();
        if pending.is_empty() {
            return ours;
        }
        pending.sort_by_key(|p| {
            (
                p.creation_timestamp().map(|t| t.0),
                p.namespace(),
                p.name_any(),
            )
        });
        let mut nodes = nodes.state();
        nodes.sort_by_cached_key(|n| n.name_any());
        let hosts = Hosts::of(&nodes);
        let mut dra = if pending.iter().any(|p| dra::has_claims(p)) {
            self.dra_state().await
        } else {
            None
        };
        let mut placed = Placed::default();
        for pod in pods.iter().filter(|p| !is_terminal(p)) {
            let node = node_name(pod).or_else(|| {
                pod.uid()
                    .and_then(|uid| self.bound.get(&uid))
                    .map(String::as_str)
            });
            if let Some(node) = node {
                placed.add(node, pod);
            }
        }
        for pod in pending {
            self.schedule(pod, &nodes, &hosts, &mut placed, dra.as_mut())
                .await;
        }
        ours
    }

    /// The slices, classes and claims of the cluster, for a pass with pods that use claims; None (and the pods
    /// wait) when the API server does not list them.
    async fn dra_state(&self) -> Option<dra::State> {
        let client = &self.world.client;
        let params = ListParams::default();
        let (slices, classes, claims) = (
            Api::<ResourceSlice>::all(client.clone()),
            Api::<DeviceClass>::all(client.clone()),
            Api::<ResourceClaim>::all(client.clone()),
        );
        let listed = futures::try_join!(
            slices.list(&params),
            classes.list(&params),
            claims.list(&params),
        );
        match listed {
            Ok((slices, classes, claims)) => {
                Some(dra::State::new(&slices.items, &classes.items, claims.items))
            }
            Err(error) => {
                tracing::warn!(%error, "resource.k8s.io not listed: pods with claims wait");
                None
            }
        }
    }

    async fn schedule(
        &mut self,
        pod: &Pod,
        nodes: &[Arc<Node>],
        hosts: &Hosts<'_>,
        placed: &mut Placed,
        dra: Option<&mut dra::State>,
    ) {
        let claims = if dra::has_claims(pod) {
            let Some(state) = dra.as_deref() else {
                return;
            };
            match state.claims_of(pod) {
                Ok(claims) => claims,
                Err(reason) => {
                    let message = filter::waiting_message(nodes.len(), &reason);
                    self.report_unschedulable(pod, &message).await;
                    return;
                }
            }
        } else {
            Vec::new()
        };
        let wanted = filter::requested_devices(pod);
        let fits = |node: &Node| {
            filter::check(pod, node)
                .and_then(|()| {
                    let used = node
                        .metadata
                        .name
                        .as_ref()
                        .and_then(|n| placed.devices.get(n));
                    filter::check_devices(&wanted, node, used)
                })
                .and_then(|()| match dra.as_deref() {
                    Some(state) if !claims.is_empty() => state.check(&claims, node).map(|_| ()),
                    _ => Ok(()),
                })
        };
        // Only the nodes a pod's hostname selector (or pinning node affinity) names can fit it; every node is
        // looked at (for the reasons the others do not fit) only when none does.
        let mut fitting: Vec<String> = hosts
            .candidates(pod, nodes)
            .filter(|node| fits(node).is_ok())
            .map(|node| node.name_any())
            .collect();
        let mut reasons = BTreeMap::new();
        if fitting.is_empty() {
            for node in nodes {
                match fits(node) {
                    Ok(()) => fitting.push(node.name_any()),
                    Err(reason) => *reasons.entry(reason).or_insert(0) += 1,
                }
            }
        }
        let least = fitting
            .iter()
            .map(|n| placed.load.get(n).copied().unwrap_or(0))
            .min();
        let Some(least) = least else {
            let message = filter::unschedulable_message(nodes.len(), &reasons);
            self.report_unschedulable(pod, &message).await;
            return;
        };
        let ties: Vec<&String> = fitting
            .iter()
            .filter(|n| placed.load.get(*n).copied().unwrap_or(0) == least)
            .collect();
        let chosen = ties[self.rng.random_range(0..ties.len())].clone();
        if let Some(state) = dra
            && !claims.is_empty()
            && !self.reserve(pod, &claims, &chosen, nodes, state).await
        {
            return;
        }
        if self.bind(pod, &chosen).await {
            placed.add(&chosen, pod);
            if let Some(uid) = pod.uid() {
                self.bound.insert(uid, chosen);
            }
        }
    }

    /// Allocate the pod's unallocated claims on `node` and reserve every claim for the pod, as kube-scheduler does
    /// before it binds; false when a claim could not be written (the pod is tried again in a later pass).
    async fn reserve(
        &self,
        pod: &Pod,
        claims: &[String],
        node: &str,
        nodes: &[Arc<Node>],
        state: &mut dra::State,
    ) -> bool {
        let Some(target) = nodes.iter().find(|n| n.name_any() == node) else {
            return false;
        };
        let Ok(plan) = state.check(claims, target) else {
            return false;
        };
        for (key, results) in plan {
            let Some(claim) = state.claim(&key) else {
                return false;
            };
            if results.is_none() && dra::reserved_for(claim, pod) {
                continue;
            }
            let mut reserved = claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.clone())
                .unwrap_or_default();
            if !dra::reserved_for(claim, pod) {
                reserved.push(ResourceClaimConsumerReference {
                    api_group: None,
                    resource: "pods".into(),
                    name: pod.name_any(),
                    uid: pod.uid().unwrap_or_default(),
                });
            }
            let mut status = json!({"reservedFor": reserved});
            if let Some(results) = results {
                status["allocation"] = json!(dra::allocation(node, results));
            }
            let patch = json!({
                "metadata": {"resourceVersion": claim.resource_version()},
                "status": status,
            });
            let api: Api<ResourceClaim> = Api::namespaced(
                self.world.client.clone(),
                &claim.namespace().unwrap_or_default(),
            );
            let params = PatchParams {
                field_manager: Some(MANAGER.to_string()),
                ..PatchParams::default()
            };
            match api
                .patch_status(&claim.name_any(), &params, &Patch::Merge(&patch))
                .await
            {
                Ok(written) => state.update(written),
                Err(error) => {
                    tracing::debug!(claim = %key, %error, "claim not reserved");
                    return false;
                }
            }
        }
        true
    }

    /// POST the binding; true when the pod is now on `node`.
    async fn bind(&self, pod: &Pod, node: &str) -> bool {
        let namespace = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..ObjectReference::default()
            },
        };
        let api: Api<Pod> = Api::namespaced(self.world.client.clone(), &namespace);
        let bound = api
            .create_subresource::<Binding, serde_json::Value>(
                "binding",
                &name,
                &PostParams::default(),
                &binding,
            )
            .await;
        match bound {
            Ok(_) => {
                let message = format!("Successfully assigned {namespace}/{name} to {node}");
                self.event(pod, Severity::Normal, "Scheduled", &message)
                    .await;
                true
            }
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => false,
            Err(error) => {
                tracing::warn!(pod = %name, %namespace, %node, %error, "binding failed");
                false
            }
        }
    }

    /// Set `PodScheduled=False` and record `FailedScheduling`, unless the pod already says exactly this.
    async fn report_unschedulable(&self, pod: &Pod, message: &str) {
        let conditions = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let previous = conditions.iter().find(|c| c.type_ == "PodScheduled");
        if previous.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        }) {
            return;
        }
        let since = previous
            .filter(|c| c.status == "False")
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(jiff::Timestamp::now()));
        let mut updated: Vec<PodCondition> = conditions
            .iter()
            .filter(|c| c.type_ != "PodScheduled")
            .cloned()
            .collect();
        updated.push(PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            message: Some(message.to_string()),
            last_transition_time: Some(since),
            ..PodCondition::default()
        });
        let namespace = pod.namespace().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.world.client.clone(), &namespace);
        let params = PatchParams {
            field_manager: Some(MANAGER.to_string()),
            ..PatchParams::default()
        };
        let patch = json!({"status": {"conditions": updated}});
        if let Err(error) = api
            .patch_status(&pod.name_any(), &params, &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(pod = %pod.name_any(), %error, "pod status not updated");
            return;
        }
        self.event(pod, Severity::Warning, "FailedScheduling", message)
            .await;
    }

    async fn event(&self, pod: &Pod, severity: Severity, reason: &str, message: &str) {
        if let Err(error) = self
            .recorder
            .record(pod.object_ref(&()), severity, reason, message)
            .await
        {
            tracing::debug!(pod = %pod.name_any(), %error, "event not recorded");
        }
    }
}

/// The label kubelets set to their hostname, which pods pinned to one node select (kube-fledged's pull pods do).
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The nodes of a pass by their [`HOSTNAME_LABEL`] and by name, in the pass's order, so a pod pinned to one host
/// (by that label, or by the node-name affinity DaemonSet pods carry) is checked against its node alone rather than
/// against thousands.
struct Hosts<'a> {
    by_hostname: HashMap<&'a str, Vec<&'a Arc<Node>>>,
    by_name: HashMap<&'a str, &'a Arc<Node>>,
}

impl<'a> Hosts<'a> {
    fn of(nodes: &'a [Arc<Node>]) -> Self {
        let mut by_hostname: HashMap<&str, Vec<&Arc<Node>>> = HashMap::new();
        let mut by_name = HashMap::new();
        for node in nodes {
            if let Some(host) = node.labels().get(HOSTNAME_LABEL) {
                by_hostname.entry(host.as_str()).or_default().push(node);
            }
            if let Some(name) = node.metadata.name.as_deref() {
                by_name.insert(name, node);
            }
        }
        Self {
            by_hostname,
            by_name,
        }
    }

    /// The nodes that may fit `pod`: those carrying the hostname its node selector names, the one node its
    /// required affinity pins it to, or every node.
    fn candidates<'s>(
        &'s self,
        pod: &Pod,
        nodes: &'a [Arc<Node>],
    ) -> Box<dyn Iterator<Item = &'a Arc<Node>> + 's> {
        let host = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_selector.as_ref())
            .and_then(|selector| selector.get(HOSTNAME_LABEL));
        if let Some(host) = host {
            return Box::new(
                self.by_hostname
                    .get(host.as_str())
                    .into_iter()
                    .flatten()
                    .copied(),
            );
        }
        match filter::pinned_node(pod) {
            Some(name) => Box::new(self.by_name.get(name).into_iter().copied()),
            None => Box::new(nodes.iter()),
        }
    }
}

/// What the pods already on each node (or bound this pass) take: how many there are, which spreads the load, and
/// the devices they use.
#[derive(Default)]
struct Placed {
    load: HashMap<String, usize>,
    devices: HashMap<String, filter::Devices>,
}

impl Placed {
    fn add(&mut self, node: &str, pod: &Pod) {
        *self.load.entry(node.to_owned()).or_default() += 1;
        let wanted = filter::requested_devices(pod);
        if !wanted.is_empty() {
            let used = self.devices.entry(node.to_owned()).or_default();
            for (resource, count) in wanted {
                *used.entry(resource).or_default() += count;
            }
        }
    }
}

/// What a watch event tells the scheduler.
enum Seen {
    /// A pod (by UID) changed or went; whether it now waits for this scheduler.
    Pod(Option<String>, bool),
    /// A node changed, or a ResourceSlice, ResourceClaim or DeviceClass.
    Node,
    /// The watch started over: anything may have changed.
    Everything,
}

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Unbound, alive, not gated, and asking for this scheduler.
fn is_ours_to_schedule(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    node_name(pod).is_none()
        && pod.metadata.deletion_timestamp.is_none()
        && !is_terminal(pod)
        && spec.scheduling_gates.as_ref().is_none_or(Vec::is_empty)
        && matches!(
            spec.scheduler_name.as_deref(),
            None | Some("") | Some(SCHEDULER_NAME)
        )
}
