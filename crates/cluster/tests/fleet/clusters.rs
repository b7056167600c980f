//! The fleet's shape: one kubeconfig reaching every cluster by its name, a ManagedCluster per spoke with the labels
//! and claims a hub selects and builds by, and the hub's kinds on the hub alone.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Namespace, Node};
use kmm_api::ocm::cluster::ManagedCluster;
use kmm_api::ocm::clusterset::{ManagedClusterSet, ManagedClusterSetBinding};
use kmm_api::ocm::names;
use kmm_cluster::fleet::{EmbeddedFleet, HUB};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::{small, started};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_kubeconfig_reaches_every_cluster_by_its_name() {
    let fleet = EmbeddedFleet::start(kmm_cluster::fleet::FleetOptions {
        listen: Some([127, 0, 0, 1].into()),
        ..small()
    })
    .await
    .unwrap();
    let kubeconfig: Kubeconfig = serde_saphyr::from_str(fleet.kubeconfig().unwrap()).unwrap();
    assert_eq!(kubeconfig.current_context.as_deref(), Some(HUB));
    let mut expected = vec![HUB.to_owned()];
    expected.extend(fleet.spoke_names().iter().map(|name| (*name).to_owned()));
    for context in &expected {
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig.clone(),
            &KubeConfigOptions {
                context: Some(context.clone()),
                ..KubeConfigOptions::default()
            },
        )
        .await
        .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let nodes: Api<Node> = Api::all(client);
        let over_https = nodes.list(&ListParams::default()).await.unwrap();
        let in_process = if context == HUB {
            fleet.hub()
        } else {
            fleet.spoke(context).unwrap()
        };
        let expected_nodes = Api::<Node>::all(in_process.client())
            .list(&ListParams::default())
            .await
            .unwrap();
        let names = |list: &kube::api::ObjectList<Node>| -> BTreeSet<String> {
            list.items
                .iter()
                .filter_map(|n| n.metadata.name.clone())
                .collect()
        };
        assert!(!over_https.items.is_empty(), "{context} has nodes");
        assert_eq!(
            names(&over_https),
            names(&expected_nodes),
            "context {context} reaches its own cluster"
        );
    }
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spoke_is_an_available_managed_cluster_claiming_its_kernels() {
    let options = small();
    let spokes = options.spokes.clone();
    let fleet = started(options).await;
    let hub = fleet.hub().client();
    let clusters: Api<ManagedCluster> = Api::all(hub.clone());
    for spoke in &spokes {
        let cluster = clusters.get(&spoke.name).await.unwrap();
        let labels = cluster.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(names::CLUSTERSET_LABEL).map(String::as_str),
            Some(names::DEFAULT_CLUSTERSET)
        );
        assert_eq!(labels.get(names::NAME_LABEL), Some(&spoke.name));
        assert!(cluster.spec.hub_accepts_client);
        let mut kernels = spoke.kernels.clone();
        kernels.sort();
        assert_eq!(
            cluster.kernel_versions(),
            kernels,
            "{} claims its nodes' kernels",
            spoke.name
        );
        assert!(cluster.claim(names::CLAIM_PLATFORM).is_some());
        let status = cluster.status.clone().unwrap();
        assert!(status.version.and_then(|v| v.kubernetes).is_some());
        assert!(
            status.capacity.contains_key("cpu"),
            "capacity is summed: {:?}",
            status.capacity
        );
        Api::<Namespace>::all(hub.clone())
            .get(&spoke.name)
            .await
            .expect("the cluster namespace exists on the hub");
    }
    Api::<ManagedClusterSet>::all(hub.clone())
        .get(names::DEFAULT_CLUSTERSET)
        .await
        .unwrap();
    let binding = Api::<ManagedClusterSetBinding>::namespaced(hub.clone(), "default")
        .get(names::DEFAULT_CLUSTERSET)
        .await
        .unwrap();
    assert_eq!(binding.spec.cluster_set, names::DEFAULT_CLUSTERSET);
    // The hub's kinds stay on the hub: a spoke is an ordinary cluster.
    let spoke = fleet.spoke(&spokes[0].name).unwrap().client();
    let error = Api::<ManagedCluster>::all(spoke)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(kmm_api::errors::is_not_found(&error), "{error}");
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_refuses_a_managed_cluster_its_schema_forbids() {
    let fleet = EmbeddedFleet::start(small()).await.unwrap();
    let clusters: Api<kube::api::DynamicObject> = Api::all_with(
        fleet.hub().client(),
        &kube::discovery::ApiResource::erase::<ManagedCluster>(&()),
    );
    let bad: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "bad"},
        "spec": {"hubAcceptsClient": true, "taints": [{"key": "k", "effect": "Sometimes"}]}
    }))
    .unwrap();
    let error = clusters
        .create(&kube::api::PostParams::default(), &bad)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("effect"), "{message}");
    fleet.shutdown().await;
}
