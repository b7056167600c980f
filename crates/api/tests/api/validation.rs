//! One table per admission rule: inputs that must be admitted and inputs that must be rejected,
//! with the field the rejection names and a fragment of its message.

use kmm_api::validation::{self, FieldViolation};
use serde_json::{Value, json};

/// One input: a JSON merge patch applied to the table's valid base object, and the expectation.
struct Case {
    name: &'static str,
    patch: Value,
    /// `None`: admitted. `Some((field, fragment))`: rejected, naming `field`, message containing
    /// `fragment`.
    rejects: Option<(String, &'static str)>,
}

fn admits(name: &'static str, patch: Value) -> Case {
    Case {
        name,
        patch,
        rejects: None,
    }
}

fn rejects(
    name: &'static str,
    patch: Value,
    field: impl Into<String>,
    fragment: &'static str,
) -> Case {
    Case {
        name,
        patch,
        rejects: Some((field.into(), fragment)),
    }
}

/// RFC 7386 merge patch: objects merge, `null` deletes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

fn run_table(base: &Value, cases: &[Case], admission: impl Fn(&Value) -> Vec<FieldViolation>) {
    assert!(
        admission(base).is_empty(),
        "base object rejected: {:?}",
        admission(base)
    );
    for case in cases {
        let mut object = base.clone();
        merge(&mut object, &case.patch);
        let found = admission(&object);
        match &case.rejects {
            None => assert!(found.is_empty(), "{}: rejected: {found:?}", case.name),
            Some((field, fragment)) => assert!(
                found
                    .iter()
                    .any(|v| v.field == *field && v.message.contains(fragment)),
                "{}: expected {field} with \"{fragment}\", got {found:?}",
                case.name
            ),
        }
    }
}

fn create(object: &Value) -> Vec<FieldViolation> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    validation::validate_object(api_version, kind, object)
}

fn module() -> Value {
    json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "Module",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {
            "selector": {"node-role.kubernetes.io/worker": ""},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "demo"},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/x/demo:$KERNEL_FULL_VERSION"}]
            }}
        }
    })
}

/// A patch that replaces the first kernel mapping.
fn mapping(value: Value) -> Value {
    json!({"spec": {"moduleLoader": {"container": {"kernelMappings": [value]}}}})
}

fn container(value: Value) -> Value {
    json!({"spec": {"moduleLoader": {"container": value}}})
}

const MAPPING: &str = "spec.moduleLoader.container.kernelMappings[0]";

#[test]
fn module_name_and_namespace_fit_in_node_labels() {
    run_table(
        &module(),
        &[
            admits(
                "41 characters",
                json!({"metadata": {"name": "a".repeat(34), "namespace": "default"}}),
            ),
            rejects(
                "42 characters",
                json!({"metadata": {"name": "a".repeat(35), "namespace": "default"}}),
                "metadata.name",
                "more than 41",
            ),
        ],
        create,
    );
}

#[test]
fn kernel_mappings_set_exactly_one_of_literal_and_regexp_and_the_regexp_compiles() {
    run_table(
        &module(),
        &[
            admits(
                "literal",
                mapping(json!({"literal": "6.8.0-45-generic", "containerImage": "q.io/x:1"})),
            ),
            admits(
                "regexp",
                mapping(json!({"regexp": "^6\\.8\\..*$", "containerImage": "q.io/x:1"})),
            ),
            rejects(
                "both",
                mapping(json!({"literal": "6.8.0", "regexp": "^6", "containerImage": "q.io/x:1"})),
                format!("{MAPPING}.regexp"),
                "mutually exclusive",
            ),
            rejects(
                "neither",
                mapping(json!({"containerImage": "q.io/x:1"})),
                format!("{MAPPING}.literal"),
                "set either literal",
            ),
            rejects(
                "bad regexp",
                mapping(json!({"regexp": "^(6.8", "containerImage": "q.io/x:1"})),
                format!("{MAPPING}.regexp"),
                "not a valid regular expression",
            ),
            rejects(
                "no mappings",
                container(json!({"kernelMappings": []})),
                "spec.moduleLoader.container.kernelMappings",
                "at least one kernel mapping",
            ),
        ],
        create,
    );
}

