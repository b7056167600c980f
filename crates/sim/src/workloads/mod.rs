//! The Deployment, ReplicaSet, ReplicationController, DaemonSet and Job controllers of the simulated cluster, as
//! kube-controller-manager runs them, so a Deployment, ReplicationController, DaemonSet or Job applied with kubectl
//! gets its pods.
//!
//! - A Deployment owns one ReplicaSet per pod template: named `<deployment>-<pod-template-hash>`, the hash also
//!   added to its selector, its template's labels and its own labels (label `pod-template-hash`). The ReplicaSet of
//!   the current template is kept at `spec.replicas`; ReplicaSets of earlier templates are scaled to zero at once
//!   (every update replaces the pods in one step: there is no surge or unavailability budget).
//! - A ReplicaSet keeps `spec.replicas` active pods (not terminating, not Succeeded or Failed) that it controls:
//!   it creates the missing ones (`generateName: <replicaset>-`, owned by it) and deletes the excess, unscheduled
//!   and not ready pods first, then the newest. A deleted pod is replaced at once. A ReplicationController does the
//!   same ([`replicas`]).
//! - A StatefulSet keeps pods `<set>-0..n-1`, created in order ([`stateful`]).
//! - A DaemonSet keeps one pod on every node its template fits, and rolls a new template out node by node
//!   ([`daemons`]).
//! - A Job runs pods to completion, within its parallelism and backoff limit ([`jobs`]).
//! - A pod's ResourceClaims are made from the templates it names, and reservations of pods that are done are
//!   dropped ([`resource_claims`], on clusters that serve `resource.k8s.io/v1`).
//! - Each template's ReplicaSet is numbered (`deployment.kubernetes.io/revision`) and old ones beyond the history
//!   limit deleted, so `kubectl rollout history` and `undo` work ([`revisions`]).
//! - They record kube-controller-manager's events: `ScalingReplicaSet` on the Deployment, `SuccessfulCreate` and
//!   `SuccessfulDelete` on the ReplicaSet or ReplicationController.
//! - All write `status` (`replicas`, `readyReplicas`, `availableReplicas`, and `updatedReplicas` and the
//!   `Available` condition for Deployments) and `observedGeneration` when it changes.
//!
//! Everything is decided from the API on every pass, so a restart of the cluster loses nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::task::JoinHandle;

use super::background::NOT_BACKGROUND;
use super::scheduler::events::{Recorder, Severity};
use super::{MANAGER, World, forget_managed_fields};

pub mod daemons;
pub mod jobs;
pub(crate) mod replicas;
pub mod resource_claims;
pub mod revisions;
pub mod stateful;

