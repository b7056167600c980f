//! KMM worker pods: `kmod load|unload` of the module the worker-config annotation describes, worded like modprobe.

use std::time::Duration;

use serde::Deserialize;

use super::super::machine::Machine;
use super::podspec::{annotation, args, has_capability, label};
use super::{ContainerRun, Outcome, World, announce, no_machine};
use kmm_api::kmm::labels::{WORKER_ACTION as ACTION_LABEL, WORKER_CONFIG as CONFIG_ANNOTATION};

/// How long a worker runs.
pub(super) const RUN_TIME: Duration = Duration::from_secs(2);

/// Whether the container is the `worker` container of a worker pod.
pub(super) fn is_worker(run: &ContainerRun) -> bool {
    is_worker_pod(run)
        && run.container.name == "worker"
        && args(run.container).first().map(String::as_str) == Some("kmod")
}

/// Whether the container is the init container of a worker pod that extracts the modules from their image: it
/// copies what the image holds, which the simulation does not model file by file, so it succeeds as a copy does.
pub(super) fn is_image_extractor(run: &ContainerRun) -> bool {
    run.init && is_worker_pod(run)
}

fn is_worker_pod(run: &ContainerRun) -> bool {
    label(run.pod, ACTION_LABEL).is_some()
}

/// The part of the worker configuration the effect needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkerConfig {
    kernel_version: String,
    #[serde(default)]
    in_tree_modules_to_remove: Vec<String>,
    #[serde(default)]
    in_tree_module_to_remove: Option<String>,
    modprobe: Modprobe,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Modprobe {
    #[serde(default)]
    module_name: String,
    #[serde(default)]
    dir_name: Option<String>,
    #[serde(default)]
    modules_loading_order: Vec<String>,
    #[serde(default)]
    raw_args: Option<RawArgs>,
}

#[derive(Debug, Default, Deserialize)]
struct RawArgs {
    #[serde(default)]
    load: Vec<String>,
    #[serde(default)]
    unload: Vec<String>,
}

/// The module name as `lsmod` shows it.
fn lsmod_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Module names in modprobe arguments: words that are neither options, option values nor `param=value`; only the
/// first unless `-a`/`--all` (load) or `-r`/`--remove` (which takes several) is given.
fn modules_in_args(raw: &[String]) -> Vec<String> {
    const TAKES_VALUE: &[&str] = &["-d", "--dirname", "-C", "--config", "-S", "--set-version"];
    let several = raw
        .iter()
        .any(|a| matches!(a.as_str(), "-a" | "--all" | "-r" | "--remove"));
    let mut names = Vec::new();
    let mut skip_next = false;
    for arg in raw {
        if skip_next {
            skip_next = false;
        } else if TAKES_VALUE.contains(&arg.as_str()) {
            skip_next = true;
        } else if !arg.starts_with('-') && !arg.contains('=') {
            names.push(arg.clone());
            if !several {
                break;
            }
        }
    }
    names
}

impl WorkerConfig {
    fn dir(&self) -> String {
        format!(
            "/tmp{}",
            self.modprobe.dir_name.as_deref().unwrap_or("/opt")
        )
    }

    /// The modules a load brings in, dependencies (the tail of the loading order) first.
    fn to_load(&self) -> Vec<String> {
        let raw = self.modprobe.raw_args.as_ref().map(|r| r.load.as_slice());
        let mut names = match raw {
            Some(raw) if !raw.is_empty() => modules_in_args(raw),
            _ if !self.modprobe.modules_loading_order.is_empty() => {
                self.modprobe.modules_loading_order.clone()
            }
            _ => vec![self.modprobe.module_name.clone()],
        };
        names.retain(|n| !n.is_empty());
        names.reverse();
        names
    }

