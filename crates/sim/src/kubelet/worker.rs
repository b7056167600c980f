//! One pod on its node, from binding to its end: a sandbox, the init containers in order, then every container
//! side by side, each pulled, created, started, run for as long as the node effects decide, and restarted as the
//! pod's restartPolicy says (with the kubelet's back-off). A reboot of the machine kills the sandbox and its
//! containers, and a new sandbox starts when the machine is back; deleting the pod stops its containers.

use std::future::pending;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use tokio_util::sync::CancellationToken;

use super::backoff::{Backoff, go_duration};
use super::events::{Kind, PodEvents, container_field};
use super::pod_run::PodRun;
use super::status::{self, PodState, RestartPolicy, Which};
use super::{Kubelet, NodeHandle, Tracked, ids, locked, node, process, pulls};
use crate::effects::{self, ContainerRun, device_plugin, dra};
use crate::registry_record;

/// How a container run ended.
struct Exit {
    code: i32,
    ran_for: Duration,
}

impl PodRun {
    fn handle(&self) -> Option<&NodeHandle> {
        self.kubelet.nodes.get(&self.node)
    }

    fn pod_ref(&self) -> String {
        format!("{}_{}({})", self.name, self.namespace, self.uid)
    }

    /// A fresh IP of the node's pod CIDR.
    fn next_pod_ip(&self) -> String {
        let Some(handle) = self.handle() else {
            return String::new();
        };
        let mut last = locked(&handle.last_pod_ip);
        *last = if *last >= 254 { 2 } else { *last + 1 };
        node::pod_ip(handle.index, *last)
    }

    /// Run one container once: image, create, start, run, exit.
    async fn run_container(&self, which: Which) -> Exit {
        let world = &self.kubelet.world;
        let Some(container) = self.container(which) else {
            return Exit {
                code: 0,
                ran_for: Duration::ZERO,
            };
        };
        let field = container_field(which.init, &container.name);
        let image =
            kmm_api::image_ref::comparison_key(container.image.as_deref().unwrap_or_default());
        let resumed = locked(&self.state).is_running(which);
        if !resumed {
            pulls::ensure_image(self, which, container, &field).await;
            let boot = self
                .handle()
                .map(|h| h.life.borrow().boot_id.clone())
                .unwrap_or_default();
            let restarts = locked(&self.state)
                .container(which)
                .map_or(0, |s| s.restart_count);
            let id = format!(
                "containerd://{}",
                ids::hex(
                    &[&self.uid, &container.name, &boot, &restarts.to_string()],
                    64
                )
            );
            let image_id = ids::image_digest(&image, world.registry.digest(&image).as_deref());
            self.events
                .record(
                    Kind::Normal,
                    "Created",
                    &format!("Created container: {}", container.name),
                    Some(&field),
                )
                .await;
            self.update(which, |s| status::start(s, &id, &image_id));
            world
                .server
                .logs()
                .container_started(&self.namespace, &self.name, &container.name);
            self.events
                .record(
                    Kind::Normal,
                    "Started",
                    &format!("Started container {}", container.name),
                    Some(&field),
                )
                .await;
        }
        let _in_use = self.kubelet.use_image(&self.node, &image);
        let now = world.clock.now();
        world
            .machines
            .with(&self.node, |m| m.images.touch(&image, now));
        // The last use is the runtime's own bookkeeping, not a change of the machine: the record shows it with
        // the machine's next change, as a kubelet keeps image use in memory.
        self.report().await;

        let started = world.clock.now();
        let in_use = self.kubelet.images_in_use(&self.node);
        let run = ContainerRun {
            node: &self.node,
            pod: &self.pod,
            container,
            init: which.init,
            images_in_use: &in_use,
        };
        // A device plugin's devices are on the node for as long as its container runs.
        let _devices = (!which.init)
            .then(|| device_plugin::register(world, &self.node, &self.uid, container))
            .flatten();
        // A DRA driver's ResourceSlice is published for as long as its container runs.
        let _slice = (!which.init)
            .then(|| dra::register(world, &self.node, container))
            .flatten();
        let pod_ip = locked(&self.state).pod_ip();
        let (env, _registration, main_stdin) = process::start(process::Starting {
            kubelet: &self.kubelet,
            pod: &self.pod,
            node: &self.node,
            pod_ip,
            container,
        })
        .await;
        let outcome = match effects::in_process(world, &run) {
            Some(engine) => engine.run().await,
            None if effects::runs_its_command(world, &run) => {
                match process::argv(world, container, &env) {
                    Some(argv) => {
                        process::run_main(world, &self.pod, container, &env, &argv, main_stdin)
                            .await
                    }
                    // An image that says nothing of what it runs, started without a command: a server.
                    None => pending().await,
                }
            }
            None => self.run_planned(which, container, &run).await,
        };
        let logs = world.server.logs();
        for line in &outcome.logs {
            let timestamp = jiff::Timestamp::now().to_string();
            logs.append(
                &self.namespace,
                &self.name,
                &container.name,
                &timestamp,
                line,
            );
        }
        logs.container_exited(&self.namespace, &self.name, &container.name);
        // Not written yet: what follows at the same instant (the next container, a restart, the end of the pod)
        // is written with it, as the kubelet's status manager writes once per pod sync.
        self.update(which, |s| {
            status::terminate(
                s,
                outcome.exit_code,
                &outcome.reason,
                outcome.message.clone(),
            )
        });
        Exit {
            code: outcome.exit_code,
            ran_for: world.clock.now().saturating_sub(started),
        }
    }

