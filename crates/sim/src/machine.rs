//! The machines behind the simulated nodes: what a real node holds outside the API — its kernel and boot,
//! loaded kernel modules, installed shim binaries, containerd and its configuration, and the image store.
//!
//! Only the kubelet, the node effects of privileged pods and the Machine Config Operator touch machines; the rest
//! of the world sees them through the API (Node objects, pod statuses, events, and the `kmm-tui-sim/machine-<node>`
//! ConfigMap the kubelet publishes for inspection).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One image in a node's store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredImage {
    /// Bytes on disk.
    pub size_bytes: u64,
    /// Simulated time it was last used by a container (or pulled).
    pub last_used: Duration,
    /// Pinned images are never garbage-collected (the runtime's own images, e.g. the pause image).
    pub pinned: bool,
}

/// A node's image store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImageStore {
    images: BTreeMap<String, StoredImage>,
}

impl ImageStore {
    /// Whether the image is present.
    pub fn contains(&self, image: &str) -> bool {
        self.images.contains_key(image)
    }

    /// Add (or refresh) an image.
    pub fn insert(&mut self, image: &str, size_bytes: u64, now: Duration, pinned: bool) {
        self.images.insert(
            image.to_string(),
            StoredImage {
                size_bytes,
                last_used: now,
                pinned,
            },
        );
    }

    /// Record a use of the image.
    pub fn touch(&mut self, image: &str, now: Duration) {
        if let Some(entry) = self.images.get_mut(image) {
            entry.last_used = now;
        }
    }

    /// Remove an image; returns whether it was there.
    pub fn remove(&mut self, image: &str) -> bool {
        self.images.remove(image).is_some()
    }

    /// Bytes used by all images.
    pub fn used_bytes(&self) -> u64 {
        self.images.values().map(|i| i.size_bytes).sum()
    }

    /// Every image, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &StoredImage)> {
        self.images.iter()
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }
}

/// containerd on a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Containerd {
    /// Version, reported as `containerd://<version>`.
    pub version: String,
    /// Path of its configuration file.
    pub config_path: String,
    /// The configuration file's content (TOML).
    pub config: String,
    /// How many times it has been restarted.
    pub restarts: u32,
    /// What the last restart did, for inspection (`ok`, or why it failed and what was rolled back).
    pub last_restart: Option<String>,
}

/// One node's machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Node name.
    pub name: String,
    /// Running kernel (`uname -r`).
    pub kernel_version: String,
    /// Reported OS image.
    pub os_image: String,
    /// The OS image URL the machine booted (what the Machine Config Operator compares).
    pub os_image_url: Option<String>,
    /// Changes on every boot.
    pub boot_id: String,
    /// CPU architecture.
    pub architecture: String,
    /// Operating system.
    pub operating_system: String,
    /// Disk size.
    pub disk_bytes: u64,
    /// Loaded kernel modules (`lsmod`).
    pub modules: BTreeSet<String>,
    /// Installed shim binaries: binary name → path.
    pub shims: BTreeMap<String, String>,
    /// The container runtime.
    pub containerd: Containerd,
    /// The image store.
    pub images: ImageStore,
    /// Whether the node is up (false while rebooting or during a NodeNotReady fault).
    pub ready: bool,
}

impl Machine {
    /// Boot into a new OS: new kernel, OS image and boot ID; loaded modules are gone.
    pub fn reboot(&mut self, kernel_version: &str, os_image: &str, os_image_url: Option<&str>) {
        self.kernel_version = kernel_version.to_string();
        self.os_image = os_image.to_string();
        self.os_image_url = os_image_url.map(str::to_string);
        self.boot_id = uuid::Uuid::new_v4().to_string();
        self.modules.clear();
    }
}

/// Every machine, shared by the simulation's components.
#[derive(Debug, Clone, Default)]
pub struct Machines(Arc<Mutex<BTreeMap<String, Machine>>>);

impl Machines {
    /// Lock the machines for reading or changing them. Hold the lock briefly and never across an await.
    pub fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Machine>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of one machine.
    pub fn get(&self, node: &str) -> Option<Machine> {
        self.lock().get(node).cloned()
    }

    /// Change one machine; returns what `change` returned, or None when there is no such machine.
    pub fn with<R>(&self, node: &str, change: impl FnOnce(&mut Machine) -> R) -> Option<R> {
        self.lock().get_mut(node).map(change)
    }
}