#[test]
fn images_carry_a_tag_or_digest() {
    run_table(
        &module(),
        &[
            admits(
                "tag",
                mapping(json!({"literal": "6.8", "containerImage": "quay.io/x/demo:6.8"})),
            ),
            admits(
                "digest",
                mapping(json!({"literal": "6.8", "containerImage": "quay.io/x/demo@sha256:abc"})),
            ),
            admits(
                "template tag behind a registry port",
                mapping(
                    json!({"literal": "6.8", "containerImage": "host:5000/x/demo:${KERNEL_FULL_VERSION}"}),
                ),
            ),
            admits(
                "empty mapping image with a container image",
                json!({"spec": {"moduleLoader": {"container": {
            "containerImage": "quay.io/x/demo:v1",
            "kernelMappings": [{"literal": "6.8", "containerImage": ""}]}}}}),
            ),
            rejects(
                "no tag",
                mapping(json!({"literal": "6.8", "containerImage": "quay.io/x/demo"})),
                format!("{MAPPING}.containerImage"),
                "neither a tag nor a digest",
            ),
            rejects(
                "registry port is not a tag",
                mapping(json!({"literal": "6.8", "containerImage": "host:5000/x/demo"})),
                format!("{MAPPING}.containerImage"),
                "neither a tag nor a digest",
            ),
            rejects(
                "untagged container image",
                container(json!({"containerImage": "quay.io/x/demo"})),
                "spec.moduleLoader.container.containerImage",
                "append \":<tag>\"",
            ),
            rejects(
                "no image at all",
                mapping(json!({"literal": "6.8", "containerImage": ""})),
                format!("{MAPPING}.containerImage"),
                "no image for this mapping",
            ),
        ],
        create,
    );
}

#[test]
fn modprobe_sets_module_name_or_both_raw_args() {
    let modprobe = |value: Value| container(json!({"modprobe": value}));
    const FIELD: &str = "spec.moduleLoader.container.modprobe";
    run_table(
        &module(),
        &[
            admits(
                "raw args",
                modprobe(
                    json!({"moduleName": null, "rawArgs": {"load": ["demo"], "unload": ["-r", "demo"]}}),
                ),
            ),
            rejects(
                "both",
                modprobe(json!({"rawArgs": {"load": ["demo"], "unload": ["-r", "demo"]}})),
                format!("{FIELD}.rawArgs"),
                "cannot be set together with moduleName",
            ),
            rejects(
                "neither",
                modprobe(json!({"moduleName": null})),
                format!("{FIELD}.moduleName"),
                "set moduleName, or set both",
            ),
            rejects(
                "load only",
                modprobe(json!({"moduleName": null, "rawArgs": {"load": ["demo"]}})),
                format!("{FIELD}.moduleName"),
                "rawArgs.load and rawArgs.unload",
            ),
        ],
        create,
    );
}

#[test]
fn modules_loading_order_starts_with_the_module_and_lists_each_once() {
    let order = |value: Value| container(json!({"modprobe": {"modulesLoadingOrder": value}}));
    const FIELD: &str = "spec.moduleLoader.container.modprobe.modulesLoadingOrder";
    run_table(
        &module(),
        &[
            admits("two modules", order(json!(["demo", "dep"]))),
            rejects(
                "one module",
                order(json!(["demo"])),
                FIELD,
                "at least two modules",
            ),
            rejects(
                "wrong first",
                order(json!(["dep", "demo"])),
                format!("{FIELD}[0]"),
                "must be moduleName \"demo\"",
            ),
            rejects(
                "duplicate",
                order(json!(["demo", "dep", "dep"])),
                format!("{FIELD}[2]"),
                "appears twice",
            ),
            rejects(
                "without module name",
                container(json!({"modprobe": {"moduleName": null,
            "rawArgs": {"load": ["a"], "unload": ["b"]}, "modulesLoadingOrder": ["a", "b"]}})),
                "spec.moduleLoader.container.modprobe.moduleName",
                "a loading order needs moduleName",
            ),
        ],
        create,
    );
}

