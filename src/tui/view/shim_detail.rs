//! The Shim detail pane's model: every node the Shim targets or still occupies, with its state, batch, the
//! artifact it gets, since when and why; and the events of the Shim and its installer pods.
//!
//! The engine lists in `status.nodeStatuses` only the nodes still on their way (waiting, installing, failed,
//! uninstalling), so that the status stays small on thousands of nodes; the nodes it is done with carry the node
//! label `<shim>=provisioned`. A row therefore starts from the node label, is refined by the status entry, and
//! names the newest installer pod on that node, whose log `l` shows.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::tui::data::{ClusterData, Kind};
use crate::tui::target::Target;
use kmm_api::shim::names::{self, node_batch_annotation};
use kmm_api::shim::{PlatformArch, PlatformArtifact, Shim, ShimNodeState, ShimNodeStatus};

use super::events::EventRow;
use super::shims::ShimRow;
use super::{Health, age, matches_filter};

/// How many recent events the detail pane lists.
pub const RECENT_EVENTS: usize = 50;

/// Where a Shim stands on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShimNodeRow {
    /// The node.
    pub node: String,
    /// `Provisioned`, `Pending`, `Waiting`, `Failed`, `Uninstall`.
    pub state: &'static str,
    /// The rollout batch the node belongs to, when the engine said.
    pub batch: Option<i32>,
    /// The archive the node gets (its URL without the scheme), or why there is none.
    pub artifact: String,
    /// How long ago the state last changed.
    pub since: String,
    /// What the node waits for, or what went wrong.
    pub why: String,
    /// The newest installer pod on the node, whose log `l` shows.
    pub pod: Option<Target>,
    /// How to colour the row.
    pub health: Health,
}

impl ShimNodeRow {
    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.node, self.state, &self.artifact, &self.why])
    }

    /// `2`, or `-` when the node has no batch.
    pub fn batch_label(&self) -> String {
        self.batch.map_or_else(|| "-".to_owned(), |b| b.to_string())
    }
}

/// Everything the detail pane shows of one Shim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShimDetail {
    /// The Shim's summary row.
    pub summary: ShimRow,
    /// Its nodes, by name.
    pub nodes: Vec<ShimNodeRow>,
    /// How many nodes are in each state, for the section title.
    pub node_states: BTreeMap<&'static str, usize>,
    /// Its recent events and those of its installer pods, newest first.
    pub events: Vec<EventRow>,
    /// The batch waiting for approval and its nodes, so a person sees what `A` lets start before pressing it.
    pub next_batch: Option<(i32, Vec<String>)>,
    /// Who approved each batch of this rollout and how long ago, oldest first.
    pub approvals: Vec<ApprovalRow>,
    /// The archive every node gets, when they all get the same one: said once above the table rather than on
    /// every row, where it would take the room the WHY column needs.
    pub shared_artifact: Option<String>,
}

/// One approval of the rollout's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalRow {
    /// The batch approved.
    pub batch: i32,
    /// The field manager of the write that approved it.
    pub by: String,
    /// How long ago.
    pub age: String,
}

