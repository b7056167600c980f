//! Adding and removing the engine's finalizers: one way for every reconciler, so each writes the object's whole
//! finalizer list (a merge patch replaces lists) computed from the object it read, and writes nothing when the list
//! is already as wanted.

use std::fmt::Debug;

use kube::api::{Api, Patch};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::runtime::writes::patch_params;

/// Whether a write of the finalizer list must meet the object as it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    /// The write carries the resourceVersion read, so a list someone changed meanwhile is never overwritten (the
    /// write answers 409 and the next pass reads it again).
    ResourceVersion,
    /// The write carries no resourceVersion: for a reconciler that wrote the object's status since it read it, and
    /// owns the only finalizer an object being deleted still carries.
    None,
}

/// Whether `object` carries `finalizer`.
pub(crate) fn has<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// Add `finalizer` to `object`, guarded by the resourceVersion read; nothing is written when it is there already.
pub(crate) async fn add<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    if has(object, finalizer) {
        return Ok(());
    }
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    write(api, object, finalizers, Guard::ResourceVersion).await
}

/// Remove `finalizer` from `object`, keeping any other; nothing is written when it is not there.
pub(crate) async fn remove<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    guard: Guard,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    if !has(object, finalizer) {
        return Ok(());
    }
    let kept = object
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    write(api, object, kept, guard).await
}

async fn write<K>(
    api: &Api<K>,
    object: &K,
    finalizers: Vec<String>,
    guard: Guard,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    api.patch(
        &object.name_any(),
        &patch_params(),
        &Patch::Merge(&patch(object, finalizers, guard)),
    )
    .await
    .map(drop)
}

/// The merge patch setting the finalizer list; an empty list is removed rather than written empty.
fn patch<K: Resource>(object: &K, finalizers: Vec<String>, guard: Guard) -> Value {
    let mut metadata = json!({
        "finalizers": if finalizers.is_empty() { None } else { Some(finalizers) },
    });
    if guard == Guard::ResourceVersion {
        metadata["resourceVersion"] = json!(object.resource_version());
    }
    json!({ "metadata": metadata })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(finalizers: &[&str]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".to_owned()),
                resource_version: Some("7".to_owned()),
                finalizers: Some(finalizers.iter().map(|f| (*f).to_owned()).collect()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_guarded_patch_carries_the_version_read_and_an_empty_list_goes() {
        let object = pod(&["a"]);
        assert!(has(&object, "a") && !has(&object, "b"));
        assert_eq!(
            patch(
                &object,
                vec!["a".to_owned(), "b".to_owned()],
                Guard::ResourceVersion
            ),
            json!({"metadata": {"finalizers": ["a", "b"], "resourceVersion": "7"}})
        );
        assert_eq!(
            patch(&object, Vec::new(), Guard::None),
            json!({"metadata": {"finalizers": null}})
        );
    }
}
