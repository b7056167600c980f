//! Image deletion from a node's store by `crictl rmi`, as kube-fledged's purge pods run it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Container;
use kmm_api::image_ref::comparison_key;

use super::podspec::command_line;
use super::{ContainerRun, Outcome, World, announce, no_machine};

/// How long a `crictl rmi` runs.
pub(super) const RUN_TIME: Duration = Duration::from_secs(1);

/// The images a container's `crictl … rmi <image>…` names, when it runs one (directly or in a `sh -c` script).
pub(super) fn rmi_targets(container: &Container) -> Option<Vec<String>> {
    let words: Vec<&str> = command_line(container)
        .into_iter()
        .flat_map(str::split_whitespace)
        .collect();
    let crictl = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("crictl"))?;
    let rmi = crictl + 1 + words[crictl + 1..].iter().position(|w| *w == "rmi")?;
    let images = words[rmi + 1..]
        .iter()
        .take_while(|w| !matches!(**w, "&&" | "||" | ";" | "|"))
        .filter(|w| !w.starts_with('-'))
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
        .collect();
    Some(images)
}

/// Remove the images from the node's store; one that is in use or absent fails the run, as crictl does, after the
/// others are removed.
pub(super) fn remove(world: &World, run: &ContainerRun, images: &[String]) -> Outcome {
    if images.is_empty() {
        return Outcome::failure(
            1,
            Vec::new(),
            "ImageID cannot be empty: specify at least one image to remove",
        );
    }
    let in_use: Vec<String> = run
        .images_in_use
        .iter()
        .map(|i| comparison_key(i))
        .collect();
    let result = world.machines.with(run.node, |machine| {
        let mut logs = Vec::new();
        let mut errors = Vec::new();
        for image in images {
            let wanted = comparison_key(image);
            let stored = machine
                .images
                .iter()
                .map(|(name, _)| name.clone())
                .find(|name| comparison_key(name) == wanted);
            match stored {
                None => errors.push(format!("no such image {image}")),
                Some(_) if in_use.contains(&wanted) => errors.push(format!(
                    "error of removing image \"{image}\": rpc error: code = FailedPrecondition desc = image \"{wanted}\" is in use by a running container"
                )),
                Some(name) => {
                    machine.images.remove(&name);
                    logs.push(format!("Deleted: {wanted}"));
                }
            }
        }
        (logs, errors)
    });
    let Some((mut logs, errors)) = result else {
        return no_machine(run.node);
    };
    if logs.iter().any(|l| l.starts_with("Deleted")) {
        announce(world, run.node);
    }
    if errors.is_empty() {
        Outcome::success(logs)
    } else {
        logs.extend(errors.iter().map(|e| format!("level=error msg=\"{e}\"")));
        Outcome::failure(
            1,
            logs,
            format!("unable to remove the image(s): {}", errors.join("; ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::super::testing::{finish_with_images_in_use, pod_from_yaml, world};
    use super::*;

    fn delete_pod(command: &str) -> k8s_openapi::api::core::v1::Pod {
        pod_from_yaml(&format!(
            r#"
metadata: {{generateName: cache-, labels: {{app: kubefledged, kubefledged: kubefledged-image-manager}}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: worker-0}}
  restartPolicy: Never
  containers:
    - name: docker-cri-client
      image: senthilrch/kubefledged-cri-client:v0.10.0
      command: {command}
"#
        ))
    }

    fn store_images(world: &World, images: &[&str]) {
        world.machines.with("worker-0", |m| {
            for image in images {
                m.images.insert(image, 10, Duration::ZERO, false);
            }
        });
    }

    fn stored(world: &World) -> Vec<String> {
        world
            .machines
            .get("worker-0")
            .map(|m| m.images.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn crictl_rmi_removes_the_image_from_the_store() {
        let world = world();
        store_images(&world, &["docker.io/library/nginx:1.25", "redis:7"]);
        let mut changes = world.machine_changed.subscribe();
        let pod = delete_pod(
            "[crictl, --runtime-endpoint=unix:///run/containerd/containerd.sock, --image-endpoint=unix:///run/containerd/containerd.sock, rmi, docker.io/library/nginx:1.25]",
        );
        let outcome =
            finish_with_images_in_use(&world, &pod, "docker-cri-client", &BTreeSet::new());
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert_eq!(outcome.logs, ["Deleted: docker.io/library/nginx:1.25"]);
        assert_eq!(stored(&world), ["redis:7"]);
        assert_eq!(changes.try_recv().ok().as_deref(), Some("worker-0"));
    }

    #[tokio::test]
    async fn an_image_in_use_or_absent_fails_like_crictl() {
        let world = world();
        store_images(&world, &["redis:7", "nginx"]);
        let in_use = BTreeSet::from(["redis:7".to_string()]);
        let pod = delete_pod("[/bin/sh, -c, \"crictl rmi redis:7 nginx:latest\"]");
        let outcome = finish_with_images_in_use(&world, &pod, "docker-cri-client", &in_use);
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .contains("is in use by a running container")
        );
        assert_eq!(stored(&world), ["redis:7"]);

        let absent = delete_pod("[crictl, rmi, ghost:1]");
        let outcome = finish_with_images_in_use(&world, &absent, "docker-cri-client", &in_use);
        assert_eq!(outcome.exit_code, 1);
        assert!(
            outcome
                .message
                .unwrap_or_default()
                .contains("no such image ghost:1")
        );
    }

    #[test]
    fn only_crictl_rmi_is_recognised() {
        let container = |command: &[&str]| Container {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        assert_eq!(
            rmi_targets(&container(&["crictl", "rmi", "a:1", "b:2"])),
            Some(vec!["a:1".to_string(), "b:2".to_string()])
        );
        assert_eq!(rmi_targets(&container(&["crictl", "images"])), None);
        assert_eq!(rmi_targets(&container(&["rmi", "a:1"])), None);
    }
}
