//! What privileged pods do to their node: the contract by which the simulation recognises, from what is visible in
//! a pod, the node-level work a container does, and applies the effect a real node would show.
//!
//! For a container these rules recognise, the kubelet calls [`plan`] when it starts, to learn how long it runs, and
//! [`finish`] when that time is up, to apply the container's effect to the machine (or the registry) and learn its exit code, termination reason
//! and message, and log lines. Nothing else is consulted: no side channel, no naming convention of kmm-tui's own.
//! The pods the real operators create (KMM, runtime-class-manager, kube-fledged) are recognised as they are, and any
//! operator that creates pods in the same shapes gets the same effects. Every duration is simulated time.
//!
//! # Recognised containers
//!
//! Rules are tried in this order; the first that matches decides.
//!
//! 1. **Kernel module worker.** Pod label `kmm.node.kubernetes.io/worker-action` (`Load` or `Unload`) and a
//!    container `worker` whose args are `kmod load|unload <config path>` (args decide the action). The config is
//!    the pod annotation `kmm.node.kubernetes.io/worker-config`: YAML with `kernelVersion`, `containerImage`,
//!    `inTreeModulesToRemove`, and `modprobe` (`moduleName`, `dirName` (default `/opt`), `modulesLoadingOrder`,
//!    `rawArgs.load`, `rawArgs.unload`). The container needs the `SYS_MODULE` capability or `privileged: true`;
//!    without them modprobe fails with `Operation not permitted` (exit 1).
//!    - *Load*: fails (exit 1, `modprobe: FATAL: Module … not found in directory /tmp/<dirName>/lib/modules/<kernel>`)
//!      when `kernelVersion` is not the machine's running kernel. Otherwise the in-tree modules to remove leave the
//!      module list, and the module with every entry of `modulesLoadingOrder` (or the modules `rawArgs.load` names)
//!      joins it. Loading a loaded module changes nothing and succeeds.
//!    - *Unload*: removes the module and its loading order (or the modules `rawArgs.unload` names). Modules that are
//!      not loaded are skipped, so an unload always succeeds.
//!    - The machine's module list is what `lsmod` shows: names with `-` written as `_`.
//!    - The init container `image-extractor` of a worker pod exits 0.
//! 2. **Image build** (pod label `kmm.node.kubernetes.io/resource-type=BuildImage`) and **image signing**
//!    (`…=SignImage`), kaniko-style args: after the build time, `--destination <image>` (or `--destination=<image>`)
//!    is pushed to the registry; with `--no-push` nothing is pushed. A sign pod first needs the unsigned image: it is
//!    the `FROM <image> AS source` line of the pod's `dockerfile` annotation, and a missing unsigned image fails the
//!    sign (exit 1). A `buildFailure` fault for the destination makes the container exit 1 instead of pushing, and a
//!    registry outage when the push happens fails it too. The build time is 60–120 s and the sign time 20–30 s,
//!    drawn from the scenario's seed and the image name (so a run is reproducible), plus the time to push the image
//!    at the registry's bandwidth.
//! 3. **Shim download.** An init container with env `SHIM_LOCATION` (and `SHIM_NAME`, optionally `SHIM_SHA256`)
//!    fetches the archive at that URL from the registry's `shims`; it takes the registry's latency plus a 16 MiB
//!    transfer. It fails (exit 1) like curl when the URL is unknown (404) or the registry is down, when the archive
//!    holds no `containerd-shim-<SHIM_NAME>`, and when `SHIM_SHA256` differs from the artifact's `sha256` (an
//!    artifact without a `sha256` in the scenario is accepted as downloaded). It changes nothing on the node.
//! 4. **Shim install and uninstall.** A container whose args are `install|uninstall -H <host root> [-r <shim>]`.
//!    It must be privileged (otherwise exit 1, permission denied).
//!    - *install* installs what the pod's download init container fetched: the binary `containerd-shim-<shim>`
//!      goes to `/opt/rcm/bin/`, and the runtime `<shim>` is added to the containerd configuration (TOML, edited so
//!      that every byte outside the runtime's table stays as it was) under
//!      `plugins."io.containerd.cri.v1.runtime".containerd.runtimes.<shim>` when the file says `version = 3`, else
//!      under `plugins."io.containerd.grpc.v1.cri".containerd.runtimes.<shim>`, with `runtime_type` the binary's
//!      path and `options` exactly the `RUNTIME_OPTIONS` env (a JSON object; each value is written as the TOML value
//!      it spells, e.g. `"true"` → `true`, or else as a string). A runtime table that already exists keeps its
//!      other keys. With nothing downloaded there is nothing to install.
//!    - *uninstall* removes the binary of `-r <shim>` and the runtime's table.
//!    - When something changed, containerd restarts (3 s). A `containerdRestartFailure` fault makes the restart
//!      fail: the previous configuration is restored, containerd comes back on it, and the container exits 1 and
//!      says so. That counts two restarts (the failed one and the one on the restored file). When nothing changed
//!      there is no restart and the container exits 0. Every restart is recorded in the machine's
//!      `containerd.restarts` and `containerd.last_restart`.
//! 5. **Image deletion.** A container whose command and args run `crictl … rmi <image>…` (directly or in a
//!    `sh -c` script) removes the images from the node's store. An image used by a running container, or not on the
//!    node, makes it exit 1, as crictl does.
//! 6. **The cluster's own image.** A container of kmm-tui's image (the scenario's `controllerImage` repository,
//!    any tag) whose args start a program registered for that image (the binary registers its `controller`
//!    command: the real engine) runs it in-process for as long as it runs, with its args (`$(VAR)` expanded from
//!    its env and the downward API), the client of its ServiceAccount, and its log lines as the container's log.
//!    Deleting the pod drops the program without an orderly shutdown (see [`own_image`]). The kubelet starts it
//!    through [`in_process`] instead of [`plan`] and [`finish`].
//! 7. **Device plugin.** A container whose env `DEVICE_PLUGIN_RESOURCE` names an extended resource
//!    (`example.com/gpu`, or `example.com/gpu=4` for four devices) is a server: it runs until the pod is deleted
//!    (or for the `sim.kmm-tui.io/run-for` annotation's time), args or not, and while it runs its node offers the
//!    devices in `status.capacity` and `status.allocatable` (see [`device_plugin`]).
//! 8. **DRA driver.** A container whose env `DRIVER_NAME` names a DRA driver (a DNS subdomain such as
//!    `gpu.example.com`), as upstream KMM's DRA Modules run `dra-example-kubeletplugin`, is a server like a device
//!    plugin. While it runs it publishes a ResourceSlice for its node with the devices the scenario gives the node's
//!    group for that driver, once the kernel module they name is loaded, and deletes it when the module unloads or
//!    the container stops (see [`dra`]).
//! 9. **OS image listing its kernels.** A container of one of the scenario's `osImages` whose command is
//!    `ls /usr/lib/modules` (or `/lib/modules`, or either in a `sh -c` script) prints the kernel that image boots
//!    and exits 0 a second after it starts: the image decides, not the node it runs on (see [`os_image`]).
//! 10. **Anything else** runs its command: the kubelet starts its main process in the simulated shell
//!     (`super::shell`), with its `command` and `args`, or its image's entrypoint and cmd where it sets none (as the
//!     scenario's registry declares them), and its environment. What the process writes is the container's log and
//!     its exit status ends the container; `sleep` takes simulated time, so a script runs as long as it would. An
//!     image that says nothing of what it runs, started without a command, is a server: it runs until the pod is
//!     deleted. The pod annotations `sim.kmm-tui.io/run-for` (seconds, or `90s`, `2m`) and
//!     `sim.kmm-tui.io/exit-code` instead steer the run time and exit code of these containers (also of servers),
//!     without running anything.
//!
//! The init container of a KMM worker pod that extracts the modules from their image (any init container of a pod
//! with the worker-action label) copies what the image holds, which is not modelled file by file: it exits 0 a
//! second after it starts.
//!
//! # Outcomes
//!
//! An exit code 0 has reason `Completed` and no message; any other has reason `Error` and a message that says what
//! failed, as the tool's last words would (what a real container leaves in its termination log). After changing a
//! machine, the effect announces its node on [`World::machine_changed`].

