//! Which archive a node downloads: the `fetchStrategy.platforms` entry for the node's OS and architecture, else
//! `anonHttp`. A node no platform entry fits fails with a reason rather than falling back to `anonHttp`, whose
//! archive may be built for another CPU.

use k8s_openapi::api::core::v1::Node;

use kmm_api::shim::{FetchStrategy, PlatformArch, PlatformOs};

/// The archive one node downloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Artifact {
    /// URL of the archive.
    pub location: String,
    /// Hex SHA-256 the download checks, when the spec pins it.
    pub sha256: Option<String>,
}

/// Why a node has no archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NoArtifact {
    /// The spec names neither `platforms` nor `anonHttp`.
    NoStrategy,
    /// `platforms` lists no archive for the node's OS and architecture.
    NoPlatform {
        /// The node's operating system.
        os: String,
        /// The node's architecture.
        arch: String,
    },
}

impl std::fmt::Display for NoArtifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoArtifact::NoStrategy => {
                f.write_str("spec.fetchStrategy names neither platforms nor anonHttp")
            }
            NoArtifact::NoPlatform { os, arch } => write!(
                f,
                "spec.fetchStrategy.platforms has no archive for {os}/{arch}; add one or leave the node out of the nodeSelector"
            ),
        }
    }
}

/// The archive `node` downloads under `fetch`.
pub(super) fn resolve(fetch: &FetchStrategy, node: &Node) -> Result<Artifact, NoArtifact> {
    if !fetch.platforms.is_empty() {
        let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
        let os = info.map(|i| i.operating_system.as_str()).unwrap_or("");
        let arch = info.map(|i| i.architecture.as_str()).unwrap_or("");
        return fetch
            .platforms
            .iter()
            .find(|p| {
                os.eq_ignore_ascii_case(os_name(p.os)) && canonical_arch(arch) == arch_name(p.arch)
            })
            .map(|p| Artifact {
                location: p.location.clone(),
                sha256: p.sha256.clone().filter(|s| !s.is_empty()),
            })
            .ok_or_else(|| NoArtifact::NoPlatform {
                os: os.to_owned(),
                arch: arch.to_owned(),
            });
    }
    match &fetch.anon_http {
        Some(http) => Ok(Artifact {
            location: http.location.clone(),
            sha256: None,
        }),
        None => Err(NoArtifact::NoStrategy),
    }
}

fn os_name(os: PlatformOs) -> &'static str {
    match os {
        PlatformOs::Linux => "linux",
    }
}

/// Go-style name of a spec architecture.
fn arch_name(arch: PlatformArch) -> &'static str {
    match arch {
        PlatformArch::Amd64 | PlatformArch::X86_64 => "amd64",
        PlatformArch::Arm64 | PlatformArch::Aarch64 => "arm64",
    }
}

/// Go-style name of a node's architecture, whichever way the node spells it.
fn canonical_arch(arch: &str) -> String {
    let lower = arch.to_ascii_lowercase();
    match lower.as_str() {
        "x86_64" | "amd64" => "amd64".to_owned(),
        "aarch64" | "arm64" => "arm64".to_owned(),
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(os: &str, arch: &str) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"nodeInfo": {"kernelVersion": "", "bootID": "", "machineID": "", "systemUUID": "",
                "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
                "operatingSystem": os, "architecture": arch}},
        }))
        .expect("a node")
    }

    fn fetch(value: serde_json::Value) -> FetchStrategy {
        serde_json::from_value(value).expect("a fetch strategy")
    }

    #[test]
    fn platforms_match_by_os_and_either_spelling_of_the_architecture() {
        let strategy = fetch(serde_json::json!({
            "anonHttp": {"location": "https://x/any"},
            "platforms": [
                {"os": "linux", "arch": "aarch64", "location": "https://x/arm", "sha256": "ab"},
                {"os": "linux", "arch": "x86_64", "location": "https://x/amd"},
            ],
        }));
        assert_eq!(
            resolve(&strategy, &node("Linux", "AMD64")).map(|a| a.location),
            Ok("https://x/amd".to_owned())
        );
        assert_eq!(
            resolve(&strategy, &node("linux", "arm64")),
            Ok(Artifact {
                location: "https://x/arm".to_owned(),
                sha256: Some("ab".to_owned())
            })
        );
        assert_eq!(
            resolve(&strategy, &node("linux", "riscv64")),
            Err(NoArtifact::NoPlatform {
                os: "linux".to_owned(),
                arch: "riscv64".to_owned()
            })
        );
    }

    #[test]
    fn anon_http_serves_every_node_and_no_strategy_serves_none() {
        let http = fetch(serde_json::json!({"anonHttp": {"location": "https://x/any"}}));
        assert_eq!(
            resolve(&http, &node("linux", "riscv64")).map(|a| a.location),
            Ok("https://x/any".to_owned())
        );
        assert_eq!(
            resolve(&fetch(serde_json::json!({})), &node("linux", "amd64")),
            Err(NoArtifact::NoStrategy)
        );
    }
}
