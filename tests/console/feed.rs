//! The console's watches against the embedded cluster: a first list of many objects reaches the UI task as its
//! pages arrive, and what is kept is what the panes read.

use std::time::Duration;

use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::data::{Kind, KindSnapshot};
use tokio_util::sync::CancellationToken;

/// More nodes than one page of a list (500) holds.
const NODES: usize = 1200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_list_of_many_nodes_is_on_screen_with_its_first_page() {
    let scenario = Scenario::parse(
        &format!(
            "seed: 3\ntimeScale: 10\nnodes:\n  - namePrefix: worker-\n    count: {NODES}\n    \
             kernelVersion: 5.14.0-284.el9.x86_64\n    osImage: Red Hat Enterprise Linux CoreOS\n"
        ),
        "tui_feed_pages",
        None,
    )
    .expect("the scenario parses");
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        scenario: Some(scenario),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts");
    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(&cluster.client(), None, &sender, &cancel);

    // Every list of nodes the UI task receives, and whether it was a first list still arriving.
    let mut received: Vec<(bool, usize)> = Vec::new();
    let whole = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match actions.recv().await.expect("the feed runs") {
                Action::Listing(KindSnapshot::Nodes(nodes)) => received.push((false, nodes.len())),
                Action::Data(KindSnapshot::Nodes(nodes)) => {
                    received.push((true, nodes.len()));
                    return nodes;
                }
                Action::Feed(Kind::Node, kmm_tui::tui::data::FeedState::Failing(why)) => {
                    panic!("the node watch fails: {why}")
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the whole list of nodes arrives");

    let (first_whole, first_count) = received[0];
    assert!(
        !first_whole && first_count > 0 && first_count < NODES,
        "the first page goes out before the rest is read: {received:?}"
    );
    assert!(
        received.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "the pages only add nodes: {received:?}"
    );
    assert_eq!(whole.len(), NODES, "{received:?}");
    assert!(
        whole
            .iter()
            .all(|node| node.metadata.managed_fields.is_none()),
        "no pane reads managedFields, so none is kept"
    );
    cancel.cancel();
    cluster.shutdown().await;
}