    /// Run a container for the time its effect plans, then apply the effect.
    async fn run_planned(
        &self,
        which: Which,
        container: &Container,
        run: &ContainerRun<'_>,
    ) -> effects::Outcome {
        let world = &self.kubelet.world;
        let plan = effects::plan(world, run);
        match plan.runs_for {
            Some(time) => world.clock.sleep(time).await,
            None => pending::<()>().await,
        }
        let in_use = self.kubelet.images_in_use(&self.node);
        let outcome = effects::finish(
            world,
            &ContainerRun {
                node: &self.node,
                pod: &self.pod,
                container,
                init: which.init,
                images_in_use: &in_use,
            },
        );
        // A push is recorded before the pod says it succeeded, so a restart never loses an image a build reported.
        registry_record::persist(world).await;
        outcome
    }

    /// Wait out a restart back-off, showing `CrashLoopBackOff` as the kubelet does.
    async fn back_off_restart(&self, which: Which, delay: Duration) {
        if delay.is_zero() {
            return;
        }
        let Some(name) = self.container(which).map(|c| c.name.clone()) else {
            return;
        };
        let message = format!(
            "back-off {} restarting failed container={name} pod={}",
            go_duration(delay),
            self.pod_ref()
        );
        self.update(which, |s| {
            status::wait(s, "CrashLoopBackOff", Some(message))
        });
        self.report().await;
        self.events
            .record(
                Kind::Warning,
                "BackOff",
                &format!(
                    "Back-off restarting failed container {name} in pod {}",
                    self.pod_ref()
                ),
                Some(&container_field(which.init, &name)),
            )
            .await;
        self.kubelet.world.clock.sleep(delay).await;
    }

    /// Keep a container going as the restart policy says; returns when it will not run again.
    async fn keep_running(&self, index: usize) {
        let which = Which { init: false, index };
        let policy = locked(&self.state).restart_policy();
        let mut backoff = Backoff::default();
        loop {
            let exit = self.run_container(which).await;
            if !policy.restarts(exit.code) {
                self.report().await;
                return;
            }
            let delay = backoff.before_restart(exit.ran_for);
            self.back_off_restart(which, delay).await;
        }
    }

