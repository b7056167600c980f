//! KMM build and sign pods: kaniko runs for a build (or sign) time, then pushes its destination image to the
//! registry, unless a fault, a registry outage or a missing unsigned image stops it.

use std::time::Duration;

use rand::Rng;

use super::podspec::{annotation, command_line, flag_value, label};
use super::{ContainerRun, Outcome, World};
use crate::registry::content_digest;
use kmm_api::kmm::labels::{
    DOCKERFILE as DOCKERFILE_ANNOTATION, RESOURCE_TYPE as RESOURCE_TYPE_LABEL,
};

/// Where a container's termination message is read from unless its spec says otherwise.
const TERMINATION_LOG: &str = "/dev/termination-log";

/// The size of a built image when nothing else tells.
const DEFAULT_SIZE_BYTES: u64 = 120 * 1024 * 1024;

/// Build or sign.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// Build the kernel module image from its Dockerfile.
    Build,
    /// Sign the modules of an unsigned image.
    Sign,
}

impl Kind {
    /// The least and the most time the work takes, in seconds.
    fn seconds(self) -> (f64, f64) {
        match self {
            Kind::Build => (60.0, 120.0),
            Kind::Sign => (20.0, 30.0),
        }
    }
}

/// Whether the container is kaniko in a build or sign pod.
pub(super) fn kind(run: &ContainerRun) -> Option<Kind> {
    let kind = match label(run.pod, RESOURCE_TYPE_LABEL)? {
        "BuildImage" => Kind::Build,
        "SignImage" => Kind::Sign,
        _ => return None,
    };
    let line = command_line(run.container);
    let kaniko = line
        .iter()
        .any(|a| *a == "--no-push" || a.starts_with("--destination"));
    kaniko.then_some(kind)
}

/// What the build works on, decided the same way at start and at exit.
struct Job {
    /// The image pushed (None with `--no-push`).
    destination: Option<String>,
    /// The image a sign starts from.
    unsigned: Option<String>,
    /// Time spent building or signing.
    work: Duration,
    /// Size of the resulting image.
    size_bytes: u64,
    /// The pushed image's digest (`sha256:…`), as the registry reports it.
    digest: String,
}

/// The unsigned image of a sign pod: the first `FROM` of its Dockerfile.
fn unsigned_image(run: &ContainerRun) -> Option<String> {
    let dockerfile = annotation(run.pod, DOCKERFILE_ANNOTATION)?;
    dockerfile.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if !words.next()?.eq_ignore_ascii_case("FROM") {
            return None;
        }
        words.find(|w| !w.starts_with("--")).map(str::to_string)
    })
}

fn job(world: &World, run: &ContainerRun, kind: Kind) -> Job {
    let line = command_line(run.container);
    let destination = if line.contains(&"--no-push") {
        None
    } else {
        flag_value(&line, &["--destination", "-d"]).map(str::to_string)
    };
    let unsigned = match kind {
        Kind::Sign => unsigned_image(run),
        Kind::Build => None,
    };
    let subject = destination
        .clone()
        .or_else(|| run.pod.metadata.name.clone())
        .unwrap_or_default();
    let mut rng = world.rng(&format!("effects/{kind:?}/{subject}"));
    let (least, most) = kind.seconds();
    let work = Duration::from_secs_f64(rng.random_range(least..most));
    let built_size = rng.random_range(DEFAULT_SIZE_BYTES / 2..DEFAULT_SIZE_BYTES * 2);
    let size_bytes = match &unsigned {
        Some(image) => world.registry.resolve(image, &[]).unwrap_or(built_size),
        None => built_size,
    };
    // No two builds push the same manifest, even of the same sources: each pod's build is its own.
    let uid = run.pod.metadata.uid.as_deref().unwrap_or_default();
    let digest = content_digest(&[&format!("{kind:?}"), &subject, uid]);
    Job {
        destination,
        unsigned,
        work,
        size_bytes,
        digest,
    }
}

/// Build time plus the time to push the image at the registry's bandwidth.
pub(super) fn run_time(world: &World, run: &ContainerRun, kind: Kind) -> Duration {
    let job = job(world, run, kind);
    match job.destination {
        Some(_) => job.work + world.registry.pull_duration(job.size_bytes),
        None => job.work,
    }
}

