//! Names of the objects the KMM engine creates, shaped as upstream KMM shapes them so that the console and people
//! recognise them, and deterministic so that two passes never create two objects for one purpose.

use crate::runtime::digest::sha256_hex;

/// Name of a Module's device plugin DaemonSet for a module version (empty without an ordered upgrade): shaped as
/// upstream's generated names (`<module>-device-plugin-` and five characters), but derived from the version, so
/// that a pass that runs before its cache shows the DaemonSet it just made cannot make a second one.
pub fn device_plugin_daemon_set_name(module: &str, version: &str) -> String {
    versioned_name(module, "device-plugin", version)
}

/// Name of a Module's DRA driver DaemonSet for a module version: upstream's `<module>-dra-` and five characters,
/// derived from the version as [`device_plugin_daemon_set_name`] is.
pub fn dra_daemon_set_name(module: &str, version: &str) -> String {
    versioned_name(module, "dra", version)
}

/// `<module>-<what>-` and five characters of the version's digest.
fn versioned_name(module: &str, what: &str, version: &str) -> String {
    let digest = sha256_hex(version.as_bytes());
    format!("{module}-{what}-{}", &digest[..5])
}

/// Name of the worker pod of one module on one node; one name means never two workers for that pair.
pub fn worker_pod_name(node: &str, module: &str) -> String {
    format!("kmm-worker-{node}-{module}")
}

/// Name of the pod building `module`'s image for a kernel.
pub fn build_pod_name(module: &str, dns_safe_kernel: &str) -> String {
    format!("{module}-build-{dns_safe_kernel}")
}

/// Name of the pod signing `module`'s image for a kernel.
pub fn sign_pod_name(module: &str, dns_safe_kernel: &str) -> String {
    format!("{module}-sign-{dns_safe_kernel}")
}

/// `generateName` of a MIC's pull pods.
pub fn pull_pod_generate_name(mic: &str) -> String {
    format!("{mic}-pull-pod-")
}
