//! Long-running requests (watches, exec and attach sessions, followed logs) held within limits, in the spirit of
//! kube-apiserver's API Priority and Fairness: each such request holds a socket, a task and buffers for as long as
//! the client keeps it, so one user may hold only so many at once and all users together only so many more. A user
//! over a limit gets kube-apiserver's `429 TooManyRequests` with `Retry-After`, while everyone else is served.
//! Members of `system:masters` are exempt, as APF's `exempt` priority level exempts them, so the administrator is
//! never locked out by what tenants hold. The count is given back when the request's stream ends.
//!
//! The limits also bound how long such requests live: an exec or attach session is closed after an idle time, and a
//! followed log ends after a while, as kube-apiserver ends every watch after a while.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use super::ResponseBody;
use super::context::RequestContext;
use super::errors::ApiError;
use super::request::Verb;
use crate::identity::{MASTERS, UserInfo};

/// Long-running requests one user may hold at once. A controller watches one resource type per watch (the
/// engine, run as a ServiceAccount in a cluster, holds about 45) and kubectl or a console a few more each, so
/// 100 leaves honest clients room while one tenant's sockets stay a small share of the descriptors.
pub const DEFAULT_PER_USER: usize = 100;

/// Long-running requests all users but the exempt hold together: half of the HTTPS listener's default connection
/// cap ([`crate::https::ConnectionLimits`]), so what tenants keep open never takes the connections short requests
/// need.
pub const DEFAULT_IN_ALL: usize = 256;

/// How long an exec or attach session may pass with no byte in either direction. kubelet's
/// `--streaming-connection-idle-timeout` of 4 hours suits nodes, not a console server whose every session is a
/// socket; kubectl keeps a session it is using alive with its heartbeat pings, so only an abandoned (or hostile)
/// session reaches 15 minutes of silence.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(15 * 60);

/// How long a followed log (`logs?follow=true`) is streamed before it ends. kube-apiserver ends every watch after
/// 30 to 60 minutes so that no stream is held forever; a followed log ends after an hour likewise: long enough for a
/// person reading it, and a forgotten `kubectl logs -f` gives its count back. The client sees a clean end of the
/// stream and may follow again.
pub const DEFAULT_LOG_FOLLOW: Duration = Duration::from_secs(60 * 60);

/// What a refused client is told to wait before trying again, in seconds: kube-apiserver's `Retry-After` for a
/// request it sheds. Clients (client-go, kube-rs) honour it and retry.
const RETRY_AFTER_SECONDS: u64 = 1;

/// How many long-running requests are served, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongRunningLimits {
    /// Long-running requests one user may hold at once.
    pub per_user: usize,
    /// Long-running requests all users but the exempt may hold at once.
    pub in_all: usize,
    /// How long an exec or attach session may stay without traffic before it is closed.
    pub session_idle: Duration,
    /// How long a followed log is streamed before it ends.
    pub log_follow: Duration,
}

impl Default for LongRunningLimits {
    fn default() -> Self {
        Self {
            per_user: DEFAULT_PER_USER,
            in_all: DEFAULT_IN_ALL,
            session_idle: DEFAULT_SESSION_IDLE,
            log_follow: DEFAULT_LOG_FOLLOW,
        }
    }
}

/// The long-running requests held now, by user, within [`LongRunningLimits`].
#[derive(Default)]
pub(crate) struct LongRunning {
    state: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    limits: LongRunningLimits,
    by_user: HashMap<String, usize>,
    in_all: usize,
}

impl LongRunning {
    /// Serve within `limits` from now on; requests held beyond new, lower limits run to their end.
    pub(crate) fn set_limits(&self, limits: LongRunningLimits) {
        self.held().limits = limits;
    }

    /// The limits served within.
    pub(crate) fn limits(&self) -> LongRunningLimits {
        self.held().limits
    }

