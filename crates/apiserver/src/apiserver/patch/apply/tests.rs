use super::super::test_support::AtomicLists;
use super::super::test_support::arbitrary_object_with_directives;
use super::super::{builtin_list_types, track_update};
use super::*;
use proptest::prelude::*;
use serde_json::json;

const T0: &str = "2024-05-01T10:00:00Z";
const T1: &str = "2024-05-01T11:00:00Z";

fn types() -> &'static dyn ListTypes {
    builtin_list_types("apps", "Deployment")
}

fn config(replicas: i64, image: &str, env: &[(&str, &str)]) -> Value {
    let env: Vec<Value> = env
        .iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": image, "env": env}]}}
        }
    })
}

fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    server_side_apply(
        &ApplyRequest {
            live,
            applied,
            manager,
            force,
            subresource: None,
            now: T1,
        },
        types(),
    )
}

/// The managers of an object with the fields each owns, in kube-apiserver's notation.
fn owners(object: &Value) -> Vec<(String, Vec<String>)> {
    ManagedFields::of_object(object)
        .unwrap()
        .entries()
        .map(|entry| {
            let fields = entry
                .fields
                .member_paths()
                .iter()
                .map(|path| describe_path(path))
                .collect();
            (entry.id.manager.clone(), fields)
        })
        .collect()
}

fn owns(object: &Value, manager: &str, field: &str) -> bool {
    owners(object)
        .iter()
        .any(|(name, fields)| name == manager && fields.iter().any(|f| f == field))
}

#[test]
fn creates_the_object_with_an_apply_entry() {
    let applied = config(2, "nginx:1", &[("A", "1")]);
    let created = apply(None, &applied, "ci", false).unwrap();
    let mut expected = applied.clone();
    expected["metadata"]["managedFields"] = json!([{
        "manager": "ci",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                    ".": {},
                    "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
                    "f:image": {},
                    "f:name": {}
                }}}}
            }
        }
    }]);
    assert_eq!(created, expected);
}

#[test]
fn applying_the_same_config_again_changes_nothing() {
    let applied = config(2, "nginx:1", &[("A", "1")]);
    let created = apply(None, &applied, "ci", false).unwrap();
    let again = server_side_apply(
        &ApplyRequest {
            live: Some(&created),
            applied: &applied,
            manager: "ci",
            force: false,
            subresource: None,
            now: "2030-01-01T00:00:00Z",
        },
        types(),
    )
    .unwrap();
    assert_eq!(again, created);
}

#[test]
fn conflicts_with_an_updater_unless_forced() {
    let mut live = config(1, "nginx:1", &[]);
    track_update(None, &mut live, "kubectl-create", None, T0, types());
    let applied = config(3, "nginx:1", &[]);

    let error = apply(Some(&live), &applied, "ci", false).unwrap_err();
    assert_eq!(
        error,
        ApplyError::Conflicts(vec![Conflict {
            manager: "kubectl-create".to_owned(),
            field: ".spec.replicas".to_owned(),
            manager_label: format!("\"kubectl-create\" using apps/v1 at {T0}"),
        }])
    );
    assert_eq!(
        error.to_string(),
        format!(
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1 at {T0}: .spec.replicas"
        )
    );

    let forced = apply(Some(&live), &applied, "ci", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], json!(3));
    assert!(owns(&forced, "ci", ".spec.replicas"));
    assert!(!owns(&forced, "kubectl-create", ".spec.replicas"));
    assert!(owns(
        &forced,
        "kubectl-create",
        ".spec.template.spec.containers[name=\"app\"].image"
    ));
    assert!(owns(
        &forced,
        "ci",
        ".spec.template.spec.containers[name=\"app\"].image"
    ));
}

#[test]
fn words_several_conflicts_like_kube_apiserver() {
    let live = apply(None, &config(1, "nginx:1", &[("A", "1")]), "alpha", false).unwrap();
    let live = apply(Some(&live), &config(1, "nginx:1", &[]), "beta", false).unwrap();
    let error = apply(Some(&live), &config(2, "nginx:2", &[]), "gamma", false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Apply failed with 4 conflicts: conflicts with \"alpha\":\n\
         - .spec.replicas\n\
         - .spec.template.spec.containers[name=\"app\"].image\n\
         conflicts with \"beta\":\n\
         - .spec.replicas\n\
         - .spec.template.spec.containers[name=\"app\"].image"
    );
    let ApplyError::Conflicts(conflicts) = error else {
        panic!("expected conflicts");
    };
    assert_eq!(conflicts[0].manager_label, "\"alpha\"");
}

