//! Handing the engine off from the console and taking it back, end to end: `kmm-tui --embedded` in a detached tmux
//! session, the controller installed into its cluster with `kmm-tui install --apply` (through the kubeconfig the
//! console writes; the embedded cluster runs the controller pods), `:engine`, hand off with `y`, a Module created
//! afterwards converging under a controller pod, and take over with `y`. Skipped, saying why, where tmux is not
//! installed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kmm_api::kmm::Module;
use kmm_tui::install::{DEFAULT_NAMESPACE, DEPLOYMENT_NAME};
use kube::Api;
use kube::api::PostParams;

use crate::screen::{self, client_from, header, skip};

/// Three workers and a registry holding the Module images.
const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console.yaml");

/// Start-up of the binary with its embedded cluster, on a busy two-core machine.
const START_LIMIT: Duration = Duration::from_secs(180);
/// A hand-off: the work in flight finishes, the Lease moves, the watch brings it back to the screen.
const MOVE_LIMIT: Duration = Duration::from_secs(60);
/// A Module converging under the controller.
const CONVERGE_LIMIT: Duration = Duration::from_secs(120);

/// `kmm-tui install --apply` against the console's cluster: two controller pods, leader-elected on the Lease.
fn install(kubeconfig: &Path) -> Result<(), String> {
    let output = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .arg("install")
        .arg("--apply")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--lease-duration", "5"])
        .output()
        .map_err(|error| format!("running kmm-tui install: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "kmm-tui install --apply failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// How many controller pods the Deployment reports available.
async fn available_controllers(client: &kube::Client) -> i32 {
    Api::<Deployment>::namespaced(client.clone(), DEFAULT_NAMESPACE)
        .get_opt(DEPLOYMENT_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|d| d.status?.available_replicas)
        .unwrap_or(0)
}

/// Whether the Module's Available condition is True.
async fn available(modules: &Api<Module>, name: &str) -> bool {
    let Ok(Some(module)) = modules.get_opt(name).await else {
        return false;
    };
    let value = serde_json::to_value(&module).unwrap_or_default();
    value["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True")
}

#[test]
fn hand_off_to_the_controller_and_take_over_from_the_console() {
    if skip("the hand-off end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = screen::start(
        dir.path(),
        [
            "--embedded".as_ref(),
            "--scenario".as_ref(),
            SCENARIO.as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );
    console.wait_for("the foreground engine acting", START_LIMIT, |screen| {
        header(screen).contains("engine: foreground") && !header(screen).contains("starting")
    });
    install(&kubeconfig).unwrap_or_else(|error| console.fail(&error));
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let client = runtime.block_on(client_from(&kubeconfig));
    let deadline = Instant::now() + START_LIMIT;
    while runtime.block_on(available_controllers(&client)) < 2 {
        if Instant::now() >= deadline {
            console.fail("the installed controller's two pods are not available");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    // The controller pods stand by: the console's engine still acts.
    if !header(&console.screen()).contains("engine: foreground") {
        console.fail("the header left foreground before any hand-off");
    }

    console.press(&[":", "e", "n", "g", "i", "n", "e", "Enter"]);
    console.wait_for(
        "the engine view naming this console",
        MOVE_LIMIT,
        |screen| screen.contains("Holder") && screen.contains("this console"),
    );
    console.press(&["h"]);
    console.wait_for("the hand-off confirmation", MOVE_LIMIT, |screen| {
        screen.contains("Confirm") && screen.contains("Hand the engine off")
    });
    console.press(&["y"]);
    console.wait_for("the header naming a controller pod", MOVE_LIMIT, |screen| {
        header(screen).contains(&format!("engine: in cluster (pod {DEPLOYMENT_NAME}-"))
    });

    // Work goes on under the controller: a Module created now converges.
    let modules: Api<Module> = Api::namespaced(client.clone(), "acme");
    let module: Module = serde_json::from_value(serde_json::json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": "after-handoff", "namespace": "acme"},
        "spec": {"selector": {"node-role.kubernetes.io/worker": ""}, "moduleLoader": {"container": {
            "modprobe": {"moduleName": "after_handoff"},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/acme/e2e-kmod:${KERNEL_FULL_VERSION}"}]
        }}}
    }))
    .expect("a Module");
    runtime
        .block_on(modules.create(&PostParams::default(), &module))
        .unwrap_or_else(|error| console.fail(&format!("creating the Module: {error}")));
    let deadline = Instant::now() + CONVERGE_LIMIT;
    while !runtime.block_on(available(&modules, "after-handoff")) {
        if Instant::now() >= deadline {
            console.fail(&format!(
                "the Module created after the hand-off did not converge within {CONVERGE_LIMIT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    if header(&console.screen()).contains("engine: foreground") {
        console.fail("the console took the engine back on its own");
    }

    console.press(&["t"]);
    console.wait_for("the take-over confirmation", MOVE_LIMIT, |screen| {
        screen.contains("Confirm") && screen.contains("Take the engine over")
    });
    console.press(&["y"]);
    console.wait_for("the header back to foreground", MOVE_LIMIT, |screen| {
        let header = header(screen);
        header.contains("engine: foreground") && !header.contains("standing by")
    });
    console.press(&[":", "q", "Enter"]);
    let pane = console.wait_for_exit(MOVE_LIMIT);
    if pane.exit_status != Some(0) {
        console.fail(&format!("kmm-tui exited with {:?}", pane.exit_status));
    }
}