#[test]
fn signed_files_lie_under_dir_name() {
    let sign = |files: Value| json!({"keySecret": {"name": "k"}, "certSecret": {"name": "c"}, "filesToSign": files});
    run_table(
        &module(),
        &[
            admits(
                "under /opt",
                container(json!({"sign": sign(json!(["/opt/lib/modules/6.8/demo.ko"]))})),
            ),
            admits(
                "under a custom dirName",
                container(json!({"modprobe": {"dirName": "/usr/local"},
            "sign": sign(json!(["/usr/local/lib/modules/6.8/demo.ko"]))})),
            ),
            rejects(
                "outside",
                container(json!({"sign": sign(json!(["/lib/modules/6.8/demo.ko"]))})),
                "spec.moduleLoader.container.sign.filesToSign[0]",
                "is not under modprobe dirName \"/opt\"",
            ),
            rejects(
                "prefix without slash",
                container(json!({"sign": sign(json!(["/optx/demo.ko"]))})),
                "spec.moduleLoader.container.sign.filesToSign[0]",
                "starts with \"/opt/\"",
            ),
            rejects(
                "none listed",
                container(json!({"sign": sign(json!([]))})),
                "spec.moduleLoader.container.sign.filesToSign",
                "list the module files to sign",
            ),
            rejects(
                "in a mapping",
                mapping(json!({"literal": "6.8", "containerImage": "q.io/x:1",
            "sign": sign(json!(["/tmp/demo.ko"]))})),
                format!("{MAPPING}.sign.filesToSign[0]"),
                "not under modprobe dirName",
            ),
        ],
        create,
    );
}

#[test]
fn in_tree_module_removal_uses_one_form() {
    run_table(
        &module(),
        &[
            admits(
                "list in both",
                json!({"spec": {"moduleLoader": {"container": {
            "inTreeModulesToRemove": ["a"],
            "kernelMappings": [{"literal": "6.8", "containerImage": "q.io/x:1", "inTreeModulesToRemove": ["b"]}]}}}}),
            ),
            rejects(
                "both forms in the container",
                container(json!({"inTreeModulesToRemove": ["a"], "inTreeModuleToRemove": "b"})),
                "spec.moduleLoader.container.inTreeModuleToRemove",
                "set only one of",
            ),
            rejects(
                "list in mapping, single in container",
                json!({"spec": {"moduleLoader": {"container": {
            "inTreeModuleToRemove": "a",
            "kernelMappings": [{"literal": "6.8", "containerImage": "q.io/x:1", "inTreeModulesToRemove": ["b"]}]}}}}),
                format!("{MAPPING}.inTreeModulesToRemove"),
                "different forms",
            ),
        ],
        create,
    );
}

