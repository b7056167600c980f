//! The labels, annotations and finalizers of Kernel Module Management, spelled as upstream KMM spells them: the
//! engine writes them, the console reads them and the simulation acts on them, so a cluster run by either engine
//! reads the same way and a change of spelling is one change here.
//!
//! Keys that name a Module (`<namespace>.<name>` inside the key) are built by the functions below, never by hand.

/// Prefix of the node labels KMM keeps per Module (`<prefix><namespace>.<name>.<what>`).
pub const NODE_LABEL_PREFIX: &str = "kmm.node.kubernetes.io/";
/// Prefix of the NMC labels KMM keeps per Module (`<prefix><namespace>.<name>.<what>`).
pub const NMC_LABEL_PREFIX: &str = "beta.kmm.node.kubernetes.io/";
/// Suffix of the NMC label saying a Module has an entry in the NMC's spec.
pub const MODULE_CONFIGURED_SUFFIX: &str = ".module-configured";
/// Suffix of the NMC label saying a Module has an entry, a status or a worker pod on the node.
pub const MODULE_IN_USE_SUFFIX: &str = ".module-in-use";
/// Suffix of the node label saying a module is loaded on the node.
pub const READY_SUFFIX: &str = ".ready";
/// Suffix of the node label saying a Module's device plugin may run on the node.
pub const DEVICE_PLUGIN_TARGET_SUFFIX: &str = ".device-plugin-target";
/// Suffix of the node label saying a Module's device plugin runs and is ready on the node.
pub const DEVICE_PLUGIN_READY_SUFFIX: &str = ".device-plugin-ready";
/// Suffix of the node label saying a Module's DRA driver may run on the node.
pub const DRA_TARGET_SUFFIX: &str = ".dra-target";
/// Suffix of the node label saying a Module's DRA driver runs and is ready on the node.
pub const DRA_READY_SUFFIX: &str = ".dra-ready";
/// Label on a ModuleDay0 naming the MachineConfig it was created for.
pub const MACHINE_CONFIG: &str = "kmm.node.kubernetes.io/machine-config";

/// Label on pods the engine creates for a Module: the Module (or MBSC/MIC) name.
pub const MODULE_NAME: &str = "kmm.node.kubernetes.io/module.name";
/// Label on the cluster-scoped objects the engine keeps for a Module (its DeviceClasses): the Module's namespace,
/// beside [`MODULE_NAME`]. A cluster-scoped object cannot name a namespaced owner, so these two labels are how the
/// engine, the console and a person find what a Module owns.
pub const MODULE_NAMESPACE: &str = "kmm.node.kubernetes.io/module.namespace";
/// Label on worker pods: `Load` or `Unload`.
pub const WORKER_ACTION: &str = "kmm.node.kubernetes.io/worker-action";
/// Annotation on worker pods: the YAML `ModuleConfig` the worker loads or unloads.
pub const WORKER_CONFIG: &str = "kmm.node.kubernetes.io/worker-config";
/// Annotation on worker pods: hash of the pod template, so a changed template replaces a crash-looping pod.
pub const WORKER_HASH: &str = "kmm.node.kubernetes.io/worker-hash";
/// Annotation on worker pods: the tolerations of the NMC entry, carried into the status once loaded.
pub const WORKER_TOLERATIONS: &str = "kmm.node.kubernetes.io/worker-tolerations";
/// Annotation on worker pods: the module version of the NMC entry.
pub const WORKER_MODULE_VERSION: &str = "kmm.node.kubernetes.io/worker-module-version";
/// Finalizer that upstream KMM puts on its worker pods, so their outcome is read before they disappear. This
/// engine's workers carry none (a worker deleted before its outcome is read is simply run again, and deleting it
/// is then one write instead of two); it releases the finalizer on the pods that have it.
pub const WORKER_FINALIZER: &str = "kmm.node.kubernetes.io/nodemodulesconfig-reconciler";
/// Label on pull pods: the MIC that owns them.
pub const IMAGE_OWNER: &str = "kmm.node.kubernetes.io/image-owner";
/// Label on pull pods: `one-time-pull` (a failed pull is an answer) or `until-success` (keep waiting).
pub const PULL_POD_TYPE: &str = "kmm.node.kubernetes.io/pull-pod-type";
/// Label on build and sign pods: `BuildImage` or `SignImage`.
pub const RESOURCE_TYPE: &str = "kmm.node.kubernetes.io/resource-type";
/// Label on build and sign pods: the DNS-safe kernel version they build for.
pub const TARGET_KERNEL: &str = "kmm.node.kubernetes.io/target-kernel";
/// Annotation on build and sign pods: hash of what they would produce, so a changed recipe replaces them.
pub const LAST_HASH: &str = "kmm.node.kubernetes.io/last-hash";
/// Annotation on pull, build and sign pods: the MIC image generation they answer, so an older answer never settles
/// a newer request.
pub const IMAGE_GENERATION: &str = "kmm.node.kubernetes.io/image-generation";
/// Annotation on sign pods: the generated Dockerfile.
pub const DOCKERFILE: &str = "dockerfile";
/// Finalizer on Modules, held until every node has unloaded the module.
pub const MODULE_FINALIZER: &str = "kmm.node.kubernetes.io/module-finalizer";
/// Label on namespaces holding Modules.
pub const NAMESPACE_CONTAINS_MODULES: &str = "kmm.node.k8s.io/contains-modules";
/// Node label the user sets to move a node to a module version (ordered upgrade).
pub const VERSION_MODULE_PREFIX: &str = "kmm.node.kubernetes.io/version-module.";
/// Node label the engine keeps: the module version the node's worker pods may load.
pub const VERSION_WORKER_POD_PREFIX: &str = "beta.kmm.node.kubernetes.io/version-worker-pod.";
/// Node label the engine keeps: the module version whose device plugin may run on the node.
pub const VERSION_SCHEDULE_POD_PREFIX: &str = "beta.kmm.node.kubernetes.io/version-schedule-pod.";

