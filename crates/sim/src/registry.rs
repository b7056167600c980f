//! The simulated container registry: which images exist, how long pulls take, and the shim artifacts Shims
//! download. Build and sign pods push to it; faults can take it down or remove images. Images are held under
//! the name containerd gives them ([`comparison_key`]), so `busybox:1.36` and `docker.io/library/busybox:1.36` are
//! one image.
//!
//! Every image has a manifest digest, and is held under it too (`repository@sha256:…`): a push to a tag that
//! already exists moves the tag to the new digest and keeps the old one, so a reference pinned to a digest pulls
//! exactly what it was pinned to, as a real registry serves it until its garbage collection.

mod image_config;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kmm_api::image_ref::{ImageRef, comparison_key};
use sha2::{Digest, Sha256};

pub(crate) use self::image_config::{ImageConfig, container_argv};
use super::scenario::{ImageSpec, OsImage, RegistrySpec, Scenario, ShimArtifact};

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
pub(crate) const SYSTEM_IMAGES: &[(&str, u64)] = &[
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
    /// The config the scenario declares for the image; `None` when it declares none (then the built-in defaults
    /// apply).
    config: Option<ImageConfig>,
    /// The manifest digest, `sha256:…`.
    digest: String,
}

impl Entry {
    /// An image of `size_bytes` anyone may pull, with no declared config, whose digest is `digest`.
    fn public(size_bytes: u64, digest: String) -> Self {
        Self {
            size_bytes,
            pull_secret: None,
            config: None,
            digest,
        }
    }

    /// The entry a scenario's image declares.
    fn listed(spec: &ImageSpec) -> Self {
        let declared = spec.entrypoint.is_some() || spec.cmd.is_some();
        Self {
            size_bytes: spec.size_mi_b * 1024 * 1024,
            pull_secret: spec.pull_secret.clone(),
            config: declared.then(|| ImageConfig {
                entrypoint: spec.entrypoint.clone().unwrap_or_default(),
                cmd: spec.cmd.clone().unwrap_or_default(),
            }),
            digest: content_digest(&["listed", &comparison_key(&spec.name)]),
        }
    }
}

/// A `sha256:…` digest of `parts`: what an image made of them would be addressed by. An image the scenario lists
/// gets one from its name, a pushed image one from what pushed it, so every build pushes a new digest.
pub(crate) fn content_digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// `key` (a normalised reference) as its digest names it: `repository@sha256:…`.
fn digest_key(key: &str, digest: &str) -> String {
    let repository = ImageRef::parse(key).map_or_else(|_| key.to_owned(), |r| r.repository());
    format!("{repository}@{digest}")
}

/// What the registry holds beyond and short of what the scenario lists: the images pushed (with their sizes) and
/// the listed images removed. It is all a restarted simulation needs to find the registry as it was.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    /// Images pushed, by normalised reference (a tag, or the digest a push made), with their size in bytes.
    pub pushed: BTreeMap<String, u64>,
    /// The digest each pushed tag names (a record written before digests were kept has none: such a tag gets one
    /// made from its name).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub digests: BTreeMap<String, String>,
    /// Images removed (those the scenario lists among them), by normalised reference.
    pub removed: std::collections::BTreeSet<String>,
}

/// A registry several simulated clusters pull from and push to, as the clusters of a fleet all reach one quay.io:
/// an image a hub builds is there for every spoke.
#[derive(Debug, Clone)]
pub struct SharedRegistry(pub(crate) Arc<SimRegistry>);

impl SharedRegistry {
    /// The registry `scenario` describes, for several clusters to share.
    pub fn new(scenario: &Scenario) -> Self {
        Self(Arc::new(SimRegistry::new(
            &scenario.registry,
            &scenario.controller_image,
            &scenario.os_images,
        )))
    }
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

impl SimRegistry {
    /// The registry a scenario describes, also holding every tag of kmm-tui's own repository `own_repository` and
    /// the OS image of every release in `os_images`: a release payload's images are published with it, so a pod can
    /// run one. A layered OS image (no release) is held only when the scenario lists it or a build pushes it.
    pub fn new(spec: &RegistrySpec, own_repository: &str, os_images: &[OsImage]) -> Self {
        let public = |name: &str, mib: u64| {
            let key = comparison_key(name);
            let digest = content_digest(&["listed", &key]);
            (key, Entry::public(mib * 1024 * 1024, digest))
        };
        let system = SYSTEM_IMAGES.iter().map(|(name, mib)| public(name, *mib));
        let listed = spec
            .images
            .iter()
            .map(|image| (comparison_key(&image.name), Entry::listed(image)));
        let releases = os_images
            .iter()
            .filter(|image| image.release.is_some())
            .map(|image| public(&image.url, RELEASE_OS_IMAGE_MIB));
        let tagged: Vec<(String, Entry)> = system.chain(releases).chain(listed).collect();
        let by_digest: Vec<(String, Entry)> = tagged
            .iter()
            .map(|(key, entry)| (digest_key(key, &entry.digest), entry.clone()))
            .collect();
        let images = tagged.into_iter().chain(by_digest).collect();
        Self {
            images: Mutex::new(images),
            changes: Mutex::default(),
            shims: spec.shims.clone(),
            latency: spec.latency,
            bytes_per_second: spec.bandwidth_mi_b_per_second * 1024.0 * 1024.0,
            own_repository: ImageRef::parse(own_repository)
                .map_or_else(|_| own_repository.to_owned(), |r| r.repository()),
        }
    }

