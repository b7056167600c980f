//! Events expire as kube-apiserver's `--event-ttl` has them expire: a TTL after their last write they are deleted as
//! if by a client, for watchers of both Event APIs and in the durable store, and a write (a series count bump)
//! restarts the clock. Short TTLs on the wall clock: expiry follows the clock write times are recorded in.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::events::v1::Event as NewEvent;
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use crate::common::{cluster_with, eventually, list_evaluated};

/// A core `v1` Event, as kubectl and client-go's recorder write them.
fn core_event(name: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "worker", "namespace": "default"},
        "reason": "Pulled", "message": "image pulled", "type": "Normal", "count": 1,
    }))
    .expect("an event")
}

/// An `events.k8s.io/v1` Event, as kube-rs's `Recorder` writes them.
fn new_event(name: &str) -> NewEvent {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "worker", "namespace": "default"},
        "reason": "Loaded", "note": "module loaded", "type": "Normal", "action": "Load",
        "reportingController": "kmm-tui", "reportingInstance": "kmm-tui-1",
    }))
    .expect("an event")
}

/// The names of the objects `api`'s watch from `version` reports deleted, in order, once `count` have been; each
/// with when its deletion was seen.
async fn deletions<K>(api: Api<K>, version: String, count: usize) -> Vec<(String, Instant)>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = api
        .watch(&WatchParams::default(), &version)
        .await
        .expect("watching")
        .boxed();
    let mut deleted = Vec::new();
    while deleted.len() < count {
        match events.try_next().await.expect("the watch runs") {
            Some(WatchEvent::Deleted(object)) => {
                deleted.push((
                    object.meta().name.clone().unwrap_or_default(),
                    Instant::now(),
                ));
            }
            Some(_) => {}
            None => panic!("the watch ended after {deleted:?}"),
        }
    }
    deleted
}

#[tokio::test]
async fn events_expire_a_ttl_after_their_last_write_for_watchers_of_both_apis() {
    let ttl = Duration::from_secs(3);
    let cluster = cluster_with(EmbeddedOptions {
        event_ttl: Some(ttl),
        ..Default::default()
    })
    .await;
    let core: Api<Event> = Api::namespaced(cluster.client(), "default");
    let modern: Api<NewEvent> = Api::namespaced(cluster.client(), "default");
    let version = core
        .list(&ListParams::default())
        .await
        .expect("listed")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let core_deletions = tokio::spawn(deletions(core.clone(), version.clone(), 2));
    let modern_deletions = tokio::spawn(deletions(modern.clone(), version, 2));

    let created = Instant::now();
    core.create(&PostParams::default(), &core_event("once"))
        .await
        .expect("created");
    modern
        .create(&PostParams::default(), &new_event("series"))
        .await
        .expect("created");
    // The recorder seeing the same event again bumps its series: a write, which restarts its clock.
    tokio::time::sleep(ttl * 2 / 3).await;
    let bumped = Instant::now();
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:02.000000Z"}});
    modern
        .patch("series", &PatchParams::default(), &Patch::Merge(&series))
        .await
        .expect("the series is bumped");

    let limit = ttl * 4;
    for (api, seen) in [
        ("v1", core_deletions),
        ("events.k8s.io/v1", modern_deletions),
    ] {
        let seen = tokio::time::timeout(limit, seen)
            .await
            .unwrap_or_else(|_| panic!("{api}: not both deleted within {limit:?}"))
            .expect("the watch ran");
        let names: Vec<&str> = seen.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["once", "series"], "{api}");
        let once = seen[0].1 - created;
        let series = seen[1].1 - bumped;
        assert!(
            once >= ttl,
            "{api}: `once` deleted {once:?} after its write"
        );
        assert!(
            series >= ttl,
            "{api}: `series` deleted {series:?} after its last write"
        );
    }
    assert!(
        core.list(&ListParams::default())
            .await
            .expect("listed")
            .items
            .is_empty()
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn expired_events_stay_gone_across_a_restart_and_downtime_counts() {
    let ttl = Duration::from_secs(3);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = || EmbeddedOptions {
        state_dir: Some(dir.path().to_path_buf()),
        event_ttl: Some(ttl),
        ..Default::default()
    };
    let names = |api: Api<Event>| async move {
        api.list(&ListParams::default())
            .await
            .expect("listed")
            .items
            .into_iter()
            .filter_map(|event| event.metadata.name)
            .collect::<Vec<_>>()
    };

    let cluster = cluster_with(options()).await;
    let core: Api<Event> = Api::namespaced(cluster.client(), "default");
    core.create(&PostParams::default(), &core_event("expired-while-up"))
        .await
        .expect("created");
    eventually(10, "the event expires", || async {
        names(core.clone()).await.is_empty()
    })
    .await;
    core.create(&PostParams::default(), &core_event("expires-while-down"))
        .await
        .expect("created");
    cluster.shutdown().await;
    tokio::time::sleep(ttl + Duration::from_millis(500)).await;

    let restarted = Instant::now();
    let cluster = cluster_with(options()).await;
    let core: Api<Event> = Api::namespaced(cluster.client(), "default");
    let kept = names(core.clone()).await;
    assert!(
        !kept.iter().any(|name| name == "expired-while-up"),
        "an expired event came back: {kept:?}"
    );
    // Its TTL ran out while the server was down: it goes at the first look, not a TTL after the restart.
    eventually(10, "the event that expired while down goes", || async {
        names(core.clone()).await.is_empty()
    })
    .await;
    let took = restarted.elapsed();
    assert!(took < ttl, "it went {took:?} after the restart began");
    cluster.shutdown().await;
}

/// An Event in `namespace` about a `kind`, reported by `controller`.
fn event_about(namespace: &str, name: &str, kind: &str, controller: &str) -> NewEvent {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": kind, "name": "subject", "namespace": namespace},
        "reason": "Seen", "note": "seen", "type": "Normal", "action": "See",
        "reportingController": controller, "reportingInstance": format!("{controller}-1"),
    }))
    .expect("an event")
}

