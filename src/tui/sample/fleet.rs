//! A fleet of seven clusters in every state the fleet view explains: reachable with work waiting for a person,
//! unreachable for TLS, refused and unauthorized, acted on by an upstream operator, idle, and still connecting;
//! `dev` is a hub delivering a ManagedClusterModule to three of them, in three states, and one selecting none.
//! For the fleet view's snapshots and screenshot.

use std::collections::BTreeMap;

use serde_json::json;

use super::{day0, engine_lease, object, sample, snapshots};
use crate::tui::data::KindSnapshot;
use crate::tui::fleet::reach::{Reach, Why};
use crate::tui::fleet::state::FleetChange;
use kmm_engine::Family;
use kmm_engine::runtime::operators::{Installed, Upstream};

/// The counted kinds of a sample cluster, as the fleet's watches deliver them.
fn counted(modules: usize, nodes: usize, with_day0: bool) -> Vec<FleetChange> {
    let mut data = sample(modules, nodes);
    if with_day0 {
        day0::add(&mut data);
    }
    snapshots(&data)
        .into_iter()
        .filter(|snapshot| {
            matches!(
                snapshot,
                KindSnapshot::Modules(_)
                    | KindSnapshot::Shims(_)
                    | KindSnapshot::ImageCaches(_)
                    | KindSnapshot::ModuleDay0s(_)
                    | KindSnapshot::MachineConfigPools(_)
                    | KindSnapshot::MachineConfigs(_)
            )
        })
        .map(FleetChange::Data)
        .collect()
}

fn reachable(version: &str) -> FleetChange {
    FleetChange::Reach(Reach::Reachable {
        version: version.to_owned(),
    })
}

fn unreachable(word: &'static str, detail: &str) -> FleetChange {
    FleetChange::Reach(Reach::Unreachable(Why {
        word,
        detail: detail.to_owned(),
    }))
}

/// The contexts of the sample fleet, in kubeconfig order.
pub const CONTEXTS: [&str; 7] = [
    "ci",
    "dev",
    "edge-lab",
    "prod-east",
    "prod-west",
    "qa",
    "staging",
];

const OLD_KERNEL: &str = "5.14.0-427.13.1.el9_4.x86_64";
const NEW_KERNEL: &str = "5.14.0-503.11.1.el9_5.x86_64";

/// The hub `dev`'s ManagedClusterModules: `qat-driver` applied on staging, loaded on prod-east's nodes but two,
/// and waiting for an image build for edge-lab's newer kernel; `ofed` selecting no cluster.
fn hub_modules() -> KindSnapshot {
    let image = |kernel: &str| format!("registry.example.com/acme/qat-driver:{kernel}");
    let delivered = json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": "qat-driver", "uid": "5d1f0c2e-0000-4000-8000-00000000a001", "generation": 3},
        "spec": {
            "spokeNamespace": "acme-drivers",
            "selector": {"hardware": "qat"},
            "moduleSpec": {"selector": {"intel.feature.node.kubernetes.io/qat": "true"}},
        },
        "status": {
            "numberDesired": 2, "numberApplied": 2, "numberDegraded": 0, "observedGeneration": 3,
            "clusters": [
                {"name": "edge-lab", "reason": "WaitingForImages",
                 "message": format!("{}: building (build pod qat-driver-fleet-build-7kq2d)", image(NEW_KERNEL)),
                 "images": [image(NEW_KERNEL)]},
                {"name": "prod-east", "reason": "Applied", "message": "the spoke applied the Module; loaded on 38 of 40 nodes",
                 "availableNumber": 38, "desiredNumber": 40, "images": [image(OLD_KERNEL)]},
                {"name": "staging", "reason": "Applied", "message": "the spoke applied the Module; loaded on 6 of 6 nodes",
                 "availableNumber": 6, "desiredNumber": 6, "images": [image(OLD_KERNEL)]},
            ],
        },
    });
    let unselected = json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": "ofed", "uid": "5d1f0c2e-0000-4000-8000-00000000a002", "generation": 1},
        "spec": {"spokeNamespace": "nvidia-network", "selector": {"hardware": "connectx"}, "moduleSpec": {"selector": {}}},
        "status": {"numberDesired": 0, "numberApplied": 0, "numberDegraded": 0, "observedGeneration": 1,
            "conditions": [{"type": "Delivered", "status": "False", "reason": "NoClusterSelected",
                "message": "the selector {hardware=connectx} picks no ManagedCluster",
                "lastTransitionTime": "2026-11-30T09:00:00Z", "observedGeneration": 1}]},
    });
    KindSnapshot::ManagedClusterModules(vec![object(delivered), object(unselected)])
}

/// What the fleet's tasks would report of the sample fleet: `(context, change)` in arrival order.
pub fn changes() -> Vec<(String, FleetChange)> {
    let mut changes: Vec<(&str, FleetChange)> = Vec::new();
    changes.push(("prod-east", reachable("v1.31.4")));
    changes.extend(counted(12, 40, true).into_iter().map(|c| ("prod-east", c)));
    changes.push((
        "prod-east",
        FleetChange::Nodes {
            ready: 38,
            total: 40,
        },
    ));
    changes.push((
        "prod-east",
        FleetChange::EngineLease(Some(engine_lease("kmm-tui-controller-6d4b9-x7k2p"))),
    ));
    changes.push((
        "prod-west",
        unreachable(
            "TLS",
            "TLS failure with 10.20.0.4:6443: the server's certificate is not signed by the kubeconfig's CA",
        ),
    ));
    changes.push(("staging", reachable("v1.30.6")));
    changes.extend(counted(3, 6, false).into_iter().map(|c| ("staging", c)));
    changes.push(("staging", FleetChange::Nodes { ready: 6, total: 6 }));
    changes.push((
        "staging",
        FleetChange::Upstream(BTreeMap::from([(
            Family::Kmm,
            Upstream {
                operator: "upstream KMM operator",
                evidence: "Lease openshift-kmm/kmm.sigs.x-k8s.io held by kmm-operator-7c9f; Deployment \
                           openshift-kmm/kmm-operator runs as kmm-operator, bound by ClusterRoleBinding \
                           kmm-operator-manager-rolebinding"
                    .to_owned(),
                deployment: Installed {
                    namespace: "openshift-kmm".to_owned(),
                    name: "kmm-operator".to_owned(),
                    uid: None,
                },
            },
        )])),
    ));
    changes.push((
        "edge-lab",
        unreachable("refused", "connection refused at 192.168.56.10:6443"),
    ));
    changes.push(("dev", reachable("v1.31.0")));
    changes.extend(
        [
            KindSnapshot::Modules(Vec::new()),
            KindSnapshot::Shims(Vec::new()),
            KindSnapshot::ImageCaches(Vec::new()),
            KindSnapshot::ModuleDay0s(Vec::new()),
            KindSnapshot::MachineConfigPools(Vec::new()),
            KindSnapshot::MachineConfigs(Vec::new()),
        ]
        .map(|empty| ("dev", FleetChange::Data(empty))),
    );
    changes.push(("dev", FleetChange::Nodes { ready: 1, total: 1 }));
    changes.push(("dev", FleetChange::Data(hub_modules())));
    changes.push((
        "qa",
        unreachable(
            "unauthorized",
            "the server rejected the credentials (401): the kubeconfig's token is no longer valid",
        ),
    ));
    changes
        .into_iter()
        .map(|(context, change)| (context.to_owned(), change))
        .collect()
}
