//! The hostile-client suite's attacks against the API server with its default limits, one at a time, while an
//! administrator (the bystander, [`bystander`]) reads and writes over HTTPS. For each attack ([`attacks`]) it
//! reports the bystander's p50 and p99 (GETs on a kept connection, GETs on a new one, writes), answers that failed,
//! and the growth of resident memory and descriptors; then whether every write the server acknowledged is there.
//!
//! The budget: while any one attack runs, the bystander's p99 stays under `HOSTILE_P99_BUDGET_MS` (100 ms by
//! default, for an idle machine and a release build), no answer fails, and resident memory grows by less than
//! `HOSTILE_MEMORY_BUDGET_MIB` (128); the run exits with an error when an attack breaks it. Each attack runs `HOSTILE_SECONDS` (15 by default); `HOSTILE_ATTACKS` picks attacks whose
//! names contain one of its comma-separated words.
//!
//! Run with `cargo bench --bench hostile`.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

mod attacks;
mod bystander;
#[path = "../../tests/hostile/client.rs"]
mod client;
#[path = "../../tests/hostile/process.rs"]
mod process;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use attacks::Target;
use bystander::{Seen, quantile};
use client::Raw;

/// One node, running the pod the session attacks attach to.
const SCENARIO: &str = r#"
timeScale: 10
nodes:
  - namePrefix: worker-
    count: 1
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
    diskGiB: 1
registry:
  images:
    - {name: quay.io/org/app:1, sizeMiB: 10}
"#;

/// ConfigMaps of 1 KiB in `default` before the attacks start: what an old-snapshot list copies.
const CROWD: usize = 1_000;

fn main() -> anyhow::Result<()> {
    kmm_tui::allocator::return_freed_memory_promptly();
    let seconds: u64 = setting("HOSTILE_SECONDS", 15);
    let budget = Budget {
        p99: Duration::from_millis(setting("HOSTILE_P99_BUDGET_MS", 100)),
        memory: (setting("HOSTILE_MEMORY_BUDGET_MIB", 128) as usize) << 20,
    };
    let picked: Vec<String> = std::env::var("HOSTILE_ATTACKS")
        .unwrap_or_default()
        .split(',')
        .map(|w| w.trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(Duration::from_secs(seconds), budget, picked))
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// What the bystander and the server may lose to any one attack.
#[derive(Clone, Copy)]
struct Budget {
    /// The bystander's p99, reads and writes together.
    p99: Duration,
    /// Growth of resident memory.
    memory: usize,
}

/// What one phase measured.
struct Phase {
    attack: &'static str,
    seen: Seen,
    memory_growth: usize,
    descriptors_growth: usize,
}

async fn run(length: Duration, budget: Budget, picked: Vec<String>) -> anyhow::Result<()> {
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        listen: Some(([127, 0, 0, 1], 0).into()),
        scenario: Some(Scenario::parse(SCENARIO, "hostile.yaml", None)?),
        ..EmbeddedOptions::default()
    })
    .await?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().unwrap_or_default())?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let target = Arc::new(Target {
        raw: Raw::new(&cluster),
        admin: cluster.server().auth().admin_token().to_owned(),
        editor: tenant(&cluster, "editor", "edit").await?,
        namespace_admin: tenant(&cluster, "namespace-admin", "admin").await?,
        viewer: tenant(&cluster, "viewer", "view").await?,
    });
    prepare(&cluster).await?;

    let mut phases = Vec::new();
    let chosen = attacks::all()
        .into_iter()
        .filter(|a| picked.is_empty() || picked.iter().any(|w| a.name.to_lowercase().contains(w)));
    phases.push(phase(&config, "(none)", None, &target, length).await);
    for attack in chosen {
        phases.push(phase(&config, attack.name, Some(attack.run), &target, length).await);
    }

    let names: Vec<String> = Api::<ConfigMap>::namespaced(cluster.client(), "default")
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let acknowledged: Vec<&String> = phases.iter().flat_map(|p| &p.seen.acknowledged).collect();
    let lost = acknowledged.iter().filter(|n| !names.contains(n)).count();

    let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    println!(
        "{:<30} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>6}  verdict",
        "attack (bystander in ms)",
        "GET p50",
        "GET p99",
        "new p50",
        "new p99",
        "PUT p50",
        "PUT p99",
        "failed",
        "+MiB",
        "+fds"
    );
    let mut broken = Vec::new();
    for p in &phases {
        let all = p.seen.all();
        let p99 = quantile(&all, 0.99);
        let within = p99 <= budget.p99
            && p.seen.failed == 0
            && !all.is_empty()
            && p.memory_growth < budget.memory;
        if !within {
            broken.push(p.attack);
        }
        println!(
            "{:<30} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>6}  {}",
            p.attack,
            ms(quantile(&p.seen.gets, 0.5)),
            ms(quantile(&p.seen.gets, 0.99)),
            ms(quantile(&p.seen.fresh, 0.5)),
            ms(quantile(&p.seen.fresh, 0.99)),
            ms(quantile(&p.seen.writes, 0.5)),
            ms(quantile(&p.seen.writes, 0.99)),
            p.seen.failed,
            p.memory_growth >> 20,
            p.descriptors_growth,
            if within {
                "within budget"
            } else {
                "OVER BUDGET"
            }
        );
    }
    println!(
        "{} acknowledged writes, {lost} lost; budget: p99 under {:?}, no failed answer, memory +{} MiB at most; \
         {length:?} per attack",
        acknowledged.len(),
        budget.p99,
        budget.memory >> 20
    );
    cluster.shutdown().await;
    if lost > 0 {
        anyhow::bail!("{lost} acknowledged writes were lost");
    }
    if !broken.is_empty() {
        anyhow::bail!("over the bystander's budget under: {}", broken.join(", "));
    }
    Ok(())
}

