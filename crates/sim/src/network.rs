//! The network of simulated pods: the containers of a pod share one network namespace, so one table of the TCP
//! ports their processes listen on. A process listens on a port ([`PodPorts::listen`]) and accepts connections, each
//! a pair of in-memory byte streams; `pods/portforward`, `nc localhost PORT` and the like connect to it
//! ([`PodPorts::connect`]). A listener vanishes with the process holding it, and so with its container.
//!
//! Nothing leaves the simulation: no host socket is ever opened. Everything is bounded: connections per pod, the
//! connections waiting to be accepted, and the bytes buffered in each direction of a connection.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::io::DuplexStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

/// Connections a pod's listeners hold open at once; one more is refused.
const CONNECTIONS_PER_POD: usize = 64;

/// Connections waiting for their listener to accept them; one more is refused, as a full backlog refuses.
const BACKLOG: usize = 16;

/// Bytes buffered in each direction of a connection before the writer waits for the reader.
const CONNECTION_BUFFER: usize = 64 * 1024;

/// A connection a listener accepted: its end of the byte streams, holding one of the pod's connection slots.
pub struct Accepted {
    /// What the peer sends is read from it, what is written to it reaches the peer.
    pub stream: DuplexStream,
    /// Given back when the connection is done with.
    _slot: OwnedSemaphorePermit,
}

/// A port the pod listens on.
struct Listening {
    queue: mpsc::Sender<Accepted>,
    /// Tells this listener from a later one on the same port, so that a stale listener never removes a newer one.
    id: u64,
}

#[derive(Default)]
struct Table {
    listening: HashMap<u16, Listening>,
    next_id: u64,
}

struct Shared {
    table: Mutex<Table>,
    slots: Arc<Semaphore>,
}

/// The ports one pod listens on, shared by all its containers' processes.
#[derive(Clone)]
pub struct PodPorts(Arc<Shared>);

impl Default for PodPorts {
    fn default() -> Self {
        Self(Arc::new(Shared {
            table: Mutex::default(),
            slots: Arc::new(Semaphore::new(CONNECTIONS_PER_POD)),
        }))
    }
}

/// Why a process could not listen: another one of the pod already does on that port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressInUse;

impl PodPorts {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.0.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Listen on `port` until the returned listener is dropped.
    pub fn listen(&self, port: u16) -> Result<Listener, AddressInUse> {
        let mut table = self.table();
        if table.listening.contains_key(&port) {
            return Err(AddressInUse);
        }
        table.next_id += 1;
        let id = table.next_id;
        let (queue, accepting) = mpsc::channel(BACKLOG);
        table.listening.insert(port, Listening { queue, id });
        Ok(Listener {
            ports: self.clone(),
            port,
            id,
            accepting,
        })
    }

    /// Connect to whatever listens on `port`; None when the connection is refused (nothing listens, or the pod
    /// holds all the connections it may).
    pub fn connect(&self, port: u16) -> Option<DuplexStream> {
        let slot = self.0.slots.clone().try_acquire_owned().ok()?;
        let table = self.table();
        let listening = table.listening.get(&port)?;
        let (ours, theirs) = tokio::io::duplex(CONNECTION_BUFFER);
        listening
            .queue
            .try_send(Accepted {
                stream: theirs,
                _slot: slot,
            })
            .ok()?;
        Some(ours)
    }
}

/// A port a process listens on; dropping it stops listening, and what was not accepted yet is refused.
pub struct Listener {
    ports: PodPorts,
    port: u16,
    id: u64,
    accepting: mpsc::Receiver<Accepted>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut table = self.ports.table();
        if table
            .listening
            .get(&self.port)
            .is_some_and(|l| l.id == self.id)
        {
            table.listening.remove(&self.port);
        }
    }
}

impl Listener {
    /// The next connection, waiting for one.
    pub async fn accept(&mut self) -> Accepted {
        match self.accepting.recv().await {
            Some(accepted) => accepted,
            // The pod's table keeps the sending side for as long as this listener lives.
            None => std::future::pending().await,
        }
    }