/// The detail of the Shim `name`, or `None` when it does not exist.
pub fn detail(data: &ClusterData, name: &str, now: jiff::Timestamp) -> Option<ShimDetail> {
    let shim = data.shim(name)?;
    let pods = installer_pods(data, name);
    let statuses: HashMap<&str, &ShimNodeStatus> = shim
        .status
        .iter()
        .flat_map(|s| s.node_statuses.iter())
        .map(|s| (s.node.as_str(), s))
        .collect();
    let nodes: Vec<ShimNodeRow> = data
        .nodes
        .iter()
        .filter_map(|node| {
            let node_name = node.metadata.name.as_deref()?;
            let label = node
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(name))
                .map(String::as_str);
            let status = statuses.get(node_name).copied();
            if !selects(shim, node) && label.is_none() && status.is_none() {
                return None;
            }
            Some(node_row(
                shim,
                node,
                label,
                status,
                pods.get(node_name).copied(),
                now,
            ))
        })
        .collect();
    let mut node_states = BTreeMap::new();
    for row in &nodes {
        *node_states.entry(row.state).or_default() += 1;
    }
    let pod_names: HashSet<&str> = pods
        .values()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let infix = format!("-{name}-");
    let events = data
        .events
        .iter()
        .filter(|event| {
            let Some(regarding) = event.regarding.as_ref() else {
                return false;
            };
            let object = regarding.name.as_deref().unwrap_or_default();
            match regarding.kind.as_deref().unwrap_or_default() {
                "Shim" => object == name,
                "Pod" => pod_names.contains(object) || object.contains(&infix),
                _ => false,
            }
        })
        .take(RECENT_EVENTS)
        .map(|event| EventRow::of(event, now))
        .collect();
    let summary = ShimRow::of(shim);
    let next_batch = summary.awaiting_batch.map(|batch| {
        let names = nodes
            .iter()
            .filter(|row| row.batch == Some(batch) && row.state == "Waiting")
            .map(|row| row.node.clone())
            .collect();
        (batch, names)
    });
    let approvals = shim
        .status
        .iter()
        .filter_map(|s| s.rollout.as_ref())
        .flat_map(|r| r.approvals.iter())
        .map(|a| ApprovalRow {
            batch: a.batch,
            by: a.approved_by.clone(),
            age: age(a.approved_at.as_ref().map(|t| t.0), now),
        })
        .collect();
    let shared_artifact = nodes
        .split_first()
        .filter(|(first, rest)| rest.iter().all(|row| row.artifact == first.artifact))
        .map(|(first, _)| first.artifact.clone());
    Some(ShimDetail {
        summary,
        nodes,
        node_states,
        events,
        next_batch,
        approvals,
        shared_artifact,
    })
}

/// The newest installer pod of Shim `name` on each node.
fn installer_pods<'a>(data: &'a ClusterData, name: &str) -> HashMap<&'a str, &'a Pod> {
    let mut newest: HashMap<&str, &Pod> = HashMap::new();
    for pod in &data.pods {
        let ours = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(names::SHIM_NAME))
            .is_some_and(|shim| shim == name);
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            continue;
        };
        if !ours {
            continue;
        }
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        match newest.get(node) {
            Some(known) if created(known) >= created(pod) => {}
            _ => {
                newest.insert(node, pod);
            }
        }
    }
    newest
}

/// Whether the Shim's selector matches the node (every node when it has none).
fn selects(shim: &Shim, node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    shim.spec.node_selector.as_ref().is_none_or(|selector| {
        selector
            .iter()
            .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
    })
}

/// One node's row from its label, its status entry and its installer pod.
fn node_row(
    shim: &Shim,
    node: &Node,
    label: Option<&str>,
    status: Option<&ShimNodeStatus>,
    pod: Option<&Pod>,
    now: jiff::Timestamp,
) -> ShimNodeRow {
    let state = match (status.map(|s| s.state), label) {
        (Some(state), _) => state,
        (None, Some("provisioned")) => ShimNodeState::Provisioned,
        (None, Some("failed")) => ShimNodeState::Failed,
        (None, Some("pending")) => ShimNodeState::Pending,
        (None, Some("uninstall")) => ShimNodeState::Uninstall,
        (None, _) => ShimNodeState::Waiting,
    };
    let (label, health) = match state {
        ShimNodeState::Provisioned => ("Provisioned", Health::Ok),
        ShimNodeState::Pending => ("Pending", Health::Progressing),
        ShimNodeState::Waiting => ("Waiting", Health::Unknown),
        ShimNodeState::Failed => ("Failed", Health::Error),
        ShimNodeState::Uninstall => ("Uninstall", Health::Progressing),
    };
    let pod_phase = pod.and_then(pod_summary);
    let why = status
        .and_then(|s| s.message.clone())
        .or_else(|| pod_phase.clone())
        .unwrap_or_default()
        .replace('\n', " ");
    let since = status
        .and_then(|s| s.last_transition_time.as_ref())
        .map(|t| t.0)
        .or_else(|| {
            pod.and_then(|p| p.metadata.creation_timestamp.as_ref())
                .map(|t| t.0)
        });
    ShimNodeRow {
        node: node.metadata.name.clone().unwrap_or_default(),
        state: label,
        // The status names the batch of nodes on their way, the installer pod that of a node installing, and the
        // node itself the batch that provisioned it.
        batch: status
            .and_then(|s| s.batch)
            .or_else(|| annotation(pod.map(|p| &p.metadata), names::POD_BATCH))
            .or_else(|| {
                annotation(
                    Some(&node.metadata),
                    &node_batch_annotation(&shim.metadata.name.clone().unwrap_or_default()),
                )
            }),
        artifact: artifact(shim, node),
        since: age(since, now),
        why,
        pod: pod.and_then(|p| {
            Some(Target::namespaced(
                Kind::Pod,
                p.metadata.namespace.as_deref()?,
                p.metadata.name.as_deref()?,
            ))
        }),
        health,
    }
}

