//! A durable store's watch history stays bounded on disk: what no watch can resume from any more leaves the
//! database, so a restart reads back as much history as the server kept in memory, not every write ever made.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kmm_tui::cluster::EmbeddedOptions;
use kube::api::{Api, PostParams};

use super::common::cluster_with;
use super::lifecycle::cm;

/// Rows of the history table of the store in `dir`.
fn history_rows(dir: &std::path::Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join("store.db")).expect("the store database");
    db.query_row("SELECT COUNT(*) FROM events", [], |row| row.get(0))
        .expect("counting the history")
}

#[tokio::test(start_paused = true)]
async fn the_durable_history_is_compacted_to_what_watches_can_resume_from() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cluster = cluster_with(EmbeddedOptions {
        state_dir: Some(dir.path().to_path_buf()),
        history: Some(20),
        ..EmbeddedOptions::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    for i in 0..200 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}")))
            .await
            .expect("a create");
    }
    assert!(history_rows(dir.path()) >= 200, "every write is recorded");
    // The cluster's controllers compact at their periodic sweep.
    tokio::time::sleep(Duration::from_secs(31)).await;
    let rows = history_rows(dir.path());
    assert!(rows <= 21, "{rows} events kept on disk, 20 in memory");
    cluster.shutdown().await;
}
