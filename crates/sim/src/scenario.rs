//! Scenario files: the nodes, registry, faults and objects of a simulated cluster.
//!
//! A scenario is read and checked completely before anything starts, so a malformed file never leaves a
//! half-configured cluster: every error names the file, the line and the key. Built-in scenarios (`demo`, `large`,
//! `chaos`, `day0`, `empty`, `clients`, `envelope`) are YAML files compiled into the binary; any other name is read
//! as a path. The format is documented in the README.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Built-in scenarios by name.
const BUILT_IN: &[(&str, &str)] = &[
    ("demo", include_str!("scenarios/demo.yaml")),
    ("large", include_str!("scenarios/large.yaml")),
    ("chaos", include_str!("scenarios/chaos.yaml")),
    ("day0", include_str!("scenarios/day0.yaml")),
    ("empty", include_str!("scenarios/empty.yaml")),
    ("clients", include_str!("scenarios/clients.yaml")),
    ("envelope", include_str!("scenarios/envelope.yaml")),
];

/// A whole scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Seed for every random choice the simulation makes, so a run can be reproduced.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated seconds per real second.
    #[serde(default = "default_time_scale")]
    pub time_scale: f64,
    /// Groups of identical nodes.
    #[serde(default)]
    pub nodes: Vec<NodeGroup>,
    /// The container registry every node pulls from.
    #[serde(default)]
    pub registry: RegistrySpec,
    /// Faults injected during the run.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Manifests applied at start: inline objects, or `{file: path}` relative to the scenario file.
    #[serde(default)]
    pub objects: Vec<ObjectSource>,
    /// OS images the Machine Config Operator can roll nodes to: what kernel and OS each one boots.
    #[serde(default)]
    pub os_images: Vec<OsImage>,
    /// Kubelet settings shared by every node.
    #[serde(default)]
    pub kubelet: KubeletSpec,
    /// Ordinary workloads beside this project's: what a busy cluster runs ([`crate::background`]).
    #[serde(default)]
    pub background: Option<Background>,
    /// Repository of kmm-tui's own image. The registry holds every tag of it, and a container of it whose args
    /// start with `controller` runs the engine in-process for as long as its pod runs.
    #[serde(default = "default_controller_image")]
    pub controller_image: String,
    /// Where the scenario came from (a built-in name or a path), for messages.
    #[serde(skip)]
    pub source: String,
    /// Objects resolved from `objects`, in order.
    #[serde(skip)]
    pub manifests: Vec<Value>,
}

fn default_seed() -> u64 {
    1
}

fn default_controller_image() -> String {
    kmm_api::IMAGE_REPOSITORY.to_owned()
}

fn default_time_scale() -> f64 {
    10.0
}

/// The Deployments, DaemonSets and Jobs of a busy cluster, and how fast their pods are replaced.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Background {
    /// How many namespaces the workloads spread over (one Deployment and one Job in each).
    pub namespaces: u32,
    /// Pods per node on average, counting the two DaemonSets' and the Jobs'.
    pub pods_per_node: u32,
    /// The most pods a node runs: Kubernetes' limit is 110.
    pub max_pods_per_node: u32,
    /// Deployment pods replaced per real second, each with the Events a real cluster records for it.
    pub churn_per_second: f64,
}

impl Background {
    fn check(&self) -> Result<(), String> {
        if self.namespaces == 0 {
            return Err("background.namespaces: must be at least 1".into());
        }
        if !(3..=self.max_pods_per_node).contains(&self.pods_per_node)
            || self.max_pods_per_node > 110
        {
            return Err(format!(
                "background: podsPerNode ({}) must be at least 3 (two DaemonSets' pods and one more) and at most \
                 maxPodsPerNode ({}), which is at most 110, Kubernetes' limit",
                self.pods_per_node, self.max_pods_per_node
            ));
        }
        if !(self.churn_per_second >= 0.0 && self.churn_per_second.is_finite()) {
            return Err(format!(
                "background.churnPerSecond: must be a number of pods a second, got {}",
                self.churn_per_second
            ));
        }
        Ok(())
    }
}