/// How long a pass whose writes failed waits before it is tried again even without a new event.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// The label that ties a ReplicaSet and its pods to one pod template of their Deployment.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Start the controllers; they run until the world stops.
pub fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = world.client.clone();
        let (deployments, deployment_writer) = reflector::store::<Deployment>();
        let (replica_sets, replica_set_writer) = reflector::store::<ReplicaSet>();
        let (replication_controllers, replication_controller_writer) =
            reflector::store::<ReplicationController>();
        let (daemon_sets, daemon_set_writer) = reflector::store::<DaemonSet>();
        let (stateful_sets, stateful_set_writer) = reflector::store::<StatefulSet>();
        let (jobs, job_writer) = reflector::store::<Job>();
        let nodes = world.watches.nodes.store();
        let pods = world.watches.pods.store();
        // What about a node decides DaemonSet placement (labels, taints, cordon), by node: a node status heartbeat
        // or image list change wakes nobody.
        let mut placements: HashMap<String, u64> = HashMap::new();
        let streams = [
            every_change(deployment_writer, &client),
            every_change(replica_set_writer, &client),
            every_change(replication_controller_writer, &client),
            every_change(daemon_set_writer, &client),
            every_change(stateful_set_writer, &client),
            every_change(job_writer, &client),
            world
                .watches
                .nodes
                .subscribe_with(move |change| match change {
                    watcher::Event::Apply(node) => {
                        let fingerprint = placement_fingerprint(node);
                        placements.insert(node.name_any(), fingerprint) != Some(fingerprint)
                    }
                    watcher::Event::Delete(node) => placements.remove(&node.name_any()).is_some(),
                    _ => true,
                })
                .boxed(),
            world
                .watches
                .pods
                .subscribe_with(|change| match change {
                    watcher::Event::Apply(pod) | watcher::Event::Delete(pod) => {
                        replicas::has_replicating_controller(pod)
                            || stateful::has_stateful_controller(pod)
                            || daemons::has_daemon_controller(pod)
                            || jobs::has_job_controller(pod)
                    }
                    _ => true,
                })
                .boxed(),
        ];
        let mut events = futures::stream::select_all(streams);
        let stores = Stores {
            deployments,
            replica_sets,
            replication_controllers,
            daemon_sets,
            stateful_sets,
            nodes,
            jobs,
            pods,
        };
        let recorders = Recorders {
            deployments: Recorder::new(client.clone(), "deployment-controller"),
            replica_sets: Recorder::new(client.clone(), "replicaset-controller"),
            replication_controllers: Recorder::new(client.clone(), "replication-controller"),
            daemon_sets: Recorder::new(client.clone(), "daemonset-controller"),
            stateful_sets: Recorder::new(client.clone(), "statefulset-controller"),
            jobs: Recorder::new(client.clone(), "job-controller"),
        };
        let mut expectations = Expectations::default();
        // Whether something a pass decides from changed since the last pass. Pods matter only when a ReplicaSet,
        // ReplicationController, DaemonSet or Job controls them: the kernel module workers and build pods of a large
        // rollout wake nobody here.
        let mut due = true;
        loop {
            tokio::select! {
                () = world.stop.cancelled() => return,
                next = events.next() => match next {
                    Some(matters) => due |= matters,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(matters)) = events.next().now_or_never() {
                due |= matters;
            }
            if !due || !stores.ready() {
                continue;
            }
            due = !pass(&client, &stores, &recorders, &mut expectations).await;
        }
    })
}

/// A watch of every `K` feeding `writer`, each change of which matters to a pass (the kinds the controllers own).
fn every_change<K>(
    writer: reflector::store::Writer<K>,
    client: &kube::Client,
) -> futures::stream::BoxStream<'static, bool>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    reflector::reflector(
        writer,
        // The background workloads' owners are not the simulation's to reconcile.
        watcher(
            Api::<K>::all(client.clone()),
            watcher::Config::default().labels(NOT_BACKGROUND),
        )
        .modify(forget_managed_fields),
    )
    .default_backoff()
    .map(|_| true)
    .boxed()
}

/// What the controllers decide from.
struct Stores {
    deployments: Store<Deployment>,
    replica_sets: Store<ReplicaSet>,
    replication_controllers: Store<ReplicationController>,
    daemon_sets: Store<DaemonSet>,
    stateful_sets: Store<StatefulSet>,
    nodes: Store<Node>,
    jobs: Store<Job>,
    pods: Store<Pod>,
}

impl Stores {
    fn ready(&self) -> bool {
        self.deployments.wait_until_ready().now_or_never().is_some()
            && self
                .replica_sets
                .wait_until_ready()
                .now_or_never()
                .is_some()
            && self
                .replication_controllers
                .wait_until_ready()
                .now_or_never()
                .is_some()
            && self.daemon_sets.wait_until_ready().now_or_never().is_some()
            && self
                .stateful_sets
                .wait_until_ready()
                .now_or_never()
                .is_some()
            && self.nodes.wait_until_ready().now_or_never().is_some()
            && self.jobs.wait_until_ready().now_or_never().is_some()
            && self.pods.wait_until_ready().now_or_never().is_some()
    }
}

/// Pods the DaemonSet and Job controllers created that the pod cache may not show yet.
#[derive(Default)]
struct Expectations {
    daemon_sets: daemons::Expectations,
    jobs: jobs::Created,
}

/// The events each controller records.
struct Recorders {
    deployments: Recorder,
    replica_sets: Recorder,
    replication_controllers: Recorder,
    daemon_sets: Recorder,
    stateful_sets: Recorder,
    jobs: Recorder,
}

/// Record an event; one that cannot be written is not worth failing a pass for.
async fn record<K: Resource<DynamicType = ()>>(
    recorder: &Recorder,
    object: &K,
    reason: &str,
    message: &str,
) {
    if let Err(error) = recorder
        .record(object.object_ref(&()), Severity::Normal, reason, message)
        .await
    {
        tracing::debug!(%error, reason, "recording an event");
    }
}