/// kaniko's log prefix at `at` into the run.
fn info(at: Duration, text: &str) -> String {
    format!("INFO[{:04}] {text}", at.as_secs())
}

/// Build or sign, then push.
pub(super) fn finish(world: &World, run: &ContainerRun, kind: Kind) -> Outcome {
    let job = job(world, run, kind);
    let now = world.clock.now();
    let mut logs = Vec::new();
    if let Some(unsigned) = &job.unsigned {
        logs.push(info(
            Duration::ZERO,
            &format!("Retrieving image manifest {unsigned}"),
        ));
        if world.faults.registry_down(now) {
            return Outcome::failure(
                1,
                logs,
                format!(
                    "error building image: retrieving image manifest {unsigned}: dial tcp: connect: connection refused"
                ),
            );
        }
        if !world.registry.exists(unsigned) {
            return Outcome::failure(
                1,
                logs,
                format!(
                    "error building image: retrieving image manifest {unsigned}: MANIFEST_UNKNOWN: manifest unknown"
                ),
            );
        }
        logs.push(info(Duration::from_secs(1), "Signing the kernel modules"));
    }
    if job
        .destination
        .as_deref()
        .is_some_and(|d| world.faults.build_fails(d))
    {
        return Outcome::failure(
            1,
            logs,
            "error building image: error building stage: failed to execute command: waiting for process to exit: exit status 2",
        );
    }
    logs.push(info(job.work, "Taking snapshot of full filesystem..."));
    let Some(destination) = job.destination else {
        logs.push(info(
            job.work,
            "Skipping push to container registry due to --no-push flag",
        ));
        return Outcome::success(logs);
    };
    logs.push(info(job.work, &format!("Pushing image to {destination}")));
    if world.faults.registry_down(now) {
        return Outcome::failure(
            1,
            logs,
            format!(
                "error pushing image: failed to push to destination {destination}: dial tcp: connect: connection refused"
            ),
        );
    }
    world
        .registry
        .push(&destination, job.size_bytes, &job.digest);
    let repository = destination
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .map_or(destination.as_str(), |(repo, _)| repo);
    let pushed_at = job.work + world.registry.pull_duration(job.size_bytes);
    logs.push(info(
        pushed_at,
        &format!("Pushed {repository}@{}", job.digest),
    ));
    // kaniko writes the digest where `--digest-file` says; written to the termination log, the kubelet reports it
    // as the container's termination message, where whoever made the pod reads what was pushed.
    let termination_log = run
        .container
        .termination_message_path
        .as_deref()
        .unwrap_or(TERMINATION_LOG);
    let line = command_line(run.container);
    let message = (flag_value(&line, &["--digest-file"]) == Some(termination_log))
        .then(|| job.digest.clone());
    Outcome::succeeded_saying(logs, message)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testing::{plan_container, pod_from_yaml, run_container, world};

    /// A build pod in the shape KMM's build-and-sign reconciler gives it.
    fn build_pod(
        resource_type: &str,
        args: &str,
        dockerfile: Option<&str>,
    ) -> k8s_openapi::api::core::v1::Pod {
        let annotation = dockerfile
            .map(|d| format!("\n  annotations:\n    dockerfile: \"{d}\""))
            .unwrap_or_default();
        pod_from_yaml(&format!(
            r#"
metadata:
  name: kmm-ci-build-5-14
  namespace: kmm-ops
  labels:
    kmm.node.kubernetes.io/module.name: kmm-ci
    kmm.node.kubernetes.io/resource-type: {resource_type}
    kmm.node.kubernetes.io/target-kernel: 5-14-0-284-el9-x86-64{annotation}
spec:
  restartPolicy: Never
  containers:
    - name: kaniko
      image: gcr.io/kaniko-project/executor:latest
      args: {args}
"#
        ))
    }

    const DEST: &str = "quay.io/org/kmm-ci:5.14.0-284.el9.x86_64";

    #[tokio::test]
    async fn each_build_pushes_a_new_digest_and_reports_it_where_digest_file_says() {
        let world = world();
        let args = format!("[--destination, \"{DEST}\", --digest-file=/dev/termination-log]");
        let mut pod = build_pod("BuildImage", &args, None);
        pod.metadata.uid = Some("first-build".to_owned());
        let first = run_container(&world, &pod, "kaniko");
        let pushed = world.registry.digest(DEST).expect("the image is pushed");
        assert_eq!(first.message.as_deref(), Some(pushed.as_str()), "{first:?}");

        pod.metadata.uid = Some("second-build".to_owned());
        let second = run_container(&world, &pod, "kaniko");
        let rebuilt = world
            .registry
            .digest(DEST)
            .expect("the image is pushed again");
        assert_ne!(rebuilt, pushed, "a rebuild is a new manifest");
        assert_eq!(second.message, Some(rebuilt));

        let silent = build_pod("BuildImage", &format!("[--destination, \"{DEST}\"]"), None);
        assert_eq!(run_container(&world, &silent, "kaniko").message, None);
    }

    #[tokio::test]
    async fn a_build_pushes_its_destination_after_a_reproducible_build_time() {
        let world = world();
        let pod = build_pod(
            "BuildImage",
            &format!("[--destination, \"{DEST}\", --build-arg, KERNEL_VERSION=5.14]"),
            None,
        );
        let first = plan_container(&world, &pod, "kaniko").runs_for;
        assert_eq!(first, plan_container(&world, &pod, "kaniko").runs_for);
        let time = first.unwrap_or_default();
        assert!(
            time >= Duration::from_secs(61) && time < Duration::from_secs(150),
            "{time:?}"
        );
        assert!(!world.registry.exists(DEST));
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert!(world.registry.exists(DEST));
        assert!(
            outcome
                .logs
                .last()
                .is_some_and(|l| l.contains("Pushed quay.io/org/kmm-ci@sha256:"))
        );
    }

    #[tokio::test]
    async fn no_push_builds_without_pushing() {
        let world = world();
        let pod = build_pod("BuildImage", "[--no-push, --build-arg, A=B]", None);
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!(outcome.exit_code, 0);
        assert!(outcome.logs.iter().any(|l| l.contains("--no-push")));
    }

    #[tokio::test]
    async fn a_build_failure_fault_fails_the_build_once() {
        let world = world();
        let pod = build_pod(
            "BuildImage",
            "[\"--destination=quay.io/org/broken:1\"]",
            None,
        );
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!((outcome.exit_code, outcome.reason.as_str()), (1, "Error"));
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("error building image")
        );
        assert!(!world.registry.exists("quay.io/org/broken:1"));
        assert_eq!(run_container(&world, &pod, "kaniko").exit_code, 0);
        assert!(world.registry.exists("quay.io/org/broken:1"));
    }

    #[tokio::test]
    async fn a_sign_needs_its_unsigned_image() {
        let world = world();
        let signed = "quay.io/org/kmm-ci:signed";
        let pod = build_pod(
            "SignImage",
            &format!("[--destination, {signed}]"),
            Some("FROM quay.io/org/kmm-ci:unsigned as source\\n\\nFROM signer:1 AS signimage\\n"),
        );
        let time = plan_container(&world, &pod, "kaniko")
            .runs_for
            .unwrap_or_default();
        assert!(
            time >= Duration::from_secs(20) && time < Duration::from_secs(40),
            "{time:?}"
        );
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert!(world.registry.exists(signed));
        assert_eq!(world.registry.resolve(signed, &[]), Ok(30 * 1024 * 1024));

        let orphan = build_pod(
            "SignImage",
            "[--destination, quay.io/org/kmm-ci:signed2]",
            Some("FROM quay.io/org/kmm-ci:never-built as source\\n"),
        );
        let outcome = run_container(&world, &orphan, "kaniko");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .contains("MANIFEST_UNKNOWN")
        );
        assert!(!world.registry.exists("quay.io/org/kmm-ci:signed2"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_push_during_a_registry_outage_fails() {
        let world = world();
        world.clock.sleep(Duration::from_secs(3700)).await;
        let pod = build_pod("BuildImage", &format!("[--destination, \"{DEST}\"]"), None);
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .starts_with("error pushing image")
        );
        assert!(!world.registry.exists(DEST));
    }

    #[tokio::test]
    async fn other_pods_with_the_label_but_no_kaniko_args_are_not_builds() {
        let world = world();
        let pod = build_pod("BuildImage", "[sleep, \"1\"]", None);
        let outcome = run_container(&world, &pod, "kaniko");
        assert_eq!(outcome.exit_code, 0);
        assert_eq!(
            plan_container(&world, &pod, "kaniko").runs_for,
            Some(Duration::from_secs(1))
        );
    }
}
