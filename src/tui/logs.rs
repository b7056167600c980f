//! Reading a pod's log for the log view: every container's, init containers first, because an installer fails as
//! often while downloading (its init container) as while installing.

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, LogParams};

use super::target::Target;
use super::worded::Why;

/// How many lines of each container the log view keeps: the last ones.
pub(super) const TAIL_LINES: i64 = 500;

/// The log of every container of `pod`, each under a heading naming the container; or why it cannot be read.
pub(super) async fn pod_log(client: &Client, pod: &Target) -> Result<Vec<String>, String> {
    let api: Api<Pod> =
        Api::namespaced(client.clone(), pod.namespace.as_deref().unwrap_or_default());
    let object = api
        .get(&pod.name)
        .await
        .map_err(|error| format!("cannot read {pod}: {}", Why::of(&error, None)))?;
    let spec = object.spec.unwrap_or_default();
    let containers: Vec<String> = spec
        .init_containers
        .unwrap_or_default()
        .into_iter()
        .chain(spec.containers)
        .map(|c| c.name)
        .collect();
    let mut lines = Vec::new();
    for container in containers {
        lines.push(format!("── {container} ──"));
        let params = LogParams {
            container: Some(container.clone()),
            tail_lines: Some(TAIL_LINES),
            ..LogParams::default()
        };
        match api.logs(&pod.name, &params).await {
            Ok(text) if text.trim().is_empty() => lines.push("(no output)".to_owned()),
            Ok(text) => lines.extend(text.lines().map(|line| line.replace('\t', "    "))),
            Err(error) => lines.push(format!("(log unavailable: {})", Why::of(&error, None))),
        }
    }
    Ok(lines)
}
