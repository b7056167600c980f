//! A pod's status as the kubelet computes it: container statuses (waiting, running, terminated, with the last
//! termination and the restart count), the conditions, and the phase that restartPolicy implies.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Which container of the pod.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Which {
    /// An init container.
    pub init: bool,
    /// Its position in the pod's list.
    pub index: usize,
}

/// How a pod restarts its containers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum RestartPolicy {
    /// Every exit is followed by a restart.
    Always,
    /// Failures are restarted, successes are final.
    OnFailure,
    /// Nothing is restarted.
    Never,
}

impl RestartPolicy {
    /// The pod's policy (Always when unset, as the API server defaults it).
    pub(super) fn of(pod: &Pod) -> Self {
        match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
            Some("OnFailure") => Self::OnFailure,
            Some("Never") => Self::Never,
            _ => Self::Always,
        }
    }

    /// Whether a container that exited with `exit_code` is started again.
    pub(super) fn restarts(self, exit_code: i32) -> bool {
        match self {
            Self::Always => true,
            Self::OnFailure => exit_code != 0,
            Self::Never => false,
        }
    }
}

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

/// What the kubelet knows about one pod.
#[derive(Debug)]
pub(super) struct PodState {
    init: Vec<ContainerStatus>,
    main: Vec<ContainerStatus>,
    /// Every init container has succeeded in the current sandbox.
    pub initialized: bool,
    /// The pod sandbox exists (network set up, containers can start).
    sandbox: bool,
    /// The phase once the pod is finished for good.
    final_phase: Option<&'static str>,
    restart_policy: RestartPolicy,
    host_ip: String,
    pod_ip: Option<String>,
    start_time: Option<Time>,
    qos_class: Option<String>,
    conditions: Vec<PodCondition>,
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..Default::default()
    }
}

