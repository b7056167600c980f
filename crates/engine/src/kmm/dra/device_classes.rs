//! The DeviceClasses of a Module's `spec.dra.deviceClasses`: each selects the devices of the Module's driver
//! (`device.driver == "<driverName>"`, then the Module's own selectors) and passes on its configuration. A
//! DeviceClass is cluster-scoped and cannot name a namespaced Module as owner, so, as upstream does, the Module's
//! name and namespace labels mark it as the Module's: classes missing are created, classes that drifted are patched
//! back, classes the Module no longer lists are deleted, and the finalizer deletes them all with the Module.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    CELDeviceSelector, DeviceClass, DeviceClassConfiguration, DeviceClassSpec, DeviceSelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch};
use serde_json::json;

use crate::runtime::context::{Error, KubeResultExt};
use crate::runtime::writes::{patch_params, post_params};
use kmm_api::errors::{is_conflict, is_not_found};
use kmm_api::kmm::{DraSpec, labels};

/// The CEL selector that keeps a class to the devices of `driver`.
pub(super) fn driver_selector(driver: &str) -> String {
    // A JSON string literal is a CEL string literal for every character a driver name may hold.
    let quoted = serde_json::to_string(driver).unwrap_or_default();
    format!("device.driver == {quoted}")
}

/// Label selector of the DeviceClasses of the Module `namespace/module`.
fn owned_selector(namespace: &str, module: &str) -> String {
    format!(
        "{}={module},{}={namespace}",
        labels::MODULE_NAME,
        labels::MODULE_NAMESPACE
    )
}

/// The DeviceClasses the Module's DRA spec asks for.
pub(super) fn desired(
    namespace: &str,
    module: &str,
    dra: &DraSpec,
) -> Result<Vec<DeviceClass>, Error> {
    dra.device_classes
        .iter()
        .map(|class| {
            let mut selectors = vec![DeviceSelector {
                cel: Some(CELDeviceSelector {
                    expression: driver_selector(&dra.driver_name),
                }),
            }];
            selectors.extend(convert::<Vec<DeviceSelector>>(
                &class.selectors,
                &class.name,
            )?);
            let config: Vec<DeviceClassConfiguration> = convert(&class.config, &class.name)?;
            Ok(DeviceClass {
                metadata: ObjectMeta {
                    name: Some(class.name.clone()),
                    labels: Some(BTreeMap::from([
                        (labels::MODULE_NAME.to_owned(), module.to_owned()),
                        (labels::MODULE_NAMESPACE.to_owned(), namespace.to_owned()),
                    ])),
                    ..ObjectMeta::default()
                },
                spec: DeviceClassSpec {
                    selectors: Some(selectors),
                    config: (!config.is_empty()).then_some(config),
                    ..DeviceClassSpec::default()
                },
            })
        })
        .collect()
}

/// The Module's selectors and configuration, read as the API's types (the wire shapes are the same).
fn convert<T: serde::de::DeserializeOwned>(
    value: &impl serde::Serialize,
    class: &str,
) -> Result<T, Error> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|error| Error::Invalid(format!("DeviceClass {class} of spec.dra: {error}")))
}

/// Whether `existing` already is what `wanted` says (the fields the engine writes).
fn matches(existing: &DeviceClass, wanted: &DeviceClass) -> bool {
    let owned = wanted
        .labels()
        .iter()
        .all(|(key, value)| existing.labels().get(key) == Some(value));
    let selectors = |c: &DeviceClass| c.spec.selectors.clone().unwrap_or_default();
    let config = |c: &DeviceClass| c.spec.config.clone().unwrap_or_default();
    owned && selectors(existing) == selectors(wanted) && config(existing) == config(wanted)
}

/// Bring the Module's DeviceClasses to `wanted`: create, patch back and delete.
pub(super) async fn ensure(
    client: &kube::Client,
    namespace: &str,
    module: &str,
    wanted: &[DeviceClass],
) -> Result<(), Error> {
    let api: Api<DeviceClass> = Api::all(client.clone());
    let existing = api
        .list(&ListParams::default().labels(&owned_selector(namespace, module)))
        .await
        .doing(|| format!("listing the DeviceClasses of Module {namespace}/{module}"))?
        .items;
    for class in wanted {
        let name = class.name_any();
        match existing.iter().find(|e| e.name_any() == name) {
            Some(current) if matches(current, class) => {}
            Some(_) => patch(&api, class).await?,
            None => create(&api, class, namespace, module).await?,
        }
    }
    for stale in existing
        .iter()
        .filter(|e| !wanted.iter().any(|w| w.name_any() == e.name_any()))
    {
        delete(&api, &stale.name_any()).await?;
    }
    Ok(())
}

