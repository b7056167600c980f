//! The worker pod: one `kmod load|unload` run of one module on one node, in the shape upstream KMM gives it (so the
//! console and the node simulation read pods of either engine alike), stamped with a hash of its template so that a
//! crash-looping worker built from an outdated template can be told apart and replaced.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource, EmptyDirVolumeSource,
    HostPathVolumeSource, LocalObjectReference, ObjectFieldSelector, Pod, PodSpec,
    ResourceRequirements, SELinuxOptions, SecurityContext, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::runtime::context::Error;
use crate::runtime::digest::sha256_hex;
use crate::runtime::object_names;
use kmm_api::kmm::labels;
use kmm_api::kmm::{ImagePullPolicy, ModuleConfig, NodeModuleSpec, NodeModuleStatus};

/// Name of the container that runs `kmod`; its restart count tells a crash-looping worker.
pub(super) const WORKER_CONTAINER: &str = "worker";
/// Name of the init container that copies the module files out of the kmod image.
const EXTRACTOR_CONTAINER: &str = "image-extractor";
/// Where the worker reads its configuration (the `worker-config` annotation, projected by the downward API).
const CONFIG_DIR: &str = "/etc/kmm-worker";
/// File name of the configuration inside [`CONFIG_DIR`].
const CONFIG_FILE: &str = "config.yaml";
/// Host directory the worker copies firmware into, as upstream KMM defaults it.
const FIRMWARE_HOST_PATH: &str = "/lib/firmware";
/// The SELinux type that lets the worker load modules on SELinux-enforcing nodes.
const SELINUX_TYPE: &str = "spc_t";

/// What a worker does with its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkerAction {
    /// `kmod load`.
    Load,
    /// `kmod unload`.
    Unload,
}

impl WorkerAction {
    /// Value of the `worker-action` label.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Load => "Load",
            Self::Unload => "Unload",
        }
    }

    /// The action a `worker-action` label value names.
    pub(super) fn from_label(value: &str) -> Option<Self> {
        match value {
            "Load" => Some(Self::Load),
            "Unload" => Some(Self::Unload),
            _ => None,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::Unload => "unload",
        }
    }
}

/// Everything one worker pod is built from: an NMC spec entry to load, or a status entry to unload.
#[derive(Clone, Copy, Debug)]
pub(super) struct WorkerRequest<'a> {
    /// Load or unload.
    pub action: WorkerAction,
    /// Namespace of the Module, where the pod runs.
    pub namespace: &'a str,
    /// Name of the Module.
    pub module: &'a str,
    /// Service account the pod runs as (empty: the namespace default).
    pub service_account: &'a str,
    /// Pull secret of the kmod image.
    pub image_repo_secret: Option<&'a LocalObjectReference>,
    /// Tolerations of the pod, recorded in the status once loaded.
    pub tolerations: &'a [Toleration],
    /// Module version, recorded in the status once loaded.
    pub version: Option<&'a str>,
    /// What to load or unload.
    pub config: &'a ModuleConfig,
}

impl<'a> WorkerRequest<'a> {
    /// Load what an NMC spec entry asks for.
    pub(super) fn load(entry: &'a NodeModuleSpec) -> Self {
        Self {
            action: WorkerAction::Load,
            namespace: &entry.namespace,
            module: &entry.name,
            service_account: &entry.service_account_name,
            image_repo_secret: entry.image_repo_secret.as_ref(),
            tolerations: &entry.tolerations,
            version: entry.version.as_deref(),
            config: &entry.config,
        }
    }

    /// Unload what an NMC status entry says is loaded; `None` when it records no configuration, as then there is
    /// nothing known to unload.
    pub(super) fn unload(entry: &'a NodeModuleStatus) -> Option<Self> {
        Some(Self {
            action: WorkerAction::Unload,
            namespace: &entry.namespace,
            module: &entry.name,
            service_account: &entry.service_account_name,
            image_repo_secret: entry.image_repo_secret.as_ref(),
            tolerations: &entry.tolerations,
            version: entry.version.as_deref(),
            config: entry.config.as_ref()?,
        })
    }
}