impl PodState {
    /// The state of `pod` as it stands in the API: a new pod starts with every container waiting; a pod the
    /// kubelet ran before a restart keeps its containers' statuses, restart counts and initialization.
    pub(super) fn new(pod: &Pod, host_ip: &str) -> Self {
        let existing = pod.status.clone().unwrap_or_default();
        let spec = pod.spec.clone().unwrap_or_default();
        let has_init = spec.init_containers.as_ref().is_some_and(|c| !c.is_empty());
        let statuses = |containers: Option<Vec<k8s_openapi::api::core::v1::Container>>,
                        known: Option<Vec<ContainerStatus>>,
                        first_reason: &str| {
            containers
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    known
                        .iter()
                        .flatten()
                        .find(|s| s.name == c.name)
                        .cloned()
                        .unwrap_or_else(|| ContainerStatus {
                            name: c.name.clone(),
                            image: c.image.clone().unwrap_or_default(),
                            state: Some(waiting(first_reason, None)),
                            ..Default::default()
                        })
                })
                .collect::<Vec<_>>()
        };
        let main_reason = if has_init {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        let conditions = existing.conditions.clone().unwrap_or_default();
        let initialized = conditions
            .iter()
            .any(|c| c.type_ == "Initialized" && c.status == "True");
        Self {
            init: statuses(
                spec.init_containers,
                existing.init_container_statuses,
                "PodInitializing",
            ),
            main: statuses(
                Some(spec.containers),
                existing.container_statuses,
                main_reason,
            ),
            initialized,
            sandbox: false,
            final_phase: None,
            restart_policy: RestartPolicy::of(pod),
            host_ip: host_ip.into(),
            pod_ip: existing.pod_ip,
            start_time: existing.start_time,
            qos_class: existing.qos_class,
            conditions,
        }
    }

    /// The pod's restart policy.
    pub(super) fn restart_policy(&self) -> RestartPolicy {
        self.restart_policy
    }

    /// The status of one container.
    pub(super) fn container(&mut self, which: Which) -> Option<&mut ContainerStatus> {
        if which.init {
            self.init.get_mut(which.index)
        } else {
            self.main.get_mut(which.index)
        }
    }

    /// Whether a container was running when the kubelet took the pod over (it goes on running).
    pub(super) fn is_running(&self, which: Which) -> bool {
        let list = if which.init { &self.init } else { &self.main };
        list.get(which.index)
            .and_then(|s| s.state.as_ref())
            .is_some_and(|s| s.running.is_some())
    }

    /// The pod's IP, once a sandbox has one.
    pub(super) fn pod_ip(&self) -> Option<String> {
        self.pod_ip.clone()
    }

    /// A new sandbox was created with `pod_ip`: containers can start. The first sandbox sets the start time.
    pub(super) fn sandbox_created(&mut self, pod_ip: String) {
        self.sandbox = true;
        self.pod_ip = Some(pod_ip);
        self.start_time.get_or_insert_with(now);
    }

    /// The machine went down: the sandbox and every running container are gone, init containers run again in the
    /// next sandbox.
    pub(super) fn lost_sandbox(&mut self) {
        self.sandbox = false;
        self.initialized = false;
        for status in self.init.iter_mut().chain(self.main.iter_mut()) {
            if status.state.as_ref().is_some_and(|s| s.running.is_some()) {
                terminate(status, 255, "Unknown", None);
            }
        }
    }

    /// Stop every running container (the pod is being deleted); returns their names.
    pub(super) fn kill_running(&mut self) -> Vec<(bool, String)> {
        let mut killed = Vec::new();
        for (init, status) in self
            .init
            .iter_mut()
            .map(|s| (true, s))
            .chain(self.main.iter_mut().map(|s| (false, s)))
        {
            if status.state.as_ref().is_some_and(|s| s.running.is_some()) {
                terminate(status, 137, "Error", None);
                killed.push((init, status.name.clone()));
            }
        }
        killed
    }

    /// The pod is finished for good with `phase`.
    pub(super) fn finish(&mut self, phase: &'static str) {
        self.final_phase = Some(phase);
    }

    /// The phase the kubelet reports: Pending until initialized and every container has started once, Running
    /// while a container runs or will be restarted, then Succeeded or Failed as the restart policy decides.
    pub(super) fn phase(&self) -> &'static str {
        if let Some(phase) = self.final_phase {
            return phase;
        }
        if !self.initialized {
            return "Pending";
        }
        let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
        for status in &self.main {
            let state = status.state.clone().unwrap_or_default();
            if state.running.is_some() {
                running += 1;
            } else if let Some(t) = &state.terminated {
                stopped += 1;
                if t.exit_code == 0 {
                    succeeded += 1;
                }
            } else if status
                .last_state
                .as_ref()
                .is_some_and(|s| s.terminated.is_some())
            {
                stopped += 1;
            } else {
                waiting += 1;
            }
        }
        if waiting > 0 {
            "Pending"
        } else if running > 0 {
            "Running"
        } else if stopped == 0 {
            "Pending"
        } else {
            match self.restart_policy {
                RestartPolicy::Always => "Running",
                RestartPolicy::OnFailure if stopped == succeeded => "Succeeded",
                RestartPolicy::OnFailure => "Running",
                RestartPolicy::Never if stopped == succeeded => "Succeeded",
                RestartPolicy::Never => "Failed",
            }
        }
    }

    fn set_condition(
        &mut self,
        type_: &str,
        ok: bool,
        reason: Option<&str>,
        message: Option<String>,
    ) {
        let status = if ok { "True" } else { "False" };
        let kept = self
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .and_then(|c| c.last_transition_time.clone());
        self.conditions.retain(|c| c.type_ != type_);
        self.conditions.push(PodCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(str::to_string),
            message,
            last_transition_time: Some(kept.unwrap_or_else(now)),
            last_probe_time: None,
            observed_generation: None,
        });
    }

    /// The pod status to write.
    pub(super) fn status(&mut self) -> PodStatus {
        let phase = self.phase();
        let sandbox = self.sandbox && !matches!(phase, "Succeeded" | "Failed");
        self.set_condition("PodReadyToStartContainers", sandbox, None, None);
        let uninitialized = not_done(&self.init, |s| {
            s.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_some_and(|t| t.exit_code == 0)
        });
        if self.initialized || uninitialized.is_empty() {
            self.set_condition("Initialized", true, None, None);
        } else {
            let message = format!(
                "containers with incomplete status: [{}]",
                uninitialized.join(" ")
            );
            self.set_condition(
                "Initialized",
                false,
                Some("ContainersNotInitialized"),
                Some(message),
            );
        }
        let unready = not_done(&self.main, |s| s.ready);
        let (ready, reason, message) = if matches!(phase, "Succeeded" | "Failed") {
            (false, Some("PodCompleted"), None)
        } else if unready.is_empty() {
            (true, None, None)
        } else {
            let message = format!("containers with unready status: [{}]", unready.join(" "));
            (false, Some("ContainersNotReady"), Some(message))
        };
        self.set_condition("Ready", ready, reason, message.clone());
        self.set_condition("ContainersReady", ready, reason, message);
        self.set_condition("PodScheduled", true, None, None);
        const ORDER: [&str; 5] = [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ];
        self.conditions.sort_by_key(|c| {
            ORDER
                .iter()
                .position(|t| *t == c.type_)
                .unwrap_or(ORDER.len())
        });
        PodStatus {
            phase: Some(phase.into()),
            conditions: Some(self.conditions.clone()),
            host_ip: Some(self.host_ip.clone()),
            host_ips: Some(vec![HostIP {
                ip: self.host_ip.clone(),
            }]),
            pod_ip: self.pod_ip.clone(),
            pod_ips: self.pod_ip.clone().map(|ip| vec![PodIP { ip }]),
            start_time: self.start_time.clone(),
            qos_class: self.qos_class.clone(),
            init_container_statuses: (!self.init.is_empty()).then(|| self.init.clone()),
            container_statuses: Some(self.main.clone()),
            ..Default::default()
        }
    }
}