#[test]
fn tolerations_follow_pod_rules() {
    let toleration = |value: Value| json!({"spec": {"tolerations": [value]}});
    const FIELD: &str = "spec.tolerations[0]";
    run_table(
        &module(),
        &[
            admits(
                "equal",
                toleration(
                    json!({"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}),
                ),
            ),
            admits(
                "exists without key",
                toleration(json!({"operator": "Exists"})),
            ),
            admits(
                "seconds with NoExecute",
                toleration(
                    json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}),
                ),
            ),
            rejects(
                "bad key",
                toleration(json!({"key": "-bad", "operator": "Exists"})),
                format!("{FIELD}.key"),
                "not a valid label key",
            ),
            rejects(
                "no key, Equal",
                toleration(json!({"operator": "Equal"})),
                format!("{FIELD}.operator"),
                "must be \"Exists\" when key is empty",
            ),
            rejects(
                "seconds without NoExecute",
                toleration(json!({"key": "k", "operator": "Exists", "tolerationSeconds": 5})),
                format!("{FIELD}.effect"),
                "must be \"NoExecute\"",
            ),
            rejects(
                "value with Exists",
                toleration(json!({"key": "k", "operator": "Exists", "value": "v"})),
                format!("{FIELD}.value"),
                "must be empty when operator is \"Exists\"",
            ),
            rejects(
                "bad value",
                toleration(json!({"key": "k", "value": "a b"})),
                format!("{FIELD}.value"),
                "not a valid label value",
            ),
            rejects(
                "bad operator",
                toleration(json!({"key": "k", "operator": "In"})),
                format!("{FIELD}.operator"),
                "\"In\" is not an operator",
            ),
            rejects(
                "bad effect",
                toleration(json!({"key": "k", "effect": "Evict"})),
                format!("{FIELD}.effect"),
                "not a taint effect",
            ),
        ],
        create,
    );
}

#[test]
fn dra_names_are_dns_subdomains_and_exclude_the_device_plugin() {
    let container_spec = json!({"image": "registry.example.com/driver:v1"});
    let dra = |value: Value| {
        let mut spec =
            json!({"driverName": "gpu.example.com", "container": container_spec.clone()});
        merge(&mut spec, &value);
        json!({"spec": {"dra": spec}})
    };
    run_table(
        &module(),
        &[
            admits(
                "driver and classes",
                dra(json!({"deviceClasses": [{"name": "a"}, {"name": "b.example.com"}]})),
            ),
            rejects(
                "bad driver name",
                dra(json!({"driverName": "GPU_driver"})),
                "spec.dra.driverName",
                "not a DNS subdomain",
            ),
            rejects(
                "bad class name",
                dra(json!({"deviceClasses": [{"name": "Bad"}]})),
                "spec.dra.deviceClasses[0].name",
                "not a DNS subdomain",
            ),
            rejects(
                "duplicate class",
                dra(json!({"deviceClasses": [{"name": "a"}, {"name": "a"}]})),
                "spec.dra.deviceClasses[1].name",
                "listed twice",
            ),
        ],
        create,
    );
}

#[test]
fn device_plugin_host_paths_stay_in_allowed_directories() {
    let volume = |path: &str| {
        json!({"spec": {"devicePlugin": {
        "container": {"image": "registry.example.com/dp:v1"},
        "volumes": [{"name": "v", "hostPath": {"path": path}}]}}})
    };
    const FIELD: &str = "spec.devicePlugin.volumes[0].hostPath.path";
    run_table(
        &module(),
        &[
            admits(
                "/var/lib/kubelet",
                volume("/var/lib/kubelet/device-plugins"),
            ),
            admits("/dev itself", volume("/dev")),
            admits("/run", volume("/run/containerd")),
            rejects("/etc", volume("/etc"), FIELD, "is not allowed"),
            rejects(
                "escape with ..",
                volume("/var/../etc/shadow"),
                FIELD,
                "is not allowed",
            ),
            rejects(
                "prefix lookalike",
                volume("/devices"),
                FIELD,
                "is not allowed",
            ),
        ],
        create,
    );
}

#[test]
fn module_version_cannot_switch_between_empty_and_set() {
    let update = |new: &Value| {
        validation::validate_update("kmm.sigs.x-k8s.io/v1beta1", "Module", &module(), new)
    };
    let versioned = container(json!({"version": "v2"}));
    run_table(
        &module(),
        &[
            admits(
                "still unversioned",
                container(json!({"modprobe": {"parameters": ["x=1"]}})),
            ),
            rejects(
                "versioned",
                versioned,
                "spec.moduleLoader.container.version",
                "delete the Module and create it again",
            ),
        ],
        update,
    );
    let mut old = module();
    merge(&mut old, &container(json!({"version": "v1"})));
    let from_versioned =
        |new: &Value| validation::validate_update("kmm.sigs.x-k8s.io/v1beta1", "Module", &old, new);
    let mut v2 = old.clone();
    merge(&mut v2, &container(json!({"version": "v2"})));
    run_table(
        &v2,
        &[rejects(
            "unversioned",
            container(json!({"version": null})),
            "spec.moduleLoader.container.version",
            "cannot change",
        )],
        from_versioned,
    );
}