/// The worker pod (without owner) that carries out `request` on `node` with the `worker_image`, its
/// [`labels::WORKER_HASH`] annotation set.
pub(super) fn worker_pod(
    node: &str,
    worker_image: &str,
    request: &WorkerRequest,
) -> Result<Pod, Error> {
    let name = object_names::worker_pod_name(node, request.module);
    let invalid = |what: &str, error: String| {
        Error::Invalid(format!(
            "building worker pod {}/{name}: {what} does not serialize: {error}",
            request.namespace
        ))
    };
    let config_yaml = serde_saphyr::to_string(request.config)
        .map_err(|e| invalid("the module config", e.to_string()))?;
    let tolerations_yaml = serde_saphyr::to_string(&request.tolerations)
        .map_err(|e| invalid("the tolerations", e.to_string()))?;
    let mut annotations = BTreeMap::from([
        (labels::WORKER_CONFIG.to_owned(), config_yaml),
        (labels::WORKER_TOLERATIONS.to_owned(), tolerations_yaml),
    ]);
    if let Some(version) = request.version {
        annotations.insert(labels::WORKER_MODULE_VERSION.to_owned(), version.to_owned());
    }
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(request.namespace.to_owned()),
            labels: Some(pod_labels(request)),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(pod_spec(node, worker_image, request)),
        status: None,
    };
    let hash = template_hash(&pod).map_err(|e| invalid("the pod", e))?;
    if let Some(annotations) = pod.metadata.annotations.as_mut() {
        annotations.insert(labels::WORKER_HASH.to_owned(), hash);
    }
    Ok(pod)
}

/// The template hash a worker pod carries.
pub(super) fn hash_of(pod: &Pod) -> Option<&str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(labels::WORKER_HASH)
        .map(String::as_str)
}

fn pod_labels(request: &WorkerRequest) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", "kmm"),
        ("app.kubernetes.io/component", "worker"),
        ("app.kubernetes.io/part-of", "kmm"),
        (labels::MODULE_NAME, request.module),
        (labels::WORKER_ACTION, request.action.label()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect()
}