/// One level-triggered pass over every Deployment, then every ReplicaSet, ReplicationController, StatefulSet, Job
/// and DaemonSet; returns whether every write succeeded.
/// Failed writes are logged; another pass follows at the next event, or after `RETRY` without one.
async fn pass(
    client: &kube::Client,
    stores: &Stores,
    recorders: &Recorders,
    expectations: &mut Expectations,
) -> bool {
    let mut succeeded = true;
    let replica_sets = stores.replica_sets.state();
    let pods = stores.pods.state();
    for deployment in stores.deployments.state() {
        if deployment.meta().deletion_timestamp.is_some() {
            continue;
        }
        if let Err(error) =
            sync_deployment(client, &recorders.deployments, &deployment, &replica_sets).await
        {
            succeeded = false;
            tracing::debug!(deployment = %deployment.name_any(), %error, "syncing deployment");
        }
    }
    for replica_set in &replica_sets {
        if replica_set.meta().deletion_timestamp.is_some() {
            continue;
        }
        if let Err(error) =
            replicas::sync(client, &recorders.replica_sets, replica_set.as_ref(), &pods).await
        {
            succeeded = false;
            tracing::debug!(replicaset = %replica_set.name_any(), %error, "syncing replicaset");
        }
    }
    for controller in stores.replication_controllers.state() {
        if controller.meta().deletion_timestamp.is_some() {
            continue;
        }
        let recorder = &recorders.replication_controllers;
        if let Err(error) = replicas::sync(client, recorder, controller.as_ref(), &pods).await {
            succeeded = false;
            tracing::debug!(replicationcontroller = %controller.name_any(), %error, "syncing replicationcontroller");
        }
    }
    for set in stores.stateful_sets.state() {
        if set.meta().deletion_timestamp.is_some() {
            continue;
        }
        if let Err(error) = stateful::sync(client, &recorders.stateful_sets, &set, &pods).await {
            succeeded = false;
            tracing::debug!(statefulset = %set.name_any(), %error, "syncing statefulset");
        }
    }
    let all_jobs = stores.jobs.state();
    expectations
        .jobs
        .retain(&all_jobs.iter().filter_map(|job| job.uid()).collect());
    for job in all_jobs {
        if job.meta().deletion_timestamp.is_some() {
            continue;
        }
        let created = &mut expectations.jobs;
        if let Err(error) = jobs::sync(client, &recorders.jobs, created, &job, &pods).await {
            succeeded = false;
            tracing::debug!(job = %job.name_any(), %error, "syncing job");
        }
    }
    let daemon_sets = stores.daemon_sets.state();
    expectations
        .daemon_sets
        .retain(&daemon_sets.iter().filter_map(|ds| ds.uid()).collect());
    if daemon_sets.is_empty() {
        return succeeded;
    }
    let nodes = stores.nodes.state();
    for daemon_set in daemon_sets {
        if daemon_set.meta().deletion_timestamp.is_some() {
            continue;
        }
        let recorder = &recorders.daemon_sets;
        if let Err(error) = daemons::sync(
            client,
            recorder,
            &mut expectations.daemon_sets,
            &daemon_set,
            &nodes,
            &pods,
        )
        .await
        {
            succeeded = false;
            tracing::debug!(daemonset = %daemon_set.name_any(), %error, "syncing daemonset");
        }
    }
    succeeded
}

/// What about a node decides where DaemonSets place pods: its labels, taints and cordon.
fn placement_fingerprint(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    if let Some(spec) = &node.spec {
        spec.unschedulable.hash(&mut hasher);
        for taint in spec.taints.iter().flatten() {
            (&taint.key, &taint.value, &taint.effect).hash(&mut hasher);
        }
    }
    hasher.finish()
}

fn params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