/// A console lists the Events about the kinds it shows, a handful among the many a busy cluster keeps, by field
/// selector; Events are held only serialised, so a scan would parse every one for every such list. The server reads
/// them from its index of Events by kind and by reporter (within the namespace asked for), so a list tests only
/// what it returns.
#[tokio::test]
async fn events_selected_by_kind_or_reporter_are_read_from_an_index() {
    let cluster = cluster_with(EmbeddedOptions::default()).await;
    let client = cluster.client();
    for namespace in ["apps", "drivers"] {
        let object: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("a namespace");
        Api::all(client.clone())
            .create(&PostParams::default(), &object)
            .await
            .expect("the namespace is created");
    }
    let about = [
        ("apps", "Pod", "kubelet", 50),
        ("drivers", "Pod", "kubelet", 10),
        ("drivers", "Module", "kmm", 3),
        ("drivers", "Node", "kmm-tui-engine", 2),
    ];
    for (namespace, kind, controller, count) in about {
        let events: Api<NewEvent> = Api::namespaced(client.clone(), namespace);
        for i in 0..count {
            let name = format!("{}-{i}", kind.to_lowercase());
            events
                .create(
                    &PostParams::default(),
                    &event_about(namespace, &name, kind, controller),
                )
                .await
                .expect("the event is created");
        }
    }
    let cases = [
        (
            None,
            "regarding.kind=Module,reportingController!=kmm-tui-engine",
            3,
        ),
        (None, "reportingController=kmm-tui-engine", 2),
        (
            Some("drivers"),
            "regarding.kind=Pod,reportingController!=kmm-tui-engine",
            10,
        ),
        (None, "regarding.kind=Pod", 60),
    ];
    for (namespace, selector, expected) in cases {
        let events: Api<NewEvent> = match namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        let before = list_evaluated(&client, "events").await;
        let listed = events
            .list(&ListParams::default().fields(selector))
            .await
            .expect("the events are listed");
        let evaluated = list_evaluated(&client, "events").await - before;
        assert_eq!(listed.items.len(), expected, "{selector} in {namespace:?}");
        assert_eq!(
            evaluated, expected as f64,
            "{selector} in {namespace:?} tested {evaluated} Events for {expected}"
        );
    }
}