    /// The modules an unload removes, the module itself first.
    fn to_unload(&self) -> Vec<String> {
        let raw = self.modprobe.raw_args.as_ref().map(|r| r.unload.as_slice());
        let mut names = match raw {
            Some(raw) if !raw.is_empty() => modules_in_args(raw),
            _ if !self.modprobe.modules_loading_order.is_empty() => {
                self.modprobe.modules_loading_order.clone()
            }
            _ => vec![self.modprobe.module_name.clone()],
        };
        names.retain(|n| !n.is_empty());
        names
    }

    fn in_tree_to_remove(&self) -> Vec<String> {
        self.in_tree_modules_to_remove
            .iter()
            .chain(&self.in_tree_module_to_remove)
            .cloned()
            .collect()
    }
}

/// Load or unload, as the container's args say.
pub(super) fn finish(world: &World, run: &ContainerRun) -> Outcome {
    let argv = args(run.container);
    let action = argv.get(1).map(String::as_str).unwrap_or_default();
    let path = argv
        .get(2)
        .map(String::as_str)
        .unwrap_or("/etc/kmm-worker/config.yaml");
    let mut logs = vec![format!("Reading config path={path}")];
    let config = match annotation(run.pod, CONFIG_ANNOTATION)
        .ok_or_else(|| "the file is empty".to_string())
        .and_then(|text| serde_saphyr::from_str::<WorkerConfig>(text).map_err(|e| e.to_string()))
    {
        Ok(config) => config,
        Err(e) => {
            return Outcome::failure(
                1,
                logs,
                format!("Error: could not read config file {path}: {e}"),
            );
        }
    };
    let load = match action {
        "load" => true,
        "unload" => false,
        other => {
            return Outcome::failure(
                1,
                logs,
                format!("Error: unknown command \"{other}\" for \"worker kmod\""),
            );
        }
    };
    if !has_capability(run.container, "SYS_MODULE") {
        let verb = if load { "insert" } else { "remove" };
        let first = if load {
            config.to_load().pop()
        } else {
            config.to_unload().first().cloned()
        };
        return Outcome::failure(
            1,
            logs,
            format!(
                "modprobe: ERROR: could not {verb} '{}': Operation not permitted",
                lsmod_name(&first.unwrap_or_default())
            ),
        );
    }
    let outcome = world.machines.with(run.node, |machine| {
        if load {
            load_modules(&config, machine, &mut logs)
        } else {
            unload_modules(&config, machine, &mut logs)
        }
    });
    match outcome {
        None => no_machine(run.node),
        Some(Err(message)) => Outcome::failure(1, logs, message),
        Some(Ok(changed)) => {
            if changed {
                announce(world, run.node);
            }
            Outcome::success(logs)
        }
    }
}

/// `modprobe -v` of the configured module: returns whether the module list changed, or modprobe's error.
fn load_modules(
    config: &WorkerConfig,
    machine: &mut Machine,
    logs: &mut Vec<String>,
) -> Result<bool, String> {
    let wanted = config.to_load();
    let Some(main) = wanted.last() else {
        return Err("modprobe: FATAL: Module name not given in the configuration".into());
    };
    let dir = config.dir();
    let running = machine.kernel_version.trim_end_matches('+').to_string();
    if config.kernel_version.trim_end_matches('+') != running {
        return Err(format!(
            "modprobe: FATAL: Module {} not found in directory {dir}/lib/modules/{running}",
            lsmod_name(main)
        ));
    }
    let mut changed = false;
    for in_tree in config.in_tree_to_remove() {
        if machine.modules.remove(&lsmod_name(&in_tree)) {
            logs.push(format!("rmmod {}", lsmod_name(&in_tree)));
            changed = true;
        }
    }
    logs.push(format!(
        "Running modprobe command=modprobe -vd {dir} {main}"
    ));
    for name in &wanted {
        if machine.modules.insert(lsmod_name(name)) {
            logs.push(format!("insmod {dir}/lib/modules/{running}/{name}.ko"));
            changed = true;
        }
    }
    logs.push(format!("Loaded kmod name={}", lsmod_name(main)));
    Ok(changed)
}