/// Whether the object of `meta` names the owner of `owner_uid` as its controller.
/// Write `status` to the owner's status unless every field it names already holds that value (a missing field
/// counting as 0, as the counts these controllers write read when absent): a pass over an unchanged workload
/// writes nothing. Whether it wrote.
async fn patch_status_if_changed<K>(
    client: &kube::Client,
    owner: &K,
    old: &Value,
    status: Value,
) -> kube::Result<bool>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let unchanged = status.as_object().is_some_and(|fields| {
        fields
            .iter()
            .all(|(key, value)| old.get(key).unwrap_or(&json!(0)) == value)
    });
    if unchanged {
        return Ok(false);
    }
    let namespace = owner.namespace().unwrap_or_default();
    Api::<K>::namespaced(client.clone(), &namespace)
        .patch_status(
            &owner.name_any(),
            &patch_params(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    Ok(true)
}

fn controlled_by(meta: &kube::api::ObjectMeta, owner_uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == owner_uid)
}

/// The controller reference an owner puts on what it creates.
fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone()?,
        uid: owner.meta().uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// A short, stable hash of a pod template, in the alphabet kube-controller-manager uses for names (no vowels, no
/// look-alikes).
pub fn template_hash(template: &PodTemplateSpec) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let canonical = serde_json::to_vec(template).unwrap_or_default();
    let digest = Sha256::digest(&canonical);
    let mut value = u64::from_be_bytes(digest[..8].try_into().unwrap_or([0; 8]));
    let mut out = String::new();
    for _ in 0..10 {
        out.push(char::from(
            ALPHABET[(value % ALPHABET.len() as u64) as usize],
        ));
        value /= ALPHABET.len() as u64;
    }
    out
}

/// A pod template as kube-controller-manager compares them: without the `pod-template-hash` label, and with zero
/// values (`false`, `0`, `""`, empty objects and lists, nulls) the same as absent fields, as Go's typed templates
/// hold them: a client that decodes and encodes a template again (`kubectl rollout undo`) writes `resources: {}`
/// where there was nothing and leaves out the `stdin: false` another client wrote.
fn comparable_template(template: &PodTemplateSpec) -> Value {
    fn without_empties(value: Value) -> Value {
        match value {
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(key, value)| (key, without_empties(value)))
                    .filter(|(_, value)| !is_empty(value))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(without_empties).collect()),
            other => other,
        }
    }
    fn is_empty(value: &Value) -> bool {
        match value {
            Value::Null => true,
            Value::Bool(flag) => !flag,
            Value::Number(number) => number.as_f64() == Some(0.0),
            Value::String(text) => text.is_empty(),
            Value::Object(fields) => fields.is_empty(),
            Value::Array(items) => items.is_empty(),
        }
    }
    let mut value = serde_json::to_value(template).unwrap_or(Value::Null);
    if let Some(labels) = value
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
    }
    without_empties(value)
}