fn image_cache() -> Value {
    json!({
        "apiVersion": "kubefledged.io/v1alpha2",
        "kind": "ImageCache",
        "metadata": {"name": "warm", "namespace": "kube-fledged"},
        "spec": {"cacheSpec": [
            {"images": ["nginx:1.25"]},
            {"images": ["redis:7"], "nodeSelector": {"tier": "backend"}}
        ]}
    })
}

#[test]
fn image_cache_lists_are_not_empty_and_have_no_duplicates() {
    let lists = |value: Value| json!({"spec": {"cacheSpec": value}});
    run_table(
        &image_cache(),
        &[
            admits(
                "same image in two lists",
                lists(json!([{"images": ["a:1"]}, {"images": ["a:1"]}])),
            ),
            rejects(
                "empty list",
                lists(json!([{"images": []}])),
                "spec.cacheSpec[0].images",
                "list at least one image",
            ),
            rejects(
                "duplicate",
                lists(json!([{"images": ["a:1", "b:1", "a:1"]}])),
                "spec.cacheSpec[0].images[2]",
                "remove the duplicate",
            ),
        ],
        create,
    );
}

#[test]
fn image_cache_updates_keep_lists_and_selectors() {
    let update = |new: &Value| {
        validation::validate_update("kubefledged.io/v1alpha2", "ImageCache", &image_cache(), new)
    };
    run_table(
        &image_cache(),
        &[
            admits(
                "images changed",
                json!({"spec": {"cacheSpec": [{"images": ["nginx:1.26"]}, {"images": ["redis:7", "etcd:3.5"], "nodeSelector": {"tier": "backend"}}]}}),
            ),
            admits("metadata only", json!({"metadata": {"labels": {"a": "b"}}})),
            rejects(
                "list added",
                json!({"spec": {"cacheSpec": [{"images": ["a:1"]}, {"images": ["b:1"], "nodeSelector": {"tier": "backend"}}, {"images": ["c:1"]}]}}),
                "spec.cacheSpec",
                "number of lists cannot change",
            ),
            rejects(
                "selector changed",
                json!({"spec": {"cacheSpec": [{"images": ["nginx:1.25"], "nodeSelector": {"zone": "a"}}, {"images": ["redis:7"], "nodeSelector": {"tier": "backend"}}]}}),
                "spec.cacheSpec[0].nodeSelector",
                "nodeSelector cannot change",
            ),
        ],
        update,
    );
}

fn shim() -> Value {
    json!({
        "apiVersion": "runtime.spinkube.dev/v1alpha1",
        "kind": "Shim",
        "metadata": {"name": "spin-v2"},
        "spec": {
            "fetchStrategy": {"anonHttp": {"location": "https://example.com/shim.tar.gz"}},
            "runtimeClass": {"name": "wasmtime-spin-v2", "handler": "spin-v2"},
            "rolloutStrategy": {"type": "recreate"}
        }
    })
}

#[test]
fn shim_handler_is_the_shim_name() {
    run_table(
        &shim(),
        &[
            admits(
                "runtime class name differs from the handler",
                json!({"spec": {"runtimeClass": {"name": "spin"}}}),
            ),
            rejects(
                "other handler",
                json!({"spec": {"runtimeClass": {"handler": "spin"}}}),
                "spec.runtimeClass.handler",
                "set it to \"spin-v2\"",
            ),
            rejects(
                "name not a DNS label",
                json!({"metadata": {"name": "Spin_v2"}, "spec": {"runtimeClass": {"handler": "Spin_v2"}}}),
                "metadata.name",
                "not a DNS label",
            ),
            rejects(
                "bad runtime class name",
                json!({"spec": {"runtimeClass": {"name": "Wasm Time"}}}),
                "spec.runtimeClass.name",
                "not a valid RuntimeClass name",
            ),
        ],
        create,
    );
}

