//! What every cluster has before anyone uses it: the standard namespaces and the project's CRDs.
//!
//! It goes through the API like any client, with server-side apply, so it is idempotent across restarts and a
//! newer binary updates the CRDs an older one installed.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use crate::api::crds;

/// The field manager of the objects the cluster installs for itself.
pub const MANAGER: &str = "kmm-tui-bootstrap";

/// Namespaces a Kubernetes cluster starts with.
const NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Install the standard namespaces, the project's CRDs, and the OpenShift kinds the Day-0 flow reads and writes
/// (the embedded cluster plays an OpenShift cluster's Machine Config Operator).
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
    for crd in crds::all().into_iter().chain(crds::openshift_views()) {
        let name = crd.metadata.name.clone().unwrap_or_default();
        definitions
            .patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|e| anyhow::anyhow!("installing CRD {name}: {e}"))?;
    }
    Ok(())
}