mod build;
mod containerd_config;
pub mod device_plugin;
pub mod dra;
mod generic;
mod images;
mod kmod;
mod os_image;
pub mod own_image;
mod podspec;
mod shim;

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};

use super::World;

/// A container the kubelet starts or stops, with what the effects need to know about its node.
pub struct ContainerRun<'a> {
    /// The node it runs on.
    pub node: &'a str,
    /// Its pod.
    pub pod: &'a Pod,
    /// The container.
    pub container: &'a Container,
    /// Whether it is an init container.
    pub init: bool,
    /// Images used by containers currently running on the node (image deletion refuses these).
    pub images_in_use: &'a BTreeSet<String>,
}

/// Decided when the container starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// How long the container runs; None means it runs until the pod is deleted.
    pub runs_for: Option<Duration>,
}

/// Decided (and applied to machines and registry) when the container exits.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The container's exit code.
    pub exit_code: i32,
    /// The terminated state's reason (`Completed` or `Error`, as the kubelet reports them).
    pub reason: String,
    /// The terminated state's message: what failed, when something did.
    pub message: Option<String>,
    /// What the container printed.
    pub logs: Vec<String>,
}

impl Outcome {
    /// A container that did its work.
    fn success(logs: Vec<String>) -> Self {
        Self::exited(0, logs, None)
    }

    /// A container that did its work and left `message` (if any) as its termination message.
    fn succeeded_saying(logs: Vec<String>, message: Option<String>) -> Self {
        Self {
            message,
            ..Self::success(logs)
        }
    }

    /// A container that failed with `exit_code`; `message` is its last word, also appended to the logs.
    fn failure(exit_code: i32, mut logs: Vec<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        logs.push(message.clone());
        Self::exited(exit_code, logs, Some(message))
    }

