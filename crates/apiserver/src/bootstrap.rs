//! What every cluster has before anyone uses it: the standard namespaces, the project's CRDs and the built-in
//! RBAC roles and bindings.
//!
//! It goes through the API like any client, with server-side apply, so it is idempotent across restarts and a
//! newer binary updates the CRDs an older one installed.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use super::apiserver::auth::roles;
use kmm_api::crds;

/// The field manager of the objects the cluster installs for itself.
pub const MANAGER: &str = "kmm-tui-bootstrap";

/// Namespaces a Kubernetes cluster starts with.
pub const NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Install the standard namespaces, the project's CRDs, the OpenShift kinds the Day-0 flow reads and writes
/// (the embedded cluster plays an OpenShift cluster's Machine Config Operator), and the built-in ClusterRoles
/// (covering those CRDs' groups) with their bindings.
pub async fn run(client: &kube::Client) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let params = PatchParams::apply(MANAGER).force();
    for name in NAMESPACES {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces.patch(name, &params, &Patch::Apply(&ns)).await?;
    }
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut groups: Vec<String> = Vec::new();
    for crd in crds::all().into_iter().chain(crds::openshift_views()) {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if !groups.contains(&crd.spec.group) {
            groups.push(crd.spec.group.clone());
        }
        definitions
            .patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|e| anyhow::anyhow!("installing CRD {name}: {e}"))?;
    }
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    for role in roles::cluster_roles(&groups) {
        let name = role.metadata.name.clone().unwrap_or_default();
        cluster_roles
            .patch(&name, &params, &Patch::Apply(&role))
            .await
            .map_err(|e| anyhow::anyhow!("installing ClusterRole {name}: {e}"))?;
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    for binding in roles::cluster_role_bindings() {
        let name = binding.metadata.name.clone().unwrap_or_default();
        bindings
            .patch(&name, &params, &Patch::Apply(&binding))
            .await
            .map_err(|e| anyhow::anyhow!("installing ClusterRoleBinding {name}: {e}"))?;
    }
    Ok(())
}
