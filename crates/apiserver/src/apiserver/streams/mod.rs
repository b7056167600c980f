//! `pods/exec`, `pods/attach` and `pods/portforward`: the subresources that switch the connection to a stream
//! protocol, where kube-apiserver hands the client over to the pod's kubelet.
//!
//! Here the node simulation plays the kubelet's part through [`ContainerRuntime`]; this module checks the request
//! as kube-apiserver and the kubelet do (the pod, its node, its container, the command), switches the connection to
//! WebSocket ([`websocket`]) and writes what the container answered on the channels clients read, ending with the
//! exit status ([`status`]). Standard input goes to the command (exec) or to the container's main process (attach),
//! and the v5 protocol's close of the stdin channel is the end of that input. Only WebSocket is spoken (`v5.channel.k8s.io` and `v4.channel.k8s.io`), what kubectl
//! 1.30 and later and kube-rs use; a SPDY request is refused with that reason.

mod forwarding;
mod idle;
mod mounts;
mod portforward;
mod session;
mod socket;
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

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::DropGuard;

use super::logs::Stream;

/// The container a request addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerAddress {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name in the pod.
    pub container: String,
}

/// A command `exec` started in a container.
pub struct ExecProcess {
    /// Its standard input, when the client asked for one; dropping it is the end of input.
    pub stdin: Option<mpsc::Sender<Vec<u8>>>,
    /// What it writes, as it writes it; the channel closes when it has exited.
    pub output: mpsc::UnboundedReceiver<(Stream, Vec<u8>)>,
    /// Its exit status once it has exited; closed without one when it was killed with its container.
    pub exit: oneshot::Receiver<i32>,
    /// Kills the process when dropped: a client that leaves takes its command with it.
    pub kill: DropGuard,
}

/// The standard input of a container's main process, for `attach`.
pub struct AttachedStdin {
    /// Where what the client sends goes.
    pub sender: mpsc::Sender<Vec<u8>>,
    /// Run when the client detaches: with `stdinOnce`, the end of the container's input.
    pub on_detach: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for AttachedStdin {
    fn drop(&mut self) {
        if let Some(detach) = self.on_detach.take() {
            detach();
        }
    }
}

/// What runs commands in containers: on a real cluster the kubelet and the container runtime of the pod's node.
/// The node simulation provides it, so the API server stays free of how nodes are simulated.
pub trait ContainerRuntime: Send + Sync {
    /// Start `command` in `container`, with a standard input when `stdin`; None when no such container runs.
    fn exec(
        &self,
        container: &ContainerAddress,
        command: &[String],
        stdin: bool,
    ) -> Option<ExecProcess>;

    /// The standard input of `container`'s main process; None unless its spec keeps one open (`stdin: true`).
    fn attach_stdin(&self, container: &ContainerAddress) -> Option<AttachedStdin>;

    /// A connection to `port` inside the pod `pod` of `namespace`, as the kubelet dials `localhost:port` in the
    /// pod's network namespace for `portforward`; None when it is refused (nothing listens there).
    fn connect(&self, namespace: &str, pod: &str, port: u16) -> Option<tokio::io::DuplexStream>;
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
        return portforward::serve(server, ctx, &pod, permit);
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
    let protocol = websocket::negotiate(&ctx.headers, &websocket::CHANNEL_PROTOCOLS)?;
    let upgrade = ctx.upgrade.take().ok_or_else(upgrade_required)?;
    let channels = session::Channels::of(&ctx.query);
    let address = ContainerAddress {
        namespace: ctx.namespace().to_owned(),
        pod: ctx.name().to_owned(),
        container: container.clone(),
    };
    let runtime = server.runtime();
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
            let process = runtime
                .and_then(|r| r.exec(&address, &command, ctx.query.flag("stdin")))
                .ok_or_else(|| no_runtime(&node, &container))?;
            session::Work::Exec(process)
        }
        _ => session::Work::Attach {
            lines: server
                .logs()
                .follow(ctx.namespace(), ctx.name(), &container),
            stdin: runtime
                .filter(|_| ctx.query.flag("stdin"))
                .and_then(|r| r.attach_stdin(&address)),
        },
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
            "SPDY is not served: exec and attach speak WebSocket (v5.channel.k8s.io, v4.channel.k8s.io) and \
             portforward WebSocket's v4.channel.k8s.io; kubectl port-forward, which speaks SPDY, is not served",
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

fn no_runtime(node: &str, container: &str) -> ApiError {
    ApiError::unavailable(format!(
        "the container runtime of node {node} does not run container {container:?} (it has just stopped, or the \
         node is not simulated)"
    ))
}
