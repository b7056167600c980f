//! How many connections a listener serves at once and how long a connection may stay silent or idle. Without
//! these, sockets that never speak or sit idle hold a descriptor each until the process runs out.

use std::time::Duration;

/// The limits the accept loop enforces itself; the stages of a protocol (a TLS handshake, HTTP headers and
/// bodies) have deadlines set by the code that speaks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Authenticated connections served at once; when that many are open, new clients wait in the kernel's accept
    /// queue until one closes. Upgraded connections (exec, attach) count for as long as their session runs.
    pub max_connections: usize,
    /// Connections not (yet) authenticated, kept apart so they cannot take the slots of authenticated ones.
    pub unauthenticated: UnauthenticatedBudget,
    /// From accepting a socket to the client's first byte: every protocol served here speaks first from the
    /// client, so a socket that says nothing for this long is closed.
    pub silence: Duration,
    /// How long a connection may stay open with no request in flight before it is closed.
    pub idle: Duration,
}

/// How many unauthenticated connections are kept: per peer address and in all. A new connection beyond either
/// evicts the oldest unauthenticated connection, one that has not spoken first (see [`crate::Connection`]),
/// rather than being refused, so a flood of sockets churns among itself while a client that speaks at once keeps
/// its connection long enough to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnauthenticatedBudget {
    /// Unauthenticated connections from all peers together.
    pub total: usize,
    /// Unauthenticated connections from one peer address. On loopback every client shares the address, so there
    /// the eviction order, not this share, is what keeps honest clients served.
    pub per_peer: usize,
}
