//! What a cache asks for, read from its spec and the nodes: the images each node should hold, the images that left
//! the spec and must leave the nodes, and the (image, node) pairs a re-pull annotation names.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use kmm_api::imagecache::CacheSpecImages;

/// Images per node name, each image once, in the order the spec lists them.
pub(super) type NodeImages = BTreeMap<String, Vec<String>>;

/// Whether `selector` (every node when unset) selects `node`.
fn selects(selector: Option<&BTreeMap<String, String>>, node: &Node) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let labels = node.metadata.labels.as_ref();
    selector
        .iter()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

/// The images every live node should hold under `spec`; nodes no list selects are absent.
pub(super) fn targets(spec: &[CacheSpecImages], nodes: &[Arc<Node>]) -> NodeImages {
    let mut wanted = NodeImages::new();
    for node in nodes
        .iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
    {
        let Some(name) = node.metadata.name.as_deref() else {
            continue;
        };
        for list in spec {
            if !selects(list.node_selector.as_ref(), node) {
                continue;
            }
            let images = wanted.entry(name.to_owned()).or_default();
            for image in &list.images {
                if !images.contains(image) {
                    images.push(image.clone());
                }
            }
        }
    }
    wanted
}

/// The images `applied` puts on nodes that `wanted` no longer does: they are deleted from those nodes.
pub(super) fn removed(
    applied: &[CacheSpecImages],
    wanted: &NodeImages,
    nodes: &[Arc<Node>],
) -> NodeImages {
    let mut removed = targets(applied, nodes);
    for (node, images) in removed.iter_mut() {
        let keep = wanted.get(node);
        images.retain(|image| !keep.is_some_and(|k| k.contains(image)));
    }
    removed.retain(|_, images| !images.is_empty());
    removed
}

/// The (node, image) pairs a re-pull annotation value names among `wanted`: `<image>@<node>` entries and `<image>`
/// entries (that image on every node the cache puts it on), comma-separated. Entries naming an image or node the
/// cache does not pair are ignored.
pub(super) fn repull_pairs(value: &str, wanted: &NodeImages) -> BTreeSet<(String, String)> {
    let mut pairs = BTreeSet::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (image, node) = match entry.rsplit_once('@') {
            // `repo@sha256:…` is a digest reference, not an image on a node.
            Some((image, node)) if !node.contains(':') => (image, Some(node)),
            _ => (entry, None),
        };
        for (name, images) in wanted {
            if node.is_none_or(|n| n == name) && images.iter().any(|i| i == image) {
                pairs.insert((name.clone(), image.to_owned()));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Arc<Node> {
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        Arc::new(
            serde_json::from_value(
                serde_json::json!({"metadata": {"name": name, "labels": labels}}),
            )
            .expect("node"),
        )
    }

    fn list(images: &[&str], selector: Option<(&str, &str)>) -> CacheSpecImages {
        CacheSpecImages {
            images: images.iter().map(|i| i.to_string()).collect(),
            node_selector: selector.map(|(k, v)| BTreeMap::from([(k.to_owned(), v.to_owned())])),
        }
    }

    #[test]
    fn lists_go_to_the_nodes_their_selectors_match() {
        let nodes = [node("a", &[("tier", "backend")]), node("b", &[])];
        let spec = [
            list(&["web:1"], None),
            list(&["db:1", "web:1"], Some(("tier", "backend"))),
        ];
        let wanted = targets(&spec, &nodes);
        assert_eq!(wanted["a"], ["web:1", "db:1"]);
        assert_eq!(wanted["b"], ["web:1"]);
    }

    #[test]
    fn images_leaving_the_spec_leave_the_nodes_that_had_them() {
        let nodes = [node("a", &[("tier", "backend")]), node("b", &[])];
        let applied = [list(&["web:1", "old:1"], None)];
        let wanted = targets(&[list(&["web:1"], None)], &nodes);
        let removed = removed(&applied, &wanted, &nodes);
        assert_eq!(removed["a"], ["old:1"]);
        assert_eq!(removed["b"], ["old:1"]);
        assert!(super::removed(&[list(&["web:1"], None)], &wanted, &nodes).is_empty());
    }

    #[test]
    fn repull_entries_name_an_image_on_one_node_or_on_all() {
        let nodes = [node("a", &[]), node("b", &[])];
        let wanted = targets(&[list(&["web:1", "db@sha256:00"], None)], &nodes);
        let pairs = repull_pairs("web:1@b, db@sha256:00,ghost:1,web:1@zz", &wanted);
        let expected: BTreeSet<(String, String)> =
            [("a", "db@sha256:00"), ("b", "db@sha256:00"), ("b", "web:1")]
                .iter()
                .map(|(n, i)| (n.to_string(), i.to_string()))
                .collect();
        assert_eq!(pairs, expected);
    }
}