/// Run `attack` (none for the baseline) for `length` while the bystander works, and measure.
async fn phase(
    config: &kube::Config,
    name: &'static str,
    attack: Option<attacks::Start>,
    target: &Arc<Target>,
    length: Duration,
) -> Phase {
    let memory_before = process::resident_bytes();
    let descriptors_before = process::descriptors();
    let attacking = Arc::new(AtomicBool::new(true));
    let handle = attack.map(|run| run(target.clone(), attacking.clone()));
    // The attack builds up before the bystander starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let working = Arc::new(AtomicBool::new(true));
    let bystander = tokio::spawn(bystander::work(
        config.clone(),
        name.replace([' ', '\'', '(', ')', ','], "-").to_lowercase(),
        working.clone(),
    ));
    let peak_memory = Arc::new(AtomicUsize::new(memory_before));
    let peak_descriptors = Arc::new(AtomicUsize::new(descriptors_before));
    let until = Instant::now() + length;
    while Instant::now() < until {
        peak_memory.fetch_max(process::resident_bytes(), Ordering::SeqCst);
        peak_descriptors.fetch_max(process::descriptors(), Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    working.store(false, Ordering::SeqCst);
    let seen = bystander.await.unwrap_or_default();
    attacking.store(false, Ordering::SeqCst);
    if let Some(handle) = handle {
        let _ = tokio::time::timeout(Duration::from_secs(20), handle).await;
    }
    // Let the server close what the attack left before the next one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    Phase {
        attack: name,
        seen,
        memory_growth: peak_memory
            .load(Ordering::SeqCst)
            .saturating_sub(memory_before),
        descriptors_growth: peak_descriptors
            .load(Ordering::SeqCst)
            .saturating_sub(descriptors_before),
    }
}

/// A ServiceAccount `name` in `default` bound to ClusterRole `role` there, and a token of it.
async fn tenant(cluster: &EmbeddedCluster, name: &str, role: &str) -> anyhow::Result<String> {
    let admin = cluster.client();
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &account)
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
    }))?;
    Api::<RoleBinding>::namespaced(admin, "default")
        .create(&PostParams::default(), &binding)
        .await?;
    Ok(cluster
        .server()
        .auth()
        .issue_token(cluster.server().store(), "default", name, 3600, Vec::new())
        .map_err(|e| anyhow::anyhow!("a token for {name}: {e:?}"))?
        .token)
}

/// The objects the attacks and the bystander work on: the bystander's `target`, the crowd an old-snapshot list
/// copies, and a running pod to attach to.
async fn prepare(cluster: &EmbeddedCluster) -> anyhow::Result<()> {
    let configmaps = Api::<ConfigMap>::namespaced(cluster.client(), "default");
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "target"}}))?,
        )
        .await?;
    let filler = "x".repeat(1024);
    for i in 0..CROWD {
        let crowd: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("crowd-{i}")}, "data": {"filler": filler}}),
        )?;
        configmaps.create(&PostParams::default(), &crowd).await?;
    }
    let pods = Api::<Pod>::namespaced(cluster.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "app"},
        "spec": {"nodeName": "worker-0", "containers": [{"name": "main", "image": "quay.io/org/app:1"}]},
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pod = pods.get("app").await?;
        let running = pod
            .status
            .and_then(|s| s.container_statuses)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
            });
        if running {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!("the pod to attach to did not start within a minute");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