/// `count` nodes named `namePrefix` + index, all alike.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeGroup {
    /// Node names are this prefix followed by 0, 1, 2, ...
    pub name_prefix: String,
    /// How many nodes.
    #[serde(default = "one")]
    pub count: u32,
    /// Node labels (the simulation adds `kubernetes.io/hostname`, `kubernetes.io/os` and `kubernetes.io/arch`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
    /// Kernel the nodes run (`uname -r`).
    pub kernel_version: String,
    /// OS image the nodes report.
    pub os_image: String,
    /// The container runtime.
    #[serde(default)]
    pub containerd: ContainerdSpec,
    /// Disk size; image garbage collection works against it.
    #[serde(default = "default_disk")]
    #[serde(rename = "diskGiB")]
    pub disk_gi_b: u64,
    /// CPU architecture (`amd64`, `arm64`).
    #[serde(default = "default_arch")]
    pub architecture: String,
    /// Operating system.
    #[serde(default = "default_os")]
    pub operating_system: String,
    /// The MachineConfigPool the nodes belong to: they get its role label `node-role.kubernetes.io/<pool>` (a custom
    /// pool must be among the scenario's objects; `worker` and `master` exist by default).
    #[serde(default)]
    pub pool: Option<String>,
    /// The devices DRA drivers find on each node of the group and publish in a ResourceSlice.
    #[serde(default)]
    pub dra_devices: Vec<DraDevices>,
}

/// Devices of one DRA driver on each node of a group: what the driver's kubelet plugin publishes in the node's
/// ResourceSlice while it runs there and the kernel module behind the devices is loaded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DraDevices {
    /// The driver that publishes them (its `DRIVER_NAME`, e.g. `gpu.example.com`).
    pub driver: String,
    /// The kernel module (as `lsmod` names it) without which the driver sees no devices; none means the devices
    /// are there whenever the driver runs.
    #[serde(default)]
    pub module: Option<String>,
    /// How many devices each node has; they are named `<namePrefix><index>`.
    #[serde(default = "one")]
    pub count: u32,
    /// The devices' name prefix; by default the driver name's first label and a dash (`gpu-`).
    #[serde(default)]
    pub name_prefix: Option<String>,
    /// Attributes of every device: a bool, an integer or a string each. The device's index is added as
    /// `index`.
    #[serde(default)]
    pub attributes: BTreeMap<String, DraAttribute>,
    /// Capacities of every device, as quantities (`40Gi`).
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
}

impl DraDevices {
    /// The name of device `index`.
    pub fn device_name(&self, index: u32) -> String {
        match &self.name_prefix {
            Some(prefix) => format!("{prefix}{index}"),
            None => {
                let label = self.driver.split('.').next().unwrap_or("device");
                format!("{label}-{index}")
            }
        }
    }

    /// Whether the driver name is a DNS subdomain, the quantities are quantities and the names are valid.
    fn check(&self) -> Result<(), String> {
        let label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if self.driver.len() > 63 || !self.driver.split('.').all(label) {
            return Err(format!(
                ".driver: {:?} must be a DNS subdomain of lower-case labels (e.g. gpu.example.com)",
                self.driver
            ));
        }
        if self.count == 0 {
            return Err(".count: must be at least 1".to_owned());
        }
        if !label(&self.device_name(0)) {
            return Err(format!(
                ".namePrefix: device names like {:?} must be DNS labels",
                self.device_name(0)
            ));
        }
        for (name, quantity) in &self.capacity {
            if !is_quantity(quantity) {
                return Err(format!(
                    ".capacity.{name}: {quantity:?} is not a quantity (e.g. 40Gi, 8, 500m)"
                ));
            }
        }
        Ok(())
    }
}

/// A DRA device attribute's value, as the scenario spells it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum DraAttribute {
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// Anything else.
    String(String),
}

/// Whether `text` is a Kubernetes quantity: a decimal number and an optional SI, binary or exponent suffix.
fn is_quantity(text: &str) -> bool {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let mut parts = number.split('.');
    let whole = parts.next().unwrap_or_default();
    let fraction = parts.next().unwrap_or_default();
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    parts.next().is_none()
        && !(whole.is_empty() && fraction.is_empty())
        && (exponent
            || matches!(
                suffix,
                "" | "m"
                    | "k"
                    | "M"
                    | "G"
                    | "T"
                    | "P"
                    | "E"
                    | "Ki"
                    | "Mi"
                    | "Gi"
                    | "Ti"
                    | "Pi"
                    | "Ei"
            ))
}

