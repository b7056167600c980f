//! The Shim's RuntimeClass: named by `runtimeClass.name`, with the Shim's handler, scheduling onto the nodes
//! labelled `<shim>=provisioned` (so no pod lands on a node before its install ends), owned by the Shim. Kept in
//! sync on every pass: a renamed class replaces the old one, a changed handler (immutable) recreates it.

use std::collections::BTreeMap;

use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::{Api, DeleteParams, ListParams, Patch};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::runtime::context::{Context, Error, KubeResultExt};
use crate::runtime::writes::patch_params;
use crate::runtime::writes::post_params;
use kmm_api::shim::Shim;
use kmm_api::shim::names;

/// The RuntimeClass the Shim asks for.
fn desired(shim: &Shim) -> RuntimeClass {
    let shim_name = shim.name_any();
    let value = json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {
            "name": shim.spec.runtime_class.name,
            "labels": {names::RUNTIME_CLASS_SHIM: shim_name},
            "ownerReferences": shim.controller_owner_ref(&()).into_iter().collect::<Vec<_>>(),
        },
        "handler": shim.spec.runtime_class.handler,
        "scheduling": {"nodeSelector": selector(&shim_name)},
    });
    serde_json::from_value(value).expect("the RuntimeClass is valid")
}

/// Where pods of the runtime class may run: nodes where the shim is provisioned.
fn selector(shim: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(names::node_label(shim), names::PROVISIONED.to_owned())])
}

/// Create or correct the Shim's RuntimeClass and remove classes it named before.
pub(super) async fn ensure(context: &Context, shim: &Shim) -> Result<(), Error> {
    let api = Api::<RuntimeClass>::all(context.client.clone());
    let want = desired(shim);
    let name = want.name_any();
    remove_owned(context, shim, Some(&name)).await?;
    let existing = api
        .get_opt(&name)
        .await
        .doing(|| format!("reading RuntimeClass {name}"))?;
    match existing {
        None => {
            api.create(&post_params(), &want)
                .await
                .doing(|| format!("creating RuntimeClass {name}"))?;
            context
                .event(
                    shim,
                    false,
                    "RuntimeClassCreated",
                    format!(
                        "RuntimeClass {name} schedules onto nodes labelled {}={}",
                        shim.name_any(),
                        names::PROVISIONED
                    ),
                )
                .await;
        }
        Some(current) if current.handler != want.handler => {
            // The handler cannot change in place.
            api.delete(&name, &DeleteParams::default())
                .await
                .doing(|| format!("deleting RuntimeClass {name} to change its handler"))?;
        }
        Some(current) => {
            let scheduling = current
                .scheduling
                .as_ref()
                .and_then(|s| s.node_selector.clone());
            let labelled = current.labels().get(names::RUNTIME_CLASS_SHIM)
                == want.labels().get(names::RUNTIME_CLASS_SHIM);
            let owned = current.owner_references() == want.owner_references();
            if scheduling.as_ref() != Some(&selector(&shim.name_any())) || !labelled || !owned {
                let patch = json!({
                    "metadata": {
                        "labels": want.labels(),
                        "ownerReferences": want.owner_references(),
                    },
                    "scheduling": {"nodeSelector": selector(&shim.name_any())},
                });
                api.patch(&name, &patch_params(), &Patch::Merge(&patch))
                    .await
                    .doing(|| format!("updating RuntimeClass {name}"))?;
            }
        }
    }
    Ok(())
}

/// Delete the RuntimeClasses the Shim keeps, except `keep`.
pub(super) async fn remove_owned(
    context: &Context,
    shim: &Shim,
    keep: Option<&str>,
) -> Result<(), Error> {
    let api = Api::<RuntimeClass>::all(context.client.clone());
    let shim_name = shim.name_any();
    let owned = api
        .list(&ListParams::default().labels(&format!("{}={shim_name}", names::RUNTIME_CLASS_SHIM)))
        .await
        .doing(|| format!("listing the RuntimeClasses of Shim {shim_name}"))?;
    for class in owned.items {
        let name = class.name_any();
        if Some(name.as_str()) == keep {
            continue;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(error) if kmm_api::errors::is_not_found(&error) => {}
            Err(error) => {
                return Err(error).doing(|| format!("deleting RuntimeClass {name}"));
            }
        }
    }
    Ok(())
}
