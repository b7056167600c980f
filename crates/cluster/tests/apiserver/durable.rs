//! A durable store's watch history stays bounded on disk: what no watch can resume from any more leaves the
//! database, so a restart reads back as much history as the server kept in memory, not every write ever made.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kmm_cluster::EmbeddedOptions;
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

/// Bytes the store in `dir` takes on disk: the database and its write-ahead log.
fn bytes_on_disk(dir: &std::path::Path) -> u64 {
    ["store.db", "store.db-wal"]
        .iter()
        .filter_map(|file| std::fs::metadata(dir.join(file)).ok())
        .map(|m| m.len())
        .sum()
}

#[tokio::test(start_paused = true)]
async fn compaction_gives_the_space_of_forgotten_history_back() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cluster = cluster_with(EmbeddedOptions {
        state_dir: Some(dir.path().to_path_buf()),
        history: Some(20),
        ..EmbeddedOptions::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    api.create(&PostParams::default(), &cm("big"))
        .await
        .expect("a create");
    for i in 0..200 {
        let data = serde_json::json!({"data": {"blob": format!("{i}{}", "x".repeat(100 << 10))}});
        api.patch(
            "big",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(data),
        )
        .await
        .expect("a patch");
    }
    let written = bytes_on_disk(dir.path());
    assert!(
        written > 20 << 20,
        "every write is recorded: {written} bytes"
    );
    tokio::time::sleep(Duration::from_secs(31)).await;
    let kept = bytes_on_disk(dir.path());
    assert!(
        kept < 6 << 20,
        "{kept} bytes on disk for 20 events of 100 KiB and one live object (was {written})"
    );
    cluster.shutdown().await;
}

#[cfg(unix)]
#[tokio::test]
async fn the_store_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .expect("the file exists")
            .permissions()
            .mode()
            & 0o777
    };
    let parent = tempfile::tempdir().expect("a temporary directory");
    let dir = parent.path().join("state");
    for attempt in 0..2 {
        let cluster = cluster_with(EmbeddedOptions {
            state_dir: Some(dir.clone()),
            ..EmbeddedOptions::default()
        })
        .await;
        Api::<ConfigMap>::namespaced(cluster.client(), "default")
            .create(&PostParams::default(), &cm(&format!("secret-{attempt}")))
            .await
            .expect("a create");
        assert_eq!(mode(&dir), 0o700, "the state directory");
        for file in ["store.db", "store.db-wal"] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
        cluster.shutdown().await;
        // A store left readable by an earlier version is made private when it is opened again.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for file in ["store.db", "store.db-wal"] {
            let _ =
                std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(0o644));
        }
    }
}
