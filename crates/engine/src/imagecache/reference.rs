//! Image references compared the way a container runtime resolves them, so that "is this image cached on the node"
//! is an exact question: `nginx:1.27` is `docker.io/library/nginx:1.27` and never `nginx:1.2`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kmm_api::image_ref::comparison_key;

/// Most images a kubelet lists in `status.images` by default (`nodeStatusMaxImages`): a node listing this many may
/// hold more than it shows.
pub(super) const NODE_STATUS_MAX_IMAGES: usize = 50;

/// `reference` in the runtime's canonical form ([`comparison_key`]): a registry host (`docker.io` when there is
/// none), `library/` for Docker Hub's official images, `:latest` when it has neither tag nor digest, and the digest
/// alone when it has both. Surrounding whitespace is ignored; a reference that does not parse stays as written and
/// so matches nothing a node reports.
pub fn canonical(reference: &str) -> String {
    comparison_key(reference.trim())
}

/// What a node's `status.images` says it holds, in canonical form.
#[derive(Debug, Default)]
pub(super) struct NodeImages {
    names: HashSet<String>,
    /// The node lists as many images as a kubelet reports: an image it does not list may still be there.
    pub truncated: bool,
    /// The resourceVersion of the node read.
    version: Option<String>,
}

impl NodeImages {
    /// The images `node` reports.
    pub(super) fn of(node: &Node) -> Self {
        let images = node
            .status
            .as_ref()
            .and_then(|s| s.images.as_deref())
            .unwrap_or_default();
        let names = images
            .iter()
            .flat_map(|i| i.names.iter().flatten())
            .map(|name| canonical(name))
            .collect();
        Self {
            names,
            truncated: images.len() >= NODE_STATUS_MAX_IMAGES,
            version: node.metadata.resource_version.clone(),
        }
    }

    /// Whether the node lists `image` (tag or digest form, exactly).
    pub(super) fn holds(&self, image: &str) -> bool {
        self.holds_canonical(&canonical(image))
    }

    /// Whether the node lists the image whose [`canonical`] form is `reference`.
    pub(super) fn holds_canonical(&self, reference: &str) -> bool {
        self.names.contains(reference)
    }
}

/// What every node holds, kept from pass to pass and read again only from the nodes whose resourceVersion moved:
/// reading the image lists of thousands of nodes anew took a third of every pass.
#[derive(Debug, Default)]
pub(super) struct NodeImagesMemo {
    by_node: HashMap<String, Arc<NodeImages>>,
}

impl NodeImagesMemo {
    /// Bring the memo up to `nodes` (nodes that left are forgotten) and return it.
    pub(super) fn refresh(&mut self, nodes: &[Arc<Node>]) -> &HashMap<String, Arc<NodeImages>> {
        let mut previous = std::mem::take(&mut self.by_node);
        for node in nodes {
            let Some(name) = node.metadata.name.as_deref() else {
                continue;
            };
            let images = match previous.remove(name) {
                Some(known)
                    if known.version.is_some()
                        && known.version == node.metadata.resource_version =>
                {
                    known
                }
                _ => Arc::new(NodeImages::of(node)),
            };
            self.by_node.insert(name.to_owned(), images);
        }
        &self.by_node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_gain_docker_hub_and_latest() {
        assert_eq!(canonical("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(canonical("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(canonical("acme/app:2"), "docker.io/acme/app:2");
        assert_eq!(
            canonical("docker.io/library/nginx:1.27"),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(
            canonical("index.docker.io/nginx:1.27"),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(canonical("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(
            canonical("ghcr.io/acme/inference:2.2"),
            "ghcr.io/acme/inference:2.2"
        );
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(
            canonical(&format!("nginx@{digest}")),
            format!("docker.io/library/nginx@{digest}")
        );
        assert_eq!(
            canonical(&format!("nginx:1.27@{digest}")),
            format!("docker.io/library/nginx@{digest}")
        );
        assert_eq!(
            canonical(" busybox:1.36 "),
            "docker.io/library/busybox:1.36"
        );
        assert_eq!(canonical("Not An Image"), "Not An Image");
    }

    fn node(names: &[&[&str]]) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"images": names.iter().map(|n| serde_json::json!({"names": n})).collect::<Vec<_>>()},
        }))
        .expect("node")
    }

    #[test]
    fn matching_is_exact_in_tag_and_digest_forms() {
        let digest = format!("sha256:{}", "01".repeat(32));
        let images = NodeImages::of(&node(&[&[
            &format!("docker.io/library/nginx@{digest}"),
            "docker.io/library/nginx:1.27",
        ]]));
        assert!(images.holds("nginx:1.27"));
        assert!(images.holds("docker.io/library/nginx:1.27"));
        assert!(images.holds(&format!("nginx@{digest}")));
        assert!(images.holds(&format!("nginx:1.27@{digest}")));
        assert!(!images.holds("nginx:1.2"));
        assert!(!images.holds("nginx:1.27.1"));
        assert!(!images.holds("nginx"));
        assert!(!images.truncated);
    }

    #[test]
    fn a_full_list_may_hide_images() {
        let names: Vec<Vec<String>> = (0..NODE_STATUS_MAX_IMAGES)
            .map(|i| vec![format!("img:{i}")])
            .collect();
        let refs: Vec<Vec<&str>> = names
            .iter()
            .map(|n| n.iter().map(String::as_str).collect())
            .collect();
        let slices: Vec<&[&str]> = refs.iter().map(Vec::as_slice).collect();
        assert!(NodeImages::of(&node(&slices)).truncated);
    }
}