fn one() -> u32 {
    1
}

fn default_disk() -> u64 {
    100
}

fn default_arch() -> String {
    "amd64".into()
}

fn default_os() -> String {
    "linux".into()
}

/// A node taint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSpec {
    /// Taint key.
    pub key: String,
    /// Taint value.
    #[serde(default)]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// The container runtime of a node group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerdSpec {
    /// containerd version (reported as `containerd://<version>`).
    #[serde(default = "default_containerd_version")]
    pub version: String,
    /// Where its configuration lives on the node.
    #[serde(default = "default_containerd_config")]
    pub config_path: String,
}

impl Default for ContainerdSpec {
    fn default() -> Self {
        Self {
            version: default_containerd_version(),
            config_path: default_containerd_config(),
        }
    }
}

fn default_containerd_version() -> String {
    "1.7.13".into()
}

fn default_containerd_config() -> String {
    "/etc/containerd/config.toml".into()
}

/// The simulated registry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistrySpec {
    /// Images that exist; anything else does not.
    #[serde(default)]
    pub images: Vec<ImageSpec>,
    /// Shim artifacts a Shim's fetchStrategy can download.
    #[serde(default)]
    pub shims: Vec<ShimArtifact>,
    /// Time before a pull starts transferring.
    #[serde(default = "default_latency", deserialize_with = "duration")]
    pub latency: Duration,
    /// Transfer speed in MiB per simulated second.
    #[serde(default = "default_bandwidth")]
    #[serde(rename = "bandwidthMiBPerSecond")]
    pub bandwidth_mi_b_per_second: f64,
}

impl Default for RegistrySpec {
    fn default() -> Self {
        Self {
            images: Vec::new(),
            shims: Vec::new(),
            latency: default_latency(),
            bandwidth_mi_b_per_second: default_bandwidth(),
        }
    }
}

impl RegistrySpec {
    /// Every image name is a reference, and no two name the same image (as `alpine` and
    /// `docker.io/library/alpine:latest` do): the second would silently replace the first.
    fn check_images(&self) -> Result<(), String> {
        let mut seen = BTreeMap::new();
        for (i, image) in self.images.iter().enumerate() {
            let reference = kmm_api::image_ref::ImageRef::parse(&image.name)
                .map_err(|e| format!("registry.images[{i}].name: {}", e.reason()))?;
            if let Some(first) = seen.insert(reference.normalized(), i) {
                return Err(format!(
                    "registry.images[{i}].name: {} is the image of registry.images[{first}] ({reference})",
                    image.name
                ));
            }
        }
        Ok(())
    }
}

fn default_latency() -> Duration {
    Duration::from_millis(300)
}

fn default_bandwidth() -> f64 {
    100.0
}

/// An image in the registry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageSpec {
    /// Its reference, read as a container runtime reads it (`busybox` is `docker.io/library/busybox:latest`).
    pub name: String,
    /// Size.
    #[serde(default = "default_image_size")]
    #[serde(rename = "sizeMiB")]
    pub size_mi_b: u64,
    /// When set, pulling needs an image pull secret of this name in the pod's namespace.
    #[serde(default)]
    pub pull_secret: Option<String>,
    /// The image config's ENTRYPOINT, which a container without `command` runs. When neither this nor `cmd` is
    /// set, a well-known image has its built-in defaults.
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    /// The image config's CMD: the arguments of the entrypoint (or the program when there is none) of a
    /// container that sets neither `command` nor `args`.
    #[serde(default)]
    pub cmd: Option<Vec<String>>,
}

fn default_image_size() -> u64 {
    50
}

/// A downloadable shim archive.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShimArtifact {
    /// URL the Shim's fetchStrategy names.
    pub url: String,
    /// The binary inside the archive (e.g. `containerd-shim-spin-v2`).
    pub binary: String,
    /// sha256 of the archive, for fetch strategies that pin it.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// An OS image nodes can be rolled to.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OsImage {
    /// The `osImageURL` a MachineConfig names.
    pub url: String,
    /// Kernel a node runs after booting it.
    pub kernel_version: String,
    /// OS image a node reports after booting it.
    pub os_image: String,
    /// The OpenShift release whose payload ships this OS image, for ClusterVersion upgrades.
    #[serde(default)]
    pub release: Option<String>,
}

