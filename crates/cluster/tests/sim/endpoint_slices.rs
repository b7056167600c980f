//! The EndpointSlice controller: a Service with a selector gets one slice of its ready pods' addresses at their
//! target ports, kept current as pods come and go, and gone with the Service; a Service without a selector gets none.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::workloads::{SCENARIO, eventually, running_pods_of};

/// The slices labelled for the Service `name`.
async fn slices_of(client: &kube::Client, name: &str) -> Vec<EndpointSlice> {
    Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={name}")))
        .await
        .expect("listing endpointslices")
        .items
}

/// The addresses of the one slice of the Service `name` whose endpoints are ready, or None without exactly one
/// slice.
async fn ready_addresses(client: &kube::Client, name: &str) -> Option<BTreeSet<String>> {
    let [slice] = <[EndpointSlice; 1]>::try_from(slices_of(client, name).await).ok()?;
    Some(
        slice
            .endpoints
            .iter()
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .flat_map(|e| e.addresses.clone())
            .collect(),
    )
}

/// The IPs of the running pods labelled `app=web`.
async fn pod_ips(client: &kube::Client) -> BTreeSet<String> {
    running_pods_of(client, "web")
        .await
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_service_gets_a_slice_of_its_ready_pods() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"name": "http", "containerPort": 8080}]}]}
            }
        }
    }))
    .expect("a Deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");
    let services = Api::<Service>::namespaced(client.clone(), "default");
    let service = |name: &str, selector: Option<&str>| -> Service {
        let mut spec = json!({"ports": [
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "metrics", "port": 9090}
        ]});
        if let Some(app) = selector {
            spec["selector"] = json!({ "app": app });
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("a Service")
    };
    let web = services
        .create(&PostParams::default(), &service("web", Some("web")))
        .await
        .expect("the Service is created");
    services
        .create(&PostParams::default(), &service("outside", None))
        .await
        .expect("the Service without selector is created");

    eventually(
        120,
        "the slice lists both running pods as ready",
        || async {
            let ips = pod_ips(&client).await;
            ips.len() == 2 && ready_addresses(&client, "web").await == Some(ips)
        },
    )
    .await;
    let slice = slices_of(&client, "web").await.remove(0);
    assert_eq!(slice.address_type, "IPv4");
    assert!(slice.name_any().starts_with("web-"), "{}", slice.name_any());
    assert_eq!(
        slice.labels()["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    let owner = &slice.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), &owner.uid),
        ("Service", &web.uid().unwrap())
    );
    let ports: Vec<(String, i32, String)> = slice
        .ports
        .iter()
        .flatten()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            ("http".to_owned(), 8080, "TCP".to_owned()),
            ("metrics".to_owned(), 9090, "TCP".to_owned())
        ]
    );
    for endpoint in &slice.endpoints {
        let target = endpoint.target_ref.as_ref().expect("a target");
        assert_eq!(target.kind.as_deref(), Some("Pod"));
        assert!(endpoint.node_name.is_some());
    }
    assert!(
        slices_of(&client, "outside").await.is_empty(),
        "a Service without selector gets no slice"
    );

    // Pods coming and going change the slice.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaling up");
    eventually(120, "the slice lists the third pod", || async {
        let ips = pod_ips(&client).await;
        ips.len() == 3 && ready_addresses(&client, "web").await == Some(ips)
    })
    .await;
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scaling down");
    eventually(120, "the slice lists the one pod left", || async {
        let ips = pod_ips(&client).await;
        ips.len() == 1
            && slices_of(&client, "web")
                .await
                .first()
                .is_some_and(|s| s.endpoints.len() == 1)
            && ready_addresses(&client, "web").await == Some(ips)
    })
    .await;

    // The slice goes with its Service.
    services
        .delete("web", &DeleteParams::background())
        .await
        .expect("deleting the Service");
    eventually(120, "the slice goes with the Service", || async {
        slices_of(&client, "web").await.is_empty()
    })
    .await;
    cluster.shutdown().await;
}
