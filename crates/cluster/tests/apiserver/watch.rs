//! Watches: raw watch streams, kube-rs watchers and reflectors, 410 recovery, bookmarks, selectors.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

use super::common::{cluster, cluster_with, eventually};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn watch_from_a_resource_version_replays_exactly_what_followed() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let first = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    api.delete("b", &Default::default()).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.metadata.name.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["ADDED b", "MODIFIED a", "DELETED b"]);
}

#[tokio::test]
async fn too_old_resource_version_is_410_and_watchers_relist() {
    let cluster = cluster_with(EmbeddedOptions {
        history: Some(20),
        ..Default::default()
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let old = configmaps
        .create(&PostParams::default(), &cm("early", &[]))
        .await
        .unwrap();
    for i in 0..40 {
        let s = Secret {
            metadata: ObjectMeta {
                name: Some(format!("s{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    let old_rv = old.metadata.resource_version.unwrap();
    let mut stream = configmaps
        .watch(&WatchParams::default().timeout(2), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 error event, got {other:?}"),
    }

    // A kube-rs reflector whose watch keeps timing out falls behind the compacted history (bookmarks off, writes
    // to another resource), gets 410 on resume, relists, and still converges.
    let (reader, writer) = reflector::store::<ConfigMap>();
    let config = watcher::Config::default().timeout(1).disable_bookmarks();
    let stream = watcher(configmaps.clone(), config)
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    let inits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    let counting = {
        let inits = inits.clone();
        let raw = watcher(
            configmaps.clone(),
            watcher::Config::default().timeout(1).disable_bookmarks(),
        )
        .default_backoff();
        tokio::spawn(async move {
            futures::pin_mut!(raw);
            while let Some(event) = raw.next().await {
                if matches!(event, Ok(watcher::Event::Init)) {
                    inits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
    };
    reader.wait_until_ready().await.unwrap();
    for i in 40..80 {
        let s = Secret {
            metadata: ObjectMeta {
                name: Some(format!("s{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    configmaps
        .create(&PostParams::default(), &cm("late", &[]))
        .await
        .unwrap();
    eventually(
        10,
        "the reflector sees the object created after the relist",
        || {
            let reader = reader.clone();
            async move {
                reader
                    .state()
                    .iter()
                    .any(|c| c.metadata.name.as_deref() == Some("late"))
            }
        },
    )
    .await;
    // Its next resume after the compaction meets the 410; on a busy machine that can come after the reflector's.
    eventually(10, "the watcher relisted after 410", || {
        let inits = inits.clone();
        async move { inits.load(std::sync::atomic::Ordering::SeqCst) >= 2 }
    })
    .await;
    task.abort();
    counting.abort();
}

#[tokio::test]
async fn selector_watch_turns_label_changes_into_added_and_deleted() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let start = api
        .create(&PostParams::default(), &cm("x", &[("app", "other")]))
        .await
        .unwrap();
    let rv = start.metadata.resource_version.unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "gone"}}})),
    )
    .await
    .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("app=web").timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    let mut kinds = Vec::new();
    for _ in 0..3 {
        kinds.push(match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn bookmarks_and_streaming_lists() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(name, &[]))
            .await
            .unwrap();
    }
    // kube-rs's streaming-list mode: initial ADDED events, then a bookmark marking the end of the initial state.
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = watcher(api.clone(), watcher::Config::default().streaming_lists())
        .reflect(writer)
        .applied_objects();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    tokio::time::timeout(Duration::from_secs(5), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    // The three and the namespace's root CA.
    assert_eq!(reader.state().len(), 4);
    api.create(&PostParams::default(), &cm("d", &[]))
        .await
        .unwrap();
    eventually(5, "reflector sees d", || {
        let reader = reader.clone();
        async move { reader.state().len() == 5 }
    })
    .await;
    task.abort();

    // A watch that times out with bookmarks enabled ends with a bookmark carrying the newest resourceVersion.
    let rv = api
        .create(&PostParams::default(), &cm("e", &[]))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let events: Vec<_> = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default().timeout(1)
            },
            &rv,
        )
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        matches!(events.last(), Some(WatchEvent::Bookmark(b)) if b.metadata.resource_version == rv),
        "{events:?}"
    );
}

#[tokio::test]
async fn fifty_watchers_all_see_every_event() {
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let rv = api
        .create(&PostParams::default(), &cm("seed", &[]))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut watchers = Vec::new();
    for _ in 0..50 {
        let stream = api
            .watch(&WatchParams::default().timeout(5), &rv)
            .await
            .unwrap();
        watchers.push(tokio::spawn(async move {
            let events: Vec<_> = stream.take(20).try_collect().await.unwrap();
            events.len()
        }));
    }
    for i in 0..20 {
        api.create(&PostParams::default(), &cm(&format!("n{i}"), &[]))
            .await
            .unwrap();
    }
    for w in watchers {
        assert_eq!(w.await.unwrap(), 20);
    }
}

#[tokio::test]
async fn a_watcher_that_falls_far_behind_catches_up_without_losing_an_event() {
    const WRITES: usize = 3000;
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let rv = api
        .create(&PostParams::default(), &cm("seed", &[]))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    // Nobody reads the stream while the writes happen: the server's queue for it fills and the live feed moves
    // on without it, far beyond what either buffers.
    let stream = api
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    for i in 0..WRITES {
        api.create(&PostParams::default(), &cm(&format!("n{i}"), &[]))
            .await
            .unwrap();
    }
    let names: Vec<String> = tokio::time::timeout(
        Duration::from_secs(30),
        stream
            .take(WRITES)
            .map_ok(|event| match event {
                WatchEvent::Added(o) => o.metadata.name.unwrap_or_default(),
                other => format!("{other:?}"),
            })
            .try_collect(),
    )
    .await
    .expect("every event arrives")
    .unwrap();
    let expected: Vec<String> = (0..WRITES).map(|i| format!("n{i}")).collect();
    assert_eq!(names.len(), WRITES, "the stream ended early");
    assert!(names == expected, "events out of order or missing");
}