#[test]
fn shim_rolling_rollout_has_a_valid_max_update() {
    let rolling = |max: Value| json!({"spec": {"rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": max}}}});
    const FIELD: &str = "spec.rolloutStrategy.rolling.maxUpdate";
    run_table(
        &shim(),
        &[
            admits("count", rolling(json!(2))),
            admits("percentage", rolling(json!("25%"))),
            admits(
                "manual approval",
                json!({"spec": {"rolloutStrategy": {"type": "rolling", "rolling": {"maxUpdate": 1, "approval": "Manual", "approvedBatch": 0}}}}),
            ),
            rejects("zero", rolling(json!(0)), FIELD, "at least 1"),
            rejects("zero percent", rolling(json!("0%")), FIELD, "percentage"),
            rejects(
                "over 100 percent",
                rolling(json!("150%")),
                FIELD,
                "percentage",
            ),
            rejects(
                "not a percentage",
                rolling(json!("half")),
                FIELD,
                "percentage",
            ),
            rejects(
                "rolling without settings",
                json!({"spec": {"rolloutStrategy": {"type": "rolling"}}}),
                "spec.rolloutStrategy.rolling",
                "needs rolling.maxUpdate",
            ),
        ],
        create,
    );
}

#[test]
fn shim_downloads_are_http_urls_with_sha256_digests() {
    let platform = |value: Value| {
        let mut entry =
            json!({"os": "linux", "arch": "amd64", "location": "https://example.com/a.tgz"});
        merge(&mut entry, &value);
        json!({"spec": {"fetchStrategy": {"anonHttp": null, "platforms": [entry]}}})
    };
    run_table(
        &shim(),
        &[
            admits(
                "platform with digest",
                platform(json!({"sha256": "a".repeat(64)})),
            ),
            rejects(
                "nowhere to download",
                json!({"spec": {"fetchStrategy": {"anonHttp": null, "type": "anonymousHttp"}}}),
                "spec.fetchStrategy",
                "say where to download",
            ),
            rejects(
                "not a URL",
                json!({"spec": {"fetchStrategy": {"anonHttp": {"location": "ftp://x/y"}}}}),
                "spec.fetchStrategy.anonHttp.location",
                "not an http(s) URL",
            ),
            rejects(
                "short digest",
                platform(json!({"sha256": "abc"})),
                "spec.fetchStrategy.platforms[0].sha256",
                "64 hexadecimal digits",
            ),
        ],
        create,
    );
}

fn day0() -> Value {
    json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
        "kind": "ModuleDay0",
        "metadata": {"name": "workers", "namespace": "kmm"},
        "spec": {
            "osMapping": {"literal": "RHCOS 414.92", "containerImage": "quay.io/x/rhcos:414.92"},
            "machineConfigPoolSelector": {"node-role.kubernetes.io/worker": ""}
        }
    })
}

