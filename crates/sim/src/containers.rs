//! The container runtime of every simulated node: the containers running now, each with what its processes share
//! (its files, environment and mounts), so that `exec` starts a process in the very container the kubelet runs
//! and `attach` reaches its main process's standard input; and the pods' networks, so that `portforward` reaches
//! what listens in a pod.
//!
//! The kubelet registers a container when it starts and the registration ends with it; processes started by
//! `exec` die with their container, as they do under a real runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::DuplexStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::network::Network;
use super::shell::{self, ContainerEnv, Stdio};
use kmm_apiserver::apiserver::streams::{
    AttachedStdin, ContainerAddress, ContainerRuntime, ExecProcess,
};

/// How many chunks of a process's standard input wait for it to read them before the sender waits in turn.
const STDIN_CHUNKS: usize = 64;

/// The standard input of a container's main process, while the spec keeps one open.
struct MainStdin {
    sender: mpsc::Sender<Vec<u8>>,
    /// `stdinOnce`: the input ends when the first attached client detaches.
    once: bool,
}

/// A running container.
struct Running {
    env: ContainerEnv,
    /// Cancelled when the container stops: its exec'd processes stop with it.
    stopped: CancellationToken,
    stdin: Option<MainStdin>,
    /// Distinguishes this instance from a restart's, so a stale registration never removes a newer one.
    instance: u64,
}

#[derive(Default)]
struct Table {
    running: HashMap<ContainerAddress, Running>,
    next_instance: u64,
    /// The pods' listening ports, which `pods/portforward` connects to.
    network: Network,
}

/// The running containers of every node.
#[derive(Clone, Default)]
pub struct Containers(Arc<Mutex<Table>>);

/// A container's registration, ended (and its exec'd processes killed) when dropped.
pub struct Registration {
    containers: Containers,
    address: ContainerAddress,
    instance: u64,
    stopped: CancellationToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.stopped.cancel();
        let mut table = self.containers.table();
        if table
            .running
            .get(&self.address)
            .is_some_and(|r| r.instance == self.instance)
        {
            table.running.remove(&self.address);
        }
    }
}

impl Containers {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register the container at `address`, running in `env`; with `stdin` (its spec's `stdin: true`, and
    /// `stdinOnce`), its main process's input is returned for the kubelet to run it with.
    pub fn register(
        &self,
        address: ContainerAddress,
        env: ContainerEnv,
        stdin: Option<bool>,
    ) -> (Registration, Option<mpsc::Receiver<Vec<u8>>>) {
        let (main_stdin, receiver) = match stdin {
            Some(once) => {
                let (sender, receiver) = mpsc::channel(STDIN_CHUNKS);
                (Some(MainStdin { sender, once }), Some(receiver))
            }
            None => (None, None),
        };
        let stopped = CancellationToken::new();
        let mut table = self.table();
        table.next_instance += 1;
        let instance = table.next_instance;
        table.running.insert(
            address.clone(),
            Running {
                env,
                stopped: stopped.clone(),
                stdin: main_stdin,
                instance,
            },
        );
        let registration = Registration {
            containers: self.clone(),
            address,
            instance,
            stopped,
        };
        (registration, receiver)
    }

    /// The pods' networks: a starting container joins its pod's.
    pub fn network(&self) -> Network {
        self.table().network.clone()
    }

    /// The environment of the running container at `address`.
    pub fn env(&self, address: &ContainerAddress) -> Option<ContainerEnv> {
        self.table().running.get(address).map(|r| r.env.clone())
    }
}

impl ContainerRuntime for Containers {
    fn exec(
        &self,
        container: &ContainerAddress,
        command: &[String],
        stdin: bool,
    ) -> Option<ExecProcess> {
        let (env, stopped) = {
            let table = self.table();
            let running = table.running.get(container)?;
            (running.env.clone(), running.stopped.clone())
        };
        let (input, stdin_receiver) = if stdin {
            let (sender, receiver) = mpsc::channel(STDIN_CHUNKS);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let (out, output) = mpsc::unbounded_channel();
        let (exited, exit) = oneshot::channel();
        let kill = CancellationToken::new();
        let killed = kill.clone();
        let command = command.to_vec();
        tokio::spawn(async move {
            let sink: shell::Sink = Arc::new(move |stream, bytes: &[u8]| {
                let _ = out.send((stream, bytes.to_vec()));
            });
            let stdio = Stdio {
                stdin: stdin_receiver,
                sink,
            };
            tokio::select! {
                code = shell::run(&env, &command, stdio) => {
                    let _ = exited.send(code);
                }
                () = killed.cancelled() => {}
                () = stopped.cancelled() => {}
            }
        });
        Some(ExecProcess {
            stdin: input,
            output,
            exit,
            kill: kill.drop_guard(),
        })
    }

    fn connect(&self, namespace: &str, pod: &str, port: u16) -> Option<DuplexStream> {
        self.network().connect(namespace, pod, port)
    }

    fn attach_stdin(&self, container: &ContainerAddress) -> Option<AttachedStdin> {
        let table = self.table();
        let stdin = table.running.get(container)?.stdin.as_ref()?;
        let on_detach: Option<Box<dyn FnOnce() + Send>> = stdin.once.then(|| {
            let containers = self.clone();
            let address = container.clone();
            Box::new(move || {
                if let Some(running) = containers.table().running.get_mut(&address) {
                    running.stdin = None;
                }
            }) as Box<dyn FnOnce() + Send>
        });
        Some(AttachedStdin {
            sender: stdin.sender.clone(),
            on_detach,
        })
    }
}
