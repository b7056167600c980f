//! The ordinary workloads of a busy cluster, beside what this project makes: the scenario's `background`.
//!
//! Kubernetes' published limits are 5,000 nodes and 150,000 pods, 110 a node. A cluster near them runs
//! Deployments, DaemonSets and Jobs in hundreds of namespaces and replaces pods all the time, each replacement
//! recorded in Events by the scheduler, the kubelet and the ReplicaSet controller: what a console or an engine must
//! not pay for. Simulating each of those pods as the kubelets simulate this project's would take gigabytes and
//! minutes; here they only exist and churn:
//!
//! - At start they are written straight into the store, bound and running, with their owners: 150,000 pods in
//!   seconds rather than one by one through the scheduler and the kubelets. A cluster started again from its state
//!   keeps them and writes nothing.
//! - Each carries the label [`LABEL`], which the simulation's own watches leave out ([`NOT_BACKGROUND`]): its
//!   scheduler, kubelets and workload controllers never see them. Nothing else reads the label: to the console, the
//!   engine and kubectl they are ordinary objects.
//! - A churn task replaces `churnPerSecond` Deployment pods a real second through the API, as the ReplicaSet
//!   controller, the scheduler and the kubelet would: the old pod deleted, a new one created on the same node and
//!   its status set running, and the seven Events a real cluster records (`Killing`, `SuccessfulDelete`,
//!   `SuccessfulCreate`, `Scheduled`, `Pulled`, `Created`, `Started`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::scenario::Background;
use super::scheduler::events::{Recorder, Severity};
use super::{MANAGER, World};
use kmm_apiserver::store::ResourceKey;

/// The label every background object carries, for the simulation's own watches to leave out.
pub const LABEL: &str = "sim.kmm-tui.io/background";

/// The label selector of the simulation's own watches: everything but the background.
pub const NOT_BACKGROUND: &str = "!sim.kmm-tui.io/background";

/// The image every background container runs.
const IMAGE: &str = "registry.example/apps/service:1.4.2";

/// What the runtime resolved [`IMAGE`] to.
const IMAGE_ID: &str = "registry.example/apps/service@sha256:5d41402abc4b2a76b9719d911017c592ae2f8e1b6f3c2e8a7d4b9f0c1e2d3a4b";

/// The DaemonSets every node runs a pod of.
const DAEMON_SETS: [&str; 2] = ["node-exporter", "log-shipper"];

/// How often the churn task replaces the pods due.
const CHURN_TICK: Duration = Duration::from_millis(100);

/// What was written at start, and what the churn task replaces.
pub struct Loaded {
    /// Every object written, pods included.
    pub objects: usize,
    /// The pods written.
    pub pods: usize,
    /// How many pod names were given.
    names: u64,
    /// The Deployment pods, which churn.
    churning: Vec<ChurningPod>,
}

/// A Deployment pod the churn task may replace.
struct ChurningPod {
    namespace: String,
    replica_set: String,
    replica_set_uid: String,
    name: String,
    node: String,
}

/// Write the background of `world`'s scenario into the store, unless its first namespace is there already (a
/// cluster started again from its state). Returns what was written, or `None` when nothing was.
pub fn load(world: &World) -> anyhow::Result<Option<Loaded>> {
    let Some(background) = &world.scenario.background else {
        return Ok(None);
    };
    let store = world.server.store();
    let namespaces = ResourceKey::new("", "namespaces");
    if store.get(&namespaces, "", &namespace_name(0)).is_some() {
        return Ok(None);
    }
    let nodes = world.scenario.node_names();
    let mut writer = Writer {
        world,
        rng: ChaCha8Rng::seed_from_u64(world.scenario.seed ^ 0x6261_636b),
        now: jiff::Timestamp::now().to_string(),
        loaded: Loaded {
            objects: 0,
            pods: 0,
            names: 0,
            churning: Vec::new(),
        },
    };
    let mut slots = writer.pods_per_node(background, nodes.len());
    for index in 0..background.namespaces {
        writer.put(&namespaces, namespace(index, &writer.now))?;
    }
    writer.daemon_sets(&nodes, &mut slots)?;
    writer.jobs(background, &nodes, &mut slots)?;
    writer.deployments(background, &nodes, &slots)?;
    Ok(Some(writer.loaded))
}

