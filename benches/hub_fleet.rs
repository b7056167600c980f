//! Scale benchmark of the hub family: one ManagedClusterModule on a hub with 10 spokes of 500 nodes each (two
//! kernels of 250 nodes per spoke, three kernels across the fleet), every cluster an embedded cluster with its own
//! engine, all in this process.
//!
//! Measures the time from the MCM's creation until every spoke's Module is available on all its nodes (the bound:
//! 120 s, enforced), the moment the hub's last ManifestWork was applied, the images the hub built (one per kernel of
//! the fleet: each built once, whatever the number of spokes), the process's resident memory idle before the MCM, its peak during the
//! rollout, and the average per cluster (what the process grew by from start, divided by the 11 clusters: each
//! cluster's API server, store, simulation and engine). Linux only.
//!
//! Run with `cargo bench --bench hub_fleet`.
//!
//! The first run (release, the 2-core machine otherwise idle): the fleet up in 14.9 s, 343 MiB idle; every work
//! applied 21.3 s after the MCM's creation, the module on all 5,000 nodes at 72.5 s, 3 images built, peak 1,169 MiB
//! (105 MiB per cluster), 128 s of CPU in 88 s. With the images pinned to digests: up in 14.0 s, 334 MiB idle, every
//! work applied at 18.4 s, all 5,000 nodes at 63.5 s, 3 images, peak 1,195 MiB (108 MiB per cluster).

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kmm_api::hub::{DEFAULT_NAMESPACE, ManagedClusterModule, reasons};
use kmm_api::kmm::{Module, ModuleImagesConfig};
use kmm_cluster::fleet::{DEFAULT_KERNELS, EmbeddedFleet, FleetOptions, HUB, SpokeOptions};
use kmm_engine::{Context, PodImages};
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SPOKES: usize = 10;
const NODES_PER_KERNEL: u32 = 250;
/// The bound the rollout must stay within.
const BOUND: Duration = Duration::from_secs(120);

/// A memory figure of /proc/self/status (`VmRSS:` now, `VmHWM:` the peak) in MiB.
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let kib = line.strip_prefix(field)?.trim().strip_suffix("kB")?.trim();
                kib.parse::<f64>().ok()
            })
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Spoke `number` on two neighbouring kernels of [`DEFAULT_KERNELS`]: three kernels across the fleet, each shared by
/// several spokes, so the hub builds each once for many clusters.
fn spoke(number: usize) -> SpokeOptions {
    let count = DEFAULT_KERNELS.len();
    SpokeOptions {
        name: format!("spoke-{number}"),
        kernels: vec![
            DEFAULT_KERNELS[number % count].0.to_owned(),
            DEFAULT_KERNELS[(number + 1) % count].0.to_owned(),
        ],
        nodes_per_kernel: NODES_PER_KERNEL,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

async fn run() {
    let before = status_mib("VmRSS:");
    let started = Instant::now();
    let fleet = EmbeddedFleet::start(FleetOptions {
        spokes: (1..=SPOKES).map(spoke).collect(),
        ..FleetOptions::new(0, 1)
    })
    .await
    .expect("the fleet starts");
    let hub = fleet.hub().client();
    let mut clients = vec![(HUB.to_owned(), hub.clone())];
    for name in fleet.spoke_names() {
        let client = fleet.spoke(name).expect("the spoke runs").client();
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": "acme"}})).expect("a Namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("the spoke namespace");
        clients.push((name.to_owned(), client));
    }
    let engines: Vec<(CancellationToken, tokio::task::JoinHandle<()>)> = clients
        .iter()
        .map(|(name, client)| {
            let context = Context::new(client.clone(), PodImages::default(), Some(name.clone()));
            let stop = CancellationToken::new();
            let task = tokio::spawn(kmm_engine::run_reconcilers(Arc::new(context), stop.clone()));
            (stop, task)
        })
        .collect();
    // The engines list their caches and the spokes' kubelets settle before the module arrives.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle = status_mib("VmRSS:");
    println!(
        "fleet of {SPOKES} spokes x {} nodes up in {:.1} s; resident {idle:.0} MiB idle ({:.0} MiB per cluster)",
        2 * NODES_PER_KERNEL,
        started.elapsed().as_secs_f64(),
        (idle - before) / (SPOKES + 1) as f64
    );

    let dockerfile: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "accmod-dockerfile", "namespace": DEFAULT_NAMESPACE},
        "data": {"dockerfile": "FROM quay.io/acme/base:9\nARG KERNEL_FULL_VERSION\nRUN make\n"},
    }))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(hub.clone(), DEFAULT_NAMESPACE)
        .create(&PostParams::default(), &dockerfile)
        .await
        .expect("the Dockerfile");
    let mcm: ManagedClusterModule = serde_json::from_value(json!({
        "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
        "metadata": {"name": "accmod"},
        "spec": {
            "spokeNamespace": "acme",
            "selector": {},
            "moduleSpec": {
                "selector": {"node-role.kubernetes.io/worker": ""},
                "moduleLoader": {"container": {
                    "modprobe": {"moduleName": "accmod"},
                    "kernelMappings": [{
                        "regexp": "^.+$",
                        "containerImage": "quay.io/acme/accmod:${KERNEL_FULL_VERSION}",
                        "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
                    }],
                }},
            },
        },
    }))
    .expect("an MCM");
    let mcms: Api<ManagedClusterModule> = Api::all(hub.clone());
    let created = Instant::now();
    mcms.create(&PostParams::default(), &mcm)
        .await
        .expect("the MCM");

    let nodes = i32::try_from(2 * NODES_PER_KERNEL).expect("a count");
    let mut applied_at = None;
    let mut loaded_at = None;
    while loaded_at.is_none() {
        assert!(
            created.elapsed() < BOUND,
            "not converged within {BOUND:?}: applied {applied_at:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        if applied_at.is_none() {
            let all_applied = mcms
                .get("accmod")
                .await
                .ok()
                .and_then(|m| m.status)
                .is_some_and(|s| {
                    s.clusters.len() == SPOKES
                        && s.clusters.iter().all(|c| c.reason == reasons::APPLIED)
                });
            if all_applied {
                applied_at = Some(created.elapsed());
            }
        }
        let mut everywhere = true;
        for (_, client) in clients.iter().skip(1) {
            let available = Api::<Module>::namespaced(client.clone(), "acme")
                .get_opt("accmod")
                .await
                .ok()
                .flatten()
                .and_then(|m| m.status?.module_loader)
                .map(|counts| counts.available_number);
            if available != Some(nodes) {
                everywhere = false;
                break;
            }
        }
        if everywhere {
            loaded_at = Some(created.elapsed());
        }
    }
    let images = Api::<ModuleImagesConfig>::namespaced(hub.clone(), DEFAULT_NAMESPACE)
        .get("accmod-fleet")
        .await
        .map(|mic| mic.spec.images.len())
        .unwrap_or_default();
    let peak = status_mib("VmHWM:");
    println!(
        "loaded on all {} nodes of {SPOKES} spokes in {:.1} s (every work applied at {:.1} s); {images} images built \
         once each on the hub; peak resident {peak:.0} MiB ({:.0} MiB per cluster)",
        SPOKES * 2 * NODES_PER_KERNEL as usize,
        loaded_at.unwrap_or_default().as_secs_f64(),
        applied_at.unwrap_or_default().as_secs_f64(),
        (peak - before) / (SPOKES + 1) as f64
    );
    for (stop, task) in engines {
        stop.cancel();
        let _ = task.await;
    }
    fleet.shutdown().await;
}
