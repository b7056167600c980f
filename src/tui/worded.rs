//! Every failure the console shows, in the words an administrator uses: `connection refused at 127.0.0.1:6443`,
//! `the server rejected the credentials (401): the kubeconfig's token is no longer valid`, `forbidden: …`. The
//! client's own wording (`ServiceError: client error (Connect): tcp connect error: …`, or a `Status` printed with
//! `Debug`) never reaches a screen: the header, the panes, the fleet's WHY column and the footer all word errors
//! here, so one rule decides what a person reads.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use kmm_engine::runtime::causes::chain;
use kube::core::Status;
use kube::runtime::watcher;

/// Why something failed: a word for narrow columns and the sentence behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    /// `refused`, `TLS`, `unauthorized`, `forbidden`, `not found`, `timeout`, `unknown host`, `credentials`,
    /// `kubeconfig`, `reset` or `error`.
    pub word: &'static str,
    /// What happened, in one line.
    pub detail: String,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// The words of failures that say the cluster cannot be reached at all (rather than that it refused one request).
const UNREACHABLE: &[&str] = &["refused", "timeout", "TLS", "unknown host", "reset"];

impl Why {
    /// No answer from `server` within `limit`.
    pub fn timeout(limit: Duration, server: Option<&str>) -> Why {
        Why {
            word: "timeout",
            detail: match server {
                Some(server) => format!("no answer from {server} within {}s", limit.as_secs_f32()),
                None => format!("no answer within {}s", limit.as_secs_f32()),
            },
        }
    }

    /// The kubeconfig's context could not be turned into a client (missing file, exec plugin not found, bad
    /// certificate data).
    pub fn kubeconfig(error: &anyhow::Error) -> Why {
        let detail = one_line(&format!("{error:#}"));
        if mentions_credentials(&detail) {
            Why {
                word: "credentials",
                detail: format!("cannot get credentials: {detail}"),
            }
        } else {
            Why {
                word: "kubeconfig",
                detail: format!("the kubeconfig cannot be used: {detail}"),
            }
        }
    }

    /// Why a request to `server` (`host:port`, when known) failed.
    pub fn of(error: &kube::Error, server: Option<&str>) -> Why {
        match error {
            kube::Error::Api(status) => Why::of_status(status),
            other => Why::of_transport(other, server),
        }
    }

    /// Why a watch of `server` failed.
    pub fn of_watch(error: &watcher::Error, server: Option<&str>) -> Why {
        match error {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => Why::of(e, server),
            watcher::Error::WatchError(status) => Why::of_status(status),
            watcher::Error::NoResourceVersion => Why {
                word: "error",
                detail: "the server does not support watching this kind (no resourceVersion)"
                    .to_owned(),
            },
        }
    }

    /// What the API server's `Status` says, without its wire form.
    pub fn of_status(status: &Status) -> Why {
        let said = one_line(status.message.trim());
        let said = if said.is_empty() {
            one_line(status.reason.trim())
        } else {
            said
        };
        let (word, detail) = match status.code {
            401 => (
                "unauthorized",
                "the server rejected the credentials (401): the kubeconfig's token is no longer valid"
                    .to_owned(),
            ),
            403 => ("forbidden", format!("forbidden: {said}")),
            404 if said.is_empty() => ("not found", "not found".to_owned()),
            404 => ("not found", format!("not found: {said}")),
            code if said.is_empty() => ("error", format!("the server answered {code}")),
            0 => ("error", said),
            code => ("error", format!("the server answered {code}: {said}")),
        };
        Why { word, detail }
    }

    /// Whether the failure says the cluster cannot be reached at all.
    pub fn unreachable(&self) -> bool {
        UNREACHABLE.contains(&self.word)
    }

    /// Whether the server refused the credentials.
    pub fn unauthorized(&self) -> bool {
        self.word == "unauthorized"
    }

