//! The pods the engine runs, revision by revision: never two alive for one purpose (a worker per node and Module, an
//! installer per node and Shim, a cache pull per node and image, a pull, build or sign per image, a read of each OS
//! image's kernel), and never more unfinished installers for a rolling Shim than its `maxUpdate`.
//!
//! A pod is alive from its creation until it reaches `Succeeded` or `Failed` or leaves the API: a pod stuck in
//! `ImagePullBackOff` is alive (its kubelet keeps pulling), whatever an engine has decided about it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Pod;
use kmm_api::imagecache::names as cache_names;
use kmm_api::kmm::labels;
use kmm_api::kmm::os_image_kernels;
use kmm_api::shim::names as shim_names;

use super::Violations;

/// What a live pod is for.
#[derive(Clone, Debug)]
struct Alive {
    name: String,
    purpose: String,
    /// The Shim, for an installer.
    installs: Option<String>,
}

/// Live pods and what they are for.
#[derive(Default)]
pub(super) struct Pods {
    alive: HashMap<String, Alive>,
    by_purpose: HashMap<String, BTreeSet<String>>,
    installers: HashMap<String, BTreeSet<String>>,
    /// `maxUpdate` of each rolling Shim.
    max_update: HashMap<String, usize>,
    /// Purposes and Shims in violation now, so each episode is reported once.
    over: BTreeSet<String>,
    /// During a relist: the pods listed so far (checks wait for the whole list).
    relisting: Option<BTreeSet<String>>,
    /// The most installers unfinished at once, per Shim.
    pub most_installing: BTreeMap<String, usize>,
    /// Pods seen, by kind of purpose.
    pub seen: BTreeMap<&'static str, u64>,
    /// The pods counted in `seen` that are still in the API.
    uids: BTreeSet<String>,
}

impl Pods {
    /// A Shim's `maxUpdate` (rolling Shims with a count only; a percentage would need the targets of the moment).
    pub(super) fn shim(&mut self, name: &str, max_update: Option<usize>) {
        match max_update {
            Some(max) => self.max_update.insert(name.to_owned(), max),
            None => self.max_update.remove(name),
        };
    }

