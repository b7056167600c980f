//! Whether a cluster answers, and when it does not, why in the words an administrator uses: refused, TLS,
//! unauthorized, forbidden, timeout, unknown host, credentials, kubeconfig.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

/// What the fleet knows of a cluster's API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Not asked yet, or the first answer is on its way.
    Connecting,
    /// It answered `/version`.
    Reachable {
        /// Its Kubernetes version (`v1.31.2`).
        version: String,
    },
    /// It did not answer, for this reason; the fleet asks again with backoff.
    Unreachable(Why),
}

/// Why a cluster could not be reached: a word for the column, and the detail behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    /// `refused`, `TLS`, `unauthorized`, `forbidden`, `timeout`, `unknown host`, `credentials`, `kubeconfig`,
    /// `reset` or `error`.
    pub word: &'static str,
    /// What was said, in one line.
    pub detail: String,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.word, self.detail)
    }
}

impl Why {
    /// No answer within `limit`.
    pub fn timeout(limit: Duration) -> Why {
        Why {
            word: "timeout",
            detail: format!("no answer within {limit:?}"),
        }
    }

    /// The kubeconfig's context could not be turned into a client (missing file, exec plugin not found, bad
    /// certificate data).
    pub fn kubeconfig(error: &anyhow::Error) -> Why {
        let detail = one_line(&format!("{error:#}"));
        let word = if mentions_credentials(&detail) {
            "credentials"
        } else {
            "kubeconfig"
        };
        Why { word, detail }
    }

    /// Why a request to the cluster failed.
    pub fn of(error: &kube::Error) -> Why {
        if let kube::Error::Api(status) = error {
            let word = match status.code {
                401 => "unauthorized",
                403 => "forbidden",
                _ => "error",
            };
            let detail = if status.message.is_empty() {
                format!("HTTP {}", status.code)
            } else {
                format!("HTTP {}: {}", status.code, status.message)
            };
            return Why {
                word,
                detail: one_line(&detail),
            };
        }
        let chain = chain(error);
        let lower = chain.to_lowercase();
        let io_kind = io_kind(error);
        let word = match io_kind {
            Some(std::io::ErrorKind::ConnectionRefused) => "refused",
            Some(std::io::ErrorKind::TimedOut) => "timeout",
            Some(
                std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof,
            ) => "reset",
            _ if lower.contains("connection refused") => "refused",
            _ if lower.contains("certificate")
                || lower.contains("tls")
                || lower.contains("handshake")
                || lower.contains("unknownissuer") =>
            {
                "TLS"
            }
            _ if lower.contains("dns error")
                || lower.contains("failed to lookup")
                || lower.contains("name or service not known")
                || lower.contains("no such host") =>
            {
                "unknown host"
            }
            _ if lower.contains("timed out") || lower.contains("timeout") => "timeout",
            _ if mentions_credentials(&lower) => "credentials",
            _ if lower.contains("connection reset") || lower.contains("connection closed") => {
                "reset"
            }
            _ => "error",
        };
        Why {
            word,
            detail: one_line(&chain),
        }
    }
}

/// Whether a message is about getting credentials (an exec plugin, a token file, an auth provider).
fn mentions_credentials(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("exec") || lower.contains("auth") || lower.contains("token")
}

/// Every cause's message once, outermost first: `client error (Connect): tcp connect error: Connection refused`.
fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = String::new();
    let mut cause = Some(error);
    while let Some(error) = cause {
        let message = error.to_string();
        if !text.contains(&message) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
        cause = error.source();
    }
    text
}

/// The kind of the first I/O error among the causes.
fn io_kind(error: &(dyn StdError + 'static)) -> Option<std::io::ErrorKind> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cause = error.source();
    }
    None
}

/// `text` on one line, without runs of blanks.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.to_owned(),
            ..kube::core::Status::default()
        }))
    }

    #[test]
    fn status_codes_say_who_refused_what() {
        assert_eq!(Why::of(&api(401, "Unauthorized")).word, "unauthorized");
        assert_eq!(Why::of(&api(403, "nope")).word, "forbidden");
        assert_eq!(Why::of(&api(500, "boom")).detail, "HTTP 500: boom");
    }

    #[test]
    fn io_errors_name_the_failure() {
        let refused =
            kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(Why::of(&refused).word, "refused");
        let timed_out = kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(Why::of(&timed_out).word, "timeout");
        let tls = kube::Error::ReadEvents(std::io::Error::other(
            "invalid peer certificate: UnknownIssuer",
        ));
        assert_eq!(Why::of(&tls).word, "TLS");
    }

    #[test]
    fn a_broken_kubeconfig_is_not_a_network_failure() {
        let missing = anyhow::anyhow!("loading context a: failed to read file /nowhere");
        assert_eq!(Why::kubeconfig(&missing).word, "kubeconfig");
        let plugin = anyhow::anyhow!("exec plugin aws-iam-authenticator not found");
        assert_eq!(Why::kubeconfig(&plugin).word, "credentials");
    }
}