/// Label on the DaemonSets the engine runs for a Module, and on their pods: which of the Module's workloads it is.
pub const DAEMONSET_ROLE: &str = "kmm.node.kubernetes.io/role";
/// [`DAEMONSET_ROLE`] of a device plugin DaemonSet.
pub const DEVICE_PLUGIN_ROLE: &str = "device-plugin";
/// [`DAEMONSET_ROLE`] of a DRA driver DaemonSet.
pub const DRA_ROLE: &str = "dra";
/// Annotation on DRA driver DaemonSets: hash of the spec the engine wrote, as [`DEVICE_PLUGIN_HASH`] is for device
/// plugins.
pub const DRA_HASH: &str = "kmm.node.kubernetes.io/dra-hash";
/// Annotation on device plugin DaemonSets: hash of the spec the engine wrote, so a pass rewrites it only when the
/// Module asks for something else (the API server's defaults never read as a change).
pub const DEVICE_PLUGIN_HASH: &str = "kmm.node.kubernetes.io/device-plugin-hash";

/// NMC label: the Module has an entry in this NMC's spec.
pub fn module_configured(namespace: &str, name: &str) -> String {
    format!("{NMC_LABEL_PREFIX}{namespace}.{name}{MODULE_CONFIGURED_SUFFIX}")
}

/// NMC label: the Module has an entry, a status or a worker pod on this node.
pub fn module_in_use(namespace: &str, name: &str) -> String {
    format!("{NMC_LABEL_PREFIX}{namespace}.{name}{MODULE_IN_USE_SUFFIX}")
}

/// Node label: the module is loaded on this node.
pub fn node_ready(namespace: &str, name: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{name}{READY_SUFFIX}")
}

/// Node label: the node is schedulable for the Module's device plugin (selected, and no taint keeps the Module's
/// pods out), so the plugin leaves a node as soon as it is cordoned for a drain.
pub fn device_plugin_target_label(namespace: &str, module: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{module}{DEVICE_PLUGIN_TARGET_SUFFIX}")
}

/// Node label: the Module's device plugin runs and is ready on this node.
pub fn device_plugin_ready_label(namespace: &str, module: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{module}{DEVICE_PLUGIN_READY_SUFFIX}")
}

/// Node label: the node is schedulable for the Module's DRA driver, as [`device_plugin_target_label`] is for a
/// device plugin, so the driver leaves a node cordoned for a drain.
pub fn dra_target_label(namespace: &str, module: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{module}{DRA_TARGET_SUFFIX}")
}

/// Node label: the Module's DRA driver runs and is ready on this node.
pub fn dra_ready_label(namespace: &str, module: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{module}{DRA_READY_SUFFIX}")
}

/// Node label: the version of the module loaded on this node.
pub fn node_version_ready(namespace: &str, name: &str) -> String {
    format!("{NODE_LABEL_PREFIX}{namespace}.{name}.version{READY_SUFFIX}")
}

/// Node label (user-set) asking for a module version on this node.
pub fn version_module(namespace: &str, name: &str) -> String {
    format!("{VERSION_MODULE_PREFIX}{namespace}.{name}")
}

/// Node label (engine-kept) allowing worker pods of a module version on this node.
pub fn version_worker_pod(namespace: &str, name: &str) -> String {
    format!("{VERSION_WORKER_POD_PREFIX}{namespace}.{name}")
}

/// Node label (engine-kept) placing the device plugin of a module version on this node; it follows the worker
/// label once that is set and goes before it moves, as upstream's ordered upgrade keeps it.
pub fn version_schedule_pod(namespace: &str, name: &str) -> String {
    format!("{VERSION_SCHEDULE_POD_PREFIX}{namespace}.{name}")
}
