//! A typo in a loaded Module against `kmm-tui serve` with its engine, as a user makes it: the mapping's image loses
//! its closing brace. Nothing is unloaded anywhere, the Module says which field holds what, and the console (in
//! tmux, on the server's kubeconfig) shows it Degraded. Skipped, saying why, where tmux is not installed.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kmm_api::kmm::{Module, NodeModulesConfig, labels};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

use crate::screen::{self, cells, client_from, skip};
use crate::serve_process::ServeProcess;

/// Three workers and the Module `acme/e2e-kmod`, whose image the registry holds.
const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console.yaml");
const NAMESPACE: &str = "acme";
const MODULE: &str = "e2e-kmod";
const WORKERS: [&str; 3] = ["worker-0", "worker-1", "worker-2"];
/// The image of the typo: `${KERNEL_XYZ` never closed.
const TYPO: &str = "quay.io/acme/e2e-kmod:${KERNEL_XYZ";

/// Start-up and convergence on a busy two-core machine.
const CONVERGE_LIMIT: Duration = Duration::from_secs(180);
/// How long the engine is given to do harm after the typo (it unloaded within 4 s before).
const HARM_WINDOW: Duration = Duration::from_secs(15);

/// Per worker: the Module's entry image in its NMC and whether it carries the Module's ready label.
async fn what_runs(client: &kube::Client) -> Vec<(Option<String>, bool)> {
    let nmcs: Api<NodeModulesConfig> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let ready = labels::node_ready(NAMESPACE, MODULE);
    let mut running = Vec::new();
    for worker in WORKERS {
        let entry = nmcs.get_opt(worker).await.ok().flatten().and_then(|nmc| {
            nmc.spec
                .modules
                .into_iter()
                .find(|m| m.name == MODULE && m.namespace == NAMESPACE)
                .map(|m| m.config.container_image)
        });
        let labelled = nodes
            .get(worker)
            .await
            .ok()
            .and_then(|node| node.metadata.labels)
            .is_some_and(|labels| labels.contains_key(&ready));
        running.push((entry, labelled));
    }
    running
}

async fn events(client: &kube::Client, reason: &str) -> Vec<String> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .filter_map(|event| event.note)
        .collect()
}

/// Wait until `ready` holds for what the workers run, failing with what was seen.
fn wait_until(
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
    what: &str,
    ready: impl Fn(&[(Option<String>, bool)]) -> bool,
) -> Vec<(Option<String>, bool)> {
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        let seen = runtime.block_on(what_runs(client));
        if ready(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "{what}: {seen:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn serve(dir: &Path) -> ServeProcess {
    ServeProcess::start_scenario(
        dir,
        &dir.join("state"),
        "serve.log",
        SCENARIO,
        &["--with-engine"],
    )
}

#[test]
fn a_typo_in_a_loaded_module_unloads_nothing_and_the_console_says_why() {
    if skip("the bad-edit end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path());
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let client = runtime.block_on(client_from(server.kubeconfig()));
    let before = wait_until(&runtime, &client, "loaded on every worker", |seen| {
        seen.iter().all(|(entry, ready)| entry.is_some() && *ready)
    });
    let console = screen::start(
        dir.path(),
        ["--kubeconfig".as_ref(), server.kubeconfig().as_os_str()],
    );
    console.wait_for("the Module, available", CONVERGE_LIMIT, |screen| {
        screen
            .lines()
            .find(|line| line.contains(MODULE))
            .is_some_and(|line| cells(line).contains(&"Available"))
    });

    let typo = json!({"spec": {"moduleLoader": {"container": {"kernelMappings": [
        {"regexp": "^.+$", "containerImage": TYPO}
    ]}}}});
    runtime
        .block_on(Api::<Module>::namespaced(client.clone(), NAMESPACE).patch(
            MODULE,
            &PatchParams::default(),
            &Patch::Merge(&typo),
        ))
        .expect("the typo is admitted, as upstream admits it");

    // Its row keeps 3/3/3 nodes and says why.
    console.wait_for(
        "the Module Degraded, saying why",
        CONVERGE_LIMIT,
        |screen| {
            screen.lines().any(|line| {
                line.contains(MODULE)
                    && line.contains("3/3/3")
                    && line.contains("InvalidKernelMapping")
            })
        },
    );
    std::thread::sleep(HARM_WINDOW);
    assert_eq!(
        runtime.block_on(what_runs(&client)),
        before,
        "every worker keeps its entry and ready label"
    );
    assert_eq!(
        runtime.block_on(events(&client, "ModuleUnloaded")),
        Vec::<String>::new(),
        "nothing was unloaded"
    );
    let told = runtime.block_on(events(&client, "InvalidKernelMapping"));
    assert_eq!(told.len(), 1, "one Event: {told:?}");
    assert!(
        told[0].contains(&format!(
            "spec.moduleLoader.container.kernelMappings[0].containerImage \"{TYPO}\""
        )),
        "{told:?}"
    );
    console.press(&[":", "q", "Enter"]);
    console.wait_for_exit(Duration::from_secs(30));
    drop(server);
}
