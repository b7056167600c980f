//! Which images an ImageCache wants on a node and which of them the node holds, by the rule the cache engine uses:
//! a node holds an image when one of its `status.images[].names` is the same reference, short Docker Hub names
//! (`nginx:1.27`) and untagged ones (`:latest`) written out in full first. A cached `nginx:1.27` is not `nginx:1.2`.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::api::imagecache::ImageCache;
use crate::engine::nodes;

/// The label kube-fledged puts on a puller pod to name its ImageCache.
pub const CACHE_LABEL: &str = "imagecache";

/// The node label kube-fledged pins puller pods with.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// `reference` written out in full: registry, repository path, and a tag or digest.
pub fn normalise(reference: &str) -> String {
    let (path, suffix) = match reference.split_once('@') {
        Some((path, digest)) => (path, format!("@{digest}")),
        None => match reference.rfind(':') {
            Some(colon) if !reference[colon..].contains('/') => {
                (&reference[..colon], reference[colon..].to_owned())
            }
            _ => (reference, ":latest".to_owned()),
        },
    };
    let full_path = match path.split_once('/') {
        None => format!("docker.io/library/{path}"),
        Some((first, _))
            if !first.contains('.') && !first.contains(':') && first != "localhost" =>
        {
            format!("docker.io/{path}")
        }
        Some(_) => path.to_owned(),
    };
    format!("{full_path}{suffix}")
}

/// The images a node holds, each reference written out in full, for exact matching.
#[derive(Clone, Debug, Default)]
pub struct NodeImages(HashSet<String>);

impl NodeImages {
    /// The images `node` reports in `status.images`.
    pub fn of(node: &Node) -> NodeImages {
        NodeImages(
            node.status
                .as_ref()
                .and_then(|status| status.images.as_ref())
                .into_iter()
                .flatten()
                .flat_map(|image| image.names.iter().flatten())
                .map(|name| normalise(name))
                .collect(),
        )
    }

    /// Whether the node holds `image` (already [`normalise`]d).
    pub fn holds(&self, image: &str) -> bool {
        self.0.contains(image)
    }
}

/// A cache's distinct images in the order its lists name them, and what each list wants, as indices into them.
#[derive(Clone, Debug, Default)]
pub struct CacheImages {
    /// The images as the spec spells them.
    pub images: Vec<String>,
    /// The same, [`normalise`]d.
    pub normalised: Vec<String>,
    /// Per `cacheSpec` list: the images it names and the nodes it selects.
    lists: Vec<ImageList>,
}

/// One `cacheSpec` list: the images it names (indices into [`CacheImages::images`]) and its node selector.
type ImageList = (Vec<usize>, Option<BTreeMap<String, String>>);

impl CacheImages {
    /// The images of `cache`.
    pub fn of(cache: &ImageCache) -> CacheImages {
        let mut result = CacheImages::default();
        for list in &cache.spec.cache_spec {
            let mut indices = Vec::new();
            for image in &list.images {
                let full = normalise(image);
                let index = match result.normalised.iter().position(|known| *known == full) {
                    Some(index) => index,
                    None => {
                        result.images.push(image.clone());
                        result.normalised.push(full);
                        result.images.len() - 1
                    }
                };
                if !indices.contains(&index) {
                    indices.push(index);
                }
            }
            result.lists.push((indices, list.node_selector.clone()));
        }
        result
    }

    /// Per image, whether it is meant for `node`: each list's selector is matched once.
    pub fn wanted_mask(&self, node: &Node) -> Vec<bool> {
        let mut mask = vec![false; self.images.len()];
        for (indices, selector) in &self.lists {
            if selector
                .as_ref()
                .is_none_or(|selector| nodes::matches_selector(node, selector))
            {
                for index in indices {
                    mask[*index] = true;
                }
            }
        }
        mask
    }

    /// Whether any list selects `node`.
    pub fn targets(&self, node: &Node) -> bool {
        self.lists.iter().any(|(_, selector)| {
            selector
                .as_ref()
                .is_none_or(|selector| nodes::matches_selector(node, selector))
        })
    }

    /// The index of the image a container of a puller pod runs, if it is one of the cache's.
    pub fn index_of(&self, reference: &str) -> Option<usize> {
        let full = normalise(reference);
        self.normalised.iter().position(|known| *known == full)
    }
}

/// The node a puller pod runs on, or is pinned to: its `nodeName`, else its hostname node selector.
pub fn pod_node(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    spec.node_name.as_deref().or_else(|| {
        spec.node_selector
            .as_ref()?
            .get(HOSTNAME_LABEL)
            .map(String::as_str)
    })
}

/// Whether `pod` is a puller pod of the cache `namespace/name`.
pub fn is_puller_of(pod: &Pod, namespace: &str, name: &str) -> bool {
    pod.metadata.namespace.as_deref() == Some(namespace)
        && pod
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(CACHE_LABEL))
            .is_some_and(|cache| cache == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_tags_and_digests_are_written_out() {
        assert_eq!(normalise("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(normalise("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(normalise("acme/tool:2"), "docker.io/acme/tool:2");
        assert_eq!(
            normalise("ghcr.io/acme/inference:2.1"),
            "ghcr.io/acme/inference:2.1"
        );
        assert_eq!(
            normalise("localhost:5000/tool"),
            "localhost:5000/tool:latest"
        );
        assert_eq!(
            normalise("redis@sha256:abc"),
            "docker.io/library/redis@sha256:abc"
        );
        assert_eq!(
            normalise("docker.io/library/nginx:1.27"),
            normalise("nginx:1.27")
        );
    }

    #[test]
    fn a_tag_is_matched_exactly_not_as_a_prefix() {
        assert_ne!(normalise("nginx:1.27"), normalise("nginx:1.2"));
    }
}
