//! What of its node a container can reach: the node's directories and files its pod mounts with `hostPath`
//! volumes, at the paths the container mounts them. A container sees the node's kernel (`uname`, `/proc/modules`)
//! like any process, but the node's files — the containerd configuration, the shim directory, the runtime's socket
//! and through it every namespace's images — only through such a mount, which only who may create privileged pods
//! should be given.

use serde_json::Value;

/// A container's `hostPath` mounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostMounts {
    /// (path in the container, path on the node), longest container path first so the deepest mount wins.
    mounts: Vec<(String, String)>,
}

impl HostMounts {
    /// The `hostPath` mounts of `container` in `pod` (a Pod as JSON); other volume kinds hold nothing of the node.
    pub fn of(pod: &Value, container: &str) -> Self {
        let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
        let host_path = |volume: &str| {
            volumes?
                .iter()
                .find(|v| v["name"] == volume)?
                .pointer("/hostPath/path")?
                .as_str()
                .map(str::to_owned)
        };
        let mut mounts: Vec<(String, String)> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c["name"] == container)
            .filter_map(|c| c["volumeMounts"].as_array())
            .flatten()
            .filter_map(|m| {
                let at = m["mountPath"].as_str()?;
                let sub = m["subPath"].as_str().unwrap_or("");
                let from = host_path(m["name"].as_str()?)?;
                Some((normalise(at), normalise(&join(&from, sub))))
            })
            .collect();
        mounts.sort_by_key(|(at, _)| std::cmp::Reverse(at.len()));
        Self { mounts }
    }

    /// Mounts given as (path in the container, path on the node) pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut mounts: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(at, from)| (normalise(at), normalise(from)))
            .collect();
        mounts.sort_by_key(|(at, _)| std::cmp::Reverse(at.len()));
        Self { mounts }
    }

    /// The node's path behind `path` in the container, when a mount covers it.
    pub fn on_node(&self, path: &str) -> Option<String> {
        let path = normalise(path);
        self.mounts.iter().find_map(|(at, from)| {
            let rest = if at == "/" {
                Some(path.as_str())
            } else {
                path.strip_prefix(at.as_str())
                    .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            }?;
            Some(normalise(&join(from, rest)))
        })
    }
}

/// `path` without repeated or trailing slashes, `/var/run` read as `/run` (a link to it on every distribution a
/// node runs).
fn normalise(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = format!("/{}", parts.join("/"));
    match joined.strip_prefix("/var/run") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/run{rest}"),
        _ => joined,
    }
}

fn join(base: &str, rest: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        rest.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {
            "volumes": [
                {"name": "etc", "hostPath": {"path": "/etc/containerd"}},
                {"name": "root", "hostPath": {"path": "/"}},
                {"name": "scratch", "emptyDir": {}},
            ],
            "containers": [
                {"name": "main", "volumeMounts": [
                    {"name": "etc", "mountPath": "/etc/containerd"},
                    {"name": "root", "mountPath": "/host"},
                    {"name": "scratch", "mountPath": "/tmp"},
                ]},
                {"name": "sidecar"},
            ],
        }})
    }

    #[test]
    fn host_paths_are_reached_only_where_the_container_mounts_them() {
        let main = HostMounts::of(&pod(), "main");
        assert_eq!(
            main.on_node("/etc/containerd/config.toml").as_deref(),
            Some("/etc/containerd/config.toml")
        );
        assert_eq!(
            main.on_node("/host/var/run/containerd/containerd.sock")
                .as_deref(),
            Some("/run/containerd/containerd.sock")
        );
        assert_eq!(main.on_node("/host").as_deref(), Some("/"));
        assert_eq!(
            main.on_node("/tmp/x"),
            None,
            "an emptyDir is not the node's"
        );
        assert_eq!(main.on_node("/etc/containerdx"), None);
        assert_eq!(main.on_node("/etc/hosts"), None);
        let sidecar = HostMounts::of(&pod(), "sidecar");
        assert_eq!(sidecar.on_node("/etc/containerd/config.toml"), None);
    }
}
