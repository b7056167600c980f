//! The simulated container registry: which images exist, how long pulls take, and the shim artifacts Shims
//! download. Build and sign pods push to it; faults can take it down or remove images.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::scenario::{OsImage, RegistrySpec, ShimArtifact};

/// Why a pull failed, worded as a container runtime reports it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PullError {
    /// The image does not exist.
    #[error(
        "failed to pull and unpack image \"{0}\": failed to resolve reference \"{0}\": {0}: not found"
    )]
    NotFound(String),
    /// The image needs credentials the pod does not have.
    #[error(
        "failed to pull and unpack image \"{0}\": failed to authorize: failed to fetch anonymous token: unexpected status: 401 Unauthorized"
    )]
    Unauthorized(String),
    /// The registry is down.
    #[error(
        "failed to pull and unpack image \"{0}\": failed to do request: dial tcp: connect: connection refused"
    )]
    Unavailable(String),
}

/// Images every simulated registry holds (unless a fault removes them): the pause image and the images the
/// operators' own pods use by default — KMM's worker, build (kaniko) and sign images, runtime-class-manager's
/// downloader and node installer, kube-fledged's busybox and CRI client — so their pods run on the simulation.
pub const SYSTEM_IMAGES: &[(&str, u64)] = &[
    ("registry.k8s.io/pause:3.10", 1),
    (
        "gcr.io/k8s-staging-kmm/kernel-module-management-worker:latest",
        40,
    ),
    ("gcr.io/kaniko-project/executor:latest", 80),
    (
        "gcr.io/k8s-staging-kmm/kernel-module-management-signimage:latest",
        60,
    ),
    ("ghcr.io/spinframework/shim-downloader:latest", 10),
    ("ghcr.io/spinframework/node-installer:latest", 20),
    ("senthilrch/kubefledged-cri-client:v0.10.0", 30),
    ("senthilrch/busybox:1.35.0", 2),
];

#[derive(Debug, Clone)]
struct Entry {
    size_bytes: u64,
    pull_secret: Option<String>,
}

/// What the registry holds beyond and short of what the scenario lists: the images pushed (with their sizes) and
/// the listed images removed. It is all a restarted simulation needs to find the registry as it was.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    /// Images pushed, by normalised reference, with their size in bytes.
    pub pushed: BTreeMap<String, u64>,
    /// Images removed (those the scenario lists among them), by normalised reference.
    pub removed: std::collections::BTreeSet<String>,
}

/// The registry.
#[derive(Debug)]
pub struct SimRegistry {
    images: Mutex<BTreeMap<String, Entry>>,
    /// Pushes and removals since the scenario, with a count of them so a record knows whether it is current.
    changes: Mutex<(u64, Changes)>,
    shims: Vec<ShimArtifact>,
    latency: Duration,
    bytes_per_second: f64,
    /// kmm-tui's own repository, every tag of which is held.
    own_repository: String,
}

/// Size of kmm-tui's own image: one static binary.
const OWN_IMAGE_MIB: u64 = 30;

/// Size of a release's OS image (an RHCOS container image is about this large).
const RELEASE_OS_IMAGE_MIB: u64 = 1200;

/// The repository of an image reference: without its tag or digest.
pub fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[last_slash..].rfind(':') {
        Some(colon) => &image[..last_slash + colon],
        None => image,
    }
}

/// Normalise an image reference the way runtimes do for lookups: no tag and no digest means `:latest`.
pub fn normalise(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        image.to_string()
    } else {
        format!("{image}:latest")
    }
}

