//! Containers with no node-level effect: commands that exit shortly after they start (pull pods, image pullers,
//! scripts) and servers that run until their pod is deleted, both steerable by pod annotations.

use std::time::Duration;

use super::podspec::{annotation, command_line, parse_duration};
use super::{ContainerRun, Outcome};

/// Pod annotation overriding how long generic containers run.
pub(super) const RUN_FOR_ANNOTATION: &str = "sim.kmm-tui.io/run-for";

/// Pod annotation overriding the exit code of generic containers.
pub(super) const EXIT_CODE_ANNOTATION: &str = "sim.kmm-tui.io/exit-code";

/// How long a command runs when nothing says otherwise.
const COMMAND_TIME: Duration = Duration::from_secs(1);

/// The run time: the annotation's, else a second for a command, else until deleted (a server). An annotation that
/// is not a duration is ignored.
pub(super) fn run_time(run: &ContainerRun) -> Option<Duration> {
    requested_run_time(run)
        .or_else(|| (!command_line(run.container).is_empty()).then_some(COMMAND_TIME))
}

/// Whether the pod's annotations steer its generic containers' run time or exit code.
pub(super) fn steered(run: &ContainerRun) -> bool {
    annotation(run.pod, RUN_FOR_ANNOTATION).is_some()
        || annotation(run.pod, EXIT_CODE_ANNOTATION).is_some()
}

/// The run time the pod's annotation asks for, if any (a server runs until deleted without one).
pub(super) fn requested_run_time(run: &ContainerRun) -> Option<Duration> {
    annotation(run.pod, RUN_FOR_ANNOTATION).and_then(parse_duration)
}

/// The exit: the annotation's code (0 when absent or not an integer); an `echo` prints its words.
pub(super) fn finish(run: &ContainerRun) -> Outcome {
    let exit_code = annotation(run.pod, EXIT_CODE_ANNOTATION)
        .and_then(|c| c.trim().parse::<i32>().ok())
        .unwrap_or(0);
    let line = command_line(run.container);
    let logs = match line.split_first() {
        Some((program, words)) if program.rsplit('/').next() == Some("echo") => {
            vec![words.join(" ")]
        }
        _ => Vec::new(),
    };
    let message = (exit_code != 0).then(|| {
        format!("exited with code {exit_code} as the pod's {EXIT_CODE_ANNOTATION} annotation asks")
    });
    Outcome::exited(exit_code, logs, message)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{plan_container, pod_from_yaml, run_container, world};
    use super::*;

    #[tokio::test]
    async fn pull_pods_exit_zero_shortly_after_start() {
        let world = world();
        let pod = pod_from_yaml(
            r#"
metadata:
  generateName: kmm-ci-pull-pod-
  namespace: kmm-ops
  labels: {kmm.node.kubernetes.io/image-owner: kmm-ci, kmm.node.kubernetes.io/pull-pod-type: one-time-pull}
spec:
  restartPolicy: Never
  containers:
    - {name: puller, image: "quay.io/org/kmm-ci:5.14", command: [/bin/sh, -c, exit 0]}
"#,
        );
        assert_eq!(
            plan_container(&world, &pod, "puller").runs_for,
            Some(COMMAND_TIME)
        );
        let outcome = run_container(&world, &pod, "puller");
        assert_eq!(
            (outcome.exit_code, outcome.reason.as_str()),
            (0, "Completed")
        );
        assert_eq!(outcome.message, None);
    }

    #[tokio::test]
    async fn image_pullers_echo_and_servers_run_until_deleted() {
        let world = world();
        let pod = pod_from_yaml(
            r#"
metadata: {generateName: cache-, labels: {app: kubefledged}}
spec:
  restartPolicy: Never
  initContainers:
    - {name: busybox, image: busybox:1.36, command: [cp, /bin/echo, /tmp/bin]}
  containers:
    - {name: imagepuller, image: "nginx:1.25", command: [/tmp/bin/echo, Image pulled successfully!]}
    - {name: server, image: "nginx:1.25"}
"#,
        );
        assert_eq!(
            run_container(&world, &pod, "imagepuller").logs,
            ["Image pulled successfully!"]
        );
        assert_eq!(run_container(&world, &pod, "busybox").exit_code, 0);
        assert_eq!(plan_container(&world, &pod, "server").runs_for, None);
    }

    #[tokio::test]
    async fn annotations_override_run_time_and_exit_code() {
        let world = world();
        let pod = pod_from_yaml(
            r#"
metadata:
  name: slow
  annotations: {sim.kmm-tui.io/run-for: 2m, sim.kmm-tui.io/exit-code: "3"}
spec:
  containers:
    - {name: app, image: "app:1", args: [serve]}
    - {name: server, image: "nginx:1.25"}
"#,
        );
        assert_eq!(
            plan_container(&world, &pod, "app").runs_for,
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            plan_container(&world, &pod, "server").runs_for,
            Some(Duration::from_secs(120))
        );
        let outcome = run_container(&world, &pod, "app");
        assert_eq!((outcome.exit_code, outcome.reason.as_str()), (3, "Error"));
        assert!(outcome.message.is_some());

        let ignored = pod_from_yaml(
            r#"
metadata:
  name: odd
  annotations: {sim.kmm-tui.io/run-for: soon, sim.kmm-tui.io/exit-code: many}
spec:
  containers:
    - {name: app, image: "app:1", args: [serve]}
"#,
        );
        assert_eq!(
            plan_container(&world, &ignored, "app").runs_for,
            Some(COMMAND_TIME)
        );
        assert_eq!(run_container(&world, &ignored, "app").exit_code, 0);
    }
}
