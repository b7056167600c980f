//! The node labels that tell schedulers (device plugins, workloads) a module is loaded: `<ns>.<name>.ready` and
//! `<ns>.<name>.version.ready`, computed as one set of changes so the node gets at most one patch per pass.

use std::collections::{BTreeMap, BTreeSet};

use super::ModuleKey;
use kmm_api::kmm::labels;

/// Common prefix of every ready label.
const PREFIX: &str = labels::NODE_LABEL_PREFIX;
/// Common suffix of every ready label.
const SUFFIX: &str = labels::READY_SUFFIX;

/// A ready label found on a node.
#[derive(Debug, PartialEq, Eq)]
enum ReadyLabel {
    /// `<ns>.<name>.ready`.
    Ready(ModuleKey),
    /// `<ns>.<name>.version.ready`.
    Version,
    /// `<name>.ready`, from KMM versions that did not name the namespace.
    Deprecated,
}

/// What kind of ready label `key` is, if it is one.
fn parse(key: &str) -> Option<ReadyLabel> {
    let body = key.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if body.is_empty() || body.starts_with("version-module.") {
        return None;
    }
    let Some((namespace, rest)) = body.split_once('.') else {
        return Some(ReadyLabel::Deprecated);
    };
    if namespace.is_empty() || rest.is_empty() {
        return None;
    }
    Some(match rest.strip_suffix(".version") {
        Some(name) if !name.is_empty() => ReadyLabel::Version,
        _ => ReadyLabel::Ready(ModuleKey::new(namespace, rest)),
    })
}

/// Changes to a node's labels (`None` removes), and the modules they show newly loaded or unloaded.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct LabelChanges {
    /// Label → new value, or `None` to remove it.
    pub patch: BTreeMap<String, Option<String>>,
    /// Modules whose ready label is added.
    pub loaded: Vec<ModuleKey>,
    /// Modules whose ready label is removed.
    pub unloaded: Vec<ModuleKey>,
}

/// The changes that bring the node's `current` labels to: a ready label (and a version label, when the version is
/// known) for each module in `loaded`, no other ready label, and no deprecated label of the `known` modules.
pub(super) fn changes(
    current: &BTreeMap<String, String>,
    loaded: &BTreeMap<ModuleKey, Option<String>>,
    known: &BTreeSet<ModuleKey>,
) -> LabelChanges {
    let mut wanted = BTreeMap::new();
    for (module, version) in loaded {
        wanted.insert(
            labels::node_ready(&module.namespace, &module.name),
            String::new(),
        );
        if let Some(version) = version {
            wanted.insert(
                labels::node_version_ready(&module.namespace, &module.name),
                version.clone(),
            );
        }
    }
    let mut changes = LabelChanges::default();
    for (key, value) in &wanted {
        if current.get(key) != Some(value) {
            changes.patch.insert(key.clone(), Some(value.clone()));
        }
    }
    // A known module's name may hold dots, so its deprecated label can read like another module's ready label.
    let deprecated: BTreeSet<String> = known
        .iter()
        .map(|module| format!("{PREFIX}{}{SUFFIX}", module.name))
        .collect();
    for key in current.keys().filter(|key| !wanted.contains_key(*key)) {
        let kind = if deprecated.contains(key) {
            Some(ReadyLabel::Deprecated)
        } else {
            parse(key)
        };
        match kind {
            Some(ReadyLabel::Ready(module)) => changes.unloaded.push(module),
            Some(ReadyLabel::Version | ReadyLabel::Deprecated) => {}
            None => continue,
        }
        changes.patch.insert(key.clone(), None);
    }
    changes.loaded = loaded
        .keys()
        .filter(|m| !current.contains_key(&labels::node_ready(&m.namespace, &m.name)))
        .cloned()
        .collect();
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn key(ns: &str, name: &str) -> ModuleKey {
        ModuleKey::new(ns, name)
    }

    #[test]
    fn labels_are_told_apart() {
        assert_eq!(
            parse("kmm.node.kubernetes.io/ns.a.b.ready"),
            Some(ReadyLabel::Ready(key("ns", "a.b")))
        );
        assert_eq!(
            parse("kmm.node.kubernetes.io/ns.a.version.ready"),
            Some(ReadyLabel::Version)
        );
        assert_eq!(
            parse("kmm.node.kubernetes.io/a.ready"),
            Some(ReadyLabel::Deprecated)
        );
        for other in [
            "kmm.node.kubernetes.io/ns.a.device-plugin-ready",
            "kmm.node.kubernetes.io/version-module.ns.x.ready",
            "kmm.node.kubernetes.io/kernel-version.full",
            "example.com/ns.a.ready",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn a_loaded_module_gets_its_labels_once() {
        let loaded = BTreeMap::from([(key("ns", "a"), Some("v2".to_owned()))]);
        let first = changes(&BTreeMap::new(), &loaded, &BTreeSet::new());
        assert_eq!(
            first.patch,
            BTreeMap::from([
                (
                    "kmm.node.kubernetes.io/ns.a.ready".to_owned(),
                    Some(String::new())
                ),
                (
                    "kmm.node.kubernetes.io/ns.a.version.ready".to_owned(),
                    Some("v2".to_owned())
                ),
            ])
        );
        assert_eq!(first.loaded, [key("ns", "a")]);
        let now = labels(&[
            ("kmm.node.kubernetes.io/ns.a.ready", ""),
            ("kmm.node.kubernetes.io/ns.a.version.ready", "v2"),
            ("kubernetes.io/hostname", "n"),
        ]);
        assert_eq!(
            changes(&now, &loaded, &BTreeSet::new()),
            LabelChanges::default()
        );
    }

    #[test]
    fn labels_of_modules_not_loaded_go_with_an_unloaded_event() {
        let now = labels(&[
            ("kmm.node.kubernetes.io/ns.a.ready", ""),
            ("kmm.node.kubernetes.io/ns.a.version.ready", "v1"),
            ("kmm.node.kubernetes.io/ns.b.ready", ""),
            ("kmm.node.kubernetes.io/b.ready", ""),
            ("kmm.node.kubernetes.io/dotted.name.ready", ""),
        ]);
        let loaded = BTreeMap::from([(key("ns", "b"), None)]);
        let known = BTreeSet::from([key("ns", "b"), key("other", "dotted.name")]);
        let result = changes(&now, &loaded, &known);
        let removed: Vec<&str> = result
            .patch
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            removed,
            [
                "kmm.node.kubernetes.io/b.ready",
                "kmm.node.kubernetes.io/dotted.name.ready",
                "kmm.node.kubernetes.io/ns.a.ready",
                "kmm.node.kubernetes.io/ns.a.version.ready",
            ]
        );
        assert_eq!(result.unloaded, [key("ns", "a")]);
        assert!(result.loaded.is_empty());
    }

    #[test]
    fn a_version_that_is_no_longer_known_is_removed() {
        let now = labels(&[
            ("kmm.node.kubernetes.io/ns.a.ready", ""),
            ("kmm.node.kubernetes.io/ns.a.version.ready", "v1"),
        ]);
        let loaded = BTreeMap::from([(key("ns", "a"), None)]);
        let result = changes(&now, &loaded, &BTreeSet::new());
        assert_eq!(
            result.patch,
            BTreeMap::from([("kmm.node.kubernetes.io/ns.a.version.ready".to_owned(), None)])
        );
        assert!(result.unloaded.is_empty() && result.loaded.is_empty());
    }
}