impl SimRegistry {
    /// The registry a scenario describes, also holding every tag of kmm-tui's own repository `own_repository` and
    /// the OS image of every release in `os_images`: a release payload's images are published with it, so a pod can
    /// run one. A layered OS image (no release) is held only when the scenario lists it or a build pushes it.
    pub fn new(spec: &RegistrySpec, own_repository: &str, os_images: &[OsImage]) -> Self {
        let system = SYSTEM_IMAGES.iter().map(|(name, mib)| {
            let entry = Entry {
                size_bytes: mib * 1024 * 1024,
                pull_secret: None,
            };
            (normalise(name), entry)
        });
        let listed = spec.images.iter().map(|i| {
            let entry = Entry {
                size_bytes: i.size_mi_b * 1024 * 1024,
                pull_secret: i.pull_secret.clone(),
            };
            (normalise(&i.name), entry)
        });
        let releases = os_images
            .iter()
            .filter(|image| image.release.is_some())
            .map(|image| {
                let entry = Entry {
                    size_bytes: RELEASE_OS_IMAGE_MIB * 1024 * 1024,
                    pull_secret: None,
                };
                (normalise(&image.url), entry)
            });
        let images = system.chain(releases).chain(listed).collect();
        Self {
            images: Mutex::new(images),
            changes: Mutex::default(),
            shims: spec.shims.clone(),
            latency: spec.latency,
            bytes_per_second: spec.bandwidth_mi_b_per_second * 1024.0 * 1024.0,
            own_repository: own_repository.to_owned(),
        }
    }

    /// Whether the image is a tag of kmm-tui's own repository.
    pub fn is_own(&self, image: &str) -> bool {
        !image.contains('@') && repository(image) == self.own_repository
    }

    fn images(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.images.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolve an image for a pull with the given pull-secret names: its size, or why it cannot be pulled.
    /// Outages are faults, checked by the caller.
    pub fn resolve(&self, image: &str, pull_secrets: &[String]) -> Result<u64, PullError> {
        let key = normalise(image);
        let images = self.images();
        if !images.contains_key(&key) && self.is_own(image) {
            return Ok(OWN_IMAGE_MIB * 1024 * 1024);
        }
        let entry = images
            .get(&key)
            .ok_or_else(|| PullError::NotFound(image.to_string()))?;
        match &entry.pull_secret {
            Some(secret) if !pull_secrets.iter().any(|s| s == secret) => {
                Err(PullError::Unauthorized(image.to_string()))
            }
            _ => Ok(entry.size_bytes),
        }
    }

    /// Whether the image exists.
    pub fn exists(&self, image: &str) -> bool {
        self.images().contains_key(&normalise(image)) || self.is_own(image)
    }

    /// Simulated time a pull of `size_bytes` takes.
    pub fn pull_duration(&self, size_bytes: u64) -> Duration {
        self.latency + Duration::from_secs_f64(size_bytes as f64 / self.bytes_per_second)
    }

    /// Push (or overwrite) an image.
    pub fn push(&self, image: &str, size_bytes: u64) {
        let key = normalise(image);
        self.images().insert(
            key.clone(),
            Entry {
                size_bytes,
                pull_secret: None,
            },
        );
        let mut changes = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        changes.0 += 1;
        changes.1.removed.remove(&key);
        changes.1.pushed.insert(key, size_bytes);
    }

    /// Remove an image; returns whether it existed.
    pub fn remove(&self, image: &str) -> bool {
        let key = normalise(image);
        let existed = self.images().remove(&key).is_some();
        let mut changes = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        changes.0 += 1;
        changes.1.pushed.remove(&key);
        changes.1.removed.insert(key);
        existed
    }

    /// The pushes and removals since the scenario, and how many changes that is.
    pub fn changes(&self) -> (u64, Changes) {
        self.changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Take over the pushes and removals a previous run recorded.
    pub fn adopt(&self, recorded: &Changes) {
        for image in &recorded.removed {
            self.remove(image);
        }
        for (image, size) in &recorded.pushed {
            self.push(image, *size);
        }
    }

    /// The shim artifact at a URL.
    pub fn shim(&self, url: &str) -> Option<&ShimArtifact> {
        self.shims.iter().find(|s| s.url == url)
    }
}