/// `modprobe -rv` of the configured module and its loading order: returns whether the module list changed.
fn unload_modules(
    config: &WorkerConfig,
    machine: &mut Machine,
    logs: &mut Vec<String>,
) -> Result<bool, String> {
    let names = config.to_unload();
    if names.is_empty() {
        return Err("modprobe: FATAL: Module name not given in the configuration".into());
    }
    logs.push(format!(
        "Running modprobe command=modprobe -rvd {} {}",
        config.dir(),
        names.join(" ")
    ));
    let mut changed = false;
    for name in &names {
        if machine.modules.remove(&lsmod_name(name)) {
            logs.push(format!("rmmod {}", lsmod_name(name)));
            changed = true;
        }
    }
    logs.push(format!("Unloaded kmod name={}", lsmod_name(&names[0])));
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{machine_modules, pod_from_yaml, run_container, world};
    use super::*;

    const KERNEL: &str = "5.14.0-284.el9.x86_64";

    /// A worker pod in the shape KMM creates, with the given action, config and security context.
    fn worker_pod(action: &str, config: &str, security: &str) -> String {
        let indented: String = config.lines().map(|l| format!("      {l}\n")).collect();
        format!(
            r#"
apiVersion: v1
kind: Pod
metadata:
  name: kmm-worker-worker-0-kmm-ci
  namespace: kmm-ops
  labels:
    app.kubernetes.io/component: worker
    kmm.node.kubernetes.io/module.name: kmm-ci
    kmm.node.kubernetes.io/worker-action: {action}
  annotations:
    kmm.node.kubernetes.io/worker-config: |
{indented}spec:
  nodeName: worker-0
  restartPolicy: OnFailure
  initContainers:
    - name: image-extractor
      image: quay.io/org/kmm-ci:{KERNEL}
      command: [/bin/sh, -c]
      args: ["mkdir -p /tmp/opt/lib/modules && cp -R /opt/lib/modules/{KERNEL} /tmp/opt/lib/modules"]
  containers:
    - name: worker
      image: quay.io/kmm/worker:latest
      args: [kmod, {}, /etc/kmm-worker/config.yaml]
      securityContext: {security}
"#,
            action.to_lowercase()
        )
    }

    fn config(kernel: &str) -> String {
        format!(
            "containerImage: quay.io/org/kmm-ci:{kernel}\nkernelVersion: {kernel}\ninsecurePull: false\n\
             inTreeModulesToRemove: [intree-old]\nmodprobe:\n  moduleName: kmm-ci-a\n  dirName: /opt\n  \
             modulesLoadingOrder: [kmm-ci-a, kmm_ci_b]\n"
        )
    }

    const SYS_MODULE: &str = "{capabilities: {add: [SYS_MODULE]}, runAsUser: 0}";

    #[tokio::test]
    async fn load_adds_the_module_and_its_loading_order_and_removes_in_tree_modules() {
        let world = world();
        world.machines.with("worker-0", |m| {
            m.modules.insert("intree_old".into());
        });
        let mut changes = world.machine_changed.subscribe();
        let pod = pod_from_yaml(&worker_pod("Load", &config(KERNEL), SYS_MODULE));
        let outcome = run_container(&world, &pod, "worker");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert_eq!(outcome.reason, "Completed");
        assert_eq!(
            machine_modules(&world, "worker-0"),
            ["kmm_ci_a", "kmm_ci_b"]
        );
        assert!(
            outcome
                .logs
                .iter()
                .any(|l| l.starts_with("insmod /tmp/opt/lib/modules/"))
        );
        assert_eq!(changes.try_recv().ok().as_deref(), Some("worker-0"));

        // Loading again changes nothing, succeeds and announces nothing.
        let again = run_container(&world, &pod, "worker");
        assert_eq!(again.exit_code, 0);
        assert!(!again.logs.iter().any(|l| l.starts_with("insmod")));
        assert!(changes.try_recv().is_err());
    }

    #[tokio::test]
    async fn load_for_another_kernel_fails_like_modprobe() {
        let world = world();
        let pod = pod_from_yaml(&worker_pod(
            "Load",
            &config("5.14.0-362.el9.x86_64"),
            SYS_MODULE,
        ));
        let outcome = run_container(&world, &pod, "worker");
        assert_eq!(outcome.exit_code, 1);
        assert_eq!(outcome.reason, "Error");
        let message = outcome.message.unwrap_or_default();
        assert!(
            message.starts_with("modprobe: FATAL: Module kmm_ci_a not found in directory")
                && message.ends_with(KERNEL),
            "{message}"
        );
        assert!(machine_modules(&world, "worker-0").is_empty());
    }

    #[tokio::test]
    async fn without_sys_module_the_kernel_refuses() {
        let world = world();
        let pod = pod_from_yaml(&worker_pod("Load", &config(KERNEL), "{runAsUser: 0}"));
        let outcome = run_container(&world, &pod, "worker");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .contains("could not insert 'kmm_ci_a': Operation not permitted")
        );
        assert!(machine_modules(&world, "worker-0").is_empty());

        let privileged = pod_from_yaml(&worker_pod("Load", &config(KERNEL), "{privileged: true}"));
        assert_eq!(run_container(&world, &privileged, "worker").exit_code, 0);
    }

    #[tokio::test]
    async fn unload_removes_the_loading_order_and_is_idempotent() {
        let world = world();
        world.machines.with("worker-0", |m| {
            for name in ["kmm_ci_a", "kmm_ci_b", "other"] {
                m.modules.insert(name.into());
            }
        });
        let pod = pod_from_yaml(&worker_pod("Unload", &config(KERNEL), SYS_MODULE));
        let outcome = run_container(&world, &pod, "worker");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert_eq!(machine_modules(&world, "worker-0"), ["other"]);
        let again = run_container(&world, &pod, "worker");
        assert_eq!(again.exit_code, 0);
        assert!(!again.logs.iter().any(|l| l.starts_with("rmmod")));
    }

    #[tokio::test]
    async fn raw_args_name_the_modules() {
        let world = world();
        let config = format!(
            "containerImage: x:1\nkernelVersion: {KERNEL}\nmodprobe:\n  rawArgs:\n    \
             load: [-v, -d, /opt, raw-mod, debug=1]\n    unload: [-r, -v, raw-mod, raw-dep]\n"
        );
        let load = pod_from_yaml(&worker_pod("Load", &config, SYS_MODULE));
        assert_eq!(run_container(&world, &load, "worker").exit_code, 0);
        assert_eq!(machine_modules(&world, "worker-0"), ["raw_mod"]);
        world.machines.with("worker-0", |m| {
            m.modules.insert("raw_dep".into());
        });
        let unload = pod_from_yaml(&worker_pod("Unload", &config, SYS_MODULE));
        assert_eq!(run_container(&world, &unload, "worker").exit_code, 0);
        assert!(machine_modules(&world, "worker-0").is_empty());
    }

    #[tokio::test]
    async fn a_missing_or_broken_config_fails_the_worker() {
        let world = world();
        let mut pod = pod_from_yaml(&worker_pod("Load", &config(KERNEL), SYS_MODULE));
        if let Some(annotations) = pod.metadata.annotations.as_mut() {
            annotations.insert(CONFIG_ANNOTATION.into(), "modprobe: [not, a, map]".into());
        }
        let outcome = run_container(&world, &pod, "worker");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("Error: could not read config file /etc/kmm-worker/config.yaml")
        );
        pod.metadata.annotations = None;
        assert_eq!(run_container(&world, &pod, "worker").exit_code, 1);
    }

    #[tokio::test]
    async fn the_image_extractor_exits_zero_and_changes_nothing() {
        let world = world();
        let pod = pod_from_yaml(&worker_pod("Load", &config(KERNEL), SYS_MODULE));
        let outcome = run_container(&world, &pod, "image-extractor");
        assert_eq!(outcome.exit_code, 0);
        assert!(machine_modules(&world, "worker-0").is_empty());
    }
}