#[test]
fn shared_fields_stay_until_their_last_applier_drops_them() {
    let both = config(2, "nginx:1", &[("A", "1")]);
    let live = apply(None, &both, "alpha", false).unwrap();
    let live = apply(Some(&live), &both, "beta", false).unwrap();
    assert!(owns(&live, "alpha", ".spec.replicas") && owns(&live, "beta", ".spec.replicas"));

    let mut without_env = config(2, "nginx:1", &[]);
    without_env["spec"]
        .as_object_mut()
        .unwrap()
        .shift_remove("replicas");
    let live = apply(Some(&live), &without_env, "alpha", false).unwrap();
    assert_eq!(
        live["spec"]["replicas"],
        json!(2),
        "beta still owns replicas"
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}]),
        "beta still owns env A"
    );

    let live = apply(Some(&live), &without_env, "beta", false).unwrap();
    assert_eq!(live["spec"].get("replicas"), None);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "app", "image": "nginx:1", "env": []}),
        "the empty env list is still applied"
    );
}

#[test]
fn removes_what_the_manager_stopped_applying() {
    let live = apply(
        None,
        &config(2, "nginx:1", &[("A", "1"), ("B", "2")]),
        "ci",
        false,
    )
    .unwrap();
    let mut next = config(2, "nginx:1", &[("B", "2")]);
    next["metadata"]["labels"] = json!({"tier": "fe"});
    let live = apply(Some(&live), &next, "ci", false).unwrap();
    assert_eq!(live["metadata"]["labels"], json!({"tier": "fe"}));
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "B", "value": "2"}])
    );
    assert!(!owns(&live, "ci", ".metadata.labels.app"));
}

#[test]
fn keeps_list_items_that_another_manager_changed() {
    let live = apply(None, &config(2, "nginx:1", &[("A", "1")]), "ci", false).unwrap();
    let mut edited = live.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    track_update(Some(&live), &mut edited, "kubectl-set", None, T1, types());
    assert!(!owns(
        &edited,
        "ci",
        ".spec.template.spec.containers[name=\"app\"].image"
    ));

    let mut without_container = config(2, "nginx:1", &[]);
    without_container["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "side", "image": "busybox"}]);
    let live = apply(Some(&edited), &without_container, "ci", false).unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "nginx:2"}, {"name": "side", "image": "busybox"}])
    );
}

#[test]
fn merges_lists_of_different_managers() {
    let mut first = config(1, "nginx:1", &[]);
    first["metadata"]["finalizers"] = json!(["example.com/a"]);
    first["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80}]);
    let live = apply(None, &first, "alpha", false).unwrap();

    let second = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": ["example.com/b"]},
        "spec": {"template": {"spec": {"containers": [
            {"name": "app", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]},
            {"name": "side", "image": "busybox"}
        ]}}}
    });
    let live = apply(Some(&live), &second, "beta", false).unwrap();
    assert_eq!(
        live["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"])
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([
            {"name": "app", "image": "nginx:1", "env": [],
             "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]},
            {"name": "side", "image": "busybox"}
        ])
    );
    assert!(owns(
        &live,
        "alpha",
        ".metadata.finalizers[=\"example.com/a\"]"
    ));
    assert!(owns(
        &live,
        "beta",
        ".metadata.finalizers[=\"example.com/b\"]"
    ));
    assert!(owns(
        &live,
        "beta",
        ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].name"
    ));
}

#[test]
fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
    let live = config(1, "nginx:1", &[]);
    let error = apply(Some(&live), &config(5, "nginx:1", &[]), "ci", false).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1 at {T1}: .spec.replicas"
        )
    );
    let same = apply(Some(&live), &config(1, "nginx:1", &[]), "ci", false).unwrap();
    assert!(owns(&same, "before-first-apply", ".spec.replicas"));
    assert!(owns(&same, "ci", ".spec.replicas"));
}

#[test]
fn atomic_lists_of_custom_resources_are_replaced_and_contested_whole() {
    let module = |images: Value| {
        json!({"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
               "metadata": {"name": "m"}, "spec": {"images": images}})
    };
    fn request(
        live: Option<&Value>,
        applied: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, ApplyError> {
        server_side_apply(
            &ApplyRequest {
                live,
                applied,
                manager,
                force,
                subresource: None,
                now: T0,
            },
            &AtomicLists,
        )
    }
    let live = request(None, &module(json!(["a", "b"])), "alpha", false).unwrap();
    let error = request(Some(&live), &module(json!(["c"])), "beta", false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Apply failed with 1 conflict: conflict with \"alpha\": .spec.images"
    );
    let forced = request(Some(&live), &module(json!(["c"])), "beta", true).unwrap();
    assert_eq!(forced["spec"]["images"], json!(["c"]));
    assert_eq!(
        owners(&forced),
        vec![("beta".to_owned(), vec![".spec.images".to_owned()])]
    );
}

#[test]
fn records_the_subresource_of_the_apply() {
    let live = apply(None, &config(1, "nginx:1", &[]), "ci", false).unwrap();
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                        "status": {"conditions": [{"type": "Available", "status": "True"}]}});
    let result = server_side_apply(
        &ApplyRequest {
            live: Some(&live),
            applied: &status,
            manager: "controller",
            force: false,
            subresource: Some("status"),
            now: T1,
        },
        types(),
    )
    .unwrap();
    let entries = result["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["subresource"], json!("status"));
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {
            ".": {}, "f:status": {}, "f:type": {}
        }}}})
    );
    assert_eq!(result["spec"], live["spec"]);
}