/// Names of the containers of `list` for which `done` does not hold.
fn not_done(list: &[ContainerStatus], done: impl Fn(&ContainerStatus) -> bool) -> Vec<&str> {
    list.iter()
        .filter(|s| !done(s))
        .map(|s| s.name.as_str())
        .collect()
}

/// The container waits (to be created, for its image, for a back-off). A termination it had moves to its last
/// state.
pub(super) fn wait(status: &mut ContainerStatus, reason: &str, message: Option<String>) {
    if status
        .state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some())
    {
        status.last_state = status.state.take();
    }
    status.state = Some(waiting(reason, message));
    status.ready = false;
    status.started = Some(false);
}

/// The container started as `container_id` from `image_id`. Every start after the first is a restart.
pub(super) fn start(status: &mut ContainerStatus, container_id: &str, image_id: &str) {
    if status
        .state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some())
    {
        status.last_state = status.state.take();
    }
    if status.last_state.is_some() {
        status.restart_count += 1;
    }
    status.container_id = Some(container_id.into());
    status.image_id = image_id.into();
    status.state = Some(ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(now()),
        }),
        ..Default::default()
    });
    status.ready = true;
    status.started = Some(true);
}

/// The container exited.
pub(super) fn terminate(
    status: &mut ContainerStatus,
    exit_code: i32,
    reason: &str,
    message: Option<String>,
) {
    let started_at = status
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.clone());
    status.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            container_id: status.container_id.clone(),
            exit_code,
            reason: Some(reason.into()),
            message,
            started_at,
            finished_at: Some(now()),
            signal: None,
        }),
        ..Default::default()
    });
    status.ready = false;
    status.started = Some(false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(policy: &str, containers: &[&str]) -> Pod {
        let containers: Vec<_> = containers
            .iter()
            .map(|n| json!({"name": n, "image": "quay.io/x:1"}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"restartPolicy": policy, "containers": containers}
        }))
        .expect("a pod")
    }

    fn at(state: &mut PodState, index: usize) -> &mut ContainerStatus {
        state
            .container(Which { init: false, index })
            .expect("a container")
    }

    #[test]
    fn the_phase_follows_the_restart_policy() {
        let mut s = PodState::new(&pod("Never", &["a", "b"]), "10.0.0.2");
        s.initialized = true;
        assert_eq!(s.phase(), "Pending");
        start(at(&mut s, 0), "id-a", "img");
        start(at(&mut s, 1), "id-b", "img");
        assert_eq!(s.phase(), "Running");
        terminate(at(&mut s, 0), 0, "Completed", None);
        assert_eq!(s.phase(), "Running");
        terminate(at(&mut s, 1), 1, "Error", None);
        assert_eq!(s.phase(), "Failed");

        let mut s = PodState::new(&pod("OnFailure", &["a"]), "10.0.0.2");
        s.initialized = true;
        start(at(&mut s, 0), "id", "img");
        terminate(at(&mut s, 0), 1, "Error", None);
        assert_eq!(s.phase(), "Running");
        wait(at(&mut s, 0), "CrashLoopBackOff", None);
        assert_eq!(s.phase(), "Running");
        start(at(&mut s, 0), "id2", "img");
        assert_eq!(at(&mut s, 0).restart_count, 1);
        terminate(at(&mut s, 0), 0, "Completed", None);
        assert_eq!(s.phase(), "Succeeded");

        let mut s = PodState::new(&pod("Always", &["a"]), "10.0.0.2");
        s.initialized = true;
        start(at(&mut s, 0), "id", "img");
        terminate(at(&mut s, 0), 0, "Completed", None);
        assert_eq!(s.phase(), "Running");
    }

    #[test]
    fn conditions_say_what_is_not_ready() {
        let mut s = PodState::new(&pod("Always", &["a", "b"]), "10.0.0.2");
        s.initialized = true;
        s.sandbox_created("10.128.0.2".into());
        start(at(&mut s, 0), "id", "img");
        let status = s.status();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .expect("a Ready condition");
        assert_eq!(ready.status, "False");
        assert_eq!(
            ready.message.as_deref(),
            Some("containers with unready status: [b]")
        );
        start(at(&mut s, 1), "id", "img");
        let status = s.status();
        let types: Vec<(&str, &str)> = status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            types,
            [
                ("PodReadyToStartContainers", "True"),
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("PodScheduled", "True")
            ]
        );
        assert_eq!(status.pod_ip.as_deref(), Some("10.128.0.2"));
    }
}