    /// Accept connections for ever, each answered by `handle` while the next ones are accepted. The connections
    /// being answered end when the returned future is dropped: with the process that listens.
    pub async fn serve<F, Fut>(mut self, handle: F) -> Infallible
    where
        F: Fn(DuplexStream) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut answering = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.accept() => {
                    let Accepted { stream, _slot } = accepted;
                    let answer = handle(stream);
                    answering.spawn(async move {
                        answer.await;
                        drop(_slot);
                    });
                }
                Some(_) = answering.join_next() => {}
            }
        }
    }
}

/// Each pod's ports by namespace and name, held only as long as one of its containers holds them.
type PodsPorts = HashMap<(String, String), Weak<Shared>>;

/// The pods' networks, found by namespace and pod name: what `pods/portforward` connects through.
#[derive(Clone, Default)]
pub struct Network(Arc<Mutex<PodsPorts>>);

impl Network {
    fn pods(&self) -> MutexGuard<'_, PodsPorts> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The ports of the pod `name` in `namespace`, shared with its other containers; they last as long as one of
    /// its containers does.
    pub fn pod(&self, namespace: &str, name: &str) -> PodPorts {
        let mut pods = self.pods();
        pods.retain(|_, ports| ports.strong_count() > 0);
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(shared) = pods.get(&key).and_then(Weak::upgrade) {
            return PodPorts(shared);
        }
        let ports = PodPorts::default();
        pods.insert(key, Arc::downgrade(&ports.0));
        ports
    }

    /// Connect to `port` of the pod `name` in `namespace`; None when the connection is refused.
    pub fn connect(&self, namespace: &str, name: &str, port: u16) -> Option<DuplexStream> {
        let shared = self
            .pods()
            .get(&(namespace.to_owned(), name.to_owned()))?
            .upgrade()?;
        PodPorts(shared).connect(port)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn a_listener_accepts_until_dropped_and_ports_are_not_shared_twice() {
        let ports = PodPorts::default();
        assert!(ports.connect(80).is_none(), "nothing listens yet");
        let mut listener = ports.listen(80).unwrap();
        assert_eq!(ports.listen(80).err(), Some(AddressInUse));
        let mut client = ports.connect(80).expect("a listener");
        let mut server = listener.accept().await.stream;
        client.write_all(b"ping").await.unwrap();
        let mut read = [0u8; 4];
        server.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"ping");
        drop(listener);
        assert!(ports.connect(80).is_none(), "the listener is gone");
        assert!(ports.listen(80).is_ok(), "the port is free again");
    }

    #[tokio::test]
    async fn connections_are_bounded_per_pod_and_by_the_backlog() {
        let ports = PodPorts::default();
        let _listener = ports.listen(6379).unwrap();
        let waiting: Vec<_> = (0..BACKLOG).filter_map(|_| ports.connect(6379)).collect();
        assert_eq!(waiting.len(), BACKLOG);
        assert!(ports.connect(6379).is_none(), "the backlog is full");
        let mut web = ports.listen(80).unwrap();
        let mut held = Vec::new();
        while let Some(client) = ports.connect(80) {
            held.push((client, web.accept().await));
        }
        assert_eq!(held.len() + waiting.len(), CONNECTIONS_PER_POD);
        held.pop();
        assert!(
            ports.connect(80).is_some(),
            "a closed connection frees its slot"
        );
    }

    #[tokio::test]
    async fn containers_of_a_pod_share_its_ports_and_the_network_finds_them() {
        let network = Network::default();
        let first = network.pod("default", "web");
        let second = network.pod("default", "web");
        let _listener = first.listen(8080).unwrap();
        assert!(second.listen(8080).is_err());
        assert!(network.connect("default", "web", 8080).is_some());
        assert!(network.connect("default", "other", 8080).is_none());
        drop((first, second, _listener));
        assert!(network.connect("default", "web", 8080).is_none());
    }
}
