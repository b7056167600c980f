//! What a Module's DRA driver needs of the cluster, and how the engine says so: Dynamic Resource Allocation is GA
//! (`resource.k8s.io/v1`) from Kubernetes 1.34, and upstream KMM refuses a DRA Module on an older cluster. The
//! engine reads the cluster's `/version` and decides with [`KubernetesVersion::supports_dra`]; the console reads
//! the condition it writes, so the condition's type and reasons live here once.

use std::fmt;

/// The first Kubernetes release (major 1) that serves `resource.k8s.io/v1`.
pub const MIN_MINOR: u32 = 34;

/// Condition type on a Module with `spec.dra`: whether the cluster can run its DRA driver.
pub const DRA_SUPPORTED: &str = "DRASupported";
/// Reason of [`DRA_SUPPORTED`] when the cluster is recent enough.
pub const DRA_SUPPORTED_REASON: &str = "Supported";
/// Reason of [`DRA_SUPPORTED`] (and of the Warning Event) when the cluster is older than 1.[`MIN_MINOR`].
pub const DRA_UNSUPPORTED_REASON: &str = "DRAUnsupported";

/// A cluster's Kubernetes release, from the `major` and `minor` fields of its `/version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubernetesVersion {
    /// Major release (1 for every Kubernetes so far).
    pub major: u32,
    /// Minor release.
    pub minor: u32,
}

impl KubernetesVersion {
    /// Read `/version`'s `major` and `minor`. Managed offerings append a `+` (`"34+"`), which is read past; an
    /// empty or non-numeric field is an error naming it, since guessing would deploy or refuse a driver wrongly.
    pub fn parse(major: &str, minor: &str) -> Result<Self, String> {
        Ok(Self {
            major: leading_number(major, "major")?,
            minor: leading_number(minor, "minor")?,
        })
    }

    /// Whether `resource.k8s.io/v1` is served, so a DRA driver and its DeviceClasses can be deployed.
    pub fn supports_dra(self) -> bool {
        self.major > 1 || (self.major == 1 && self.minor >= MIN_MINOR)
    }

    /// What the Module's condition and Event say on a cluster too old for DRA.
    pub fn unsupported_message(self) -> String {
        format!("DRA needs Kubernetes 1.{MIN_MINOR} or later; this cluster runs {self}")
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The digits `field` starts with.
fn leading_number(value: &str, field: &str) -> Result<u32, String> {
    let trimmed = value.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .map_or(trimmed, |end| &trimmed[..end]);
    digits.parse().map_err(|_| {
        format!("the cluster's version has no number in its {field} field ({value:?})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_servers_write_them() {
        let cases = [
            ("1", "34", Ok((1, 34))),
            ("1", "33", Ok((1, 33))),
            ("1", "34+", Ok((1, 34))),
            (" 1 ", "35", Ok((1, 35))),
            ("1", "", Err("minor")),
            ("", "34", Err("major")),
            ("1", "+", Err("minor")),
            ("v1", "34", Err("major")),
        ];
        for (major, minor, expected) in cases {
            let parsed = KubernetesVersion::parse(major, minor);
            match expected {
                Ok((major_number, minor_number)) => assert_eq!(
                    parsed,
                    Ok(KubernetesVersion {
                        major: major_number,
                        minor: minor_number
                    }),
                    "{major}.{minor}"
                ),
                Err(field) => {
                    let error = parsed.expect_err("an error");
                    assert!(error.contains(field), "{error}");
                }
            }
        }
    }

    #[test]
    fn dra_starts_at_one_thirty_four() {
        let version = |major, minor| KubernetesVersion { major, minor };
        assert!(!version(1, 33).supports_dra());
        assert!(version(1, 34).supports_dra());
        assert!(version(1, 40).supports_dra());
        assert!(version(2, 0).supports_dra());
        assert!(!version(0, 99).supports_dra());
        assert_eq!(
            version(1, 33).unsupported_message(),
            "DRA needs Kubernetes 1.34 or later; this cluster runs 1.33"
        );
    }
}