#[test]
fn day0_images_are_pinned_and_signing_has_an_input() {
    let sign = json!({"keySecret": {"name": "k"}, "certSecret": {"name": "c"}, "filesToSign": ["/opt/lib/modules/x/a.ko"]});
    let os_mapping = |value: Value| json!({"spec": {"osMapping": value}});
    run_table(
        &day0(),
        &[
            admits(
                "sign an unsigned image",
                os_mapping(
                    json!({"sign": {"unsignedImage": "quay.io/x/rhcos:u", "keySecret": {"name": "k"}, "certSecret": {"name": "c"}, "filesToSign": ["/opt/a.ko"]}}),
                ),
            ),
            admits(
                "sign what is built",
                os_mapping(
                    json!({"sign": sign.clone(), "build": {"dockerfileConfigMap": {"name": "d"}}}),
                ),
            ),
            rejects(
                "untagged image",
                os_mapping(json!({"containerImage": "quay.io/x/rhcos"})),
                "spec.osMapping.containerImage",
                "neither a tag nor a digest",
            ),
            rejects(
                "nothing to sign",
                os_mapping(json!({"sign": sign.clone()})),
                "spec.osMapping.sign.unsignedImage",
                "set unsignedImage, or add a build section",
            ),
            rejects(
                "relative file",
                os_mapping(
                    json!({"sign": {"unsignedImage": "q.io/x:u", "keySecret": {"name": "k"}, "certSecret": {"name": "c"}, "filesToSign": ["a.ko"]}}),
                ),
                "spec.osMapping.sign.filesToSign[0]",
                "is not under",
            ),
            rejects(
                "empty OS name",
                os_mapping(json!({"literal": " "})),
                "spec.osMapping.literal",
                "osImage",
            ),
        ],
        create,
    );
    // A merge patch cannot empty a map, so the empty selector is built directly.
    let mut no_pool = day0();
    no_pool["spec"]["machineConfigPoolSelector"] = json!({});
    let found = create(&no_pool);
    assert!(
        found
            .iter()
            .any(|v| v.field == "spec.machineConfigPoolSelector"
                && v.message.contains("select the nodes")),
        "no pool: {found:?}"
    );
}

#[test]
fn preflight_validation_names_a_kernel_in_both_versions() {
    let base = json!({"apiVersion": "kmm.sigs.x-k8s.io/v1beta2", "kind": "PreflightValidation",
        "metadata": {"name": "pfv"}, "spec": {"kernelVersion": "6.9.1"}});
    run_table(
        &base,
        &[
            admits(
                "v1beta1 with a map status",
                json!({"apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
            "status": {"crStatuses": {"ns/m": {"verificationStatus": "Success", "verificationStage": "Done", "lastTransitionTime": "2025-01-01T00:00:00Z"}}}}),
            ),
            rejects(
                "empty",
                json!({"spec": {"kernelVersion": ""}}),
                "spec.kernelVersion",
                "full kernel version",
            ),
            rejects(
                "empty in v1beta1",
                json!({"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "spec": {"kernelVersion": ""}}),
                "spec.kernelVersion",
                "full kernel version",
            ),
        ],
        create,
    );
}

#[test]
fn node_modules_config_lists_each_module_once_with_a_loadable_modprobe() {
    let entry = |name: &str| {
        json!({"name": name, "namespace": "default", "serviceAccountName": "sa",
        "config": {"kernelVersion": "6.8", "containerImage": "<placeholder image>", "insecurePull": false, "modprobe": {"moduleName": "m"}}})
    };
    let base = json!({"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "NodeModulesConfig",
        "metadata": {"name": "node-a"}, "spec": {"modules": [entry("a")]}});
    run_table(
        &base,
        &[
            admits(
                "two modules",
                json!({"spec": {"modules": [entry("a"), entry("b")]}}),
            ),
            rejects(
                "duplicate",
                json!({"spec": {"modules": [entry("a"), entry("a")]}}),
                "spec.modules[1].name",
                "listed twice",
            ),
        ],
        create,
    );
}

#[test]
fn unknown_kinds_are_admitted_and_unparsable_objects_are_rejected() {
    assert!(validation::validate_object("v1", "ConfigMap", &json!({"data": {}})).is_empty());
    assert!(validation::validate_object("example.com/v1", "Module", &module()).is_empty());
    let found = validation::validate_object(
        "kmm.sigs.x-k8s.io/v1beta1",
        "Module",
        &json!({"spec": {"selector": 3}}),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .message
            .contains("does not match the kind's schema"),
        "{found:?}"
    );
    let shown = FieldViolation::new("spec.x", "fix it").to_string();
    assert_eq!(shown, "spec.x: fix it");
}
