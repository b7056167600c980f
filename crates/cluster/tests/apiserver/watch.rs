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
async fn a_watcher_that_falls_far_behind_resumes_without_losing_an_event() {
    const WRITES: usize = 3000;
    let cluster = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let mut rv = api
        .create(&PostParams::default(), &cm("seed", &[]))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    // Nobody reads the stream while the writes happen: the server's buffer for it fills and the live feed moves
    // on without it. The server may close it; the client then resumes from the last event it got.
    let stream = api
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    for i in 0..WRITES {
        api.create(&PostParams::default(), &cm(&format!("n{i}"), &[]))
            .await
            .unwrap();
    }
    let mut names = Vec::new();
    let mut stream = stream.boxed();
    let mut resumes = 0;
    while names.len() < WRITES {
        let next = tokio::time::timeout(Duration::from_secs(30), stream.try_next())
            .await
            .expect("every event arrives");
        match next.unwrap() {
            Some(WatchEvent::Added(o)) => {
                rv = o.metadata.resource_version.clone().unwrap();
                names.push(o.metadata.name.unwrap_or_default());
            }
            Some(other) => panic!("unexpected {other:?}"),
            None => {
                resumes += 1;
                assert!(resumes < 10, "resumed {resumes} times");
                stream = api
                    .watch(&WatchParams::default().timeout(30), &rv)
                    .await
                    .unwrap()
                    .boxed();
            }
        }
    }
    let expected: Vec<String> = (0..WRITES).map(|i| format!("n{i}")).collect();
    assert!(names == expected, "events out of order or missing");
}

/// A raw GET through `client`, answered with its status and, unless it is a success (a watch stream would not
/// end), its body.
async fn raw_get(client: &kube::Client, uri: &str) -> (http::StatusCode, bytes::Bytes) {
    use http_body_util::BodyExt;
    let request = http::Request::get(uri)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(60), client.send(request))
        .await
        .expect("answered")
        .expect("sent");
    let status = response.status();
    if status.is_success() {
        return (status, bytes::Bytes::new());
    }
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body)
}

#[tokio::test]
async fn a_watch_or_list_from_a_future_resource_version_is_a_504_too_large_resource_version() {
    let cluster = cluster().await;
    let client = cluster.client();
    let future = cluster.server().store().current_rv() + 1000;
    let queries = [
        format!("watch=true&resourceVersion={future}"),
        format!("resourceVersion={future}&resourceVersionMatch=Exact"),
        format!("resourceVersion={future}&resourceVersionMatch=NotOlderThan"),
        format!("resourceVersion={future}"),
    ];
    // Each request waits out the server's few seconds for the version to arrive: they wait side by side.
    let answers = futures::future::join_all(queries.iter().map(|query| {
        let client = client.clone();
        async move {
            let uri = format!("/api/v1/namespaces/default/configmaps?{query}");
            raw_get(&client, &uri).await
        }
    }))
    .await;
    for (query, (status, body)) in queries.iter().zip(answers) {
        assert_eq!(status, 504, "{query}: {body:?}");
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let message = status["message"].as_str().unwrap_or_default().to_owned();
        let current: u64 = message
            .strip_prefix(&format!(
                "Timeout: Too large resource version: {future}, current: "
            ))
            .and_then(|current| current.parse().ok())
            .unwrap_or_else(|| panic!("{query}: {message}"));
        assert!(current < future);
        assert_eq!(
            status,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": "Timeout",
                "details": {
                    "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                    "retryAfterSeconds": 1
                },
                "code": 504
            }),
            "{query}"
        );
    }
}

#[tokio::test]
async fn a_watcher_that_stops_reading_is_closed_and_a_kube_watcher_resumes() {
    const WRITES: usize = 60;
    let cluster = cluster().await;
    let client = cluster.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = api
        .create(&PostParams::default(), &cm("large", &[]))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let mut reflected = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .boxed();
    loop {
        tokio::select! {
            ready = reader.wait_until_ready() => break ready.unwrap(),
            _ = reflected.next() => {}
        }
    }
    // Neither this raw watch nor the reflector's is read while half a MiB is written sixty times.
    let request = http::Request::get(format!(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
    ))
    .body(kube::client::Body::empty())
    .unwrap();
    let stalled = client.send(request).await.unwrap();
    for i in 0..WRITES {
        let data = json!({"data": {"pad": "x".repeat(512 << 10), "write": i.to_string()}});
        api.patch("large", &PatchParams::default(), &Patch::Merge(data))
            .await
            .unwrap();
    }
    let body = tokio::time::timeout(
        Duration::from_secs(60),
        http_body_util::BodyExt::collect(stalled.into_body()),
    )
    .await
    .expect("the server closes the watch that stopped reading")
    .unwrap()
    .to_bytes();
    let received: Vec<u64> = body
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let event: serde_json::Value = serde_json::from_slice(line).unwrap();
            assert_eq!(event["type"], "MODIFIED");
            event["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|rv| rv.parse().ok())
                .unwrap()
        })
        .collect();
    assert!(
        received.len() < WRITES,
        "{} of {WRITES} events held",
        received.len()
    );
    assert!(received.windows(2).all(|w| w[0] < w[1]), "in order");
    // The reflector's watch was closed too; it resumes (or relists) and reaches the last write.
    let last = (WRITES - 1).to_string();
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let current = reader.get(&reflector::ObjectRef::new("large").within("default"));
            if current.is_some_and(|c| c.data.as_ref().and_then(|d| d.get("write")) == Some(&last))
            {
                break;
            }
            tokio::select! {
                _ = reflected.next() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    })
    .await
    .expect("the reflector reaches the last write");
}
