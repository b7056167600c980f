//! One accepted connection as the accept loop accounts for it: in the unauthenticated budget until the server
//! promotes it, then holding one of the listener's authenticated slots, until the last handle to it is dropped.
//! Handles are clonable so that a session that outlives its request (a connection upgraded to a stream protocol)
//! keeps the connection counted for as long as it runs.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::activity::{Activity, Guard};
use crate::budget::Budget;
use crate::limits::Limits;
use crate::peek::bytes_waiting;

/// What one listener has admitted: its authenticated slots and its unauthenticated budget.
pub(crate) struct Registry {
    authenticated: Arc<Semaphore>,
    max_connections: usize,
    budget: Mutex<Budget>,
}

impl Registry {
    /// Nothing admitted yet, within `limits`.
    pub(crate) fn new(limits: &Limits) -> Self {
        let max_connections = limits.max_connections.max(1);
        Self {
            authenticated: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            budget: Mutex::new(Budget::new(limits.unauthenticated, bytes_waiting)),
        }
    }

    /// Resolve once fewer than the cap of connections are authenticated: at the cap the loop stops accepting,
    /// and new clients wait in the kernel's queue, holding no descriptor here.
    pub(crate) async fn room_for_authenticated(&self) {
        // A closed semaphore never happens: the registry never closes it.
        let _ = self.authenticated.acquire().await;
    }

    /// Take in the connection on `socket` from `peer`, unauthenticated.
    pub(crate) fn admit(self: &Arc<Self>, peer: SocketAddr, socket: RawFd) -> Connection {
        let evicted = CancellationToken::new();
        let id = self.budget().admit(peer.ip(), socket, evicted.clone());
        Connection(Arc::new(Entry {
            registry: self.clone(),
            id,
            peer,
            evicted,
            activity: Activity::default(),
            promoted: Mutex::new(None),
        }))
    }

    /// How many connections are admitted now, and how many were evicted so far.
    pub(crate) fn census(&self) -> Census {
        let budget = self.budget();
        Census {
            authenticated: self.max_connections - self.authenticated.available_permits(),
            unauthenticated: budget.len(),
            evicted: budget.evicted(),
        }
    }

    fn budget(&self) -> MutexGuard<'_, Budget> {
        // The budget's book-keeping cannot panic half-way: a poisoned lock still holds consistent state.
        self.budget
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A listener's connections at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// Connections holding an authenticated slot, upgraded ones included.
    pub authenticated: usize,
    /// Connections in the unauthenticated budget.
    pub unauthenticated: usize,
    /// Unauthenticated connections evicted to make room for newer ones, since the listener started.
    pub evicted: u64,
}

/// A handle to one accepted connection; the connection stays counted until every clone is dropped.
#[derive(Clone)]
pub struct Connection(Arc<Entry>);

struct Entry {
    registry: Arc<Registry>,
    id: u64,
    peer: SocketAddr,
    evicted: CancellationToken,
    activity: Activity,
    /// The authenticated slot, once promoted.
    promoted: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Connection {
    /// Who connected.
    pub fn peer(&self) -> SocketAddr {
        self.0.peer
    }

    /// One of the connection's requests was authenticated: it leaves the unauthenticated budget for an
    /// authenticated slot, waiting for one while the listener is at its cap. Does nothing once promoted.
    pub async fn promote(&self) {
        if self.is_promoted() {
            return;
        }
        let slot = tokio::select! {
            slot = self.0.registry.authenticated.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return,
            },
            () = self.0.evicted.cancelled() => return,
        };
        let mut promoted = self.promoted();
        if promoted.is_none() {
            *promoted = Some(slot);
            self.0.registry.budget().leave(self.0.id);
        }
    }

    /// Whether the connection holds an authenticated slot.
    pub fn is_promoted(&self) -> bool {
        self.promoted().is_some()
    }

    /// Count a request in flight, so the connection is not closed as idle while it runs.
    pub fn start_request(&self) -> Guard {
        self.0.activity.start()
    }

    /// The client has sent its first bytes.
    pub(crate) fn spoke(&self) {
        self.0.registry.budget().spoke(self.0.id);
    }

    /// Resolve when the connection was evicted from the unauthenticated budget to make room for a newer one.
    pub(crate) async fn evicted(&self) {
        self.0.evicted.cancelled().await;
    }

    /// Resolve once no request has been in flight for `idle`.
    pub(crate) async fn idle_for(&self, idle: Duration) {
        self.0.activity.idle_for(idle).await;
    }

    fn promoted(&self) -> MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.0
            .promoted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // A no-op for a connection already promoted or evicted: each has left the budget then.
        self.registry.budget().leave(self.id);
    }
}
