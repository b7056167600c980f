//! Container logs served by `pods/{name}/log`.
//!
//! Logs are not API objects: on a real cluster the kubelet keeps them and the API server proxies them. Here the
//! node simulation appends lines, tells when a container instance starts and exits, and this module serves them
//! with the kubelet's options (`container`, `previous`, `sinceSeconds`, `sinceTime`, `tailLines`, `limitBytes`,
//! `timestamps`, `follow`, checked by [`options`]); a followed log ends when its container exits, or after
//! [`LongRunningLimits::log_follow`](super::long_running::LongRunningLimits::log_follow).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Mutex;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;
use tokio::sync::broadcast;

use super::context::RequestContext;
use super::errors::ApiError;
use super::{ApiServer, ResponseBody, bytes_response};

mod options;

/// Most lines kept per container, like a kubelet's log rotation keeps the log bounded.
const MAX_LINES: usize = 10_000;

/// Which of a container's output streams a line was written on: the kubelet's log keeps it, and `attach` sends
/// each on its own channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// One log line: when it was written (RFC 3339), on which stream, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogLine {
    pub timestamp: String,
    pub stream: Stream,
    pub text: String,
}

#[derive(Default)]
struct ContainerLog {
    /// What the current (or last) instance of the container wrote.
    lines: Vec<LogLine>,
    /// What the instance before it wrote, once the container has restarted: `previous=true`.
    previous: Option<Vec<LogLine>>,
    /// Whether the current instance has exited: its log is complete and nobody follows it any more.
    exited: bool,
    follow: Option<broadcast::Sender<LogLine>>,
}

impl ContainerLog {
    /// A receiver of the lines still to come: none will once the instance has exited, and the receiver says so.
    fn subscribe(&mut self) -> broadcast::Receiver<LogLine> {
        if self.exited {
            return broadcast::channel(1).1;
        }
        self.follow
            .get_or_insert_with(|| broadcast::channel(1024).0)
            .subscribe()
    }
}

/// Log lines per (namespace, pod, container).
#[derive(Default)]
pub struct PodLogs {
    logs: Mutex<HashMap<(String, String, String), ContainerLog>>,
}

impl PodLogs {
    /// Append a line (without trailing newline) written on standard output at `timestamp` (RFC 3339).
    pub fn append(&self, namespace: &str, pod: &str, container: &str, timestamp: &str, line: &str) {
        self.append_on(namespace, pod, container, timestamp, Stream::Stdout, line);
    }

    /// Append a line (without trailing newline) written on `stream` at `timestamp` (RFC 3339).
    pub fn append_on(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        timestamp: &str,
        stream: Stream,
        line: &str,
    ) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default();
        if log.lines.len() >= MAX_LINES {
            log.lines.drain(..MAX_LINES / 10);
        }
        let entry = LogLine {
            timestamp: timestamp.to_string(),
            stream,
            text: line.to_string(),
        };
        if let Some(tx) = &log.follow {
            let _ = tx.send(entry.clone());
        }
        log.lines.push(entry);
    }

    /// A new instance of a container starts: the log of an instance that exited becomes the previous one, as the
    /// kubelet keeps one exited instance's log beside the running one's.
    pub fn container_started(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default();
        if log.exited {
            log.previous = Some(std::mem::take(&mut log.lines));
            log.exited = false;
        }
    }

    /// The current instance of a container exited: those following its log or attached to it reach the end.
    pub fn container_exited(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default();
        log.exited = true;
        log.follow = None;
    }

    /// Forget a pod's logs (when the pod is deleted).
    pub fn remove_pod(&self, namespace: &str, pod: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        logs.retain(|(ns, p, _), _| !(ns == namespace && p == pod));
    }

    /// New lines of one container's log as they are written: what `attach` shows of a simulated container.
    pub(crate) fn follow(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> broadcast::Receiver<LogLine> {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        logs.entry((namespace.into(), pod.into(), container.into()))
            .or_default()
            .subscribe()
    }

    /// The current instance's lines, and with `follow` a receiver of those still to come (None once it exited).
    fn snapshot(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        follow: bool,
    ) -> (Vec<LogLine>, Option<broadcast::Receiver<LogLine>>) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default();
        let rx = (follow && !log.exited).then(|| log.subscribe());
        (log.lines.clone(), rx)
    }

    /// The previous instance's lines, if the container has restarted.
    fn previous(&self, namespace: &str, pod: &str, container: &str) -> Option<Vec<LogLine>> {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        logs.get(&(namespace.into(), pod.into(), container.into()))?
            .previous
            .clone()
    }
}

