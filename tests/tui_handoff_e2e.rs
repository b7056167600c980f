//! Handing the engine off from the console and taking it back, end to end: `kmm-tui --embedded` in a detached tmux
//! session, a `kmm-tui controller` standing by against the console's cluster (through the kubeconfig the console
//! writes), `:engine`, hand off with `y`, a Module created afterwards converging under the controller, and take over
//! with `y`. Skipped, saying why, where tmux is not installed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kmm_tui::api::kmm::Module;
use kube::Api;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};

#[path = "support/tmux.rs"]
mod tmux;

use tmux::TmuxConsole;

/// Three workers and a registry holding the Module images.
const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console.yaml");

/// The controller's identity: a pod name, as a Deployment's pod would have.
const CONTROLLER: &str = "kmm-tui-controller-7c9d5-q4x8z";

/// Start-up of the binary with its embedded cluster, on a busy two-core machine.
const START_LIMIT: Duration = Duration::from_secs(180);
/// A hand-off: the work in flight finishes, the Lease moves, the watch brings it back to the screen.
const MOVE_LIMIT: Duration = Duration::from_secs(60);
/// A Module converging under the controller.
const CONVERGE_LIMIT: Duration = Duration::from_secs(120);

fn skip() -> bool {
    match tmux::unavailable() {
        Some(why) => {
            eprintln!("skipping the hand-off end-to-end test: {why}");
            true
        }
        None => false,
    }
}

fn header(screen: &str) -> &str {
    screen.lines().next().unwrap_or_default()
}

/// A `kmm-tui controller` against the kubeconfig's cluster, killed when dropped.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    fn start(dir: &Path, kubeconfig: &Path) -> Self {
        let log = dir.join("controller.log");
        let file = std::fs::File::create(&log).expect("creating the controller log");
        let child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--identity", CONTROLLER])
            .args(["--lease-duration", "5"])
            .args(["--log", "info"])
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("sharing the controller log"))
            .stderr(file)
            .spawn()
            .expect("starting kmm-tui controller");
        Self { child, log }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn client_from(path: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("reading the written kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("loading the written kubeconfig");
    kube::Client::try_from(config).expect("a client")
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
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = TmuxConsole::start(
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
    let controller = Controller::start(dir.path(), &kubeconfig);

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
    let in_cluster = format!("engine: in cluster (pod {CONTROLLER})");
    console.wait_for("the header naming the controller", MOVE_LIMIT, |screen| {
        header(screen).contains(&in_cluster)
    });
    if !controller.log_text().contains("engine acting") {
        console.fail(&format!(
            "the controller holds the Lease but does not act:\n{}",
            controller.log_text()
        ));
    }

    // Work goes on under the controller: a Module created now converges.
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let modules: Api<Module> = Api::namespaced(runtime.block_on(client_from(&kubeconfig)), "acme");
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
                "the Module created after the hand-off did not converge within {CONVERGE_LIMIT:?}\n--- controller ---\n{}",
                controller.log_text()
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
    if !controller.log_text().contains("hand-off of lease") {
        console.fail(&format!(
            "the controller did not honour the hand-off request:\n{}",
            controller.log_text()
        ));
    }

    console.press(&[":", "q", "Enter"]);
    let pane = console.wait_for_exit(MOVE_LIMIT);
    if pane.exit_status != Some(0) {
        console.fail(&format!("kmm-tui exited with {:?}", pane.exit_status));
    }
}