    /// A revision of a pod.
    pub(super) fn seen(&mut self, pod: &Pod, revision: u64, violations: &mut Violations) {
        let Some(uid) = pod.metadata.uid.clone() else {
            return;
        };
        if let Some(listed) = &mut self.relisting {
            listed.insert(uid.clone());
        }
        let Some((kind, purpose, installs)) = purpose(pod) else {
            return;
        };
        if self.uids.insert(uid.clone()) {
            *self.seen.entry(kind).or_default() += 1;
            let attempt = pod
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(cache_names::ATTEMPT_ANNOTATION));
            if attempt.is_some_and(|a| a != "1") {
                *self.seen.entry("cache puller retrying").or_default() += 1;
            }
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            self.remove(&uid);
        } else {
            let name = pod.metadata.name.clone().unwrap_or_default();
            self.remove(&uid);
            self.by_purpose
                .entry(purpose.clone())
                .or_default()
                .insert(uid.clone());
            if let Some(shim) = &installs {
                self.installers
                    .entry(shim.clone())
                    .or_default()
                    .insert(uid.clone());
            }
            self.alive.insert(
                uid,
                Alive {
                    name,
                    purpose,
                    installs,
                },
            );
        }
        if self.relisting.is_none() {
            self.check(revision, violations);
        }
    }

    /// A pod left the API.
    pub(super) fn deleted(&mut self, pod: &Pod, revision: u64, violations: &mut Violations) {
        if let Some(uid) = &pod.metadata.uid {
            self.remove(uid);
            self.uids.remove(uid);
        }
        if self.relisting.is_none() {
            self.check(revision, violations);
        }
    }

    /// The pod watch relists: hold the checks until the list is complete.
    pub(super) fn relist(&mut self) {
        self.relisting = Some(BTreeSet::new());
    }

    /// The relist is complete: pods it did not list are gone.
    pub(super) fn relisted(&mut self, revision: u64, violations: &mut Violations) {
        let Some(listed) = self.relisting.take() else {
            return;
        };
        let gone: Vec<String> = self
            .alive
            .keys()
            .filter(|uid| !listed.contains(*uid))
            .cloned()
            .collect();
        for uid in gone {
            self.remove(&uid);
            self.uids.remove(&uid);
        }
        self.check(revision, violations);
    }

    fn remove(&mut self, uid: &str) {
        let Some(alive) = self.alive.remove(uid) else {
            return;
        };
        if let Some(uids) = self.by_purpose.get_mut(&alive.purpose) {
            uids.remove(uid);
            if uids.is_empty() {
                self.by_purpose.remove(&alive.purpose);
            }
        }
        if let Some(shim) = &alive.installs
            && let Some(uids) = self.installers.get_mut(shim)
        {
            uids.remove(uid);
        }
    }

    fn names(&self, uids: &BTreeSet<String>) -> String {
        uids.iter()
            .filter_map(|uid| self.alive.get(uid).map(|a| a.name.clone()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Report every purpose with two live pods and every Shim over its `maxUpdate`, once per episode.
    fn check(&mut self, revision: u64, violations: &mut Violations) {
        let mut over = BTreeSet::new();
        for (purpose, uids) in &self.by_purpose {
            if uids.len() > 1 {
                let key = format!("purpose {purpose}");
                if !self.over.contains(&key) {
                    violations.record(
                        "two live pods for one purpose",
                        format!("{purpose}: {} at revision {revision}", self.names(uids)),
                    );
                }
                over.insert(key);
            }
        }
        for (shim, uids) in &self.installers {
            let most = self.most_installing.entry(shim.clone()).or_default();
            *most = (*most).max(uids.len());
            let Some(max) = self.max_update.get(shim) else {
                continue;
            };
            if uids.len() > *max {
                let key = format!("shim {shim}");
                if !self.over.contains(&key) {
                    violations.record(
                        "more installers unfinished than maxUpdate",
                        format!(
                            "Shim {shim}: {} unfinished (maxUpdate {max}) at revision {revision}: {}",
                            uids.len(),
                            self.names(uids)
                        ),
                    );
                }
                over.insert(key);
            }
        }
        self.over = over;
    }
}

/// The kind of purpose, the purpose, and the Shim an installer works for.
fn purpose(pod: &Pod) -> Option<(&'static str, String, Option<String>)> {
    let labels = pod.metadata.labels.as_ref()?;
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    if labels.contains_key(labels::WORKER_ACTION) {
        let module = labels.get(labels::MODULE_NAME)?;
        return Some((
            "worker",
            format!("worker of {namespace}/{module} on {}", node?),
            None,
        ));
    }
    if let (Some(shim), Some(operation)) = (
        labels.get(shim_names::SHIM_NAME),
        labels.get(shim_names::OPERATION),
    ) {
        let node = annotations.get(shim_names::NODE_NAME).cloned().or(node)?;
        return Some((
            "installer",
            format!("{operation} of Shim {shim} on {node}"),
            Some(shim.clone()),
        ));
    }
    if let (Some(cache), Some(image_hash)) = (
        labels.get(cache_names::CACHE_LABEL),
        labels.get(cache_names::IMAGE_HASH_LABEL),
    ) {
        let node = labels.get(cache_names::NODE_LABEL).cloned().or(node)?;
        // Pulls and refreshes are one purpose (having the image); deleting it is another.
        let work = match labels.get(cache_names::OPERATION_LABEL).map(String::as_str) {
            Some("delete") => "delete",
            _ => "pull",
        };
        return Some((
            "cache puller",
            format!("{work} of cache {namespace}/{cache} image {image_hash} on {node}"),
            None,
        ));
    }
    if let Some(owner) = labels.get(labels::IMAGE_OWNER) {
        return Some(("image pull", format!("pull of {image} for {owner}"), None));
    }
    if labels.contains_key(os_image_kernels::POD_LABEL) {
        return Some(("OS image read", format!("read of OS image {image}"), None));
    }
    if let Some(kind) = labels.get(labels::RESOURCE_TYPE) {
        let module = labels.get(labels::MODULE_NAME).cloned().unwrap_or_default();
        let kernel = labels
            .get(labels::TARGET_KERNEL)
            .cloned()
            .unwrap_or_default();
        return Some((
            "build or sign",
            format!("{kind} of {namespace}/{module} for {kernel}"),
            None,
        ));
    }
    None
}
