//! Shared set-up: a fresh in-memory embedded cluster per test.

use std::time::Duration;

use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};

/// Start an in-memory embedded cluster.
pub async fn cluster() -> EmbeddedCluster {
    cluster_with(EmbeddedOptions::default()).await
}

/// Start an embedded cluster with options.
pub async fn cluster_with(options: EmbeddedOptions) -> EmbeddedCluster {
    EmbeddedCluster::start(options)
        .await
        .expect("the embedded cluster starts")
}

/// Poll `check` until it returns true, or fail after `secs` seconds with `what`.
pub async fn eventually<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if check().await {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
