//! Placeholder until leader election lands.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Which Lease elects the acting engine, and how fast a dead leader is replaced.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This engine's identity in `holderIdentity`.
    pub identity: String,
    /// How long a lease holds without renewal.
    pub lease_duration: Duration,
    /// How often the leader renews and a candidate retries.
    pub retry_period: Duration,
}

/// Run `work` while holding the lease.
pub async fn run_as_leader<F, Fut>(
    _client: kube::Client,
    _config: LeaseConfig,
    shutdown: CancellationToken,
    mut work: F,
) -> anyhow::Result<()>
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    work(shutdown).await;
    Ok(())
}
