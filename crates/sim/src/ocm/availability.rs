//! The hub's side of cluster health, as OCM's lease controller keeps it: a cluster whose registration agent has
//! not renewed its Lease within the lease duration times [`LEASE_GRACE_FACTOR`](names::LEASE_GRACE_FACTOR) is no
//! longer known to be available (`ManagedClusterConditionAvailable` turns `Unknown`); the agent sets it back to
//! `True` once it renews again. It also records that the hub accepts the clusters it accepts.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::names;
use kube::api::{Api, ListParams, PostParams};
use tokio_util::sync::CancellationToken;

use super::conditions::{self, Wanted};

/// How often the hub looks at every cluster's Lease.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Watch the leases of every ManagedCluster on `hub` until `stop`.
pub(crate) async fn run(hub: kube::Client, stop: CancellationToken) {
    loop {
        if let Err(error) = check(&hub).await {
            tracing::debug!("cluster availability: {error:#}");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
    }
}

async fn check(hub: &kube::Client) -> anyhow::Result<()> {
    let clusters: Api<ManagedCluster> = Api::all(hub.clone());
    for mut cluster in clusters.list(&ListParams::default()).await?.items {
        let Some(name) = cluster.metadata.name.clone() else {
            continue;
        };
        let leases: Api<Lease> = Api::namespaced(hub.clone(), &name);
        let lease = leases.get_opt(names::CLUSTER_LEASE).await?;
        let seconds = cluster
            .spec
            .lease_duration_seconds
            .filter(|seconds| *seconds > 0)
            .unwrap_or(names::DEFAULT_LEASE_DURATION_SECONDS);
        let grace = jiff::SignedDuration::from_secs(
            i64::from(seconds) * i64::from(names::LEASE_GRACE_FACTOR),
        );
        let renewed = lease
            .and_then(|lease| lease.spec?.renew_time)
            .map(|time| time.0);
        let stale =
            renewed.is_none_or(|renewed| jiff::Timestamp::now().duration_since(renewed) > grace);
        let accepted = cluster.spec.hub_accepts_client;
        let status = cluster.status.get_or_insert_with(Default::default);
        let before = status.conditions.clone();
        if accepted {
            conditions::set(
                &mut status.conditions,
                Wanted {
                    type_: names::CONDITION_HUB_ACCEPTED,
                    status: "True",
                    reason: names::REASON_HUB_ACCEPTED,
                    message: "the hub accepts this cluster's agents".to_owned(),
                    observed_generation: None,
                },
            );
        }
        let joined = before.iter().any(|c| c.type_ == names::CONDITION_JOINED);
        if stale && joined {
            conditions::set(
                &mut status.conditions,
                Wanted {
                    type_: names::CONDITION_AVAILABLE,
                    status: "Unknown",
                    reason: names::REASON_LEASE_STOPPED,
                    message: format!(
                        "the registration agent has not renewed its lease for more than {}s",
                        grace.as_secs()
                    ),
                    observed_generation: None,
                },
            );
        }
        if !conditions::same(&before, &status.conditions)
            && let Err(error) = clusters
                .replace_status(&name, &PostParams::default(), &cluster)
                .await
        {
            // A conflict with the agent's own report: the next round sees its write.
            tracing::debug!(cluster = %name, "cluster availability: {error}");
        }
    }
    Ok(())
}