#[test]
fn refuses_configurations_it_cannot_track() {
    let cases = [
        (json!([1]), "the applied configuration must be an object"),
        (
            json!({"metadata": {"managedFields": [{"manager": "x"}]}}),
            "metadata.managedFields must be nil",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\"",
        ),
        (
            json!({"metadata": {"finalizers": ["a", "a"]}}),
            ".metadata.finalizers: duplicate entries for [=\"a\"]",
        ),
    ];
    for (applied, expected) in cases {
        let error = apply(None, &applied, "ci", false).unwrap_err();
        assert!(matches!(error, ApplyError::Invalid(_)), "{error}");
        assert!(error.to_string().starts_with(expected), "{error}");
    }
    let corrupt = json!({"metadata": {"managedFields": "x"}});
    let error = apply(Some(&corrupt), &config(1, "a", &[]), "ci", false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to decode managed fields: metadata.managedFields must be a list"
    );
}

/// Deployment configurations whose lists have unique keys, so that applies succeed.
fn deployment_config() -> impl Strategy<Value = Value> {
    let names = prop::sample::subsequence(vec!["a", "b", "c"], 0..=3);
    let container = (names.clone(), "[a-c]", prop::option::of(0i64..3));
    let containers =
        prop::sample::subsequence(vec!["app", "log", "side"], 0..=3).prop_flat_map(move |keys| {
            let count = keys.len();
            (Just(keys), prop::collection::vec(container.clone(), count))
        });
    (containers, names, prop::option::of(0i64..4)).prop_map(
        |((keys, details), finalizers, replicas)| {
            let containers: Vec<Value> = keys
                .iter()
                .zip(details)
                .map(|(name, (env, image, port))| {
                    let env: Vec<Value> = env
                        .iter()
                        .map(|env| json!({"name": env, "value": image}))
                        .collect();
                    let mut container = json!({"name": name, "image": image, "env": env});
                    if let Some(port) = port {
                        container["ports"] = json!([{"containerPort": port}]);
                    }
                    container
                })
                .collect();
            let mut config = json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "finalizers": finalizers},
                "spec": {"template": {"spec": {"containers": containers}}}
            });
            if let Some(replicas) = replicas {
                config["spec"]["replicas"] = json!(replicas);
            }
            config
        },
    )
}

proptest! {
    #[test]
    fn never_panics(
        live in arbitrary_object_with_directives(),
        applied in arbitrary_object_with_directives(),
        force in any::<bool>(),
    ) {
        for types in [builtin_list_types("", "Pod"), &AtomicLists as &dyn ListTypes] {
            for live in [None, Some(&live)] {
                let _ = server_side_apply(
                    &ApplyRequest { live, applied: &applied, manager: "m", force, subresource: None, now: T0 },
                    types,
                );
            }
        }
    }

    #[test]
    fn applying_twice_is_stable(
        live in arbitrary_object_with_directives(),
        applied in arbitrary_object_with_directives(),
    ) {
        let types = builtin_list_types("", "Pod");
        let mut live = live;
        track_update(None, &mut live, "creator", None, T0, types);
        let request = |live| ApplyRequest { live, applied: &applied, manager: "m", force: true, subresource: None, now: T1 };
        if let Ok(once) = server_side_apply(&request(Some(&live)), types) {
            let twice = server_side_apply(
                &ApplyRequest { force: false, ..request(Some(&once)) },
                types,
            );
            prop_assert_eq!(twice, Ok(once));
        }
    }

    #[test]
    fn managers_sharing_an_object_converge(
        first in deployment_config(),
        second in deployment_config(),
    ) {
        let request = |live, applied, manager| ApplyRequest {
            live, applied, manager, force: true, subresource: None, now: T1,
        };
        let live = server_side_apply(&request(None, &first, "alpha"), types()).unwrap();
        let live = server_side_apply(&request(Some(&live), &second, "beta"), types()).unwrap();
        let again = server_side_apply(&ApplyRequest { force: false, ..request(Some(&live), &second, "beta") }, types());
        prop_assert_eq!(again, Ok(live.clone()));
        // Whatever beta applied is now in the object with beta's values.
        if let Some(replicas) = second["spec"].get("replicas") {
            prop_assert_eq!(&live["spec"]["replicas"], replicas);
        }
        let images = |object: &Value| -> Vec<(Value, Value)> {
            object["spec"]["template"]["spec"]["containers"].as_array().into_iter().flatten()
                .map(|c| (c["name"].clone(), c["image"].clone())).collect()
        };
        let live_images = images(&live);
        for image in images(&second) {
            prop_assert!(live_images.contains(&image), "{:?} missing from {}", image, live);
        }
    }
}
