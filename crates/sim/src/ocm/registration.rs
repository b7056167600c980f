//! The registration agent's part on a spoke: renew the cluster's Lease on the hub every lease duration, and report
//! the cluster's state on its ManagedCluster (joined and available, Kubernetes version, capacity, and the claims a
//! hub reads: identity, platform and the kernels the nodes run).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kmm_api::ocm::cluster::{ManagedCluster, ManagedClusterClaim, ManagedClusterVersion};
use kmm_api::ocm::names;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

use super::conditions::{self, Wanted};

/// The field manager of the registration agent's writes.
pub const MANAGER: &str = "registration-agent";

/// What a simulated cluster claims as its platform.
const PLATFORM: &str = "Other";

/// Renew the Lease and report the cluster until `stop`.
pub(crate) async fn run(
    hub: kube::Client,
    spoke: kube::Client,
    cluster: String,
    stop: CancellationToken,
) {
    loop {
        let period = match renew(&hub, &spoke, &cluster).await {
            Ok(period) => period,
            Err(error) => {
                tracing::debug!(%cluster, "registration: {error:#}");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
    }
}

/// One round: renew the Lease, then report the status. The lease duration is the time to the next round.
async fn renew(
    hub: &kube::Client,
    spoke: &kube::Client,
    cluster: &str,
) -> anyhow::Result<Duration> {
    let clusters: Api<ManagedCluster> = Api::all(hub.clone());
    let mut managed = clusters.get(cluster).await?;
    let seconds = managed
        .spec
        .lease_duration_seconds
        .filter(|seconds| *seconds > 0)
        .unwrap_or(names::DEFAULT_LEASE_DURATION_SECONDS);
    renew_lease(hub, cluster, seconds).await?;
    let nodes: Api<Node> = Api::all(spoke.clone());
    let nodes = nodes.list(&ListParams::default()).await?.items;
    let version = spoke.apiserver_version().await?.git_version;
    let status = managed.status.get_or_insert_with(Default::default);
    let before = status.clone();
    conditions::set(
        &mut status.conditions,
        Wanted {
            type_: names::CONDITION_JOINED,
            status: "True",
            reason: names::REASON_JOINED,
            message: "the registration agent joined the hub".to_owned(),
            observed_generation: None,
        },
    );
    conditions::set(
        &mut status.conditions,
        Wanted {
            type_: names::CONDITION_AVAILABLE,
            status: "True",
            reason: names::REASON_AVAILABLE,
            message: "the registration agent renews its lease".to_owned(),
            observed_generation: None,
        },
    );
    status.version = Some(ManagedClusterVersion {
        kubernetes: Some(version),
    });
    status.capacity = capacity(&nodes);
    status.allocatable = allocatable(&nodes);
    status.cluster_claims = claims(cluster, &nodes);
    if before != *status {
        clusters
            .replace_status(cluster, &PostParams::default(), &managed)
            .await?;
    }
    Ok(Duration::from_secs(u64::from(seconds.unsigned_abs())))
}

/// Create or renew `managed-cluster-lease` in the cluster's namespace on the hub.
async fn renew_lease(hub: &kube::Client, cluster: &str, seconds: i32) -> anyhow::Result<()> {
    let leases: Api<Lease> = Api::namespaced(hub.clone(), cluster);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(names::CLUSTER_LEASE.to_owned()),
            namespace: Some(cluster.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(cluster.to_owned()),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(jiff::Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    leases
        .patch(
            names::CLUSTER_LEASE,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&lease),
        )
        .await?;
    Ok(())
}

/// The claims a hub reads: the cluster's name as its identity, its platform, and its nodes' kernels (sorted, one
/// per line, as KMM's spoke operator writes them).
fn claims(cluster: &str, nodes: &[Node]) -> Vec<ManagedClusterClaim> {
    let kernels: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|node| node.status.as_ref()?.node_info.as_ref())
        .map(|info| info.kernel_version.as_str())
        .collect();
    let claim = |name: &str, value: String| ManagedClusterClaim {
        name: Some(name.to_owned()),
        value: Some(value),
    };
    vec![
        claim(names::CLAIM_ID, cluster.to_owned()),
        claim(names::CLAIM_PLATFORM, PLATFORM.to_owned()),
        claim(
            names::CLAIM_KERNEL_VERSIONS,
            kernels.into_iter().collect::<Vec<_>>().join("\n"),
        ),
    ]
}

fn capacity(nodes: &[Node]) -> BTreeMap<String, Quantity> {
    sum(nodes
        .iter()
        .filter_map(|n| n.status.as_ref()?.capacity.as_ref()))
}

fn allocatable(nodes: &[Node]) -> BTreeMap<String, Quantity> {
    sum(nodes
        .iter()
        .filter_map(|n| n.status.as_ref()?.allocatable.as_ref()))
}

/// The sum of each resource over `lists`, for resources whose quantities are whole numbers with one and the same
/// suffix on every node (`8`, `32Gi`, `7500m`); others are left out rather than summed wrongly.
fn sum<'a>(
    lists: impl Iterator<Item = &'a BTreeMap<String, Quantity>>,
) -> BTreeMap<String, Quantity> {
    let mut totals: BTreeMap<String, Option<(u128, String)>> = BTreeMap::new();
    for list in lists {
        for (resource, Quantity(text)) in list {
            let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let (number, suffix) = text.split_at(digits);
            let parsed = number.parse::<u128>().ok();
            let entry = totals
                .entry(resource.clone())
                .or_insert_with(|| parsed.map(|_| (0, suffix.to_owned())));
            *entry = match (entry.take(), parsed) {
                (Some((total, unit)), Some(n)) if unit == suffix => Some((total + n, unit)),
                _ => None,
            };
        }
    }
    totals
        .into_iter()
        .filter_map(|(resource, total)| {
            total.map(|(total, unit)| (resource, Quantity(format!("{total}{unit}"))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    #[test]
    fn quantities_with_one_suffix_add_up_and_mixed_ones_are_left_out() {
        let a = list(&[
            ("cpu", "8"),
            ("memory", "100Ki"),
            ("pods", "110"),
            ("x", "1Gi"),
        ]);
        let b = list(&[
            ("cpu", "8"),
            ("memory", "28Ki"),
            ("pods", "110"),
            ("x", "512Mi"),
        ]);
        let total = sum([&a, &b].into_iter());
        assert_eq!(total.get("cpu"), Some(&Quantity("16".into())));
        assert_eq!(total.get("memory"), Some(&Quantity("128Ki".into())));
        assert_eq!(total.get("pods"), Some(&Quantity("220".into())));
        assert_eq!(total.get("x"), None);
    }
}