/// Replace background pods at the scenario's rate until the world stops.
pub fn spawn(world: Arc<World>, loaded: Loaded) -> Option<JoinHandle<()>> {
    let rate = world.scenario.background.as_ref()?.churn_per_second;
    if rate <= 0.0 || loaded.churning.is_empty() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut churn = Churn {
            pods: loaded.churning,
            names: loaded.names,
            rng: ChaCha8Rng::seed_from_u64(world.scenario.seed ^ 0x6368_7572),
            kubelet: Recorder::new(world.client.clone(), "kubelet"),
            scheduler: Recorder::new(world.client.clone(), "default-scheduler"),
            replica_sets: Recorder::new(world.client.clone(), "replicaset-controller"),
            client: world.client.clone(),
        };
        let mut ticker = tokio::time::interval(CHURN_TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut due = 0.0;
        loop {
            tokio::select! {
                () = world.stop.cancelled() => return,
                _ = ticker.tick() => {}
            }
            // A tick that falls behind drops what it could not do rather than bursting later.
            due = (due + rate * CHURN_TICK.as_secs_f64()).min(rate);
            while due >= 1.0 {
                due -= 1.0;
                if let Err(error) = churn.replace_one().await {
                    tracing::debug!(%error, "a background pod was not replaced");
                }
            }
        }
    }))
}

/// Writes the background into the store.
struct Writer<'w> {
    world: &'w World,
    rng: ChaCha8Rng,
    now: String,
    loaded: Loaded,
}

impl Writer<'_> {
    /// How many pods each node runs: spread evenly around the average, at least the DaemonSets' two and one more,
    /// at most the maximum.
    fn pods_per_node(&mut self, background: &Background, nodes: usize) -> Vec<u32> {
        let average = background.pods_per_node;
        (0..nodes)
            .map(|_| {
                let count = average / 2 + self.rng.random_range(0..=average);
                count.clamp(3, background.max_pods_per_node)
            })
            .collect()
    }

    fn put(&mut self, resource: &ResourceKey, value: Value) -> anyhow::Result<()> {
        self.world
            .server
            .store()
            .put(resource, None, value)
            .map_err(|error| anyhow::anyhow!("writing the background: {error:?}"))?;
        self.loaded.objects += 1;
        Ok(())
    }

    /// Write a pod of `of`, with the `pod-template-hash` label when its owner is a ReplicaSet; its name.
    fn put_pod(&mut self, of: &PodOf<'_>, template_hash: Option<&str>) -> anyhow::Result<String> {
        let name = format!("{}-{}", of.prefix, self.suffix());
        let uid = self.uid();
        let mut pod = pod(
            &name,
            of.namespace,
            &uid,
            of.app,
            of.owner,
            of.node,
            &self.now,
            of.phase,
        );
        if let Some(hash) = template_hash {
            pod["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        }
        self.loaded.pods += 1;
        self.put(&ResourceKey::new("", "pods"), pod)?;
        Ok(name)
    }

    fn uid(&mut self) -> String {
        let bits: u128 = self.rng.random();
        let hex = format!("{bits:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }

    /// The next name suffix: unique among every pod of the background, as a real one is among a namespace's.
    fn suffix(&mut self) -> String {
        self.loaded.names += 1;
        name_suffix(self.loaded.names)
    }

    /// The two DaemonSets, in the first namespace, with a pod on every node.
    fn daemon_sets(&mut self, nodes: &[String], slots: &mut [u32]) -> anyhow::Result<()> {
        let namespace = namespace_name(0);
        for name in DAEMON_SETS {
            let uid = self.uid();
            let count = nodes.len();
            let set = json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": meta(name, &namespace, &uid, &self.now, name),
                "spec": {"selector": {"matchLabels": {"app": name}}, "template": template(name)},
                "status": {
                    "currentNumberScheduled": count, "desiredNumberScheduled": count, "numberReady": count,
                    "numberAvailable": count, "updatedNumberScheduled": count, "numberMisscheduled": 0,
                    "observedGeneration": 1
                }
            });
            self.put(&ResourceKey::new("apps", "daemonsets"), set)?;
            let owner = owner("apps/v1", "DaemonSet", name, &uid);
            for node in nodes {
                let of = PodOf {
                    prefix: name,
                    namespace: &namespace,
                    app: name,
                    owner: &owner,
                    node,
                    phase: "Running",
                };
                self.put_pod(&of, None)?;
            }
        }
        for slot in slots.iter_mut() {
            *slot -= 2;
        }
        Ok(())
    }

    /// A finished Job in every namespace, its one pod succeeded, on nodes in turn that have room.
    fn jobs(
        &mut self,
        background: &Background,
        nodes: &[String],
        slots: &mut [u32],
    ) -> anyhow::Result<()> {
        let mut next = 0;
        for index in 0..background.namespaces {
            let Some(node) = (0..nodes.len())
                .map(|step| (next + step) % nodes.len())
                .find(|&n| slots[n] > 1)
            else {
                return Ok(());
            };
            next = node + 1;
            slots[node] -= 1;
            let namespace = namespace_name(index);
            let name = "nightly-report";
            let uid = self.uid();
            let job = json!({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": meta(name, &namespace, &uid, &self.now, name),
                "spec": {"completions": 1, "parallelism": 1, "template": template(name)},
                "status": {
                    "succeeded": 1, "startTime": self.now, "completionTime": self.now,
                    "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": self.now}]
                }
            });
            self.put(&ResourceKey::new("batch", "jobs"), job)?;
            let owner = owner("batch/v1", "Job", name, &uid);
            let of = PodOf {
                prefix: name,
                namespace: &namespace,
                app: name,
                owner: &owner,
                node: &nodes[node],
                phase: "Succeeded",
            };
            self.put_pod(&of, None)?;
        }
        Ok(())
    }

    /// A Deployment in every namespace, with its ReplicaSet; their pods fill the nodes' remaining room, placed in a
    /// seeded shuffle.
    fn deployments(
        &mut self,
        background: &Background,
        nodes: &[String],
        slots: &[u32],
    ) -> anyhow::Result<()> {
        let mut places: Vec<usize> = slots
            .iter()
            .enumerate()
            .flat_map(|(node, &count)| std::iter::repeat_n(node, count as usize))
            .collect();
        places.shuffle(&mut self.rng);
        let namespaces = background.namespaces as usize;
        let mut places = places.into_iter();
        let total = places.len();
        for index in 0..namespaces {
            let replicas = total / namespaces + usize::from(index < total % namespaces);
            let namespace = namespace_name(index as u32);
            let name = "service";
            let deployment_uid = self.uid();
            let hash = format!("{}{}", self.suffix(), self.suffix());
            let replica_set = format!("{name}-{hash}");
            let ready = json!({"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                "observedGeneration": 1});
            let mut deployment_status = ready.clone();
            deployment_status["updatedReplicas"] = json!(replicas);
            deployment_status["conditions"] = json!([
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": self.now},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": self.now}
            ]);
            let deployment = json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": meta(name, &namespace, &deployment_uid, &self.now, name),
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template(name)},
                "status": deployment_status
            });
            self.put(&ResourceKey::new("apps", "deployments"), deployment)?;
            let replica_set_uid = self.uid();
            let mut replica_set_meta =
                meta(&replica_set, &namespace, &replica_set_uid, &self.now, name);
            replica_set_meta["ownerReferences"] =
                json!([owner("apps/v1", "Deployment", name, &deployment_uid)]);
            replica_set_meta["labels"]["pod-template-hash"] = json!(hash);
            let replica_set_object = json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": replica_set_meta,
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name, "pod-template-hash": hash}},
                    "template": template(name)},
                "status": ready
            });
            self.put(&ResourceKey::new("apps", "replicasets"), replica_set_object)?;
            let owner = owner("apps/v1", "ReplicaSet", &replica_set, &replica_set_uid);
            for node in places.by_ref().take(replicas) {
                let of = PodOf {
                    prefix: &replica_set,
                    namespace: &namespace,
                    app: name,
                    owner: &owner,
                    node: &nodes[node],
                    phase: "Running",
                };
                let pod_name = self.put_pod(&of, Some(&hash))?;
                self.loaded.churning.push(ChurningPod {
                    namespace: namespace.clone(),
                    replica_set: replica_set.clone(),
                    replica_set_uid: replica_set_uid.clone(),
                    name: pod_name,
                    node: nodes[node].clone(),
                });
            }
        }
        Ok(())
    }
}

