//! What makes a cluster a hub: OCM's and KMM's hub CRDs (with the built-in roles widened to their groups, so the
//! viewer context reads them too), the namespace where its engine builds for the fleet, and for each spoke its cluster namespace and ManagedCluster, in the `default`
//! ManagedClusterSet that a binding in the `default` namespace makes usable.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kmm_api::crds;
use kmm_api::ocm::cluster::{ClientConfig, ManagedCluster, ManagedClusterSpec};
use kmm_api::ocm::clusterset::{
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetBinding,
    ManagedClusterSetBindingSpec, ManagedClusterSetSpec, SelectorType,
};
use kmm_api::ocm::names;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use crate::apiserver::auth::roles;
use crate::bootstrap;

/// The namespace whose binding lets hub operators place work on the `default` set.
const BINDING_NAMESPACE: &str = "default";

/// Install the hub's CRDs and the roles that cover their groups, the hub namespace, and the `default` set with its
/// binding.
pub(crate) async fn install(hub: &kube::Client) -> anyhow::Result<()> {
    let params = PatchParams::apply(bootstrap::MANAGER).force();
    let definitions: Api<CustomResourceDefinition> = Api::all(hub.clone());
    let mut groups: Vec<String> = Vec::new();
    let every = crds::all()
        .into_iter()
        .chain(crds::openshift_views())
        .chain(crds::hub());
    for crd in every {
        if !groups.contains(&crd.spec.group) {
            groups.push(crd.spec.group.clone());
        }
    }
    for crd in crds::hub() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        definitions
            .patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|e| anyhow::anyhow!("installing hub CRD {name}: {e}"))?;
    }
    let cluster_roles: Api<ClusterRole> = Api::all(hub.clone());
    for role in roles::cluster_roles(&groups) {
        let name = role.metadata.name.clone().unwrap_or_default();
        cluster_roles
            .patch(&name, &params, &Patch::Apply(&role))
            .await
            .map_err(|e| anyhow::anyhow!("widening ClusterRole {name} to the hub's kinds: {e}"))?;
    }
    let set = ManagedClusterSet::new(
        names::DEFAULT_CLUSTERSET,
        ManagedClusterSetSpec {
            cluster_selector: Some(ManagedClusterSelector {
                selector_type: Some(SelectorType::ExclusiveClusterSetLabel),
                label_selector: None,
            }),
        },
    );
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(kmm_api::hub::DEFAULT_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(hub.clone())
        .patch(
            kmm_api::hub::DEFAULT_NAMESPACE,
            &params,
            &Patch::Apply(&namespace),
        )
        .await
        .map_err(|e| anyhow::anyhow!("creating the hub namespace: {e}"))?;
    Api::<ManagedClusterSet>::all(hub.clone())
        .patch(names::DEFAULT_CLUSTERSET, &params, &Patch::Apply(&set))
        .await
        .map_err(|e| anyhow::anyhow!("creating the default ManagedClusterSet: {e}"))?;
    let mut binding = ManagedClusterSetBinding::new(
        names::DEFAULT_CLUSTERSET,
        ManagedClusterSetBindingSpec {
            cluster_set: names::DEFAULT_CLUSTERSET.to_owned(),
        },
    );
    binding.metadata.namespace = Some(BINDING_NAMESPACE.to_owned());
    Api::<ManagedClusterSetBinding>::namespaced(hub.clone(), BINDING_NAMESPACE)
        .patch(names::DEFAULT_CLUSTERSET, &params, &Patch::Apply(&binding))
        .await
        .map_err(|e| anyhow::anyhow!("binding the default ManagedClusterSet: {e}"))?;
    Ok(())
}

/// How the hub reaches a spoke's API server, when it is served over HTTPS.
pub(crate) struct Endpoint<'a> {
    /// `https://127.0.0.1:port`.
    pub(crate) url: String,
    /// The CA that signs its serving certificate.
    pub(crate) ca_pem: &'a str,
}

/// Create spoke `name`'s cluster namespace and its ManagedCluster (accepted, in the `default` set).
pub(crate) async fn register(
    hub: &kube::Client,
    name: &str,
    lease_duration_seconds: i32,
    endpoint: Option<Endpoint<'_>>,
) -> anyhow::Result<()> {
    let params = PatchParams::apply(bootstrap::MANAGER).force();
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(hub.clone())
        .patch(name, &params, &Patch::Apply(&namespace))
        .await
        .map_err(|e| anyhow::anyhow!("creating the cluster namespace {name} on the hub: {e}"))?;
    let mut cluster = ManagedCluster::new(
        name,
        ManagedClusterSpec {
            managed_cluster_client_configs: endpoint
                .into_iter()
                .map(|endpoint| ClientConfig {
                    url: endpoint.url,
                    ca_bundle: Some(ByteString(endpoint.ca_pem.as_bytes().to_vec())),
                })
                .collect(),
            hub_accepts_client: true,
            lease_duration_seconds: Some(lease_duration_seconds),
            taints: Vec::new(),
        },
    );
    cluster.metadata.labels = Some(BTreeMap::from([
        (
            names::CLUSTERSET_LABEL.to_owned(),
            names::DEFAULT_CLUSTERSET.to_owned(),
        ),
        (names::NAME_LABEL.to_owned(), name.to_owned()),
    ]));
    Api::<ManagedCluster>::all(hub.clone())
        .patch(name, &params, &Patch::Apply(&cluster))
        .await
        .map_err(|e| anyhow::anyhow!("creating ManagedCluster {name} on the hub: {e}"))?;
    Ok(())
}