/// Kubelet settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletSpec {
    /// Most images reported in `node.status.images` (the real kubelet's `nodeStatusMaxImages`).
    #[serde(default = "default_max_images")]
    pub node_status_max_images: usize,
    /// Disk usage (percent) above which image garbage collection runs.
    #[serde(default = "default_high")]
    pub image_gc_high_threshold_percent: u8,
    /// Disk usage (percent) image garbage collection frees down to.
    #[serde(default = "default_low")]
    pub image_gc_low_threshold_percent: u8,
}

impl Default for KubeletSpec {
    fn default() -> Self {
        Self {
            node_status_max_images: default_max_images(),
            image_gc_high_threshold_percent: default_high(),
            image_gc_low_threshold_percent: default_low(),
        }
    }
}

fn default_max_images() -> usize {
    50
}

fn default_high() -> u8 {
    85
}

fn default_low() -> u8 {
    80
}

/// A fault injected into the run. Times are simulated time since the start (for a fault injected at run time,
/// since the simulation read it: see `sim::inject`). A window without `from` opens at once, one without `to` never
/// closes, and an instant without `at` is at once.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", tag = "kind")]
pub enum Fault {
    /// The registry refuses every pull and push in a window.
    #[serde(rename_all = "camelCase")]
    RegistryOutage {
        /// Start of the outage.
        #[serde(default, deserialize_with = "duration")]
        from: Duration,
        /// End of the outage.
        #[serde(default = "forever", deserialize_with = "duration")]
        to: Duration,
    },
    /// Pulls of an image fail (on the named nodes, or everywhere).
    #[serde(rename_all = "camelCase")]
    PullFailure {
        /// The image.
        image: String,
        /// Nodes it fails on; every node when empty.
        #[serde(default)]
        nodes: Vec<String>,
    },
    /// Restarting containerd fails on the named nodes (or everywhere), `times` times per node.
    #[serde(rename_all = "camelCase")]
    ContainerdRestartFailure {
        /// Nodes it fails on; every node when empty.
        #[serde(default)]
        nodes: Vec<String>,
        /// How many restarts fail per node before one succeeds.
        #[serde(default = "one")]
        times: u32,
    },
    /// Builds of an image fail, `times` times.
    #[serde(rename_all = "camelCase")]
    BuildFailure {
        /// The image the build would push.
        image: String,
        /// How many builds fail before one succeeds.
        #[serde(default = "one")]
        times: u32,
    },
    /// The registry loses an image at a point in time; with `nodes`, those nodes' image stores lose it instead (as
    /// image garbage collection or `crictl rmi` would remove it).
    #[serde(rename_all = "camelCase")]
    RemoveImage {
        /// The image.
        image: String,
        /// When.
        #[serde(default, deserialize_with = "duration")]
        at: Duration,
        /// Nodes whose store loses the image; the registry when empty.
        #[serde(default)]
        nodes: Vec<String>,
    },
    /// A node stops reporting Ready in a window.
    #[serde(rename_all = "camelCase")]
    NodeNotReady {
        /// The node.
        node: String,
        /// Start.
        #[serde(default, deserialize_with = "duration")]
        from: Duration,
        /// End.
        #[serde(default = "forever", deserialize_with = "duration")]
        to: Duration,
    },
    /// A node's machine crashes or is power-cycled at a point in time: it is down for the time a reboot takes, then
    /// boots the OS it ran, with a new boot ID and no kernel modules loaded. Unlike an update by the Machine Config
    /// Operator, nothing cordons or drains the node first.
    #[serde(rename_all = "camelCase")]
    Reboot {
        /// The node.
        node: String,
        /// When.
        #[serde(default, deserialize_with = "duration")]
        at: Duration,
    },
    /// The API server closes every watch open at a point in time, as a kube-apiserver does when it restarts or
    /// sheds load; clients resume from the last resourceVersion they saw.
    #[serde(rename_all = "camelCase")]
    CloseWatches {
        /// When.
        #[serde(default, deserialize_with = "duration")]
        at: Duration,
    },
}