/// Whose and where a background pod is: named after `prefix`, of `app`, owned by `owner`, on `node`, in `phase`.
struct PodOf<'a> {
    prefix: &'a str,
    namespace: &'a str,
    app: &'a str,
    owner: &'a Value,
    node: &'a str,
    phase: &'a str,
}

/// Replaces Deployment pods, one at a time, as the control plane and the kubelets would.
struct Churn {
    pods: Vec<ChurningPod>,
    /// How many pod names were given.
    names: u64,
    rng: ChaCha8Rng,
    kubelet: Recorder,
    scheduler: Recorder,
    replica_sets: Recorder,
    client: kube::Client,
}

impl Churn {
    /// Replace one pod chosen at random, and record what a real cluster records of it.
    async fn replace_one(&mut self) -> kube::Result<()> {
        let index = self.rng.random_range(0..self.pods.len());
        self.names += 1;
        let suffix = name_suffix(self.names);
        let uid = format!("{:032x}", self.rng.random::<u128>());
        let old = &self.pods[index];
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &old.namespace);
        let replica_set_ref = reference("apps/v1", "ReplicaSet", &old.namespace, &old.replica_set);
        self.kubelet
            .record(
                pod_ref(&old.namespace, &old.name),
                Severity::Normal,
                "Killing",
                "Stopping container app",
            )
            .await?;
        let gone = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        match api.delete(&old.name, &gone).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
        self.replica_sets
            .record(
                replica_set_ref.clone(),
                Severity::Normal,
                "SuccessfulDelete",
                &format!("Deleted pod: {}", old.name),
            )
            .await?;
        let name = format!("{}-{suffix}", old.replica_set);
        let hash = old
            .replica_set
            .rsplit('-')
            .next()
            .unwrap_or_default()
            .to_owned();
        let owner = owner(
            "apps/v1",
            "ReplicaSet",
            &old.replica_set,
            &old.replica_set_uid,
        );
        let now = jiff::Timestamp::now().to_string();
        let mut created = pod(
            &name,
            &old.namespace,
            &uid,
            "service",
            &owner,
            &old.node,
            &now,
            "Running",
        );
        created["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        let status = created["status"].take();
        let created: Pod = serde_json::from_value(created).map_err(kube::Error::SerdeError)?;
        api.create(&PostParams::default(), &created).await?;
        self.replica_sets
            .record(
                replica_set_ref,
                Severity::Normal,
                "SuccessfulCreate",
                &format!("Created pod: {name}"),
            )
            .await?;
        let node = old.node.clone();
        let namespace = old.namespace.clone();
        self.scheduler
            .record(
                pod_ref(&namespace, &name),
                Severity::Normal,
                "Scheduled",
                &format!("Successfully assigned {namespace}/{name} to {node}"),
            )
            .await?;
        api.patch_status(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&json!({
                "apiVersion": "v1", "kind": "Pod", "status": status
            })),
        )
        .await?;
        for (reason, message) in [
            (
                "Pulled",
                format!("Container image \"{IMAGE}\" already present on machine"),
            ),
            ("Created", "Created container app".to_owned()),
            ("Started", "Started container app".to_owned()),
        ] {
            self.kubelet
                .record(
                    pod_ref(&namespace, &name),
                    Severity::Normal,
                    reason,
                    &message,
                )
                .await?;
        }
        self.pods[index].name = name;
        Ok(())
    }
}

