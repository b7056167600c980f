//! The hub family: kernel modules for a fleet of clusters, as upstream KMM's hub operator delivers them through Open
//! Cluster Management.
//!
//! `ManagedClusterModule` → the kernels of the ManagedClusters its selector picks (their
//! `kernel-versions.kmm.node.kubernetes.io` claims) → one ModuleImagesConfig on the hub, in the hub namespace
//! ([`Settings::hub_namespace`](crate::runtime::settings::Settings)), listing every image those kernels need, which
//! the KMM family's pipeline checks, builds and signs there → per selected cluster, once its images exist, a
//! ManifestWork in the cluster's namespace carrying the Module for `spokeNamespace` with build and sign removed and
//! one literal kernel mapping per kernel ([`manifest`]). Each spoke's work agent applies it and its own engine (or
//! upstream KMM) loads the module; the hub never writes into a spoke but through ManifestWork.
//!
//! Where it differs from upstream's hub operator, each for a reason:
//! - One ModuleImagesConfig per ManagedClusterModule rather than one per cluster: a kernel several clusters run is
//!   built and signed once.
//! - `$MOD_NAMESPACE` is `spokeNamespace` in the images built and in the images delivered alike (upstream builds with
//!   its own namespace and delivers with the spoke's, so the two can differ).
//! - A kernel whose new image is not ready keeps the image its cluster was delivered, and a mapping with a typo
//!   holds every cluster as it is: an edit never unloads a fleet while it builds (upstream holds back a cluster until
//!   all its images exist, and drops kernels it cannot map).
//! - Each image is delivered pinned to the digest the hub's ModuleImagesConfig recorded for it (pulled, built or
//!   signed): every spoke runs what the hub checked, even if the tag moves (upstream delivers the tag).
//! - A cluster leaving the selector loses its ManifestWork at once: a ManagedCluster changing what a pass reads of
//!   it (its labels, its kernels, whether it is available), joining or leaving wakes every ManagedClusterModule;
//!   its other status writes wake none ([`waking_changes`]).
//! - Each selected cluster's state is in `status.clusters`, the worst in a `Delivered` condition, and a change into
//!   a state a person must act on is an Event (upstream only logs).
//!
//! The family runs only where the hub's kinds are served (ManagedClusterModule, ManagedCluster, ManifestWork): on
//! any other cluster it looks once when the engine starts acting, and stays idle.

mod manifest;
mod plan;
mod reconcile;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use crate::runtime::context::Context;
use crate::runtime::family::Family;
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::hub::{GROUP, ManagedClusterModule, NAME_LABEL};
use kmm_api::kmm::ModuleImagesConfig;
use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::work::ManifestWork;
use kmm_api::ocm::{CLUSTER_GROUP, WORK_GROUP};

/// What a pass reads besides the API.
struct HubContext {
    /// Client, settings, events.
    engine: Arc<Context>,
    /// Every ManagedCluster, kept by a watch.
    clusters: Store<ManagedCluster>,
}

/// The kinds the family needs served, as (group/version, plural).
const KINDS: [(&str, &str); 3] = [
    ("v1beta1", "managedclustermodules"),
    ("v1", "managedclusters"),
    ("v1", "manifestworks"),
];

/// Run the reconciler until `stop` is cancelled, on a cluster that serves the hub's kinds.
pub(crate) async fn run(context: Arc<Context>, stop: CancellationToken) {
    tokio::select! {
        () = stop.cancelled() => return,
        served = hub_served(&context.client) => if !served {
            tracing::info!("no ManagedClusterModule, ManagedCluster or ManifestWork served here: the hub family stays idle");
            return;
        },
    }
    reconcile_modules(context, stop).await;
}

/// Whether the cluster serves every kind of [`KINDS`]. An API server that does not answer is asked again, a
/// little later each time: the family must not decide from a hiccup.
async fn hub_served(client: &kube::Client) -> bool {
    let mut wait = Duration::from_millis(200);
    'ask: loop {
        for ((version, plural), group) in KINDS.iter().zip([GROUP, CLUSTER_GROUP, WORK_GROUP]) {
            match client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
            {
                Ok(list) if list.resources.iter().any(|r| r.name == *plural) => {}
                Ok(_) => return false,
                Err(kube::Error::Api(status)) if status.code == 404 => return false,
                Err(error) => {
                    tracing::debug!(%error, "asking whether the hub's kinds are served");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(30));
                    continue 'ask;
                }
            }
        }
        return true;
    }
}