    /// A container that exited with `exit_code` on its own account (e.g. a generic container told to fail).
    pub(crate) fn exited(exit_code: i32, logs: Vec<String>, message: Option<String>) -> Self {
        let reason = if exit_code == 0 { "Completed" } else { "Error" };
        Self {
            exit_code,
            reason: reason.to_string(),
            message: if exit_code == 0 { None } else { message },
            logs,
        }
    }
}

/// What a container does on its node, recognised from its pod.
#[derive(Debug)]
enum Effect {
    /// A KMM worker loading or unloading kernel modules.
    Kmod,
    /// A kaniko build or sign.
    Build(build::Kind),
    /// The shim archive download.
    ShimDownload,
    /// The node installer of a shim.
    ShimInstaller(shim::Operation),
    /// `crictl rmi`.
    RemoveImages(Vec<String>),
    /// A device plugin, which serves until its pod goes.
    DevicePlugin,
    /// A DRA kubelet plugin, which serves until its pod goes.
    DraDriver,
    /// An OS image listing its kernel directory: the kernel it boots.
    OsImageKernel(String),
    /// The module image extractor of a KMM worker pod.
    ImageExtractor,
    /// Anything else.
    Generic,
}

/// Recognise a container's effect by the rules of the module documentation, in order.
fn recognise(world: &World, run: &ContainerRun) -> Effect {
    if !run.init && kmod::is_worker(run) {
        return Effect::Kmod;
    }
    if kmod::is_image_extractor(run) {
        return Effect::ImageExtractor;
    }
    if let Some(kind) = build::kind(run) {
        return Effect::Build(kind);
    }
    if run.init && shim::is_download(run.container) {
        return Effect::ShimDownload;
    }
    if let Some(operation) = shim::operation(run.container) {
        return Effect::ShimInstaller(operation);
    }
    if let Some(images) = images::rmi_targets(run.container) {
        return Effect::RemoveImages(images);
    }
    if !run.init && device_plugin::advertised(run.container).is_some() {
        return Effect::DevicePlugin;
    }
    if !run.init && dra::driver_name(run.container).is_some() {
        return Effect::DraDriver;
    }
    if let Some(kernel) = os_image::listed_kernel(world, run) {
        return Effect::OsImageKernel(kernel.to_owned());
    }
    Effect::Generic
}

/// How long a starting container runs.
pub fn plan(world: &World, run: &ContainerRun) -> Plan {
    let runs_for = match recognise(world, run) {
        Effect::Kmod => Some(kmod::RUN_TIME),
        Effect::Build(kind) => Some(build::run_time(world, run, kind)),
        Effect::ShimDownload => Some(shim::download_time(world)),
        Effect::ShimInstaller(operation) => Some(shim::installer_time(world, run, &operation)),
        Effect::RemoveImages(_) => Some(images::RUN_TIME),
        Effect::DevicePlugin | Effect::DraDriver => generic::requested_run_time(run),
        Effect::OsImageKernel(_) | Effect::ImageExtractor | Effect::Generic => {
            generic::run_time(run)
        }
    };
    Plan { runs_for }
}

/// Apply the effect of a container that has run its time, and say how it exited.
pub fn finish(world: &World, run: &ContainerRun) -> Outcome {
    match recognise(world, run) {
        Effect::Kmod => kmod::finish(world, run),
        Effect::Build(kind) => build::finish(world, run, kind),
        Effect::ShimDownload => shim::download(world, run),
        Effect::ShimInstaller(operation) => shim::run_installer(world, run, &operation),
        Effect::RemoveImages(images) => images::remove(world, run, &images),
        Effect::OsImageKernel(kernel) => os_image::finish(&kernel),
        Effect::DevicePlugin | Effect::DraDriver | Effect::ImageExtractor | Effect::Generic => {
            generic::finish(run)
        }
    }
}

/// Whether the container runs its own command (through the simulated shell) rather than for a planned time: a
/// container no other rule recognises, unless its pod's annotations steer how long it runs and how it exits.
pub fn runs_its_command(world: &World, run: &ContainerRun) -> bool {
    matches!(recognise(world, run), Effect::Generic) && !generic::steered(run)
}

/// A container that runs a program in-process rather than for a planned time: one of the own image's programs.
pub fn in_process(world: &World, run: &ContainerRun) -> Option<own_image::InProcess> {
    own_image::recognise(world, run)
}

/// Tell the kubelet that a machine changed underneath its node.
fn announce(world: &World, node: &str) {
    // No receiver means nobody is publishing machines yet; the change is in the machine either way.
    let _ = world.machine_changed.send(node.to_string());
}

/// The outcome when the pod's node has no machine (it was removed while the container ran).
fn no_machine(node: &str) -> Outcome {
    Outcome::failure(
        1,
        Vec::new(),
        format!("node {node} has no machine: it was removed while the container ran"),
    )
}

#[cfg(test)]
mod testing;
