//! The release payload the cluster moves to, as far as a day-0 build needs it: its version (from
//! `ClusterVersion/version` `status.desired`), the OS image it ships (`OS_AUTO`) and the driver toolkit matching that
//! OS (`DTK_AUTO`).
//!
//! `OS_AUTO` is read where OpenShift publishes it: the `baseOSContainerImage` of ConfigMap
//! `openshift-machine-config-operator/machine-config-osimageurl`, trusted only while its `releaseVersion` is the
//! desired release. `DTK_AUTO` follows one convention: the `driver-toolkit` repository next to the OS image's
//! repository, tagged with the release version (`quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:…` at
//! 4.15.3 → `quay.io/openshift-release-dev/driver-toolkit:4.15.3`), since the toolkit is built for the release's
//! OS and not for whatever OS the nodes run.

use k8s_openapi::api::core::v1::ConfigMap;

use kmm_api::day0::ClusterVersion;

/// Namespace of the ConfigMap naming the release's OS image.
pub(super) const OS_IMAGE_CONFIG_MAP_NAMESPACE: &str = "openshift-machine-config-operator";
/// Name of the ConfigMap naming the release's OS image.
pub(super) const OS_IMAGE_CONFIG_MAP: &str = "machine-config-osimageurl";
/// Its key holding the release version.
pub(super) const RELEASE_VERSION_KEY: &str = "releaseVersion";
/// Its key holding the release's OS image.
pub(super) const BASE_OS_IMAGE_KEY: &str = "baseOSContainerImage";

/// Build argument naming the release's OS image.
pub(super) const OS_AUTO: &str = "OS_AUTO";
/// Build argument naming the release's driver toolkit image.
pub(super) const DTK_AUTO: &str = "DTK_AUTO";

/// What the engine knows of the release the cluster moves to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Release {
    /// `status.desired.version`, e.g. `4.15.3`.
    pub version: Option<String>,
    /// The OS image of that release, when the cluster publishes it for that very release.
    pub os_image: Option<String>,
}

impl Release {
    /// The release `version` points at, with the OS image `config_map` names when it is for that release.
    pub(super) fn read(version: Option<&ClusterVersion>, config_map: Option<&ConfigMap>) -> Self {
        let version = version
            .and_then(|v| v.status.as_ref())
            .and_then(|s| s.desired.as_ref())
            .and_then(|d| d.version.clone());
        let data = config_map.and_then(|c| c.data.as_ref());
        let published_for = data.and_then(|d| d.get(RELEASE_VERSION_KEY));
        let os_image = data
            .and_then(|d| d.get(BASE_OS_IMAGE_KEY))
            .filter(|_| version.is_some() && published_for == version.as_ref())
            .cloned();
        Self { version, os_image }
    }

    /// `OS_AUTO`: the release's OS image.
    pub(super) fn os_auto(&self) -> Option<&str> {
        self.os_image.as_deref()
    }

    /// `DTK_AUTO`: the driver toolkit of the release (see the module documentation for the convention).
    pub(super) fn dtk_auto(&self) -> Option<String> {
        let (os, version) = (self.os_image.as_deref()?, self.version.as_deref()?);
        let repository = repository(os);
        let directory = repository.rsplit_once('/').map_or("", |(dir, _)| dir);
        Some(if directory.is_empty() {
            format!("driver-toolkit:{version}")
        } else {
            format!("{directory}/driver-toolkit:{version}")
        })
    }

    /// The release's y-stream (`4.15`).
    pub(super) fn y_stream(&self) -> Option<YStream> {
        YStream::of_release(self.version.as_deref()?)
    }
}

/// An image reference without its tag or digest.
pub(super) fn repository(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(repo, _)| repo);
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => image,
    }
}

/// A minor release line of OpenShift: `4.15`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YStream {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl std::fmt::Display for YStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl YStream {
    /// The y-stream of a release version (`4.15.3` → 4.15).
    pub fn of_release(version: &str) -> Option<Self> {
        let mut parts = version.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Self { major, minor })
    }

    /// The y-stream of an RHCOS `osImage` (`Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)` →
    /// 4.15): the first word shaped like an RHCOS version, whose first field is the major digit followed by the
    /// minor.
    pub fn of_os_image(os_image: &str) -> Option<Self> {
        os_image.split_whitespace().find_map(|word| {
            let first = word.split('.').next()?;
            if !word.contains('.') || first.len() < 3 || !first.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let (major, minor) = first.split_at(1);
            Some(Self {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
            })
        })
    }
}

/// The image a layered pool runs on `release`: the mapped image's repository tagged with the release version, so
/// each release's build has its own name and the mapped image is never overwritten.
pub(super) fn image_for_release(container_image: &str, release: &str) -> String {
    format!("{}:{release}", repository(container_image))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn release(desired: &str, published: &str, os: &str) -> Release {
        let version: ClusterVersion = serde_json::from_value(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {}, "status": {"desired": {"version": desired}},
        }))
        .expect("cv");
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": OS_IMAGE_CONFIG_MAP},
            "data": {RELEASE_VERSION_KEY: published, BASE_OS_IMAGE_KEY: os},
        }))
        .expect("cm");
        Release::read(Some(&version), Some(&config_map))
    }

    #[test]
    fn the_os_image_counts_only_for_the_release_it_was_published_for() {
        let current = release(
            "4.15.3",
            "4.15.3",
            "quay.io/ocp/ocp-v4.0-art-dev@sha256:415",
        );
        assert_eq!(
            current.os_auto(),
            Some("quay.io/ocp/ocp-v4.0-art-dev@sha256:415")
        );
        assert_eq!(
            current.dtk_auto().as_deref(),
            Some("quay.io/ocp/driver-toolkit:4.15.3")
        );
        assert_eq!(
            current.y_stream(),
            Some(YStream {
                major: 4,
                minor: 15
            })
        );
        let stale = release("4.15.3", "4.14.12", "quay.io/ocp/rhcos:414");
        assert_eq!((stale.os_auto(), stale.dtk_auto()), (None, None));
    }

    #[test]
    fn y_streams_of_releases_and_os_images() {
        let os = "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)";
        assert_eq!(YStream::of_os_image(os), YStream::of_release("4.14.12"));
        assert_ne!(YStream::of_os_image(os), YStream::of_release("4.15.0"));
        assert_eq!(YStream::of_os_image("Ubuntu 22.04.3 LTS"), None);
        assert_eq!(
            image_for_release("registry.local/acme/rhcos-kmod:414.92.1", "4.15.3"),
            "registry.local/acme/rhcos-kmod:4.15.3"
        );
        assert_eq!(
            repository("localhost:5000/os@sha256:ab"),
            "localhost:5000/os"
        );
        assert_eq!(repository("localhost:5000/os"), "localhost:5000/os");
    }
}
