//! Shim installer pods (runtime-class-manager's shape): the download init container, and the node installer that
//! installs or uninstalls the shim binary, edits the containerd configuration and restarts containerd, rolling the
//! configuration back when the restart fails.

use std::time::Duration;

use k8s_openapi::api::core::v1::Container;

use super::super::machine::Machine;
use super::containerd_config::{self, ConfigError};
use super::podspec::{args, env, flag_value, init_containers, privileged};
use super::{ContainerRun, Outcome, World, announce, no_machine};

/// Where shim binaries go on the node.
const BIN_DIR: &str = "/opt/rcm/bin";

/// The size of a shim archive, for its download time.
const ARCHIVE_BYTES: u64 = 16 * 1024 * 1024;

/// How long the installer takes without restarting containerd.
const INSTALL_TIME: Duration = Duration::from_secs(2);

/// How long a containerd restart takes.
const RESTART_TIME: Duration = Duration::from_secs(3);

/// What the systemd unit says when containerd does not come back.
const RESTART_ERROR: &str =
    "Job for containerd.service failed because the control process exited with error code";

/// What the node installer is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Operation {
    /// Install (else uninstall).
    install: bool,
    /// The `-r` shim name.
    shim: Option<String>,
    /// The host root (`-H`), for messages.
    host_root: String,
}

/// Whether the container is a shim download (it names an artifact to fetch).
pub(super) fn is_download(container: &Container) -> bool {
    env(container, "SHIM_LOCATION").is_some()
}

/// The node installer's operation, when the container's args are `install|uninstall -H <root> [-r <shim>]`.
pub(super) fn operation(container: &Container) -> Option<Operation> {
    let argv: Vec<&str> = args(container).iter().map(String::as_str).collect();
    let install = match argv.first() {
        Some(&"install") => true,
        Some(&"uninstall") => false,
        _ => return None,
    };
    let host_root = flag_value(&argv, &["-H", "--host-root"])?;
    Some(Operation {
        install,
        shim: flag_value(&argv, &["-r"]).map(str::to_string),
        host_root: host_root.to_string(),
    })
}

/// The download time of an archive from the registry.
pub(super) fn download_time(world: &World) -> Duration {
    world.registry.pull_duration(ARCHIVE_BYTES)
}

/// The shim binary name of a runtime.
fn binary_of(shim: &str) -> String {
    format!("containerd-shim-{shim}")
}

/// Fetch the archive like the downloader script: curl, unpack, check the sha256, copy the binary to `/assets`.
pub(super) fn download(world: &World, run: &ContainerRun) -> Outcome {
    let location = env(run.container, "SHIM_LOCATION").unwrap_or_default();
    let Some(name) = env(run.container, "SHIM_NAME").filter(|n| !n.is_empty()) else {
        return Outcome::failure(1, Vec::new(), "SHIM_NAME is not set");
    };
    let binary = binary_of(name);
    let mut logs = vec![format!("Downloading {binary} from {location}")];
    let host = location
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or(location);
    if world.faults.registry_down(world.clock.now()) {
        return Outcome::failure(
            1,
            logs,
            format!("curl: (7) Failed to connect to {host} port 443: Connection refused"),
        );
    }
    let Some(artifact) = world.registry.shim(location) else {
        return Outcome::failure(1, logs, "curl: (22) The requested URL returned error: 404");
    };
    if artifact.binary != binary {
        return Outcome::failure(
            1,
            logs,
            format!("cp: can't stat '/tmp/{binary}': No such file or directory"),
        );
    }
    if let Some(wanted) = env(run.container, "SHIM_SHA256").filter(|s| !s.is_empty()) {
        match &artifact.sha256 {
            Some(actual) if !actual.eq_ignore_ascii_case(wanted) => {
                logs.push(format!("{binary}: FAILED"));
                return Outcome::failure(
                    1,
                    logs,
                    "sha256sum: WARNING: 1 computed checksum did NOT match",
                );
            }
            Some(_) => logs.push(format!("{binary}: OK")),
            None => logs.push(format!(
                "{binary}: sha256 not checked, the registry declares none for this artifact"
            )),
        }
    }
    logs.push(format!("Copied {binary} to /assets/{binary}"));
    Outcome::success(logs)
}

/// What the pod's download put in `/assets`: the shim name, from the download init container.
fn downloaded_shim(run: &ContainerRun) -> Option<String> {
    init_containers(run.pod)
        .iter()
        .filter(|c| is_download(c))
        .find_map(|c| env(c, "SHIM_NAME").filter(|n| !n.is_empty()))
        .map(str::to_string)
}

