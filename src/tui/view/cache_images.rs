//! Which images an ImageCache wants on a node and which of them the node holds, by the cache engine's rule: a node
//! holds an image when one of its `status.images[].names` is the same reference once both are in the runtime's
//! [`canonical`] form (`nginx:1.27` is `docker.io/library/nginx:1.27`, and never `nginx:1.2`).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Pod};

use kmm_api::imagecache::ImageCache;
use kmm_api::imagecache::names::{CACHE_LABEL, IMAGE_ANNOTATION, NODE_ANNOTATION, OPERATION_LABEL};
use kmm_engine::imagecache::canonical;
use kmm_engine::runtime::nodes;

/// The node label kube-fledged pins puller pods with.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// A cache's distinct images in the order its lists name them, and what each list wants, as indices into them.
#[derive(Clone, Debug, Default)]
pub struct CacheImages {
    /// The images as the spec spells them.
    pub images: Vec<String>,
    /// The same, in [`canonical`] form.
    canonical: Vec<String>,
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
                let full = canonical(image);
                let index = match result.canonical.iter().position(|known| *known == full) {
                    Some(index) => index,
                    None => {
                        result.images.push(image.clone());
                        result.canonical.push(full);
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

    /// Per image, whether `node` lists it in `status.images`. `seen` remembers which image (if any) each name a node
    /// reports is, so a matrix of thousands of nodes that report the same few names puts each in canonical form once.
    pub fn held_by<'a>(
        &self,
        node: &'a Node,
        seen: &mut HashMap<&'a str, Option<usize>>,
    ) -> Vec<bool> {
        let mut held = vec![false; self.images.len()];
        let names = node
            .status
            .as_ref()
            .and_then(|status| status.images.as_ref())
            .into_iter()
            .flatten()
            .flat_map(|image| image.names.iter().flatten());
        for name in names {
            let index = *seen
                .entry(name.as_str())
                .or_insert_with(|| self.index_of(name));
            if let Some(index) = index {
                held[index] = true;
            }
        }
        held
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
        let full = canonical(reference);
        self.canonical.iter().position(|known| *known == full)
    }
}

/// The node a puller pod works on: the engine's node annotation, else where it runs, else the node its hostname
/// selector pins it to (upstream kube-fledged's pods).
pub fn pod_node(pod: &Pod) -> Option<&str> {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(NODE_ANNOTATION))
        .map(String::as_str);
    let spec = pod.spec.as_ref()?;
    annotated.or(spec.node_name.as_deref()).or_else(|| {
        spec.node_selector
            .as_ref()?
            .get(HOSTNAME_LABEL)
            .map(String::as_str)
    })
}

/// Whether `pod` is a puller pod of the cache `namespace/name` (not one deleting images).
pub fn is_puller_of(pod: &Pod, namespace: &str, name: &str) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let label = |key: &str| {
        labels
            .and_then(|labels| labels.get(key))
            .map(String::as_str)
    };
    pod.metadata.namespace.as_deref() == Some(namespace)
        && label(CACHE_LABEL) == Some(name)
        && label(OPERATION_LABEL) != Some("delete")
}

/// The images a puller pod pulls: the engine's image annotation, else its containers' images (upstream's pods run
/// the image to cache as their container).
pub fn pod_images(pod: &Pod) -> Vec<&str> {
    if let Some(image) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(IMAGE_ANNOTATION))
    {
        return vec![image.as_str()];
    }
    pod.spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .filter_map(|container| container.image.as_deref())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(images: &[&str]) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"images": [{"names": images}]},
        }))
        .expect("a node")
    }

    fn cache(images: &[&str]) -> ImageCache {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"cacheSpec": [{"images": images}]},
        }))
        .expect("a cache")
    }

    #[test]
    fn a_node_holds_an_image_by_exact_reference_in_any_spelling() {
        let images = CacheImages::of(&cache(&[
            "nginx:1.27",
            "nginx:1.2",
            "ghcr.io/acme/tool@sha256:abc",
            "ghcr.io/acme/tool",
        ]));
        let node = node(&[
            "docker.io/library/nginx:1.27",
            "ghcr.io/acme/tool@sha256:abc",
        ]);
        let mut seen = HashMap::new();
        assert_eq!(images.held_by(&node, &mut seen), [true, false, true, false]);
        assert_eq!(seen.len(), 2, "each reported name is matched once");
    }
}