async fn create(
    api: &Api<DeviceClass>,
    class: &DeviceClass,
    namespace: &str,
    module: &str,
) -> Result<(), Error> {
    let name = class.name_any();
    match api.create(&post_params(), class).await {
        // Made by an earlier pass the list did not show yet, or somebody else's: a class by that name that is not
        // this Module's is never taken over.
        Err(error) if is_conflict(&error) => {
            let current = api
                .get(&name)
                .await
                .doing(|| format!("reading DeviceClass {name}"))?;
            let mine = current
                .labels()
                .get(labels::MODULE_NAME)
                .map(String::as_str)
                == Some(module)
                && current
                    .labels()
                    .get(labels::MODULE_NAMESPACE)
                    .map(String::as_str)
                    == Some(namespace);
            if mine {
                Ok(())
            } else {
                Err(Error::Invalid(format!(
                    "DeviceClass {name} already exists and does not belong to Module {namespace}/{module}"
                )))
            }
        }
        result => result
            .map(drop)
            .doing(|| format!("creating DeviceClass {name} of Module {namespace}/{module}")),
    }
}

async fn patch(api: &Api<DeviceClass>, class: &DeviceClass) -> Result<(), Error> {
    let name = class.name_any();
    let patch = json!({
        "metadata": {"labels": class.labels()},
        "spec": {
            "selectors": class.spec.selectors,
            "config": class.spec.config,
        },
    });
    api.patch(&name, &patch_params(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .doing(|| format!("updating DeviceClass {name}"))
}

async fn delete(api: &Api<DeviceClass>, name: &str) -> Result<(), Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Err(error) if is_not_found(&error) => Ok(()),
        result => result
            .map(drop)
            .doing(|| format!("deleting DeviceClass {name}")),
    }
}

/// Delete every DeviceClass of the Module. A cluster that does not serve DeviceClasses (older than 1.34) has none.
pub(crate) async fn remove(
    client: &kube::Client,
    namespace: &str,
    module: &str,
) -> Result<(), Error> {
    let api: Api<DeviceClass> = Api::all(client.clone());
    let existing = match api
        .list_metadata(&ListParams::default().labels(&owned_selector(namespace, module)))
        .await
    {
        Err(error) if is_not_found(&error) => return Ok(()),
        result => {
            result.doing(|| format!("listing the DeviceClasses of Module {namespace}/{module}"))?
        }
    };
    for class in &existing.items {
        delete(&api, &class.name_any()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dra() -> DraSpec {
        serde_json::from_value(json!({
            "container": {"image": "q/dra:1"},
            "driverName": "gpu.example.com",
            "deviceClasses": [
                {"name": "gpu.example.com",
                 "selectors": [{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == \"a100\""}}],
                 "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "timeSlicing"}}}]},
                {"name": "any-gpu.example.com"}
            ]
        }))
        .expect("a DRA spec")
    }

    #[test]
    fn classes_select_the_driver_first_and_carry_the_modules_labels() {
        let classes = desired("acme", "gpu", &dra()).expect("classes");
        assert_eq!(classes.len(), 2);
        let first = &classes[0];
        assert_eq!(first.name_any(), "gpu.example.com");
        assert_eq!(first.labels()[labels::MODULE_NAME], "gpu");
        assert_eq!(first.labels()[labels::MODULE_NAMESPACE], "acme");
        let expressions: Vec<String> = first
            .spec
            .selectors
            .iter()
            .flatten()
            .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
            .collect();
        assert_eq!(
            expressions,
            [
                "device.driver == \"gpu.example.com\"",
                "device.attributes[\"gpu.example.com\"].model == \"a100\""
            ]
        );
        let config = first.spec.config.clone().unwrap_or_default();
        let opaque = config[0].opaque.as_ref().expect("opaque config");
        assert_eq!(opaque.driver, "gpu.example.com");
        assert_eq!(opaque.parameters.0["sharing"], "timeSlicing");
        let second = &classes[1];
        assert_eq!(second.spec.selectors.as_ref().map(Vec::len), Some(1));
        assert_eq!(second.spec.config, None);
    }

    #[test]
    fn a_drifted_or_foreign_class_does_not_match() {
        let classes = desired("acme", "gpu", &dra()).expect("classes");
        let wanted = &classes[0];
        assert!(matches(wanted, wanted));
        let mut drifted = wanted.clone();
        drifted.spec.selectors = Some(Vec::new());
        assert!(!matches(&drifted, wanted));
        let mut foreign = wanted.clone();
        foreign
            .labels_mut()
            .insert(labels::MODULE_NAMESPACE.to_owned(), "other".to_owned());
        assert!(!matches(&foreign, wanted));
    }

    #[test]
    fn a_driver_name_is_quoted_as_a_cel_string() {
        assert_eq!(driver_selector("a.b"), "device.driver == \"a.b\"");
        assert_eq!(driver_selector("q\"x"), "device.driver == \"q\\\"x\"");
    }
}
