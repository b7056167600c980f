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

/// The server's `/metrics` scrape.
pub(crate) async fn scrape(client: &kube::Client) -> String {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request");
    client
        .request_text(request)
        .await
        .expect("/metrics answers")
}

/// Objects the server's LISTs of `resource` (its plural) have tested against their selectors so far.
pub(crate) async fn list_evaluated(client: &kube::Client, resource: &str) -> f64 {
    let text = scrape(client).await;
    kmm_testing::metrics::samples(&text, "apiserver_storage_list_evaluated_objects_total")
        .filter(|sample| sample.label("resource") == Some(resource))
        .map(|sample| sample.value)
        .sum()
}
