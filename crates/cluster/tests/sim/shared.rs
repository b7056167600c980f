//! The simulation's shared watches: every subscriber sees every object, whenever it subscribes.

use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::core::v1::Pod;
use kmm_cluster::sim::shared::Change;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher::Event;
use serde_json::json;

use crate::common_control::Sim;

async fn create_pod(client: &kube::Client, name: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

/// A simulation whose cluster holds one pod, `before`.
async fn with_one_pod() -> Sim {
    let sim = Sim::start("seed: 1").await;
    create_pod(&sim.client(), "before").await;
    sim
}

/// The next change, named by [`named`].
async fn next(changes: &mut UnboundedReceiver<Change<Pod>>) -> String {
    named(&next_read(changes).await)
}

/// The next of what a subscriber receives.
async fn next_read<T>(changes: &mut UnboundedReceiver<T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), changes.next())
        .await
        .expect("a change within 30 s")
        .expect("the watch goes on")
}

/// A change, named: `init`, `listed <name>`, `listed all`, `applied <name>`, `deleted <name>`.
fn named(change: &Change<Pod>) -> String {
    match change {
        Event::Init => "init".to_string(),
        Event::InitApply(pod) => format!("listed {}", pod.name_any()),
        Event::InitDone => "listed all".to_string(),
        Event::Apply(pod) => format!("applied {}", pod.name_any()),
        Event::Delete(pod) => format!("deleted {}", pod.name_any()),
    }
}

#[tokio::test]
async fn a_late_subscriber_receives_the_cache_as_a_list_then_every_change_with_the_others() {
    let sim = with_one_pod().await;
    let client = sim.client();
    let pods = &sim.world.watches.pods;

    let mut first = pods.subscribe();
    assert_eq!(next(&mut first).await, "init");
    assert_eq!(next(&mut first).await, "listed before");
    assert_eq!(next(&mut first).await, "listed all");
    let store = pods.store();
    assert_eq!(store.state().len(), 1, "the cache holds the pod");

    create_pod(&client, "during").await;
    assert_eq!(next(&mut first).await, "applied during");

    // Joining after the first list: the cache as a list, the same objects the cache holds.
    let mut late = pods.subscribe();
    assert_eq!(next(&mut late).await, "init");
    let mut listed = vec![next(&mut late).await, next(&mut late).await];
    listed.sort();
    assert_eq!(listed, ["listed before", "listed during"]);
    assert_eq!(next(&mut late).await, "listed all");

    Api::<Pod>::namespaced(client.clone(), "default")
        .delete("before", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    for changes in [&mut first, &mut late] {
        let mut seen = next(changes).await;
        // A graceful deletion may show as a change first.
        while seen == "applied before" {
            seen = next(changes).await;
        }
        assert_eq!(seen, "deleted before");
    }
    assert_eq!(store.state().len(), 1, "the deleted pod left the cache");
}

#[tokio::test]
async fn a_subscriber_that_reads_as_changes_arrive_receives_what_it_read_of_each() {
    let sim = with_one_pod().await;
    let pods = &sim.world.watches.pods;
    // The first subscription starts the watch.
    let mut first = pods.subscribe();
    assert_eq!(next(&mut first).await, "init");

    // Joining while the first list may be under way or whole: the cache as a list either way, read as it goes out.
    let mut names = pods.subscribe_with(named);
    assert_eq!(next_read(&mut names).await, "init");
    assert_eq!(next_read(&mut names).await, "listed before");
    assert_eq!(next_read(&mut names).await, "listed all");
    create_pod(&sim.client(), "after").await;
    assert_eq!(next_read(&mut names).await, "applied after");
}