/// The end of a window that never closes.
fn forever() -> Duration {
    Duration::MAX
}

impl Fault {
    /// Check that the fault's window is one and that it names nodes of `nodes`. The error starts with the key at
    /// fault (`.node: …`, or `: …` for the fault as a whole).
    pub fn check(&self, nodes: &BTreeSet<String>) -> Result<(), String> {
        match self {
            Fault::RegistryOutage { from, to } | Fault::NodeNotReady { from, to, .. }
                if from >= to =>
            {
                Err(": `from` must be before `to`".to_owned())
            }
            Fault::NodeNotReady { node, .. } | Fault::Reboot { node, .. }
                if !nodes.contains(node) =>
            {
                Err(format!(".node: no node is named {node}"))
            }
            Fault::PullFailure { nodes: named, .. }
            | Fault::ContainerdRestartFailure { nodes: named, .. } => {
                match named.iter().find(|n| !nodes.contains(*n)) {
                    Some(unknown) => Err(format!(".nodes: no node is named {unknown}")),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

/// An object to apply at start.
#[derive(Debug, Clone)]
pub enum ObjectSource {
    /// A manifest file (one or more YAML documents), relative to the scenario file.
    File(PathBuf),
    /// An inline manifest.
    Inline(Value),
}

impl<'de> Deserialize<'de> for ObjectSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.as_object() {
            Some(map) if map.len() == 1 && map.contains_key("file") => match map["file"].as_str() {
                Some(path) => Ok(ObjectSource::File(PathBuf::from(path))),
                None => Err(serde::de::Error::custom("`file` must be a path")),
            },
            Some(map) if map.contains_key("apiVersion") && map.contains_key("kind") => {
                Ok(ObjectSource::Inline(value))
            }
            _ => Err(serde::de::Error::custom(
                "an object is either `{file: path}` or a manifest with apiVersion and kind",
            )),
        }
    }
}

/// Durations are seconds (`90`) or text with units (`90s`, `2m`, `1h30m`).
fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let parsed = match &value {
        Value::Number(n) => n
            .as_f64()
            .filter(|s| *s >= 0.0)
            .map(Duration::from_secs_f64),
        Value::String(s) => s
            .parse::<jiff::SignedDuration>()
            .ok()
            .filter(|d| !d.is_negative())
            .map(|d| d.unsigned_abs()),
        _ => None,
    };
    parsed.ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{value} is not a duration: write seconds (90) or units (90s, 2m, 1h30m)"
        ))
    })
}

/// Why a scenario cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("scenario {origin}: {message}")]
pub struct ScenarioError {
    /// The file or built-in name.
    pub origin: String,
    /// What is wrong, with line and key where the parser knows them.
    pub message: String,
}