/// The container of `pod` a request for its logs, exec or attach addresses: the one it names (a regular, init or
/// ephemeral container), or the pod's only container; 400 with kube-apiserver's words otherwise.
pub(crate) fn select_container(
    pod_name: &str,
    pod: &Value,
    requested: Option<&str>,
) -> Result<String, ApiError> {
    let names = |list: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = names("containers");
    let every: Vec<String> = [
        containers.clone(),
        names("initContainers"),
        names("ephemeralContainers"),
    ]
    .concat();
    match (requested, containers.as_slice()) {
        (Some(c), _) if every.iter().any(|x| x == c) => Ok(c.to_string()),
        (Some(c), _) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        (None, [only]) => Ok(only.clone()),
        (None, []) => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}"
        ))),
        (None, _) => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            every.join(" ")
        ))),
    }
}

/// GET `pods/{name}/log`.
pub fn serve(server: &ApiServer, ctx: &RequestContext) -> Result<Response<ResponseBody>, ApiError> {
    let pod = server
        .store()
        .get(&ctx.storage, ctx.namespace(), ctx.name())
        .ok_or_else(|| ApiError::not_found("", "pods", ctx.name()))?;
    let container = select_container(ctx.name(), &pod.value(), ctx.query.get("container"))?;
    let options = options::parse(ctx)?;
    let (lines, rx) = if options.previous {
        let previous = server
            .logs()
            .previous(ctx.namespace(), ctx.name(), &container)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "previous terminated container \"{container}\" in pod \"{}\" not found",
                    ctx.name()
                ))
            })?;
        (previous, None)
    } else {
        server
            .logs()
            .snapshot(ctx.namespace(), ctx.name(), &container, options.follow)
    };
    let mut budget = Budget(options.limit_bytes);
    let text = budget.take(
        options
            .selected(&lines)
            .map(|l| options.format(l))
            .collect(),
    );
    let Some(rx) = rx.filter(|_| !budget.spent()) else {
        return Ok(bytes_response(
            StatusCode::OK,
            Bytes::from(text),
            "text/plain",
        ));
    };
    let shutdown = server.inner().shutdown.clone();
    // A followed log ends after a while, as a watch does, so that no client holds it forever.
    let until = tokio::time::Instant::now() + server.long_running_limits().log_follow;
    let head = futures::stream::once(async move { Bytes::from(text) });
    let rest = futures::stream::unfold(
        (rx, shutdown, budget),
        move |(mut rx, shutdown, mut budget)| {
            let options = options.clone();
            async move {
                if budget.spent() {
                    return None;
                }
                tokio::select! {
                    received = rx.recv() => match received {
                        Ok(entry) => {
                            let chunk = budget.take(options.format(&entry));
                            Some((Bytes::from(chunk), (rx, shutdown, budget)))
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            Some((Bytes::new(), (rx, shutdown, budget)))
                        }
                        // The container exited.
                        Err(broadcast::error::RecvError::Closed) => None,
                    },
                    _ = shutdown.cancelled() => None,
                    () = tokio::time::sleep_until(until) => None,
                }
            }
        },
    );
    let stream = head
        .chain(rest)
        .filter(|b| futures::future::ready(!b.is_empty()))
        .map(|b| Ok::<_, Infallible>(Frame::data(b)));
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
}

/// What `limitBytes` leaves of a log: the bytes still to send, across the snapshot and the lines that follow.
struct Budget(Option<usize>);

impl Budget {
    /// `text`, cut (at a character boundary) to what is left, which it uses up.
    fn take(&mut self, mut text: String) -> String {
        if let Some(left) = &mut self.0 {
            text.truncate(floor_char_boundary(&text, *left));
            *left -= text.len();
        }
        text
    }

    fn spent(&self) -> bool {
        self.0 == Some(0)
    }
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}