/// A numeric annotation of an object.
fn annotation(
    meta: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    key: &str,
) -> Option<i32> {
    meta?.annotations.as_ref()?.get(key)?.parse().ok()
}

/// `install pod Running`, or the message a failed container left.
fn pod_summary(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let terminated = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .find(|t| t.exit_code != 0);
    if let Some(failed) = terminated {
        return Some(
            failed
                .message
                .clone()
                .or_else(|| failed.reason.clone())
                .unwrap_or_else(|| format!("installer exited {}", failed.exit_code)),
        );
    }
    let verb = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(names::OPERATION))
        .map_or("installer", String::as_str);
    Some(format!(
        "{verb} pod {}",
        status.phase.as_deref().unwrap_or("Pending")
    ))
}

/// The archive a node gets: the platform entry for its OS and CPU, else the one URL; or why none fits.
fn artifact(shim: &Shim, node: &Node) -> String {
    let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
    let os = info.map_or("", |i| i.operating_system.as_str());
    let arch = info.map_or("", |i| i.architecture.as_str());
    let fetch = &shim.spec.fetch_strategy;
    let location = if fetch.platforms.is_empty() {
        fetch.anon_http.as_ref().map(|a| a.location.as_str())
    } else {
        match fetch.platforms.iter().find(|p| platform_fits(p, os, arch)) {
            Some(platform) => Some(platform.location.as_str()),
            None => return format!("no archive for {os}/{arch}"),
        }
    };
    location.map_or_else(
        || "no archive".to_owned(),
        |url| {
            url.split_once("://")
                .map_or(url, |(_, rest)| rest)
                .to_owned()
        },
    )
}

/// Whether a platform entry fits a node's OS and CPU (`amd64` is `x86_64`, `arm64` is `aarch64`).
fn platform_fits(platform: &PlatformArtifact, os: &str, arch: &str) -> bool {
    let arch = arch.to_ascii_lowercase();
    let wanted = match platform.arch {
        PlatformArch::Amd64 | PlatformArch::X86_64 => ["amd64", "x86_64"],
        PlatformArch::Arm64 | PlatformArch::Aarch64 => ["arm64", "aarch64"],
    };
    os.eq_ignore_ascii_case("linux") && wanted.contains(&arch.as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn node(arch: &str) -> Node {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-0"},
            "status": {"nodeInfo": {"architecture": arch, "operatingSystem": "linux", "kernelVersion": "6.1",
                "osImage": "", "bootID": "", "machineID": "", "systemUUID": "", "kubeletVersion": "",
                "kubeProxyVersion": "", "containerRuntimeVersion": ""}},
        }))
        .expect("a node")
    }

    fn shim(fetch: Value) -> Shim {
        serde_json::from_value(json!({
            "apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim", "metadata": {"name": "spin"},
            "spec": {"fetchStrategy": fetch, "runtimeClass": {"name": "spin", "handler": "spin"},
                "rolloutStrategy": {"type": "recreate"}},
        }))
        .expect("a Shim")
    }

    #[test]
    fn each_node_gets_the_archive_of_its_cpu() {
        let platforms = shim(json!({"platforms": [
            {"os": "linux", "arch": "x86_64", "location": "https://example.com/spin-amd64.tar.gz"},
            {"os": "linux", "arch": "aarch64", "location": "https://example.com/spin-arm64.tar.gz"},
        ]}));
        assert_eq!(
            artifact(&platforms, &node("amd64")),
            "example.com/spin-amd64.tar.gz"
        );
        assert_eq!(
            artifact(&platforms, &node("arm64")),
            "example.com/spin-arm64.tar.gz"
        );
        assert_eq!(
            artifact(&platforms, &node("s390x")),
            "no archive for linux/s390x"
        );
        let one = shim(json!({"anonHttp": {"location": "https://example.com/spin.tar.gz"}}));
        assert_eq!(artifact(&one, &node("s390x")), "example.com/spin.tar.gz");
        assert_eq!(artifact(&shim(json!({})), &node("amd64")), "no archive");
    }
}
