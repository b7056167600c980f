//! kube-apiserver's validation of built-in kinds, one table per kind: objects a real cluster admits must be
//! admitted, and objects it refuses must be refused with one 422 naming every offending field as kube-apiserver
//! names it. Everything goes through a real `kube::Client`.

mod apps;
mod batch;
mod cluster;
mod config;
mod pods;
mod rbac;
mod service;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use kube::{Client, Error};
use serde_json::Value;

/// One row of a table: an object and the causes it must be refused with (none: it must be admitted).
pub(crate) struct Case {
    /// What the row shows, for the failure message.
    pub what: &'static str,
    /// The object, as a client would send it.
    pub object: Value,
    /// `(field, start of message)` of each cause the refusal must carry.
    pub refused: &'static [(&'static str, &'static str)],
}

/// A row that must be admitted.
pub(crate) fn admitted(what: &'static str, object: Value) -> Case {
    Case {
        what,
        object,
        refused: &[],
    }
}

/// A row that must be refused with `causes`.
pub(crate) fn refused(
    what: &'static str,
    object: Value,
    causes: &'static [(&'static str, &'static str)],
) -> Case {
    Case {
        what,
        object,
        refused: causes,
    }
}

/// The API of an object's kind, from its `apiVersion` and `kind`, in its namespace (if it is namespaced).
fn api_for(client: &Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().expect("kind");
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Create every row's object and check the answer; admitted objects are deleted again so rows can share names.
pub(crate) async fn check(client: &Client, cases: Vec<Case>) {
    for case in cases {
        let api = api_for(client, &case.object);
        let object: DynamicObject = serde_json::from_value(case.object.clone()).expect("object");
        let result = api.create(&PostParams::default(), &object).await;
        judge(case.what, result, case.refused);
        if case.refused.is_empty() {
            let name = object.metadata.name.as_deref().expect("name");
            api.delete(name, &DeleteParams::default().grace_period(0))
                .await
                .expect("the admitted object is deleted");
        }
    }
}

/// Create `object`, then merge-patch it with `change`, expecting the patch refused with `causes` (or admitted
/// when there are none).
pub(crate) async fn check_update(
    client: &Client,
    what: &str,
    object: Value,
    change: Value,
    causes: &[(&str, &str)],
) {
    let api = api_for(client, &object);
    let object: DynamicObject = serde_json::from_value(object).expect("object");
    let name = object.metadata.name.clone().expect("name");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("{what}: the original is admitted: {e}"));
    let result = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(change))
        .await;
    judge(what, result, causes);
    api.delete(&name, &DeleteParams::default().grace_period(0))
        .await
        .expect("the object is deleted");
}

fn judge(what: &str, result: Result<DynamicObject, Error>, causes: &[(&str, &str)]) {
    match (result, causes.is_empty()) {
        (Ok(_), true) => {}
        (Ok(stored), false) => panic!("{what}: admitted, expected {causes:?}: {stored:?}"),
        (Err(e), true) => panic!("{what}: refused: {e}"),
        (Err(Error::Api(status)), false) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (422, "Invalid"),
                "{what}: {status:?}"
            );
            let found: Vec<(String, String)> = status
                .details
                .iter()
                .flat_map(|d| &d.causes)
                .map(|c| (c.field.clone(), c.message.clone()))
                .collect();
            for (field, message) in causes {
                assert!(
                    found
                        .iter()
                        .any(|(f, m)| f == field && m.starts_with(message)),
                    "{what}: no cause {field}: {message}… in {found:#?}"
                );
                assert!(
                    status.message.contains(&format!("{field}: {message}")),
                    "{what}: the message does not carry {field}: {message}: {}",
                    status.message
                );
            }
        }
        (Err(e), false) => panic!("{what}: expected a 422, got {e}"),
    }
}