    /// One sandbox's life: init containers in order, then the containers. Returns when the pod is finished.
    ///
    /// The status is written whenever simulated time is about to pass (a pull, a running container, a back-off)
    /// and when the pod ends; steps of the same instant (the sandbox and the first container's start, an init
    /// container's exit and the next one's start) reach the API as one write.
    async fn sandbox(&self) {
        let ip = self.next_pod_ip();
        locked(&self.state).sandbox_created(ip);
        let spec = self.pod.spec.clone().unwrap_or_default();
        let init_count = spec.init_containers.as_ref().map_or(0, Vec::len);
        let policy = locked(&self.state).restart_policy();
        if !locked(&self.state).initialized {
            for index in 0..init_count {
                let which = Which { init: true, index };
                let mut backoff = Backoff::default();
                loop {
                    let exit = self.run_container(which).await;
                    if exit.code == 0 {
                        break;
                    }
                    if policy == RestartPolicy::Never {
                        locked(&self.state).finish("Failed");
                        self.report().await;
                        return;
                    }
                    let delay = backoff.before_restart(exit.ran_for);
                    self.back_off_restart(which, delay).await;
                }
            }
            locked(&self.state).initialized = true;
        }
        futures::future::join_all((0..spec.containers.len()).map(|i| self.keep_running(i))).await;
        let phase = locked(&self.state).phase();
        locked(&self.state).finish(phase);
        self.report().await;
    }

    /// The pod is being deleted: stop its running containers.
    async fn kill(&self) {
        let killed = locked(&self.state).kill_running();
        for (init, name) in killed {
            self.events
                .record(
                    Kind::Normal,
                    "Killing",
                    &format!("Stopping container {name}"),
                    Some(&container_field(init, &name)),
                )
                .await;
        }
        self.report().await;
    }
}

/// What ended a wait of the pod's worker.
#[derive(Debug, PartialEq)]
enum Interrupt {
    Ready,
    Killed,
    Rebooted,
    Finished,
}

/// Run `pod` on its node until it finishes, is deleted (`killed`) or the simulation stops.
pub(super) async fn run(kubelet: Arc<Kubelet>, pod: Pod, node: String, killed: CancellationToken) {
    let Some(handle) = kubelet.nodes.get(&node) else {
        return;
    };
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let host_ip = node::internal_ip(handle.index);
    let mut life = handle.life.subscribe();
    let run = PodRun {
        events: PodEvents::new(kubelet.world.client.clone(), &node, &pod),
        state: Mutex::new(PodState::new(&pod, &host_ip)),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: uid.clone(),
        node,
        pod,
        kubelet: kubelet.clone(),
        last_written: tokio::sync::Mutex::new(None),
    };
    let stop = kubelet.world.stop.clone();
    loop {
        let up = tokio::select! {
            _ = stop.cancelled() => return,
            _ = killed.cancelled() => Interrupt::Killed,
            up = life.wait_for(|l| l.ready) => match up {
                Ok(_) => Interrupt::Ready,
                Err(_) => return,
            },
        };
        if up == Interrupt::Killed {
            return run.kill().await;
        }
        let boot = life.borrow().boot_id.clone();
        let mut boots = life.clone();
        let ended = tokio::select! {
            _ = stop.cancelled() => return,
            _ = killed.cancelled() => Interrupt::Killed,
            _ = boots.wait_for(|l| l.boot_id != boot) => Interrupt::Rebooted,
            _ = run.sandbox() => Interrupt::Finished,
        };
        let finished = match ended {
            Interrupt::Killed => return run.kill().await,
            Interrupt::Finished => true,
            _ => false,
        };
        if !finished {
            let policy = {
                let mut state = locked(&run.state);
                state.lost_sandbox();
                state.restart_policy()
            };
            if policy == RestartPolicy::Never {
                let phase = locked(&run.state).phase();
                let phase = if phase == "Succeeded" {
                    phase
                } else {
                    "Failed"
                };
                locked(&run.state).finish(phase);
            }
            run.report().await;
            if policy != RestartPolicy::Never {
                continue;
            }
        }
        if let Some(tracked) = locked(&kubelet.pods).get_mut(&uid) {
            *tracked = Tracked::Done;
        }
        return;
    }
}