/// Keep the ReplicaSet of the current template at the desired size, the others at zero, and report.
async fn sync_deployment(
    client: &kube::Client,
    recorder: &Recorder,
    deployment: &Deployment,
    replica_sets: &[Arc<ReplicaSet>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid), Some(spec)) = (
        deployment.namespace(),
        deployment.uid(),
        deployment.spec.as_ref(),
    ) else {
        return Ok(());
    };
    let api = Api::<ReplicaSet>::namespaced(client.clone(), &namespace);
    let desired = spec.replicas.unwrap_or(1);
    let hash = template_hash(&spec.template);
    let name = format!("{}-{hash}", deployment.name_any());
    let owned: Vec<&Arc<ReplicaSet>> = replica_sets
        .iter()
        .filter(|rs| controlled_by(rs.meta(), &uid))
        .collect();
    // The ReplicaSet of the current template: found by its template, as a client that sends an old template back
    // (`kubectl rollout undo`) may spell it differently, else by name.
    let wanted = comparable_template(&spec.template);
    let current = owned
        .iter()
        .find(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| comparable_template(t) == wanted)
        })
        .or_else(|| owned.iter().find(|rs| rs.name_any() == name));
    let current_name = current.map_or_else(|| name.clone(), |rs| rs.name_any());
    let old_sets: Vec<&Arc<ReplicaSet>> = owned
        .iter()
        .copied()
        .filter(|rs| rs.name_any() != current_name)
        .collect();
    let revision = revisions::current_revision(current.map(|rs| rs.as_ref()), &old_sets);
    match current {
        None => {
            let mut replica_set = new_replica_set(deployment, &name, &hash, desired);
            replica_set.metadata.annotations = Some(revisions::replica_set_annotations(
                deployment, None, revision,
            ));
            match api.create(&params(), &replica_set).await {
                Ok(_) => {
                    let message = format!("Scaled up replica set {name} from 0 to {desired}");
                    record(recorder, deployment, "ScalingReplicaSet", &message).await;
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(error),
            }
        }
        Some(rs) => {
            revisions::annotate_replica_set(&api, deployment, rs, revision).await?;
            scale(&api, recorder, deployment, rs, desired).await?;
        }
    }
    for old in &old_sets {
        scale(&api, recorder, deployment, old, 0).await?;
    }
    revisions::annotate_deployment(client, deployment, revision).await?;
    revisions::clean_up(&api, deployment, &old_sets).await?;
    let count = |field: fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> Option<i32>| {
        owned
            .iter()
            .filter_map(|rs| rs.status.as_ref())
            .map(|s| field(s).unwrap_or(0))
            .sum::<i32>()
    };
    let replicas = count(|s| Some(s.replicas));
    let ready = count(|s| s.ready_replicas);
    let available = count(|s| s.available_replicas);
    let updated = current
        .and_then(|rs| rs.status.as_ref())
        .map_or(0, |s| s.replicas);
    let is_available = available >= desired;
    let status = json!({
        "observedGeneration": deployment.metadata.generation,
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": available,
        "updatedReplicas": updated,
        "unavailableReplicas": (desired - available).max(0),
    });
    let old_status = serde_json::to_value(&deployment.status).unwrap_or(Value::Null);
    let old_available = condition_status(&old_status, "Available");
    let want_available = if is_available { "True" } else { "False" };
    let counts_changed = status.as_object().is_some_and(|fields| {
        fields
            .iter()
            .any(|(key, value)| old_status.get(key).unwrap_or(&json!(0)) != value)
    });
    if !counts_changed && old_available.as_deref() == Some(want_available) {
        return Ok(());
    }
    let mut status = status;
    let now = jiff::Timestamp::now().to_string();
    let (reason, message) = if is_available {
        (
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        (
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    status["conditions"] = json!([{
        "type": "Available",
        "status": want_available,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }]);
    Api::<Deployment>::namespaced(client.clone(), &namespace)
        .patch_status(
            &deployment.name_any(),
            &patch_params(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    Ok(())
}

fn condition_status(status: &Value, kind: &str) -> Option<String> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?
        .get("status")?
        .as_str()
        .map(str::to_owned)
}

/// Set a ReplicaSet's size, when it differs, and say so on the Deployment.
async fn scale(
    api: &Api<ReplicaSet>,
    recorder: &Recorder,
    deployment: &Deployment,
    replica_set: &ReplicaSet,
    replicas: i32,
) -> kube::Result<()> {
    let from = replica_set
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    if from == replicas {
        return Ok(());
    }
    let name = replica_set.name_any();
    api.patch(
        &name,
        &patch_params(),
        &Patch::Merge(json!({ "spec": { "replicas": replicas } })),
    )
    .await?;
    let direction = if replicas > from { "up" } else { "down" };
    let message = format!("Scaled {direction} replica set {name} from {from} to {replicas}");
    record(recorder, deployment, "ScalingReplicaSet", &message).await;
    Ok(())
}

/// The ReplicaSet of the Deployment's current template.
fn new_replica_set(deployment: &Deployment, name: &str, hash: &str, replicas: i32) -> ReplicaSet {
    let spec = deployment.spec.clone().unwrap_or_default();
    let mut template = spec.template;
    let template_meta = template.metadata.get_or_insert_with(Default::default);
    let mut labels = template_meta.labels.clone().unwrap_or_default();
    labels.insert(POD_TEMPLATE_HASH.to_owned(), hash.to_owned());
    template_meta.labels = Some(labels.clone());
    let mut selector = spec.selector;
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH.to_owned(), hash.to_owned());
    ReplicaSet {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            namespace: deployment.namespace(),
            labels: Some(labels),
            owner_references: controller_ref(deployment).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_hash_follows_the_template() {
        let template = |image: &str| -> PodTemplateSpec {
            serde_json::from_value(json!({
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }))
            .expect("a template")
        };
        let hash = template_hash(&template("a:1"));
        assert_eq!(hash.len(), 10);
        assert_eq!(hash, template_hash(&template("a:1")));
        assert_ne!(hash, template_hash(&template("a:2")));
        assert!(
            hash.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
