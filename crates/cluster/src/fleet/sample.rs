//! The sample a console opens an embedded fleet with: a ManagedClusterModule on the hub for every spoke, so the
//! fleet view shows a module being built on the hub and loaded cluster by cluster from the first second, with
//! nothing to type. `serve` starts its fleet without it: a served fleet is the user's to fill.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use kmm_api::hub::{DEFAULT_NAMESPACE, ManagedClusterModule};

/// The sample ManagedClusterModule's name.
pub const MODULE: &str = "accmod";

/// The namespace it goes to on every spoke.
pub const SPOKE_NAMESPACE: &str = "acme";

/// Who writes the sample, in `managedFields`.
const MANAGER: &str = "kmm-tui-sample";

/// Put the sample on `hub` for `spokes`: the spoke namespace on each spoke, the Dockerfile the hub builds with, and
/// the ManagedClusterModule selecting every cluster of the `default` ManagedClusterSet. Applied server-side, so a
/// second call changes nothing.
pub(super) async fn apply(hub: &Client, spokes: &[Client]) -> anyhow::Result<()> {
    let params = PatchParams::apply(MANAGER);
    for spoke in spokes {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SPOKE_NAMESPACE}});
        Api::<Namespace>::all(spoke.clone())
            .patch(SPOKE_NAMESPACE, &params, &Patch::Apply(&namespace))
            .await?;
    }
    let dockerfile = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "accmod-dockerfile", "namespace": DEFAULT_NAMESPACE},
        "data": {"dockerfile": "FROM quay.io/acme/base-builder:9\nARG KERNEL_FULL_VERSION\nRUN make KERNEL=${KERNEL_FULL_VERSION}\n"},
    });
    Api::<ConfigMap>::namespaced(hub.clone(), DEFAULT_NAMESPACE)
        .patch("accmod-dockerfile", &params, &Patch::Apply(&dockerfile))
        .await?;
    let module = json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": MODULE},
        "spec": {
            "spokeNamespace": SPOKE_NAMESPACE,
            "selector": {"cluster.open-cluster-management.io/clusterset": "default"},
            "moduleSpec": {
                "selector": {"node-role.kubernetes.io/worker": ""},
                "moduleLoader": {"container": {
                    "modprobe": {"moduleName": MODULE},
                    "kernelMappings": [{
                        "regexp": "^.+$",
                        "containerImage": "quay.io/acme/accmod:${KERNEL_FULL_VERSION}",
                        "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
                    }],
                }},
            },
        },
    });
    Api::<ManagedClusterModule>::all(hub.clone())
        .patch(MODULE, &params, &Patch::Apply(&module))
        .await?;
    Ok(())
}