fn pod_spec(node: &str, worker_image: &str, request: &WorkerRequest) -> PodSpec {
    let config = request.config;
    let firmware = config
        .modprobe
        .firmware_path
        .as_deref()
        .filter(|path| !path.is_empty());
    let mut args: Vec<String> = vec![
        "kmod".into(),
        request.action.verb().into(),
        format!("{CONFIG_DIR}/{CONFIG_FILE}"),
    ];
    let mut mounts = vec![
        mount("config", CONFIG_DIR, true),
        mount("lib-modules", "/lib/modules", true),
        mount("tmp", "/tmp", false),
    ];
    let mut volumes = vec![
        Volume {
            name: "config".into(),
            downward_api: Some(DownwardAPIVolumeSource {
                items: Some(vec![DownwardAPIVolumeFile {
                    path: CONFIG_FILE.into(),
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{}']", labels::WORKER_CONFIG),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
        host_path("lib-modules", "/lib/modules", None),
        Volume {
            name: "tmp".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        },
    ];
    if firmware.is_some() {
        args.extend(["--firmware-path".into(), FIRMWARE_HOST_PATH.into()]);
        mounts.push(mount("firmware", FIRMWARE_HOST_PATH, false));
        volumes.push(host_path(
            "firmware",
            FIRMWARE_HOST_PATH,
            Some("DirectoryOrCreate"),
        ));
    }
    PodSpec {
        node_name: Some(node.to_owned()),
        restart_policy: Some("OnFailure".into()),
        service_account_name: Some(request.service_account)
            .filter(|sa| !sa.is_empty())
            .map(str::to_owned),
        image_pull_secrets: request.image_repo_secret.map(|s| vec![s.clone()]),
        tolerations: Some(request.tolerations.to_vec()).filter(|t| !t.is_empty()),
        init_containers: Some(vec![Container {
            name: EXTRACTOR_CONTAINER.into(),
            image: Some(config.container_image.clone()),
            image_pull_policy: Some(pull_policy(config.image_pull_policy).into()),
            command: Some(vec!["/bin/sh".into(), "-c".into()]),
            args: Some(vec![extractor_script(config, firmware)]),
            volume_mounts: Some(vec![mount("tmp", "/tmp", false)]),
            ..Default::default()
        }]),
        containers: vec![Container {
            name: WORKER_CONTAINER.into(),
            image: Some(worker_image.to_owned()),
            args: Some(args),
            resources: Some(ResourceRequirements {
                requests: Some(quantities("500m", "64Mi")),
                limits: Some(quantities("1", "128Mi")),
                ..Default::default()
            }),
            security_context: Some(SecurityContext {
                capabilities: Some(Capabilities {
                    add: Some(vec!["SYS_MODULE".into()]),
                    drop: None,
                }),
                privileged: firmware.map(|_| true),
                run_as_user: Some(0),
                se_linux_options: Some(SELinuxOptions {
                    type_: Some(SELINUX_TYPE.into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            volume_mounts: Some(mounts),
            ..Default::default()
        }],
        volumes: Some(volumes),
        ..Default::default()
    }
}

/// The init container's script: copy `<dirName>/lib/modules/<kernel>` (and the firmware directory, when there is
/// one) from the kmod image into the shared `/tmp`, where the worker finds them.
fn extractor_script(config: &ModuleConfig, firmware: Option<&str>) -> String {
    let dir = config.modprobe.dir_name.trim_end_matches('/');
    let modules = format!("{dir}/lib/modules");
    let target = under_tmp(&modules);
    let mut script = format!(
        "mkdir -p {target} && cp -R {source} {target}",
        target = shell_word(&target),
        source = shell_word(&format!("{modules}/{}", config.kernel_version)),
    );
    if let Some(firmware) = firmware {
        let firmware = firmware.trim_end_matches('/');
        let target = shell_word(&under_tmp(firmware));
        script.push_str(&format!(
            " && mkdir -p {target} && cp -R {source} {target}",
            source = shell_word(&format!("{firmware}/.")),
        ));
    }
    script
}

/// `path` below `/tmp`.
fn under_tmp(path: &str) -> String {
    if path.starts_with('/') {
        format!("/tmp{path}")
    } else {
        format!("/tmp/{path}")
    }
}

/// `word` as one shell word: as it is when it holds only characters the shell treats literally, else single-quoted
/// (the spec is data, never script).
fn shell_word(word: &str) -> String {
    let literal = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | ':'));
    if literal {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn pull_policy(policy: ImagePullPolicy) -> &'static str {
    match policy {
        ImagePullPolicy::Always => "Always",
        ImagePullPolicy::IfNotPresent => "IfNotPresent",
        ImagePullPolicy::Never => "Never",
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

fn host_path(name: &str, path: &str, type_: Option<&str>) -> Volume {
    Volume {
        name: name.into(),
        host_path: Some(HostPathVolumeSource {
            path: path.into(),
            type_: type_.map(str::to_owned),
        }),
        ..Default::default()
    }
}

fn quantities(cpu: &str, memory: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu.to_owned())),
        ("memory".to_owned(), Quantity(memory.to_owned())),
    ])
}

/// The first 16 hex digits of the SHA-256 of the canonical JSON (keys sorted) of the pod's labels, annotations and spec, as 16 hex
/// digits: the same template always gives the same hash, in any process, on any machine.
fn template_hash(pod: &Pod) -> Result<String, String> {
    let mut annotations = pod.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(labels::WORKER_HASH);
    let template = serde_json::json!({
        "labels": pod.metadata.labels,
        "annotations": annotations,
        "spec": serde_json::to_value(&pod.spec).map_err(|e| e.to_string())?,
    });
    let mut digest = sha256_hex(canonical(&template).as_bytes());
    digest.truncate(16);
    Ok(digest)
}

/// JSON text of `value` with every object's keys in sorted order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let fields: Vec<String> = entries
                .into_iter()
                .map(|(key, value)| format!("{}:{}", Value::from(key.as_str()), canonical(value)))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::kmm::ModprobeSpec;

    fn config(image: &str, firmware: Option<&str>) -> ModuleConfig {
        ModuleConfig {
            kernel_version: "5.14.0-284.el9.x86_64".into(),
            container_image: image.into(),
            image_pull_policy: ImagePullPolicy::Always,
            insecure_pull: false,
            in_tree_modules_to_remove: Vec::new(),
            in_tree_module_to_remove: None,
            modprobe: ModprobeSpec {
                module_name: Some("acme".into()),
                firmware_path: firmware.map(str::to_owned),
                ..Default::default()
            },
        }
    }

    fn entry(config: ModuleConfig) -> NodeModuleSpec {
        NodeModuleSpec {
            name: "acme".into(),
            namespace: "kmods".into(),
            service_account_name: "loader".into(),
            image_repo_secret: Some(LocalObjectReference {
                name: "pull".into(),
            }),
            tolerations: vec![Toleration {
                key: Some("maintenance".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }],
            version: Some("v2".into()),
            config,
        }
    }

    fn worker(pod: &Pod) -> &Container {
        &pod.spec.as_ref().expect("spec").containers[0]
    }

    #[test]
    fn loader_has_the_upstream_shape() {
        let entry = entry(config("quay.io/acme/kmod:1", None));
        let pod = worker_pod("node-1", "worker:1", &WorkerRequest::load(&entry)).expect("pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("kmm-worker-node-1-acme"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kmods"));
        let labels = pod.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[labels::WORKER_ACTION], "Load");
        assert_eq!(labels[labels::MODULE_NAME], "acme");
        assert_eq!(labels["app.kubernetes.io/component"], "worker");
        assert_eq!(
            pod.metadata.finalizers, None,
            "deleting a worker is one write"
        );
        let annotations = pod.metadata.annotations.as_ref().expect("annotations");
        let config: ModuleConfig =
            serde_saphyr::from_str(&annotations[labels::WORKER_CONFIG]).expect("config YAML");
        assert_eq!(config, entry.config);
        let tolerations: Vec<Toleration> =
            serde_saphyr::from_str(&annotations[labels::WORKER_TOLERATIONS]).expect("YAML");
        assert_eq!(tolerations, entry.tolerations);
        assert_eq!(annotations[labels::WORKER_MODULE_VERSION], "v2");
        assert_eq!(annotations[labels::WORKER_HASH].len(), 16);

        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("node-1"));
        assert_eq!(spec.restart_policy.as_deref(), Some("OnFailure"));
        assert_eq!(spec.service_account_name.as_deref(), Some("loader"));
        assert_eq!(
            spec.image_pull_secrets,
            entry.image_repo_secret.map(|s| vec![s])
        );
        assert_eq!(
            spec.tolerations.as_deref(),
            Some(entry.tolerations.as_slice())
        );
        let extractor = &spec.init_containers.as_ref().expect("init")[0];
        assert_eq!(extractor.name, "image-extractor");
        assert_eq!(extractor.image.as_deref(), Some("quay.io/acme/kmod:1"));
        assert_eq!(extractor.image_pull_policy.as_deref(), Some("Always"));
        assert_eq!(
            extractor.args,
            Some(vec![
                "mkdir -p /tmp/opt/lib/modules && cp -R /opt/lib/modules/5.14.0-284.el9.x86_64 \
                 /tmp/opt/lib/modules"
                    .to_owned()
            ])
        );
        let worker = worker(&pod);
        assert_eq!(worker.image.as_deref(), Some("worker:1"));
        assert_eq!(
            worker.args.as_deref(),
            Some(
                &[
                    "kmod".to_owned(),
                    "load".into(),
                    "/etc/kmm-worker/config.yaml".into()
                ][..]
            )
        );
        let security = worker.security_context.as_ref().expect("security");
        assert_eq!(security.privileged, None);
        assert_eq!(security.run_as_user, Some(0));
        assert_eq!(
            security.capabilities.as_ref().and_then(|c| c.add.clone()),
            Some(vec!["SYS_MODULE".to_owned()])
        );
        let volumes: Vec<&str> = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(volumes, ["config", "lib-modules", "tmp"]);
    }

    #[test]
    fn firmware_makes_the_worker_privileged_and_mounts_the_host_directory() {
        let entry = entry(config("quay.io/acme/kmod:1", Some("/firmware")));
        let pod = worker_pod("n", "w", &WorkerRequest::load(&entry)).expect("pod");
        let worker = worker(&pod);
        assert_eq!(
            worker.args.as_ref().map(|a| a[3..].to_vec()),
            Some(vec!["--firmware-path".to_owned(), "/lib/firmware".into()])
        );
        assert_eq!(
            worker.security_context.as_ref().and_then(|s| s.privileged),
            Some(true)
        );
        let firmware = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .and_then(|v| v.iter().find(|v| v.name == "firmware"))
            .and_then(|v| v.host_path.clone())
            .expect("firmware volume");
        assert_eq!(firmware.type_.as_deref(), Some("DirectoryOrCreate"));
        let script = &pod
            .spec
            .as_ref()
            .expect("spec")
            .init_containers
            .as_ref()
            .expect("init")[0]
            .args
            .as_ref()
            .expect("args")[0];
        assert!(
            script.ends_with("&& mkdir -p /tmp/firmware && cp -R /firmware/. /tmp/firmware"),
            "{script}"
        );
    }

    #[test]
    fn unloader_unloads_the_recorded_config() {
        let status = NodeModuleStatus {
            name: "acme".into(),
            namespace: "kmods".into(),
            service_account_name: String::new(),
            image_repo_secret: None,
            tolerations: Vec::new(),
            version: None,
            config: Some(config("quay.io/acme/kmod:0", None)),
            boot_id: Some("b".into()),
        };
        let pod =
            worker_pod("n", "w", &WorkerRequest::unload(&status).expect("request")).expect("pod");
        assert_eq!(
            pod.metadata.labels.as_ref().expect("labels")[labels::WORKER_ACTION],
            "Unload"
        );
        assert_eq!(worker(&pod).args.as_ref().expect("args")[1], "unload");
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.service_account_name, None);
        assert!(
            !pod.metadata
                .annotations
                .as_ref()
                .expect("annotations")
                .contains_key(labels::WORKER_MODULE_VERSION)
        );
        let without_config = NodeModuleStatus {
            config: None,
            ..status
        };
        assert!(WorkerRequest::unload(&without_config).is_none());
    }

    #[test]
    fn the_hash_follows_the_template_and_nothing_else() {
        let first = entry(config("quay.io/acme/kmod:1", None));
        let hash = |e: &NodeModuleSpec, image: &str| {
            let pod = worker_pod("n", image, &WorkerRequest::load(e)).expect("pod");
            hash_of(&pod).expect("hash").to_owned()
        };
        assert_eq!(hash(&first, "w:1"), hash(&first.clone(), "w:1"));
        assert_ne!(hash(&first, "w:1"), hash(&first, "w:2"));
        let second = entry(config("quay.io/acme/kmod:2", None));
        assert_ne!(hash(&first, "w:1"), hash(&second, "w:1"));
    }

    #[test]
    fn spec_data_never_becomes_script() {
        let mut odd = config("i", None);
        odd.kernel_version = "5.14; rm -rf /".into();
        odd.modprobe.dir_name = "/my dir/".into();
        assert_eq!(
            extractor_script(&odd, None),
            "mkdir -p '/tmp/my dir/lib/modules' && cp -R '/my dir/lib/modules/5.14; rm -rf /' \
             '/tmp/my dir/lib/modules'"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let value = serde_json::json!({"b": [{"d": 1, "c": "x"}], "a": null});
        assert_eq!(canonical(&value), r#"{"a":null,"b":[{"c":"x","d":1}]}"#);
    }
}
