//! The Deployment, ReplicaSet and ReplicationController controllers: a Deployment gets a ReplicaSet per pod
//! template and its pods, deleted pods are replaced, scaling removes pods, a new template moves the pods to a new
//! ReplicaSet, and the counts and events say so; a ReplicationController keeps its pods the same way.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod, ReplicationController};
use kmm_cluster::sim::workloads::POD_TEMPLATE_HASH;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

pub(crate) const SCENARIO: &str = r#"
seed: 3
timeScale: 10
nodes:
  - {namePrefix: node-, count: 2, kernelVersion: 5.14.0-284.30.1.el9_2.x86_64, osImage: RHCOS}
"#;

pub(crate) use kmm_testing::eventually;

/// The Deployment's active pods (not terminating), by name.
async fn running_pods(client: &kube::Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect()
}

async fn replica_sets(client: &kube::Client) -> Vec<ReplicaSet> {
    Api::<ReplicaSet>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("listing replicasets")
        .items
}

async fn available(client: &kube::Client) -> Option<i32> {
    Api::<Deployment>::namespaced(client.clone(), "default")
        .get("web")
        .await
        .ok()?
        .status?
        .available_replicas
}

#[tokio::test(start_paused = true)]
async fn a_deployment_keeps_its_pods_through_deletion_scaling_and_a_new_template() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a Deployment");
    let deployment = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");

    eventually(
        120,
        "3 pods run and the Deployment counts them available",
        || async { running_pods(&client).await.len() == 3 && available(&client).await == Some(3) },
    )
    .await;
    let sets = replica_sets(&client).await;
    assert_eq!(sets.len(), 1, "one ReplicaSet per template");
    let first = &sets[0];
    let hash = first.labels()[POD_TEMPLATE_HASH].clone();
    assert_eq!(first.name_any(), format!("web-{hash}"));
    assert!(
        first
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == deployment.uid().as_ref())
    );
    for pod in running_pods(&client).await {
        assert_eq!(pod.labels()[POD_TEMPLATE_HASH], hash);
        assert!(pod.name_any().starts_with(&format!("web-{hash}-")));
        assert_eq!(
            pod.owner_references()[0].uid,
            first.uid().unwrap_or_default()
        );
    }

    // A deleted pod is replaced.
    let victim = running_pods(&client).await[0].name_any();
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete(&victim, &DeleteParams::default())
        .await
        .expect("deleting a pod");
    eventually(120, "the deleted pod is replaced", || async {
        let pods = running_pods(&client).await;
        pods.len() == 3 && pods.iter().all(|p| p.name_any() != victim)
    })
    .await;

    // Scaling down removes pods.
    let params = PatchParams::default();
    deployments
        .patch(
            "web",
            &params,
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scaling down");
    eventually(120, "one pod is left", || async {
        running_pods(&client).await.len() == 1 && available(&client).await == Some(1)
    })
    .await;

    // A new template gets a new ReplicaSet; the old one goes to zero.
    deployments
        .patch(
            "web",
            &params,
            &Patch::Merge(
                json!({"spec": {"template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}),
            ),
        )
        .await
        .expect("changing the template");
    eventually(120, "the pod of the new template runs alone", || async {
        let pods = running_pods(&client).await;
        pods.len() == 1 && pods[0].labels()[POD_TEMPLATE_HASH] != hash
    })
    .await;
    let sets = replica_sets(&client).await;
    assert_eq!(sets.len(), 2);
    let old = sets
        .iter()
        .find(|rs| rs.name_any() == first.name_any())
        .expect("the old ReplicaSet");
    assert_eq!(old.spec.as_ref().and_then(|s| s.replicas), Some(0));

    let reasons: Vec<String> = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    for reason in ["ScalingReplicaSet", "SuccessfulCreate", "SuccessfulDelete"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    cluster.shutdown().await;
}

/// The running, not terminating pods labelled `app=<app>`.
pub(crate) async fn running_pods_of(client: &kube::Client, app: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_replication_controller_keeps_its_pods_and_reports_them() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let controllers = Api::<ReplicationController>::namespaced(client.clone(), "default");
    let controller: ReplicationController = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 2,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "legacy", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("a ReplicationController");
    let controller = controllers
        .create(&PostParams::default(), &controller)
        .await
        .expect("the ReplicationController is created");
    let uid = controller.uid().expect("a uid");
    let reported = || async {
        let status = controllers.get("legacy").await.ok()?.status?;
        Some((
            status.replicas,
            status.ready_replicas?,
            status.available_replicas?,
            status.observed_generation?,
        ))
    };
    let generation = controller.metadata.generation.expect("a generation");
    eventually(120, "2 pods run and the status counts them", || async {
        running_pods_of(&client, "legacy").await.len() == 2
            && reported().await == Some((2, 2, 2, generation))
    })
    .await;
    for pod in running_pods_of(&client, "legacy").await {
        assert!(pod.name_any().starts_with("legacy-"), "{}", pod.name_any());
        let owner = &pod.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("ReplicationController", uid.as_str(), Some(true))
        );
    }

    // A deleted pod is replaced.
    let victim = running_pods_of(&client, "legacy").await[0].name_any();
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete(&victim, &DeleteParams::default())
        .await
        .expect("deleting a pod");
    eventually(120, "the deleted pod is replaced", || async {
        let pods = running_pods_of(&client, "legacy").await;
        pods.len() == 2 && pods.iter().all(|p| p.name_any() != victim)
    })
    .await;

    // Scaling down removes a pod, and the status follows the new generation.
    let scaled = controllers
        .patch(
            "legacy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scaling down");
    let generation = scaled.metadata.generation.expect("a generation");
    eventually(120, "one pod is left and counted", || async {
        running_pods_of(&client, "legacy").await.len() == 1
            && reported().await == Some((1, 1, 1, generation))
    })
    .await;

    // The garbage collector takes the pods with their controller.
    controllers
        .delete("legacy", &DeleteParams::background())
        .await
        .expect("deleting the ReplicationController");
    eventually(120, "the pods go with their controller", || async {
        Api::<Pod>::namespaced(client.clone(), "default")
            .list(&ListParams::default().labels("app=legacy"))
            .await
            .expect("listing pods")
            .items
            .is_empty()
    })
    .await;
    cluster.shutdown().await;
}