    /// Whether the image is a tag (not a digest) of kmm-tui's own repository, however either is spelled.
    pub fn is_own(&self, image: &str) -> bool {
        ImageRef::parse(image)
            .is_ok_and(|r| r.digest().is_none() && r.repository() == self.own_repository)
    }

    fn images(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.images.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolve an image for a pull with the given pull-secret names: its size, or why it cannot be pulled.
    /// Outages are faults, checked by the caller.
    pub fn resolve(&self, image: &str, pull_secrets: &[String]) -> Result<u64, PullError> {
        let key = comparison_key(image);
        let images = self.images();
        if !images.contains_key(&key) && self.is_own(image) {
            return Ok(OWN_IMAGE_MIB * 1024 * 1024);
        }
        let entry = images
            .get(&key)
            .ok_or_else(|| PullError::NotFound(key.clone()))?;
        match &entry.pull_secret {
            Some(secret) if !pull_secrets.iter().any(|s| s == secret) => {
                Err(PullError::Unauthorized(key))
            }
            _ => Ok(entry.size_bytes),
        }
    }

    /// The manifest digest (`sha256:…`) of an image that exists, however it is spelled; `None` for a missing
    /// image and for kmm-tui's own tags (the runtime makes one up for those).
    pub fn digest(&self, image: &str) -> Option<String> {
        self.images()
            .get(&comparison_key(image))
            .map(|entry| entry.digest.clone())
    }

    /// Whether the image exists.
    pub fn exists(&self, image: &str) -> bool {
        self.images().contains_key(&comparison_key(image)) || self.is_own(image)
    }

    /// The ENTRYPOINT and CMD a container of `image` runs when it sets no `command` or `args`: what the scenario
    /// declares for the image (either field declared defines both), else what the well-known image of its
    /// repository ships with (busybox, nginx, the pause image…), else nothing.
    pub fn image_config(&self, image: &str) -> ImageConfig {
        let declared = self
            .images()
            .get(&comparison_key(image))
            .and_then(|entry| entry.config.clone());
        declared.unwrap_or_else(|| image_config::built_in(image))
    }

    /// Simulated time a pull of `size_bytes` takes.
    pub fn pull_duration(&self, size_bytes: u64) -> Duration {
        self.latency + Duration::from_secs_f64(size_bytes as f64 / self.bytes_per_second)
    }

    /// Push (or overwrite) an image whose manifest digest is `digest` (`sha256:…`): the tag moves to it, and the
    /// image is held under the digest too.
    pub fn push(&self, image: &str, size_bytes: u64, digest: &str) {
        let key = comparison_key(image);
        let pinned = digest_key(&key, digest);
        let entry = Entry::public(size_bytes, digest.to_owned());
        {
            let mut images = self.images();
            images.insert(pinned.clone(), entry.clone());
            images.insert(key.clone(), entry);
        }
        let mut changes = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        changes.0 += 1;
        for name in [&key, &pinned] {
            changes.1.removed.remove(name);
            changes.1.pushed.insert(name.clone(), size_bytes);
        }
        if key != pinned {
            changes.1.digests.insert(key, digest.to_owned());
        }
    }

    /// Remove an image, under the name given and the digest it names: what it pointed to is gone. Returns whether
    /// it existed.
    pub fn remove(&self, image: &str) -> bool {
        let key = comparison_key(image);
        let removed = {
            let mut images = self.images();
            let removed = images.remove(&key);
            if let Some(entry) = &removed {
                images.remove(&digest_key(&key, &entry.digest));
            }
            removed
        };
        let mut names = vec![key];
        if let Some(entry) = &removed {
            let pinned = digest_key(&names[0], &entry.digest);
            if pinned != names[0] {
                names.push(pinned);
            }
        }
        let mut changes = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        changes.0 += 1;
        for name in names {
            changes.1.pushed.remove(&name);
            changes.1.digests.remove(&name);
            changes.1.removed.insert(name);
        }
        removed.is_some()
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
            let digest = match ImageRef::parse(image)
                .ok()
                .and_then(|r| r.digest().map(str::to_owned))
            {
                Some(named) => named,
                None => recorded
                    .digests
                    .get(image)
                    .cloned()
                    .unwrap_or_else(|| content_digest(&["listed", image])),
            };
            self.push(image, *size, &digest);
        }
    }

