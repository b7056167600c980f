//! The `kmm-tui-sim/machine-<node>` ConfigMap: what a machine holds outside the API (kernel and boot, `lsmod`,
//! shims, containerd and its configuration, images with their sizes), readable with kubectl and complete enough
//! that a restarted simulation adopts the machine from it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::machine::{Containerd, ImageStore, Machine};
use crate::{MANAGER, SIM_NAMESPACE};

/// Name of the ConfigMap of `node`.
pub(super) fn name(node: &str) -> String {
    format!("machine-{node}")
}

/// containerd as the record shows it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerdRecord {
    version: String,
    config_path: String,
    restarts: u32,
    #[serde(default)]
    last_restart: Option<String>,
}

/// One image of the store as the record shows it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageRecord {
    name: String,
    size_bytes: u64,
    pinned: bool,
    /// Simulated seconds since the start of the run at which it was last used.
    last_used_seconds: u64,
}

/// The ConfigMap's data for a machine.
pub(super) fn data(machine: &Machine) -> BTreeMap<String, String> {
    let containerd = ContainerdRecord {
        version: machine.containerd.version.clone(),
        config_path: machine.containerd.config_path.clone(),
        restarts: machine.containerd.restarts,
        last_restart: machine.containerd.last_restart.clone(),
    };
    let images: Vec<ImageRecord> = machine
        .images
        .iter()
        .map(|(name, image)| ImageRecord {
            name: name.clone(),
            size_bytes: image.size_bytes,
            pinned: image.pinned,
            last_used_seconds: image.last_used.as_secs(),
        })
        .collect();
    let lsmod: String = machine.modules.iter().map(|m| format!("{m}\n")).collect();
    BTreeMap::from([
        ("node".into(), machine.name.clone()),
        ("kernelVersion".into(), machine.kernel_version.clone()),
        ("osImage".into(), machine.os_image.clone()),
        (
            "osImageURL".into(),
            machine.os_image_url.clone().unwrap_or_default(),
        ),
        ("bootID".into(), machine.boot_id.clone()),
        ("architecture".into(), machine.architecture.clone()),
        ("operatingSystem".into(), machine.operating_system.clone()),
        ("diskBytes".into(), machine.disk_bytes.to_string()),
        ("lsmod".into(), lsmod),
        ("shims".into(), pretty(&machine.shims)),
        ("containerd".into(), pretty(&containerd)),
        ("config.toml".into(), machine.containerd.config.clone()),
        ("images".into(), pretty(&images)),
    ])
}

/// Pretty JSON for the structured keys, so that `kubectl get -o yaml` shows them readably.
fn pretty<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The ConfigMap for a machine.
pub(super) fn config_map(machine: &Machine) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(&machine.name)),
            namespace: Some(SIM_NAMESPACE.into()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".into(),
                MANAGER.into(),
            )])),
            ..Default::default()
        },
        data: Some(data(machine)),
        ..Default::default()
    }
}

/// The machine a ConfigMap records, if it is a complete machine record.
///
/// The simulated clock starts again at zero in a new run, so recorded use times cannot be carried over as they
/// are; images keep their order of last use, all before anything used in the new run.
pub(super) fn machine_of(cm: &ConfigMap) -> Option<Machine> {
    let data = cm.data.as_ref()?;
    let get = |key: &str| data.get(key).cloned();
    let containerd: ContainerdRecord = serde_json::from_str(data.get("containerd")?).ok()?;
    let mut images: Vec<ImageRecord> = serde_json::from_str(data.get("images")?).ok()?;
    images.sort_by_key(|i| i.last_used_seconds);
    let mut store = ImageStore::default();
    for (rank, image) in images.iter().enumerate() {
        store.insert(
            &image.name,
            image.size_bytes,
            Duration::from_nanos(rank as u64),
            image.pinned,
        );
    }
    Some(Machine {
        name: get("node")?,
        kernel_version: get("kernelVersion")?,
        os_image: get("osImage")?,
        os_image_url: get("osImageURL").filter(|u| !u.is_empty()),
        boot_id: get("bootID")?,
        architecture: get("architecture")?,
        operating_system: get("operatingSystem")?,
        disk_bytes: get("diskBytes")?.parse().ok()?,
        modules: data.get("lsmod")?.lines().map(str::to_string).collect(),
        shims: serde_json::from_str(data.get("shims")?).ok()?,
        containerd: Containerd {
            version: containerd.version,
            config_path: containerd.config_path,
            config: get("config.toml")?,
            restarts: containerd.restarts,
            last_restart: containerd.last_restart,
        },
        images: store,
        ready: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_survives_its_record() {
        let mut images = ImageStore::default();
        images.insert("registry.k8s.io/pause:3.10", 1000, Duration::ZERO, true);
        images.insert("quay.io/a:1", 2000, Duration::from_secs(50), false);
        images.insert("quay.io/b:1", 3000, Duration::from_secs(20), false);
        let machine = Machine {
            name: "worker-0".into(),
            kernel_version: "5.14.0".into(),
            os_image: "RHCOS".into(),
            os_image_url: Some("quay.io/os@sha256:1".into()),
            boot_id: "b".into(),
            architecture: "amd64".into(),
            operating_system: "linux".into(),
            disk_bytes: 42,
            modules: ["kmm_ci_a".to_string(), "dep".to_string()].into(),
            shims: BTreeMap::from([("containerd-shim-spin-v2".into(), "/opt/rcm/bin".into())]),
            containerd: Containerd {
                version: "1.7.13".into(),
                config_path: "/etc/containerd/config.toml".into(),
                config: "version = 2\n".into(),
                restarts: 2,
                last_restart: Some("ok".into()),
            },
            images,
            ready: true,
        };
        let adopted = machine_of(&config_map(&machine)).expect("a complete record");
        assert_eq!(adopted.modules, machine.modules);
        assert_eq!(adopted.shims, machine.shims);
        assert_eq!(adopted.containerd, machine.containerd);
        assert_eq!(adopted.os_image_url, machine.os_image_url);
        let by_use: Vec<&String> = {
            let mut v: Vec<_> = adopted.images.iter().collect();
            v.sort_by_key(|(_, i)| i.last_used);
            v.into_iter().map(|(n, _)| n).collect()
        };
        assert_eq!(
            by_use,
            ["registry.k8s.io/pause:3.10", "quay.io/b:1", "quay.io/a:1"]
        );
        assert!(
            adopted
                .images
                .iter()
                .any(|(n, i)| n.contains("pause") && i.pinned)
        );
        assert!(machine_of(&ConfigMap::default()).is_none());
    }
}
