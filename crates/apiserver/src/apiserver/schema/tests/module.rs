//! A realistic CRD (a KMM Module): pruning, defaulting and validation together.

use super::*;

/// The `kernelMappings` list of [`module_schema`]: build settings with nested defaults.
fn kernel_mappings_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "literal": {"type": "string"},
                "regexp": {"type": "string"},
                "containerImage": {"type": "string"},
                "inTreeModulesToRemove": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set"
                },
                "build": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "dockerfileConfigMap": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}},
                        "buildArgs": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "required": ["name", "value"],
                                "properties": {"name": {"type": "string"}, "value": {"type": "string"}}
                            }
                        },
                        "secrets": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"name": {"type": "string", "default": ""}}}
                        },
                        "baseImageRegistryTLS": {
                            "type": "object",
                            "default": {},
                            "properties": {
                                "insecure": {"type": "boolean", "default": false},
                                "insecureSkipTLSVerify": {"type": "boolean", "default": false}
                            }
                        }
                    }
                }
            }
        }
    })
}

/// A cut-down KMM `Module` schema: nested objects, arrays of objects, a string map,
/// a list-map, an int-or-string, defaults at several depths and an embedded resource.
fn module_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["moduleLoader", "selector"],
                "properties": {
                    "selector": {"type": "object", "additionalProperties": {"type": "string"}},
                    "maxUpdate": {
                        "x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "default": 1
                    },
                    "moduleLoader": {
                        "type": "object",
                        "required": ["container"],
                        "properties": {
                            "serviceAccountName": {"type": "string"},
                            "container": {
                                "type": "object",
                                "required": ["modprobe"],
                                "properties": {
                                    "imagePullPolicy": {
                                        "type": "string",
                                        "enum": ["Always", "IfNotPresent", "Never"],
                                        "default": "IfNotPresent"
                                    },
                                    "modprobe": {
                                        "type": "object",
                                        "required": ["moduleName"],
                                        "properties": {
                                            "moduleName": {"type": "string", "minLength": 1},
                                            "parameters": {"type": "array", "items": {"type": "string"}},
                                            "firmwarePath": {"type": "string"}
                                        }
                                    },
                                    "kernelMappings": kernel_mappings_schema()
                                }
                            }
                        }
                    },
                    "tolerations": {
                        "type": "array",
                        "x-kubernetes-list-type": "atomic",
                        "items": {"type": "object", "properties": {"key": {"type": "string"}, "tolerationSeconds": {"type": "integer", "format": "int64"}}}
                    },
                    "imageRepoSecret": {"type": "object", "nullable": true, "properties": {"name": {"type": "string"}}},
                    "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {"max": {"type": "integer", "default": 3}}}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }
            }
        }
    })
}

fn module() -> Schema {
    Schema::compile(&module_schema()).expect("module schema compiles")
}

fn sample_module() -> Value {
    json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": "kmm-ci", "namespace": "default", "unknownMeta": true},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {
                "container": {
                    "modprobe": {"moduleName": "kmm_ci_a", "extra": "x"},
                    "kernelMappings": [
                        {"regexp": "^.+$", "containerImage": "registry/kmm:${KERNEL_FULL_VERSION}", "typo": 1,
                         "build": {"buildArgs": [{"name": "A", "value": "1", "junk": true}]}},
                        {"literal": "6.1.0", "containerImage": "registry/kmm:6.1.0"}
                    ]
                }
            },
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"any": "thing"}},
            "limits": {"node-a": {"max": 5, "junk": 1}},
            "unknownTop": {"deep": 1}
        },
        "status": {"conditions": [{"type": "Ready", "free": "form"}], "bogus": 1},
        "extraRoot": 1
    })
}

#[test]
fn module_prune_reports_and_removes_unknown_fields() {
    let mut obj = sample_module();
    let pruned = module().prune(&mut obj);
    assert_eq!(
        pruned,
        [
            "extraRoot",
            "spec.limits.node-a.junk",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[0].junk",
            "spec.moduleLoader.container.kernelMappings[0].typo",
            "spec.moduleLoader.container.modprobe.extra",
            "spec.unknownTop",
            "status.bogus",
        ]
    );
    // Root metadata, embedded resources and preserved objects are kept as they were.
    assert_eq!(obj["metadata"]["unknownMeta"], json!(true));
    assert_eq!(obj["spec"]["template"]["spec"]["any"], json!("thing"));
    assert_eq!(
        obj["spec"]["template"]["metadata"]["labels"]["a"],
        json!("b")
    );
    assert_eq!(obj["status"]["conditions"][0]["free"], json!("form"));
    assert_eq!(obj["spec"]["limits"]["node-a"], json!({"max": 5}));
    assert_eq!(
        obj["spec"]["selector"]["node-role.kubernetes.io/worker"],
        json!("")
    );
    assert!(
        module().prune(&mut obj).is_empty(),
        "pruning twice removes nothing more"
    );
    assert!(
        module().validate(&obj).is_empty(),
        "{:?}",
        module().validate(&obj)
    );
}