/// A change the installer makes to a machine.
struct Change {
    /// The runtime.
    shim: String,
    /// The binary's path on the node.
    path: String,
    /// Whether the binary is to be installed (install) or removed (uninstall).
    binary_changes: bool,
    /// The new containerd configuration, when it changes.
    config: Option<String>,
}

impl Change {
    fn is_empty(&self) -> bool {
        !self.binary_changes && self.config.is_none()
    }
}

/// What the operation would change on the machine (None: nothing to do), or why it cannot.
fn change(machine: &Machine, run: &ContainerRun, op: &Operation) -> Result<Option<Change>, String> {
    let shim = if op.install {
        // The installer installs whatever the download put in /assets.
        downloaded_shim(run)
    } else {
        Some(
            op.shim
                .clone()
                .ok_or("Error: required flag \"-r\" (the runtime to uninstall) not set")?,
        )
    };
    let Some(shim) = shim else {
        return Ok(None);
    };
    let binary = binary_of(&shim);
    let path = format!("{BIN_DIR}/{binary}");
    let config = &machine.containerd.config;
    let (binary_changes, config) = if op.install {
        let options = match env(run.container, "RUNTIME_OPTIONS").filter(|o| !o.trim().is_empty()) {
            Some(json) => containerd_config::parse_options(json).map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        (
            machine.shims.get(&binary) != Some(&path),
            containerd_config::add_runtime(config, &shim, &path, &options),
        )
    } else {
        (
            machine.shims.contains_key(&binary),
            containerd_config::remove_runtime(config, &shim),
        )
    };
    let config = config.map_err(|e: ConfigError| e.to_string())?;
    Ok(Some(Change {
        shim,
        path,
        binary_changes,
        config,
    }))
}

/// The installer's run time: longer when it will restart containerd.
pub(super) fn installer_time(world: &World, run: &ContainerRun, op: &Operation) -> Duration {
    let restarts = world
        .machines
        .with(run.node, |m| change(m, run, op))
        .and_then(Result::ok)
        .flatten()
        .is_some_and(|c| !c.is_empty());
    if restarts {
        INSTALL_TIME + RESTART_TIME
    } else {
        INSTALL_TIME
    }
}

/// Install or uninstall on the node, restarting containerd when something changed.
pub(super) fn run_installer(world: &World, run: &ContainerRun, op: &Operation) -> Outcome {
    let config_file = world
        .machines
        .with(run.node, |m| {
            format!(
                "{}{}",
                op.host_root.trim_end_matches('/'),
                m.containerd.config_path
            )
        })
        .unwrap_or_default();
    let mut logs = vec![format!(
        "level=INFO msg=\"detected containerd config\" path={config_file}"
    )];
    if !privileged(run.container) {
        let target = op.shim.as_deref().map(binary_of).unwrap_or_default();
        return Outcome::failure(
            1,
            logs,
            format!(
                "failed to {} shim: open {}{BIN_DIR}/{target}: permission denied",
                if op.install { "install" } else { "uninstall" },
                op.host_root.trim_end_matches('/')
            ),
        );
    }
    let result = world
        .machines
        .with(run.node, |machine| -> Result<Applied, String> {
            let Some(change) = change(machine, run, op)? else {
                logs.push("level=INFO msg=\"no shim in /assets; nothing to install\"".to_string());
                return Ok(Applied::Nothing);
            };
            if change.is_empty() {
                logs.push(format!(
                    "level=INFO msg=\"nothing changed; not restarting containerd\" shim={}",
                    change.shim
                ));
                return Ok(Applied::Nothing);
            }
            Ok(apply(world, machine, op, &change, &config_file, &mut logs))
        });
    match result {
        None => no_machine(run.node),
        Some(Err(message)) => Outcome::failure(1, logs, message),
        Some(Ok(Applied::Nothing)) => Outcome::success(logs),
        Some(Ok(Applied::Restarted)) => {
            announce(world, run.node);
            Outcome::success(logs)
        }
        Some(Ok(Applied::RolledBack(message))) => {
            announce(world, run.node);
            Outcome::failure(1, logs, message)
        }
    }
}

/// What applying a change came to.
enum Applied {
    /// Nothing needed changing.
    Nothing,
    /// The change is in place and containerd restarted on it.
    Restarted,
    /// containerd did not restart on the change: the configuration was rolled back (the message says so).
    RolledBack(String),
}

/// Apply a change and restart containerd; on a failed restart, restore the previous configuration and bring
/// containerd back on it.
fn apply(
    world: &World,
    machine: &mut Machine,
    op: &Operation,
    change: &Change,
    config_file: &str,
    logs: &mut Vec<String>,
) -> Applied {
    let binary = binary_of(&change.shim);
    if change.binary_changes {
        if op.install {
            machine.shims.insert(binary, change.path.clone());
            logs.push(format!(
                "level=INFO msg=\"shim installed\" shim={} path={}",
                change.shim, change.path
            ));
        } else {
            machine.shims.remove(&binary);
            logs.push(format!(
                "level=INFO msg=\"shim removed\" shim={} path={}",
                change.shim, change.path
            ));
        }
    }
    let previous = machine.containerd.config.clone();
    if let Some(config) = &change.config {
        machine.containerd.config = config.clone();
        let verb = if op.install { "added" } else { "removed" };
        logs.push(format!(
            "level=INFO msg=\"runtime {verb}\" runtime={} config={config_file}",
            change.shim
        ));
    }
    logs.push("level=INFO msg=\"restarting containerd\"".to_string());
    machine.containerd.restarts += 1;
    if world.faults.containerd_restart_fails(&machine.name) {
        machine.containerd.config = previous;
        machine.containerd.restarts += 1;
        let what = format!(
            "{RESTART_ERROR}; rolled back {config_file} to its previous content and restarted containerd on it"
        );
        machine.containerd.last_restart = Some(format!("failed: {what}"));
        logs.push(format!(
            "level=ERROR msg=\"failed to restart containerd\" error=\"{RESTART_ERROR}\""
        ));
        return Applied::RolledBack(format!("failed to restart containerd: {what}"));
    }
    machine.containerd.last_restart = Some("ok".to_string());
    logs.push("level=INFO msg=\"containerd restarted\"".to_string());
    Applied::Restarted
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toml_edit::DocumentMut;

    use super::super::testing::{
        plan_container, pod_from_yaml, run_container, world, world_with_config,
    };
    use super::*;

    /// An install pod in the shape runtime-class-manager's install Job gives it.
    fn install_pod(node: &str, location: &str, sha: Option<&str>, options: Option<&str>) -> String {
        let sha = sha
            .map(|s| format!("\n        - {{name: SHIM_SHA256, value: \"{s}\"}}"))
            .unwrap_or_default();
        let options = options
            .map(|o| format!("\n        - {{name: RUNTIME_OPTIONS, value: '{o}'}}"))
            .unwrap_or_default();
        format!(
            r#"
metadata:
  name: {node}-spin-v2-install
  namespace: rcm
  labels: {{spinkube.dev/shimName: spin-v2, spinkube.dev/operation: install, spinkube.dev/job: "true"}}
spec:
  nodeName: {node}
  hostPID: true
  restartPolicy: Never
  volumes:
    - {{name: shim-download, emptyDir: {{}}}}
    - {{name: root-mount, hostPath: {{path: /}}}}
  initContainers:
    - name: downloader
      image: ghcr.io/spinframework/shim-downloader:latest
      securityContext: {{privileged: true}}
      env:
        - {{name: SHIM_NAME, value: spin-v2}}
        - {{name: SHIM_LOCATION, value: "{location}"}}{sha}
      volumeMounts: [{{name: shim-download, mountPath: /assets}}]
  containers:
    - name: provisioner
      image: ghcr.io/spinframework/node-installer:latest
      args: [install, -H, /mnt/node-root, -r, spin-v2]
      securityContext: {{privileged: true}}
      env:
        - {{name: HOST_ROOT, value: /mnt/node-root}}{options}
      volumeMounts: [{{name: root-mount, mountPath: /mnt/node-root}}, {{name: shim-download, mountPath: /assets}}]
"#
        )
    }

    fn uninstall_pod(node: &str) -> String {
        format!(
            r#"
metadata: {{name: {node}-spin-v2-uninstall, namespace: rcm}}
spec:
  nodeName: {node}
  restartPolicy: Never
  containers:
    - name: provisioner
      image: ghcr.io/spinframework/node-installer:latest
      args: [uninstall, -H, /mnt/node-root, -r, spin-v2]
      securityContext: {{privileged: true}}
"#
        )
    }

    const SPIN: &str = "https://example.com/spin-v2.tar.gz";

    fn runtime_type(config: &str) -> Option<String> {
        let doc: DocumentMut = config.parse().ok()?;
        doc.get("plugins")?
            .get("io.containerd.grpc.v1.cri")?
            .get("containerd")?
            .get("runtimes")?
            .get("spin-v2")?
            .get("runtime_type")?
            .as_str()
            .map(str::to_string)
    }

    #[tokio::test]
    async fn the_download_fetches_known_artifacts_and_refuses_the_rest() {
        let world = world();
        let ok = pod_from_yaml(&install_pod("worker-0", SPIN, Some("AB12"), None));
        let outcome = run_container(&world, &ok, "downloader");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert!(
            outcome
                .logs
                .contains(&"containerd-shim-spin-v2: OK".to_string())
        );
        assert_eq!(
            plan_container(&world, &ok, "downloader").runs_for,
            Some(Duration::from_secs(1) + Duration::from_secs_f64(1.6))
        );

        let missing = pod_from_yaml(&install_pod(
            "worker-0",
            "https://example.com/nope.tgz",
            None,
            None,
        ));
        let outcome = run_container(&world, &missing, "downloader");
        assert_eq!(outcome.exit_code, 1);
        assert_eq!(
            outcome.message.as_deref(),
            Some("curl: (22) The requested URL returned error: 404")
        );

        let bad_sha = pod_from_yaml(&install_pod("worker-0", SPIN, Some("ffff"), None));
        let outcome = run_container(&world, &bad_sha, "downloader");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .contains("did NOT match")
        );

        let wrong_binary = pod_from_yaml(&install_pod(
            "worker-0",
            "https://example.com/lunatic.tar.gz",
            None,
            None,
        ));
        let outcome = run_container(&world, &wrong_binary, "downloader");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("cp: can't stat")
        );
        assert!(
            world
                .machines
                .get("worker-0")
                .is_some_and(|m| m.shims.is_empty())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_download_fails_while_the_registry_is_down() {
        let world = world();
        // The test scenario's outage runs from 1h to 2h of simulated time; its timeScale is 10.
        world.clock.sleep(Duration::from_secs(3900)).await;
        let pod = pod_from_yaml(&install_pod("worker-0", SPIN, None, None));
        let outcome = run_container(&world, &pod, "downloader");
        assert_eq!(outcome.exit_code, 1);
        assert!(outcome.message.unwrap_or_default().starts_with("curl: (7)"));
    }

    #[tokio::test]
    async fn install_adds_binary_and_runtime_restarts_once_and_is_idempotent() {
        let world = world();
        let mut changes = world.machine_changed.subscribe();
        let pod = pod_from_yaml(&install_pod(
            "worker-0",
            SPIN,
            None,
            Some(r#"{"SystemdCgroup":"true"}"#),
        ));
        assert_eq!(
            plan_container(&world, &pod, "provisioner").runs_for,
            Some(INSTALL_TIME + RESTART_TIME)
        );
        let outcome = run_container(&world, &pod, "provisioner");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        let machine = world
            .machines
            .get("worker-0")
            .unwrap_or_else(|| panic!("no machine"));
        assert_eq!(
            machine
                .shims
                .get("containerd-shim-spin-v2")
                .map(String::as_str),
            Some("/opt/rcm/bin/containerd-shim-spin-v2")
        );
        assert_eq!(
            runtime_type(&machine.containerd.config).as_deref(),
            Some("/opt/rcm/bin/containerd-shim-spin-v2")
        );
        assert!(machine.containerd.config.contains("SystemdCgroup = true"));
        assert_eq!(machine.containerd.restarts, 1);
        assert_eq!(machine.containerd.last_restart.as_deref(), Some("ok"));
        assert_eq!(changes.try_recv().ok().as_deref(), Some("worker-0"));

        assert_eq!(
            plan_container(&world, &pod, "provisioner").runs_for,
            Some(INSTALL_TIME)
        );
        let again = run_container(&world, &pod, "provisioner");
        assert_eq!(again.exit_code, 0);
        assert!(again.logs.iter().any(|l| l.contains("nothing changed")));
        let after = world
            .machines
            .get("worker-0")
            .unwrap_or_else(|| panic!("no machine"));
        assert_eq!(after.containerd.restarts, 1);
        assert_eq!(after.containerd.config, machine.containerd.config);
        assert!(changes.try_recv().is_err());
    }

    #[tokio::test]
    async fn install_on_containerd_2_uses_the_v3_domain() {
        let world = world_with_config("version = 3\n");
        let pod = pod_from_yaml(&install_pod("worker-0", SPIN, None, None));
        assert_eq!(run_container(&world, &pod, "provisioner").exit_code, 0);
        let config = world
            .machines
            .get("worker-0")
            .map(|m| m.containerd.config)
            .unwrap_or_default();
        assert!(
            config
                .contains("[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.spin-v2]"),
            "{config}"
        );
    }

    #[tokio::test]
    async fn a_failed_restart_rolls_the_config_back_and_the_retry_succeeds() {
        // The test scenario fails the first containerd restart on worker-1.
        let original = "# managed by the node image\nversion = 2\n";
        let world = world_with_config(original);
        let pod = pod_from_yaml(&install_pod("worker-1", SPIN, None, None));
        let outcome = run_container(&world, &pod, "provisioner");
        assert_eq!(outcome.exit_code, 1);
        let message = outcome.message.unwrap_or_default();
        assert!(
            message.contains("failed to restart containerd") && message.contains("rolled back"),
            "{message}"
        );
        let machine = world
            .machines
            .get("worker-1")
            .unwrap_or_else(|| panic!("no machine"));
        assert_eq!(machine.containerd.config, original);
        assert_eq!(machine.containerd.restarts, 2);
        assert!(
            machine
                .containerd
                .last_restart
                .as_deref()
                .is_some_and(|r| r.starts_with("failed"))
        );

        let retry = run_container(&world, &pod, "provisioner");
        assert_eq!(retry.exit_code, 0, "{retry:?}");
        let machine = world
            .machines
            .get("worker-1")
            .unwrap_or_else(|| panic!("no machine"));
        assert!(machine.containerd.config.starts_with(original));
        assert!(runtime_type(&machine.containerd.config).is_some());
        assert_eq!(machine.containerd.restarts, 3);
        assert_eq!(machine.containerd.last_restart.as_deref(), Some("ok"));
    }

    #[tokio::test]
    async fn uninstall_undoes_install_and_then_has_nothing_to_do() {
        let original = "version = 2\n\n[grpc]\n  address = \"/run/containerd/containerd.sock\"\n";
        let world = world_with_config(original);
        let install = pod_from_yaml(&install_pod("worker-0", SPIN, None, None));
        assert_eq!(run_container(&world, &install, "provisioner").exit_code, 0);
        let uninstall = pod_from_yaml(&uninstall_pod("worker-0"));
        let outcome = run_container(&world, &uninstall, "provisioner");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        let machine = world
            .machines
            .get("worker-0")
            .unwrap_or_else(|| panic!("no machine"));
        assert!(machine.shims.is_empty());
        assert_eq!(machine.containerd.config, original);
        assert_eq!(machine.containerd.restarts, 2);
        let again = run_container(&world, &uninstall, "provisioner");
        assert_eq!(again.exit_code, 0);
        assert_eq!(
            world
                .machines
                .get("worker-0")
                .map(|m| m.containerd.restarts),
            Some(2)
        );
    }

    #[tokio::test]
    async fn the_installer_needs_privileges_and_a_parsable_config() {
        let world = world();
        let unprivileged = pod_from_yaml(
            &install_pod("worker-0", SPIN, None, None).replace(
                "args: [install, -H, /mnt/node-root, -r, spin-v2]\n      securityContext: {privileged: true}",
                "args: [install, -H, /mnt/node-root, -r, spin-v2]",
            ),
        );
        let outcome = run_container(&world, &unprivileged, "provisioner");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .ends_with("permission denied")
        );

        let broken = world_with_config("version = = 2");
        let pod = pod_from_yaml(&install_pod("worker-0", SPIN, None, None));
        let outcome = run_container(&broken, &pod, "provisioner");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("failed to parse the containerd config")
        );
        assert_eq!(
            broken
                .machines
                .get("worker-0")
                .map(|m| m.containerd.restarts),
            Some(0)
        );

        let bad_options = pod_from_yaml(&install_pod("worker-0", SPIN, None, Some("not json")));
        let outcome = run_container(&world, &bad_options, "provisioner");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("failed to parse RUNTIME_OPTIONS")
        );
    }

    #[tokio::test]
    async fn an_installer_without_a_download_has_nothing_to_install() {
        let world = world();
        let pod = pod_from_yaml(
            r#"
metadata: {name: bare}
spec:
  nodeName: worker-0
  containers:
    - {name: provisioner, image: x, args: [install, -H, /mnt/node-root], securityContext: {privileged: true}}
"#,
        );
        let outcome = run_container(&world, &pod, "provisioner");
        assert_eq!(outcome.exit_code, 0);
        assert_eq!(
            world
                .machines
                .get("worker-0")
                .map(|m| m.containerd.restarts),
            Some(0)
        );
    }
}
