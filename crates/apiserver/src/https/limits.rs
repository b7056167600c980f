//! How long the HTTPS listener waits for a client at each stage of a connection, and how many connections it
//! serves at once. Without these, sockets that never finish a handshake, send headers a byte at a time or sit idle
//! hold a descriptor each until the process runs out.

use std::time::Duration;

use kmm_listener::{Limits, UnauthenticatedBudget};

/// The listener's limits. The defaults follow kube-apiserver where it has one (32 s to read headers, 90 s idle
/// keep-alive, 60 s for a request); tests shorten them to see them act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From accepting a socket to a finished TLS handshake.
    pub handshake: Duration,
    /// From the start of a request (or of the connection) to the end of its headers (HTTP/1.1).
    pub headers: Duration,
    /// From the headers to the end of a request's body.
    pub body: Duration,
    /// How long a connection may stay open with no request in flight before it is closed.
    pub idle: Duration,
    /// Authenticated connections served at once, upgraded exec and attach sessions included; more wait in the
    /// kernel's accept queue until one closes. With the unauthenticated budget, kept well below the usual limit of
    /// 1,024 descriptors so sockets alone cannot exhaust them.
    pub max_connections: usize,
    /// Connections that have not (yet) presented a valid token: kept apart from the authenticated ones, so that
    /// sockets without a token cannot take their slots.
    pub unauthenticated: UnauthenticatedBudget,
}

impl ConnectionLimits {
    /// What the shared accept loop enforces: a socket that has not spoken by the handshake deadline has not
    /// finished its handshake either.
    pub fn accept_loop(&self) -> Limits {
        Limits {
            max_connections: self.max_connections,
            unauthenticated: self.unauthenticated,
            silence: self.handshake,
            idle: self.idle,
        }
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            headers: Duration::from_secs(32),
            body: Duration::from_secs(60),
            idle: Duration::from_secs(90),
            max_connections: 512,
            // A client needs one connection to authenticate, and kubectl or a controller opens a handful at
            // most before its first answer. Sockets that never speak are evicted first whatever the share; one
            // that speaks (a TLS handshake, headers sent slowly) is evicted only when more than the share speak
            // without a token. On loopback every client is one address, so the share is 64: fifty connections
            // sending headers a byte at a time evict no honest client. 128 in all keeps what sockets without a
            // token hold to a quarter of the authenticated cap, both together under the usual 1,024 descriptors.
            unauthenticated: UnauthenticatedBudget {
                total: 128,
                per_peer: 64,
            },
        }
    }
}