#[test]
fn module_defaults_fill_nested_objects_items_and_maps() {
    let mut obj = sample_module();
    module().prune(&mut obj);
    obj["spec"]["limits"]["node-b"] = json!({});
    obj["spec"]["moduleLoader"]["container"]["kernelMappings"][1]["build"] =
        json!({"secrets": [{}, {"name": "s"}], "dockerfileConfigMap": {}});
    module().apply_defaults(&mut obj);
    let spec = &obj["spec"];
    assert_eq!(spec["maxUpdate"], json!(1));
    assert_eq!(
        spec["moduleLoader"]["container"]["imagePullPolicy"],
        json!("IfNotPresent")
    );
    let mappings = &spec["moduleLoader"]["container"]["kernelMappings"];
    // A defaulted `build: {}` receives its own properties' defaults.
    assert_eq!(
        mappings[0]["build"]["baseImageRegistryTLS"],
        json!({"insecure": false, "insecureSkipTLSVerify": false})
    );
    assert_eq!(
        mappings[1]["build"]["secrets"],
        json!([{"name": ""}, {"name": "s"}])
    );
    assert_eq!(
        mappings[1]["build"]["dockerfileConfigMap"],
        json!({"name": ""})
    );
    assert_eq!(spec["limits"]["node-b"], json!({"max": 3}));
    assert_eq!(spec["limits"]["node-a"], json!({"max": 5}));
    assert!(module().validate(&obj).is_empty());
}

#[test]
fn module_defaults_handle_nulls_like_the_server() {
    let mut obj = json!({"spec": {
        "maxUpdate": null,
        "imageRepoSecret": null,
        "selector": null,
        "moduleLoader": {"serviceAccountName": null, "container": {"modprobe": {"moduleName": "m"}}},
        "limits": {"a": null}
    }});
    module().apply_defaults(&mut obj);
    let spec = &obj["spec"];
    assert_eq!(
        spec["maxUpdate"],
        json!(1),
        "non-nullable null with a default is defaulted"
    );
    assert_eq!(
        spec["imageRepoSecret"],
        json!(null),
        "nullable null is kept"
    );
    assert!(
        spec.get("selector").is_none(),
        "non-nullable null without default is dropped"
    );
    assert!(spec["moduleLoader"].get("serviceAccountName").is_none());
    assert!(spec["limits"].get("a").is_none());
    assert_eq!(
        module()
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["spec.selector: Required value"]
    );
}

#[test]
fn module_validation_reports_every_problem() {
    let mut obj = sample_module();
    module().prune(&mut obj);
    let container = &mut obj["spec"]["moduleLoader"]["container"];
    container["imagePullPolicy"] = json!("Sometimes");
    container["modprobe"] = json!({"moduleName": ""});
    container["kernelMappings"][0]["build"]["buildArgs"] =
        json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B"}]);
    container["kernelMappings"][1]["inTreeModulesToRemove"] = json!(["a", "a"]);
    obj["spec"]["maxUpdate"] = json!(true);
    obj["spec"]["tolerations"] = json!([{"key": "k", "tolerationSeconds": "60"}, {"key": "k"}]);
    let got: Vec<String> = module()
        .validate(&obj)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "spec.maxUpdate: Invalid value: \"boolean\": spec.maxUpdate in body must be of type integer,string: \"boolean\"",
            "spec.maxUpdate: Invalid value: \"\": \"spec.maxUpdate\" must validate at least one schema (anyOf)",
            "spec.maxUpdate: Invalid value: \"boolean\": spec.maxUpdate in body must be of type integer: \"boolean\"",
            "spec.moduleLoader.container.imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            "spec.moduleLoader.container.modprobe.moduleName: Invalid value: \"\": spec.moduleLoader.container.modprobe.moduleName in body should be at least 1 chars long",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[2].value: Required value",
            "spec.tolerations[0].tolerationSeconds: Invalid value: \"string\": spec.tolerations[0].tolerationSeconds in body must be of type integer: \"string\"",
            "spec.moduleLoader.container.kernelMappings[0].build.buildArgs[1]: Duplicate value: {\"name\":\"A\"}",
            "spec.moduleLoader.container.kernelMappings[1].inTreeModulesToRemove[1]: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn list_type_lookup_skips_list_positions() {
    let schema = module();
    type Lookup = Option<(ListType, Vec<String>)>;
    let cases: &[(&[&str], Lookup)] = &[
        (&["spec", "tolerations"], Some((ListType::Atomic, vec![]))),
        (
            &[
                "spec",
                "moduleLoader",
                "container",
                "kernelMappings",
                "build",
                "buildArgs",
            ],
            Some((ListType::Map, vec!["name".to_string()])),
        ),
        (
            &[
                "spec",
                "moduleLoader",
                "container",
                "kernelMappings",
                "inTreeModulesToRemove",
            ],
            Some((ListType::Set, vec![])),
        ),
        (
            &["spec", "moduleLoader", "container", "kernelMappings"],
            None,
        ),
        (&["spec", "nope"], None),
        (&[], None),
    ];
    for (path, expected) in cases {
        assert_eq!(schema.list_type_at(path), *expected, "{path:?}");
    }
}

#[test]
fn prune_without_schema_below_additional_properties_true() {
    let schema = Schema::compile(&field_schema(
        json!({"type": "object", "additionalProperties": true}),
    ))
    .expect("schema compiles");
    let mut obj = json!({"spec": {"x": {"a": 1, "b": {"c": 2}, "l": [{"d": 3}]}}});
    let pruned = schema.prune(&mut obj);
    assert_eq!(pruned, ["spec.x.b.c", "spec.x.l[0].d"]);
    assert_eq!(obj["spec"]["x"], json!({"a": 1, "b": {}, "l": [{}]}));
}

#[test]
fn preserve_unknown_fields_still_prunes_declared_properties() {
    let schema = Schema::compile(&field_schema(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}
    })))
    .expect("schema compiles");
    let mut obj = json!({"spec": {"x": {"free": {"z": 1}, "known": {"a": "x", "b": 1}}}});
    assert_eq!(schema.prune(&mut obj), ["spec.x.known.b"]);
    assert_eq!(obj["spec"]["x"]["free"], json!({"z": 1}));
}