    /// A failure below HTTP: the connection, TLS, name resolution, credentials plugins.
    fn of_transport(error: &kube::Error, server: Option<&str>) -> Why {
        // `connection refused at 127.0.0.1:6443`, or `connection refused` when the address is not known.
        let place = |preposition: &str| {
            server.map_or_else(String::new, |server| format!(" {preposition} {server}"))
        };
        let causes = causes(error);
        let lower = causes.join(": ").to_lowercase();
        let innermost = causes.last().cloned().unwrap_or_default();
        let refused = || ("refused", format!("connection refused{}", place("at")));
        let timed_out = || ("timeout", format!("no answer{} (timed out)", place("from")));
        let closed = || ("reset", format!("the connection{} was closed", place("to")));
        let (word, detail) = match io_kind(error) {
            Some(std::io::ErrorKind::ConnectionRefused) => refused(),
            Some(std::io::ErrorKind::TimedOut) => timed_out(),
            Some(
                std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof,
            ) => closed(),
            _ if lower.contains("connection refused") => refused(),
            _ if lower.contains("unknownissuer") || lower.contains("badsignature") => (
                "TLS",
                format!(
                    "TLS failure{}: the server's certificate is not signed by the kubeconfig's CA",
                    place("with")
                ),
            ),
            _ if lower.contains("certificate")
                || lower.contains("tls")
                || lower.contains("handshake") =>
            {
                ("TLS", format!("TLS failure{}: {innermost}", place("with")))
            }
            _ if lower.contains("dns error")
                || lower.contains("failed to lookup")
                || lower.contains("name or service not known")
                || lower.contains("no such host") =>
            {
                (
                    "unknown host",
                    format!("unknown host{}", place(":")).replace(" :", ":"),
                )
            }
            _ if lower.contains("timed out") || lower.contains("timeout") => timed_out(),
            _ if mentions_credentials(&lower) => (
                "credentials",
                format!("cannot get credentials: {}", causes.join(": ")),
            ),
            _ if lower.contains("connection reset") || lower.contains("connection closed") => {
                closed()
            }
            _ => ("error", causes.join(": ")),
        };
        Why {
            word,
            detail: one_line(&detail),
        }
    }
}

/// Whether a message is about getting credentials (an exec plugin, a token file, an auth provider).
fn mentions_credentials(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("exec") || lower.contains("auth") || lower.contains("token")
}

/// What the error and its causes say, each once, outermost first, without the client's wrapper words: the
/// causes of a `kube::Error` say what went wrong; its own message only repeats the first with a prefix
/// (`ServiceError: …`).
fn causes(error: &kube::Error) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    for cause in chain(error).skip(1) {
        let text = one_line(&cause.to_string());
        // Many causes repeat their own cause in their message: keep the more specific one.
        if let Some(last) = texts.last_mut()
            && last.contains(&text)
        {
            *last = text;
        } else if !texts.contains(&text) {
            texts.push(text);
        }
    }
    if texts.is_empty() {
        texts.push(one_line(&error.to_string()));
    }
    texts
}

/// The kind of the first I/O error among the causes.
fn io_kind(error: &(dyn StdError + 'static)) -> Option<std::io::ErrorKind> {
    chain(error)
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind)
}

/// `text` on one line, without runs of blanks.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `host:port` a client of `config` connects to, as the words above name it (`https://10.0.0.1` →
/// `10.0.0.1:443`).
pub fn server_of(config: &kube::Config) -> Option<String> {
    let url = &config.cluster_url;
    let host = url.host()?;
    let port = url
        .port_u16()
        .unwrap_or(if url.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    Some(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, message: &str) -> Status {
        Status {
            code,
            message: message.to_owned(),
            ..Status::default()
        }
    }

    #[test]
    fn statuses_are_worded_without_their_wire_form() {
        let unauthorized = Why::of_status(&status(401, "Unauthorized"));
        assert!(unauthorized.unauthorized());
        assert!(
            unauthorized
                .detail
                .contains("rejected the credentials (401)")
        );
        assert_eq!(
            Why::of_status(&status(403, "pods is forbidden")).detail,
            "forbidden: pods is forbidden"
        );
        assert_eq!(
            Why::of_status(&status(500, "boom")).detail,
            "the server answered 500: boom"
        );
    }

    #[test]
    fn a_broken_kubeconfig_is_not_a_network_failure() {
        let missing = anyhow::anyhow!("loading context a: failed to read file /nowhere");
        assert_eq!(Why::kubeconfig(&missing).word, "kubeconfig");
        let plugin = anyhow::anyhow!("exec plugin aws-iam-authenticator not found");
        assert_eq!(Why::kubeconfig(&plugin).word, "credentials");
    }

    #[test]
    fn servers_are_named_with_their_port() {
        let config = kube::Config::new("https://10.0.0.1".parse().expect("a url"));
        assert_eq!(server_of(&config).as_deref(), Some("10.0.0.1:443"));
        let config = kube::Config::new("https://127.0.0.1:6443/".parse().expect("a url"));
        assert_eq!(server_of(&config).as_deref(), Some("127.0.0.1:6443"));
    }
}