/// Five characters of the alphabet Kubernetes draws name suffixes from, different for every `count` below 27^5:
/// multiplying by a number prime to 27^5 only reorders the suffixes, so they look drawn at random yet never
/// repeat.
fn name_suffix(count: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const SUFFIXES: u64 = 27 * 27 * 27 * 27 * 27;
    let mut code = count.wrapping_mul(7_919) % SUFFIXES;
    (0..5)
        .map(|_| {
            let letter = ALPHABET[(code % 27) as usize];
            code /= 27;
            char::from(letter)
        })
        .collect()
}

fn namespace_name(index: u32) -> String {
    format!("apps-{index:04}")
}

fn namespace(index: u32, now: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace_name(index), "uid": format!("{index:08x}-0000-4000-8000-{index:012x}"),
            "creationTimestamp": now, "labels": {LABEL: "true", "kubernetes.io/metadata.name": namespace_name(index)}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    })
}

fn meta(name: &str, namespace: &str, uid: &str, now: &str, app: &str) -> Value {
    json!({"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": now, "generation": 1,
        "labels": {"app": app, LABEL: "true"}})
}

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": IMAGE,
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}
    })
}

fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true,
        "blockOwnerDeletion": true})
}

fn reference(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.to_owned()),
        kind: Some(kind.to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

fn pod_ref(namespace: &str, name: &str) -> ObjectReference {
    reference("v1", "Pod", namespace, name)
}

/// A pod of `app`, owned by `owner`, bound to `node` and in `phase` since `now`.
#[allow(clippy::too_many_arguments)]
fn pod(
    name: &str,
    namespace: &str,
    uid: &str,
    app: &str,
    owner: &Value,
    node: &str,
    now: &str,
    phase: &str,
) -> Value {
    let running = phase == "Running";
    let state = if running {
        json!({"running": {"startedAt": now}})
    } else {
        json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}})
    };
    let octets = uid.as_bytes();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": now,
            "labels": {"app": app, LABEL: "true"}, "ownerReferences": [owner]},
        "spec": {"nodeName": node, "restartPolicy": if running { "Always" } else { "Never" },
            "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "containers": [{"name": "app", "image": IMAGE,
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]},
        "status": {
            "phase": phase, "startTime": now, "qosClass": "Burstable",
            "podIP": format!("10.{}.{}.{}", octets[0] % 250, octets[1] % 250, octets[2] % 250 + 1),
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "Ready", "status": if running { "True" } else { "False" }, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": if running { "True" } else { "False" }, "lastTransitionTime": now}
            ],
            "containerStatuses": [{"name": "app", "image": IMAGE, "imageID": IMAGE_ID,
                "ready": running, "started": running, "restartCount": 0, "state": state}]
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn name_suffixes_never_repeat_across_a_clusters_worth_of_pods() {
        let suffixes: HashSet<String> = (1..=300_000).map(name_suffix).collect();
        assert_eq!(suffixes.len(), 300_000);
        assert!(suffixes.iter().all(|s| s.len() == 5));
    }
}