    /// The shim artifact at a URL.
    pub fn shim(&self, url: &str) -> Option<&ShimArtifact> {
        self.shims.iter().find(|s| s.url == url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// The registry of a scenario listing `images` (YAML list items).
    fn registry(images: &str) -> SimRegistry {
        let text = format!("registry:\n  images:\n{images}");
        let scenario = Scenario::parse(&text, "test", None).unwrap_or_else(|e| panic!("{e}"));
        SimRegistry::new(&scenario.registry, kmm_api::IMAGE_REPOSITORY, &[])
    }

    #[test]
    fn every_spelling_of_an_image_finds_it() {
        let registry = registry("    - {name: docker.io/library/busybox:1.36, sizeMiB: 2}\n");
        assert_eq!(registry.resolve("busybox:1.36", &[]), Ok(2 * 1024 * 1024));
        assert!(registry.exists("library/busybox:1.36"));
        assert!(!registry.exists("busybox"));
        assert_eq!(
            registry.resolve("busybox:1.3", &[]),
            Err(PullError::NotFound(
                "docker.io/library/busybox:1.3".to_owned()
            ))
        );
        registry.push("quay.io/org/app", 5, &content_digest(&["app"]));
        assert!(registry.exists("quay.io/org/app:latest"));
        assert!(registry.remove("quay.io/org/app:latest"));
        assert!(!registry.exists("quay.io/org/app"));
    }

    #[test]
    fn a_push_moves_the_tag_and_the_old_digest_still_pulls() {
        let listing = "    - {name: quay.io/org/kmod:1, sizeMiB: 3}\n";
        let restarted = registry(listing);
        let registry = registry(listing);
        let listed = registry
            .digest("quay.io/org/kmod:1")
            .expect("a listed image has a digest");
        let pinned = |digest: &str| format!("quay.io/org/kmod:1@{digest}");
        assert_eq!(registry.resolve(&pinned(&listed), &[]), Ok(3 * 1024 * 1024));

        let rebuilt = content_digest(&["a build"]);
        registry.push("quay.io/org/kmod:1", 5, &rebuilt);
        assert_eq!(registry.digest("quay.io/org/kmod:1"), Some(rebuilt.clone()));
        assert_eq!(registry.resolve(&pinned(&rebuilt), &[]), Ok(5));
        assert_eq!(
            registry.resolve(&pinned(&listed), &[]),
            Ok(3 * 1024 * 1024),
            "the digest the tag named before is still there"
        );
        let unknown = content_digest(&["never pushed"]);
        assert!(matches!(
            registry.resolve(&pinned(&unknown), &[]),
            Err(PullError::NotFound(_))
        ));

        // A registry restarted from the record finds the tag where the push left it.
        restarted.adopt(&registry.changes().1);
        assert_eq!(
            restarted.digest("quay.io/org/kmod:1"),
            Some(rebuilt.clone())
        );
        assert_eq!(restarted.resolve(&pinned(&rebuilt), &[]), Ok(5));

        assert!(registry.remove("quay.io/org/kmod:1"));
        assert!(
            !registry.exists(&pinned(&rebuilt)),
            "what the tag named is gone"
        );
    }

    #[test]
    fn the_own_repository_is_recognised_however_spelled() {
        let registry = registry("    - {name: quay.io/org/app:1}\n");
        let own = kmm_api::IMAGE_REPOSITORY;
        assert!(registry.is_own(&format!("{own}:v1")));
        assert!(registry.is_own(own));
        assert!(!registry.is_own(&format!("{own}@sha256:{}", "a".repeat(64))));
        assert!(!registry.is_own("quay.io/other/kmm-tui:v1"));
    }

    #[test]
    fn a_declared_config_wins_over_the_built_in_one() {
        let registry = registry(
            "    - {name: busybox:custom, entrypoint: [/bin/app]}\n    - {name: busybox:1.36}\n    - {name: quay.io/org/app:1, cmd: [serve]}\n",
        );
        assert_eq!(
            registry.image_config("docker.io/library/busybox:custom"),
            ImageConfig {
                entrypoint: vec!["/bin/app".to_owned()],
                cmd: Vec::new(),
            }
        );
        assert_eq!(registry.image_config("busybox:1.36").cmd, ["sh"]);
        assert_eq!(registry.image_config("quay.io/org/app:1").cmd, ["serve"]);
        assert_eq!(
            registry.image_config("quay.io/org/unknown:1"),
            ImageConfig::default()
        );
    }
}
