//! Container logs served by `pods/{name}/log`.
//!
//! Logs are not API objects: on a real cluster the kubelet keeps them and the API server proxies them. Here the
//! node simulation appends lines and this module serves them with kubectl's options (`container`, `tailLines`,
//! `timestamps`, `limitBytes`, `follow`); a followed log ends after
//! [`LongRunningLimits::log_follow`](super::long_running::LongRunningLimits::log_follow).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Mutex;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::broadcast;

use super::context::RequestContext;
use super::errors::ApiError;
use super::{ApiServer, ResponseBody, bytes_response};

/// Most lines kept per container, like a kubelet's log rotation keeps the log bounded.
const MAX_LINES: usize = 10_000;

/// One log line: its RFC 3339 timestamp and its text.
pub(crate) type LogLine = (String, String);

#[derive(Default)]
struct ContainerLog {
    lines: Vec<LogLine>,
    follow: Option<broadcast::Sender<LogLine>>,
}

/// Log lines per (namespace, pod, container).
#[derive(Default)]
pub struct PodLogs {
    logs: Mutex<HashMap<(String, String, String), ContainerLog>>,
}

impl PodLogs {
    /// Append a line (without trailing newline) written at `timestamp` (RFC 3339).
    pub fn append(&self, namespace: &str, pod: &str, container: &str, timestamp: &str, line: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default();
        if log.lines.len() >= MAX_LINES {
            log.lines.drain(..MAX_LINES / 10);
        }
        let entry = (timestamp.to_string(), line.to_string());
        if let Some(tx) = &log.follow {
            let _ = tx.send(entry.clone());
        }
        log.lines.push(entry);
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
            .follow
            .get_or_insert_with(|| broadcast::channel(1024).0)
            .subscribe()
    }

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
        let rx = follow.then(|| {
            log.follow
                .get_or_insert_with(|| broadcast::channel(1024).0)
                .subscribe()
        });
        (log.lines.clone(), rx)
    }
}

/// The container of `pod` a request for its logs, exec or attach addresses: the one it names, or the pod's only
/// container; 400 with kube-apiserver's words otherwise.
pub(crate) fn select_container(
    pod_name: &str,
    pod: &serde_json::Value,
    requested: Option<&str>,
) -> Result<String, ApiError> {
    let containers: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(|c| c.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match (requested, containers.as_slice()) {
        (Some(c), _) if containers.iter().any(|x| x == c) => Ok(c.to_string()),
        (Some(c), _) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        (None, [only]) => Ok(only.clone()),
        (None, _) => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            containers.join(" ")
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
    let follow = ctx.query.flag("follow");
    let timestamps = ctx.query.flag("timestamps");
    let tail = ctx.query.number("tailLines")?.map(|t| t.max(0) as usize);
    let limit = ctx.query.number("limitBytes")?.map(|l| l.max(0) as usize);
    let (lines, rx) = server
        .logs()
        .snapshot(ctx.namespace(), ctx.name(), &container, follow);
    let skip = tail.map(|t| lines.len().saturating_sub(t)).unwrap_or(0);
    let format = move |(ts, line): &LogLine| {
        if timestamps {
            format!("{ts} {line}\n")
        } else {
            format!("{line}\n")
        }
    };
    let mut text: String = lines[skip..].iter().map(&format).collect();
    if let Some(limit) = limit {
        text.truncate(floor_char_boundary(&text, limit));
    }
    let Some(rx) = rx else {
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
    let rest = futures::stream::unfold((rx, shutdown), move |(mut rx, shutdown)| async move {
        tokio::select! {
            received = rx.recv() => match received {
                Ok(entry) => Some((Bytes::from(format(&entry)), (rx, shutdown))),
                Err(_) => None,
            },
            _ = shutdown.cancelled() => None,
            () = tokio::time::sleep_until(until) => None,
        }
    });
    let stream = head
        .chain(rest)
        .map(|b| Ok::<_, Infallible>(Frame::data(b)));
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
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
