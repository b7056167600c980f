//! Whether a cluster answers, and when it does not, why ([`Why`], worded by [`crate::tui::worded`] as every
//! failure the console shows).

pub use crate::tui::worded::Why;

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
