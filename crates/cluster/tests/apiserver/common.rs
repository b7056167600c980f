//! Shared set-up: a fresh in-memory embedded cluster per test.

use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};

/// Start an in-memory embedded cluster.
pub(crate) async fn cluster() -> EmbeddedCluster {
    cluster_with(EmbeddedOptions::default()).await
}

/// Start an embedded cluster with options.
pub(crate) async fn cluster_with(options: EmbeddedOptions) -> EmbeddedCluster {
    EmbeddedCluster::start(options)
        .await
        .expect("the embedded cluster starts")
}

pub(crate) use kmm_testing::eventually;