async fn reconcile_modules(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    let wiring = Wiring::new(
        &context,
        Metered::new("managedclustermodule", Family::Hub),
        watcher(
            Api::<ManagedClusterModule>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    );
    let modules = wiring.store();
    let (clusters, writer) = reflector::store();
    let cluster_changes = watcher(
        Api::<ManagedCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer);
    let cluster_changes = waking_changes(cluster_changes);
    let hub_context = Arc::new(HubContext {
        engine: context.clone(),
        clusters,
    });
    let mics: Api<ModuleImagesConfig> =
        Api::namespaced(client.clone(), &context.settings.hub_namespace);
    wiring
        .with(|controller| {
            controller
                // A cluster joining, leaving, relabelled, stating other kernels or going unavailable can change what
                // any MCM selects or tells.
                .watches_stream(cluster_changes, move |_cluster: ManagedCluster| {
                    modules
                        .state()
                        .iter()
                        .map(|m| ObjectRef::from_obj(m.as_ref()))
                        .collect::<Vec<_>>()
                })
                // Works live in the clusters' namespaces and the MCM is cluster-scoped, so they are matched by label.
                .watches(
                    Api::<ManifestWork>::all(client),
                    watcher::Config::default().labels(NAME_LABEL),
                    |work: ManifestWork| {
                        let name = work.metadata.labels.as_ref()?.get(NAME_LABEL)?;
                        Some(ObjectRef::<ManagedClusterModule>::new(name))
                    },
                )
                .watches(
                    mics,
                    watcher::Config::default(),
                    |mic: ModuleImagesConfig| {
                        mic.metadata
                            .owner_references
                            .into_iter()
                            .flatten()
                            .filter(|owner| owner.kind == "ManagedClusterModule")
                            .map(|owner| ObjectRef::<ManagedClusterModule>::new(&owner.name))
                            .collect::<Vec<_>>()
                    },
                )
        })
        .drive(
            reconcile::reconcile,
            reconcile::error_policy,
            hub_context,
            &stop,
            "ManagedClusterModule",
        )
        .await;
}

/// What a pass reads of a ManagedCluster besides its name: the labels its selector matches, the kernels it states
/// and whether it is available.
fn what_a_pass_reads(cluster: &ManagedCluster) -> u64 {
    let mut hasher = DefaultHasher::new();
    cluster.metadata.labels.hash(&mut hasher);
    cluster.kernel_versions().hash(&mut hasher);
    cluster.is_available().hash(&mut hasher);
    hasher.finish()
}

/// The clusters of `events` whose change can alter a pass: each one listed, joining or leaving, and each one
/// updated in [`what_a_pass_reads`]. A hub's clusters write their status for much else (capacity, versions, other
/// claims), and each such write would otherwise start a pass of every ManagedClusterModule.
fn waking_changes<S>(events: S) -> impl Stream<Item = Result<ManagedCluster, watcher::Error>>
where
    S: Stream<Item = Result<watcher::Event<ManagedCluster>, watcher::Error>>,
{
    let mut read: HashMap<String, u64> = HashMap::new();
    events.filter_map(move |event| {
        let woken = match event {
            Err(error) => Some(Err(error)),
            Ok(watcher::Event::Apply(cluster)) => {
                let fingerprint = what_a_pass_reads(&cluster);
                (read.insert(cluster.name_any(), fingerprint) != Some(fingerprint))
                    .then_some(Ok(cluster))
            }
            Ok(watcher::Event::InitApply(cluster)) => {
                read.insert(cluster.name_any(), what_a_pass_reads(&cluster));
                Some(Ok(cluster))
            }
            Ok(watcher::Event::Delete(cluster)) => {
                read.remove(&cluster.name_any());
                Some(Ok(cluster))
            }
            // A relist names every cluster there is: those gone meanwhile are forgotten with the rest.
            Ok(watcher::Event::Init) => {
                read.clear();
                None
            }
            Ok(watcher::Event::InitDone) => None,
        };
        std::future::ready(woken)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// spoke-1 with `kernels`, its Available condition `available` and `cpu` allocatable.
    fn cluster(kernels: &str, available: &str, cpu: &str) -> ManagedCluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "spoke-1", "labels": {"cluster.open-cluster-management.io/clusterset": "default"}},
            "spec": {"hubAcceptsClient": true},
            "status": {
                "conditions": [{"type": "ManagedClusterConditionAvailable", "status": available, "reason": "",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "allocatable": {"cpu": cpu},
                "clusterClaims": [{"name": "kernel-versions.kmm.node.kubernetes.io", "value": kernels}],
            },
        }))
        .expect("a cluster")
    }

    #[tokio::test]
    async fn only_what_a_pass_reads_wakes_the_modules() {
        let events = [
            watcher::Event::Init,
            watcher::Event::InitApply(cluster("6.1", "True", "8")),
            watcher::Event::InitDone,
            watcher::Event::Apply(cluster("6.1", "True", "16")),
            watcher::Event::Apply(cluster("6.1\n6.2", "True", "16")),
            watcher::Event::Apply(cluster("6.1\n6.2", "Unknown", "16")),
            watcher::Event::Apply(cluster("6.1\n6.2", "Unknown", "24")),
            watcher::Event::Delete(cluster("6.1\n6.2", "Unknown", "24")),
        ];
        let woken: Vec<(Vec<String>, bool)> =
            waking_changes(futures::stream::iter(events.into_iter().map(Ok)))
                .map(|cluster| {
                    let cluster = cluster.expect("no error");
                    let kernels = cluster.kernel_versions().into_iter().map(str::to_owned);
                    (kernels.collect(), cluster.is_available())
                })
                .collect()
                .await;
        let kernels = |list: &[&str]| list.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            woken,
            [
                (kernels(&["6.1"]), true),
                (kernels(&["6.1", "6.2"]), true),
                (kernels(&["6.1", "6.2"]), false),
                (kernels(&["6.1", "6.2"]), false),
            ],
            "the listing, the new kernel, the lost availability and the deletion; not the capacity"
        );
    }
}