    /// Count one more long-running request of `user`, or refuse it with 429 when a limit is reached.
    pub(crate) fn admit(self: &Arc<Self>, user: &UserInfo) -> Result<Permit, ApiError> {
        if user.groups.iter().any(|g| g == MASTERS) {
            return Ok(Permit { counted: None });
        }
        let mut held = self.held();
        let limits = held.limits;
        let mine = held.by_user.get(&user.name).copied().unwrap_or(0);
        if mine >= limits.per_user {
            return Err(too_many(&format!(
                "user {:?} holds {mine} long-running requests (watches, exec, attach, followed logs), the most one \
                 user may hold at once ({})",
                user.name, limits.per_user
            )));
        }
        if held.in_all >= limits.in_all {
            return Err(too_many(&format!(
                "the server holds {} long-running requests (watches, exec, attach, followed logs), the most it \
                 serves at once for all users ({})",
                held.in_all, limits.in_all
            )));
        }
        *held.by_user.entry(user.name.clone()).or_default() += 1;
        held.in_all += 1;
        Ok(Permit {
            counted: Some((self.clone(), user.name.clone())),
        })
    }

    fn release(&self, user: &str) {
        let mut held = self.held();
        held.in_all = held.in_all.saturating_sub(1);
        if let Some(count) = held.by_user.get_mut(user) {
            *count -= 1;
            if *count == 0 {
                held.by_user.remove(user);
            }
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// kube-apiserver's refusal of a request it sheds, saying which limit was reached.
fn too_many(limit: &str) -> ApiError {
    ApiError::too_many_requests(
        format!("Too many requests, please try again later: {limit}"),
        RETRY_AFTER_SECONDS,
    )
}

/// One admitted long-running request: counted against its user until dropped. The exempt hold uncounted ones.
pub struct Permit {
    counted: Option<(Arc<LongRunning>, String)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((held, user)) = &self.counted {
            held.release(user);
        }
    }
}

/// Whether a request stays open after its answer starts: a watch, an exec, attach or port-forward session, or a
/// followed log.
pub(crate) fn is_long_running(ctx: &RequestContext) -> bool {
    let pods = ctx.rt.group.is_empty() && ctx.rt.plural == "pods";
    match (ctx.path.subresource.as_deref(), ctx.verb) {
        (None | Some("status"), Verb::Watch) => true,
        (Some("exec" | "attach" | "portforward"), Verb::Get | Verb::Create) => pods,
        (Some("log"), Verb::Get) => pods && ctx.query.flag("follow"),
        _ => false,
    }
}

/// `response` with its body holding `permit`: the count is given back when the stream ends or the client leaves
/// (the body is dropped either way).
pub(crate) fn held_by_body(
    response: Response<ResponseBody>,
    permit: Option<Permit>,
) -> Response<ResponseBody> {
    match permit {
        Some(permit) => response.map(|body| {
            Holding {
                body,
                _permit: permit,
            }
            .boxed_unsync()
        }),
        None => response,
    }
}

/// A body that holds a permit for as long as it lives.
struct Holding {
    body: ResponseBody,
    _permit: Permit,
}

impl Body for Holding {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: vec!["system:authenticated".to_owned()],
        }
    }

    fn limited(per_user: usize, in_all: usize) -> Arc<LongRunning> {
        let held = Arc::new(LongRunning::default());
        held.set_limits(LongRunningLimits {
            per_user,
            in_all,
            ..LongRunningLimits::default()
        });
        held
    }

    #[test]
    fn each_user_holds_at_most_its_share_until_one_ends() {
        let held = limited(2, 10);
        let alice = user("alice");
        let first = held.admit(&alice).unwrap();
        let _second = held.admit(&alice).unwrap();
        let refused = held.admit(&alice).err().unwrap();
        assert_eq!((refused.code, refused.reason), (429, "TooManyRequests"));
        assert!(refused.message.contains("(2)"), "{}", refused.message);
        held.admit(&user("bob"))
            .expect("another user has its own share");
        drop(first);
        held.admit(&alice)
            .expect("an ended request gives its count back");
    }

    #[test]
    fn all_users_together_hold_at_most_the_total_and_the_exempt_are_not_counted() {
        let held = limited(5, 2);
        let _a = held.admit(&user("a")).unwrap();
        let _b = held.admit(&user("b")).unwrap();
        let refused = held.admit(&user("c")).err().unwrap();
        assert!(
            refused.message.contains("all users (2)"),
            "{}",
            refused.message
        );
        let admins: Vec<Permit> = (0..10)
            .map(|_| {
                held.admit(&UserInfo::admin())
                    .expect("the administrator is exempt")
            })
            .collect();
        drop(admins);
        assert_eq!(held.held().in_all, 2);
    }
}
