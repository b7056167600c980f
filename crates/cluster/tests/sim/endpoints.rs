//! The Endpoints of a Service with a selector say what its EndpointSlice says: the ready pods' addresses at the
//! target ports, kept current, and gone with the Service; a Service without a selector gets none from the
//! controller.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::workloads::{SCENARIO, eventually, running_pods_of};

/// The ready addresses and the ports of the Endpoints `name`, or None while there are none.
async fn addresses_and_ports(
    api: &Api<Endpoints>,
    name: &str,
) -> Option<(BTreeSet<String>, Vec<(String, i32)>)> {
    let endpoints = api.get_opt(name).await.ok()??;
    let [subset] = <[_; 1]>::try_from(endpoints.subsets?).ok()?;
    let addresses = subset
        .addresses
        .iter()
        .flatten()
        .map(|a| a.ip.clone())
        .collect();
    let ports = subset
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect();
    Some((addresses, ports))
}

#[tokio::test(start_paused = true)]
async fn a_selecting_service_gets_endpoints_that_follow_its_pods() {
    let cluster = super::cluster_on(SCENARIO).await;
    let client = cluster.client();
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"name": "http", "containerPort": 8080}]}]}
            }
        }
    }))
    .unwrap();
    Api::<Deployment>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the Deployment is created");
    let services = Api::<Service>::namespaced(client.clone(), "default");
    for (name, selector) in [("api", Some("api")), ("manual", None)] {
        let mut spec = json!({"ports": [{"name": "http", "port": 80, "targetPort": "http"}]});
        if let Some(app) = selector {
            spec["selector"] = json!({ "app": app });
        }
        let service: Service =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
        services
            .create(&PostParams::default(), &service)
            .await
            .expect("the Service is created");
    }
    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default");
    eventually(120, "the Endpoints list both running pods", || async {
        let ips: BTreeSet<String> = running_pods_of(&client, "api")
            .await
            .iter()
            .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
            .collect();
        ips.len() == 2
            && addresses_and_ports(&endpoints, "api").await
                == Some((ips, vec![("http".to_owned(), 8080)]))
    })
    .await;
    assert!(
        endpoints.get_opt("manual").await.unwrap().is_none(),
        "a Service without a selector gets no Endpoints from the controller"
    );

    services
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    eventually(120, "the Endpoints go with their Service", || async {
        matches!(endpoints.get_opt("api").await, Ok(None))
    })
    .await;
    cluster.shutdown().await;
}
