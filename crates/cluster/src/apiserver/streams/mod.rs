//! `pods/exec`, `pods/attach` and `pods/portforward`: the subresources that switch the connection to a stream
//! protocol, where kube-apiserver hands the client over to the pod's kubelet.
//!
//! Here the node simulation plays the kubelet's part through [`ContainerRuntime`]; this module checks the request
//! as kube-apiserver and the kubelet do (the pod, its node, its container, the command), switches the connection to
//! WebSocket ([`websocket`]) and writes what the container answered on the channels clients read, ending with the
//! exit status ([`status`]). Only WebSocket is spoken (`v5.channel.k8s.io` and `v4.channel.k8s.io`), what kubectl
//! 1.30 and later and kube-rs use; a SPDY request is refused with that reason.

mod idle;
mod mounts;
mod session;
mod status;
mod websocket;

use std::sync::Arc;

use http::{HeaderMap, Response};
use serde_json::Value;

use super::context::RequestContext;
use super::errors::ApiError;
use super::logs::select_container;
use super::long_running::Permit;
use super::{ApiServer, ResponseBody};

pub use mounts::HostMounts;

/// What a command run in a container wrote and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// What it wrote on standard output.
    pub stdout: String,
    /// What it wrote on standard error.
    pub stderr: String,
    /// Its exit status; 0 is success.
    pub exit_code: i32,
}

/// What runs commands in containers: on a real cluster the kubelet and the container runtime of the pod's node.
/// The node simulation provides it, so the API server stays free of how nodes are simulated.
pub trait ContainerRuntime: Send + Sync {
    /// Run `command` in a container on `node` that reaches the node's files through `mounts`; None when no such
    /// node is simulated.
    fn exec(&self, node: &str, mounts: &HostMounts, command: &[String]) -> Option<ExecOutput>;
}

/// The container runtime the server hands `exec` to, once the node simulation has provided one.
pub(crate) type SharedRuntime = std::sync::RwLock<Option<Arc<dyn ContainerRuntime>>>;

/// Serve `pods/exec`, `pods/attach` or `pods/portforward` of the pod `ctx` names; the session holds `permit` until
/// it ends.
pub fn serve(
    server: &ApiServer,
    mut ctx: RequestContext,
    sub: &str,
    permit: Option<Permit>,
) -> Result<Response<ResponseBody>, ApiError> {
    let pod = server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found("", "pods", ctx.name()))?
        .to_value();
    if sub == "portforward" {
        return Err(ApiError::bad_request(format!(
            "pod {} has no port to forward to: simulated containers run no process and listen on no port",
            ctx.name()
        )));
    }
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(format!("pod {} does not have a host assigned", ctx.name()))
        })?
        .to_owned();
    let container = select_container(ctx.name(), &pod, ctx.query.get("container"))?;
    if !is_running(&pod, &container) {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        )));
    }
    let key = websocket_key(&ctx.headers)?;
    let protocol = websocket::negotiate(&ctx.headers)?;
    let upgrade = ctx.upgrade.take().ok_or_else(upgrade_required)?;
    let channels = session::Channels::of(&ctx.query);
    let work = match sub {
        "exec" => {
            let command: Vec<String> = ctx
                .query
                .all("command")
                .into_iter()
                .map(str::to_owned)
                .collect();
            if command.is_empty() {
                return Err(ApiError::bad_request(
                    "you must specify at least one command for the container",
                ));
            }
            let runtime = server.runtime().ok_or_else(|| no_runtime(&node))?;
            let output = runtime
                .exec(&node, &HostMounts::of(&pod, &container), &command)
                .ok_or_else(|| no_runtime(&node))?;
            session::Work::Exec(output)
        }
        _ => session::Work::Attach(
            server
                .logs()
                .follow(ctx.namespace(), ctx.name(), &container),
        ),
    };
    let session = session::run(
        upgrade,
        channels,
        work,
        server.inner().shutdown.clone(),
        server.long_running_limits().session_idle,
        permit,
    );
    // The upgraded socket counts against the listener's connection cap until the session ends.
    let connection = ctx.connection.take();
    tokio::spawn(async move {
        session.await;
        drop(connection);
    });
    Ok(websocket::switching_protocols(&key, protocol))
}

/// Whether the pod's status shows `container` (a regular, init or ephemeral one) running: the kubelet execs and
/// attaches only into running containers.
fn is_running(pod: &Value, container: &str) -> bool {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .into_iter()
    .filter_map(|list| pod.get("status")?.get(list)?.as_array())
    .flatten()
    .any(|s| s["name"] == container && s.pointer("/state/running").is_some())
}

/// The `Sec-WebSocket-Key` of a WebSocket upgrade, or why the request is not one.
fn websocket_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let upgrade = headers
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if upgrade.to_ascii_lowercase().starts_with("spdy") {
        return Err(ApiError::bad_request(
            "SPDY is not served: exec and attach speak WebSocket (v5.channel.k8s.io, v4.channel.k8s.io)",
        ));
    }
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Err(upgrade_required());
    }
    headers
        .get(http::header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("a WebSocket upgrade needs Sec-WebSocket-Key"))
}

/// kube-apiserver's answer to an exec or attach that does not ask to switch protocols.
fn upgrade_required() -> ApiError {
    ApiError::bad_request("Upgrade request required")
}

fn no_runtime(node: &str) -> ApiError {
    ApiError::unavailable(format!(
        "node {node} has no simulated container runtime to run the command"
    ))
}