impl Scenario {
    /// The built-in scenario names.
    pub fn built_in_names() -> Vec<&'static str> {
        BUILT_IN.iter().map(|(n, _)| *n).collect()
    }

    /// Load a built-in scenario by name, or a scenario file by path, and check it completely.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if let Some((name, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text, name, None);
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            origin: name_or_path.to_string(),
            message: format!(
                "cannot read it ({e}); built-in scenarios are {}",
                Self::built_in_names().join(", ")
            ),
        })?;
        Self::parse(&text, name_or_path, path.parent())
    }

    /// Parse and check scenario text; `base` resolves relative object file paths.
    pub fn parse(text: &str, source: &str, base: Option<&Path>) -> Result<Self, ScenarioError> {
        let error = |message: String| ScenarioError {
            origin: source.to_string(),
            message,
        };
        let mut scenario: Scenario =
            serde_saphyr::from_str(text).map_err(|e| error(e.to_string()))?;
        scenario.source = source.to_string();
        scenario.check().map_err(error)?;
        for object in &scenario.objects {
            match object {
                ObjectSource::Inline(value) => scenario.manifests.push(value.clone()),
                ObjectSource::File(path) => {
                    let full = base.map(|b| b.join(path)).unwrap_or_else(|| path.clone());
                    let text = std::fs::read_to_string(&full).map_err(|e| {
                        error(format!("objects: cannot read {}: {e}", full.display()))
                    })?;
                    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                        .map_err(|e| error(format!("objects: {}: {e}", full.display())))?;
                    for doc in docs.into_iter().filter(|d| !d.is_null()) {
                        if doc.get("apiVersion").is_none() || doc.get("kind").is_none() {
                            return Err(error(format!(
                                "objects: {}: every document needs apiVersion and kind",
                                full.display()
                            )));
                        }
                        scenario.manifests.push(doc);
                    }
                }
            }
        }
        Ok(scenario)
    }

    /// Checks the parser cannot make: consistent names, sane numbers, faults that name known things.
    fn check(&self) -> Result<(), String> {
        if !(self.time_scale > 0.0 && self.time_scale.is_finite()) {
            return Err(format!(
                "timeScale: must be a positive number, got {}",
                self.time_scale
            ));
        }
        let mut names = BTreeSet::new();
        for (i, group) in self.nodes.iter().enumerate() {
            if group.count == 0 {
                return Err(format!("nodes[{i}].count: must be at least 1"));
            }
            for taint in &group.taints {
                if !matches!(
                    taint.effect.as_str(),
                    "NoSchedule" | "PreferNoSchedule" | "NoExecute"
                ) {
                    return Err(format!(
                        "nodes[{i}].taints: effect {:?} must be NoSchedule, PreferNoSchedule or NoExecute",
                        taint.effect
                    ));
                }
            }
            let mut drivers = BTreeSet::new();
            for (d, devices) in group.dra_devices.iter().enumerate() {
                devices
                    .check()
                    .map_err(|e| format!("nodes[{i}].draDevices[{d}]{e}"))?;
                if !drivers.insert(&devices.driver) {
                    return Err(format!(
                        "nodes[{i}].draDevices[{d}].driver: {} is listed twice",
                        devices.driver
                    ));
                }
            }
            for n in 0..group.count {
                let name = format!("{}{n}", group.name_prefix);
                if !names.insert(name.clone()) {
                    return Err(format!("nodes[{i}]: node {name} is defined twice"));
                }
            }
        }
        let k = &self.kubelet;
        if !(k.image_gc_low_threshold_percent < k.image_gc_high_threshold_percent
            && k.image_gc_high_threshold_percent <= 100)
        {
            return Err("kubelet: imageGcLowThresholdPercent must be below imageGcHighThresholdPercent, which is at most 100".into());
        }
        if self.registry.bandwidth_mi_b_per_second <= 0.0 {
            return Err("registry.bandwidthMiBPerSecond: must be positive".into());
        }
        self.registry.check_images()?;
        if let Some(background) = &self.background {
            background.check()?;
            if names.is_empty() {
                return Err("background: needs nodes to run on".into());
            }
        }
        for (i, fault) in self.faults.iter().enumerate() {
            fault.check(&names).map_err(|e| format!("faults[{i}]{e}"))?;
        }
        Ok(())
    }

    /// Every node name, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes
            .iter()
            .flat_map(|g| (0..g.count).map(move |n| format!("{}{n}", g.name_prefix)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_scenarios_load() {
        for name in Scenario::built_in_names() {
            let scenario = Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(scenario.node_names().is_empty(), name == "empty", "{name}");
        }
        assert_eq!(Scenario::load("large").unwrap().node_names().len(), 5000);
    }

    #[test]
    fn the_format_of_the_documentation_parses() {
        let text = r#"
nodes:
  - namePrefix: worker-
    count: 10
    labels: {node-role.kubernetes.io/worker: ""}
    taints: []
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
    containerd: {version: "1.7.13", configPath: /etc/containerd/config.toml}
    diskGiB: 40
registry:
  images:
    - {name: quay.io/org/kmod:5.14.0-284.el9.x86_64, sizeMiB: 120}
    - {name: quay.io/org/tool:1, entrypoint: [/tool], cmd: [serve, --port, "80"]}
  shims:
    - {url: https://example.com/shim-v1.tar.gz, binary: containerd-shim-spin-v2}
  latency: 300ms
faults:
  - {kind: registryOutage, from: 1m, to: 90}
  - {kind: containerdRestartFailure, nodes: [worker-3], times: 2}
objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: kmods}}
timeScale: 10
"#;
        let s = Scenario::parse(text, "inline", None).unwrap();
        assert_eq!(s.node_names()[9], "worker-9");
        assert_eq!(s.nodes[0].disk_gi_b, 40);
        assert_eq!(s.registry.images[0].size_mi_b, 120);
        assert_eq!(s.registry.images[0].cmd, None);
        assert_eq!(
            s.registry.images[1].entrypoint.as_deref(),
            Some(["/tool".to_owned()].as_slice())
        );
        assert_eq!(s.registry.images[1].cmd.as_ref().map(Vec::len), Some(3));
        assert_eq!(s.manifests.len(), 1);
        assert_eq!(s.registry.latency, Duration::from_millis(300));
        assert!(
            matches!(s.faults[0], Fault::RegistryOutage { from, to } if from == Duration::from_secs(60) && to == Duration::from_secs(90))
        );
    }

    #[test]
    fn dra_devices_parse_and_bad_ones_are_refused() {
        let group = |devices: &str| {
            format!(
                "nodes:\n  - namePrefix: w-\n    kernelVersion: k\n    osImage: o\n    draDevices: {devices}\n"
            )
        };
        let s = Scenario::parse(
            &group(
                "[{driver: gpu.example.com, module: acme_gpu, count: 2, attributes: {model: A100, cores: 108, mig: false}, capacity: {memory: 40Gi}}]",
            ),
            "inline",
            None,
        )
        .expect("a scenario");
        let devices = &s.nodes[0].dra_devices[0];
        assert_eq!(devices.module.as_deref(), Some("acme_gpu"));
        assert_eq!(devices.device_name(1), "gpu-1");
        assert_eq!(
            devices.attributes["model"],
            DraAttribute::String("A100".into())
        );
        assert_eq!(devices.attributes["cores"], DraAttribute::Int(108));
        assert_eq!(devices.attributes["mig"], DraAttribute::Bool(false));
        assert_eq!(devices.capacity["memory"], "40Gi");
        let refused = [
            ("[{driver: GPU}]", "draDevices[0].driver"),
            (
                "[{driver: gpu.example.com, count: 0}]",
                "draDevices[0].count",
            ),
            (
                "[{driver: gpu.example.com, capacity: {memory: lots}}]",
                "draDevices[0].capacity.memory",
            ),
            (
                "[{driver: gpu.example.com, namePrefix: GPU_}]",
                "draDevices[0].namePrefix",
            ),
            (
                "[{driver: gpu.example.com}, {driver: gpu.example.com}]",
                "draDevices[1].driver",
            ),
        ];
        for (devices, key) in refused {
            let error = Scenario::parse(&group(devices), "inline", None)
                .expect_err(devices)
                .to_string();
            assert!(error.contains(key), "{devices}: {error}");
        }
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let err = Scenario::parse(
            "nodes:\n  - namePrefix: w-\n    kernelVersion: k\n    osImage: o\n    colour: red\n",
            "my.yaml",
            None,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("my.yaml") && text.contains("line 5") && text.contains("colour"),
            "{text}"
        );

        let err = Scenario::parse(
            "nodes:\n  - namePrefix: w-\n    count: many\n    kernelVersion: k\n    osImage: o\n",
            "x.yaml",
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");

        let err = Scenario::parse(
            "faults:\n  - {kind: nodeNotReady, node: ghost, from: 1, to: 2}\n",
            "f.yaml",
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("faults[0].node") && err.to_string().contains("ghost"),
            "{err}"
        );

        let err = Scenario::parse(
            "faults:\n  - {kind: registryOutage, from: soon, to: 2}\n",
            "d.yaml",
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a duration"), "{err}");

        let err = Scenario::parse(
            "registry:\n  images:\n    - {name: alpine}\n    - {name: docker.io/library/alpine:latest}\n",
            "r.yaml",
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("registry.images[1].name")
                && err.to_string().contains("docker.io/library/alpine:latest"),
            "{err}"
        );

        let err = Scenario::parse(
            "registry:\n  images:\n    - {name: Busy Box}\n",
            "n.yaml",
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("registry.images[0].name: invalid reference format"),
            "{err}"
        );

        let err = Scenario::load("/nonexistent/scenario.yaml").unwrap_err();
        assert!(
            err.to_string().contains("built-in scenarios are demo"),
            "{err}"
        );
    }
}
