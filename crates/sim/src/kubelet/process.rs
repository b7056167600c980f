//! A container's processes: the environment they share (its files, variables and mounts, registered with the
//! node's runtime so that `exec` and `attach` reach the very container) and its main process, whose output is the
//! container's log and whose exit status ends the container.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Secret};
use kube::api::Api;
use tokio::sync::mpsc;

use k8s_openapi::api::core::v1::Pod;

use super::{Kubelet, locked, node};
use crate::World;
use crate::containers::Registration;
use crate::effects::Outcome;
use crate::environment::{self, Objects, PodFacts, Source};
use crate::registry::container_argv;
use crate::shell::{self, ContainerEnv, Files, Limits, Stdio};
use kmm_apiserver::apiserver::ApiServer;
use kmm_apiserver::apiserver::logs::Stream;
use kmm_apiserver::apiserver::streams::{ContainerAddress, HostMounts};

/// The least time from a container's start to its exit, as creating and starting a container takes: a command
/// that ends at once still shows its container running for this long.
const START_TO_EXIT: Duration = Duration::from_secs(1);

/// A container about to start: what its processes' environment is built from.
pub(super) struct Starting<'a> {
    pub kubelet: &'a Kubelet,
    pub pod: &'a Pod,
    pub node: &'a str,
    pub pod_ip: Option<String>,
    pub container: &'a Container,
}

/// The environment a starting container's processes share, registered with the node's runtime until the
/// returned registration is dropped; with the main process's standard input when the spec keeps one open
/// (`stdin: true`).
pub(super) async fn start(
    starting: Starting<'_>,
) -> (ContainerEnv, Registration, Option<mpsc::Receiver<Vec<u8>>>) {
    let Starting {
        kubelet,
        pod,
        node,
        pod_ip,
        container,
    } = starting;
    let world = &kubelet.world;
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let host_ip = kubelet
        .nodes
        .get(node)
        .map(|handle| node::internal_ip(handle.index));
    let facts = PodFacts {
        pod,
        node,
        pod_ip: pod_ip.as_deref(),
        host_ip: host_ip.as_deref(),
    };
    let objects = referenced_objects(&world.client, &namespace, container).await;
    let limits = Limits::default();
    let pod_json = serde_json::to_value(pod).unwrap_or_default();
    let env = ContainerEnv {
        node: node.to_owned(),
        machines: world.machines.clone(),
        mounts: HostMounts::of(&pod_json, &container.name),
        files: Files::new(&name, limits.file_bytes),
        env: environment::environment(&facts, container, &objects),
        hostname: name.clone(),
        clock: world.clock,
        started: world.clock.now(),
        limits,
        ports: world.containers.network().pod(&namespace, &name),
    };
    let address = ContainerAddress {
        namespace,
        pod: name,
        container: container.name.clone(),
    };
    let stdin = (container.stdin == Some(true)).then(|| container.stdin_once == Some(true));
    let (registration, main_stdin) = world.containers.register(address, env.clone(), stdin);
    (env, registration, main_stdin)
}

/// The ConfigMaps' and Secrets' data `container`'s environment reads; one that cannot be read is left out.
async fn referenced_objects(
    client: &kube::Client,
    namespace: &str,
    container: &Container,
) -> Objects {
    let mut objects = Objects::new();
    for (source, name) in environment::referenced(container) {
        let data = match source {
            Source::ConfigMap => Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&name)
                .await
                .map(|map| map.data.unwrap_or_default()),
            Source::Secret => Api::<Secret>::namespaced(client.clone(), namespace)
                .get(&name)
                .await
                .map(|secret| {
                    secret
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                        .collect()
                }),
        };
        match data {
            Ok(data) => {
                objects.insert((source, name), data);
            }
            Err(e) => tracing::debug!(%namespace, %name, error = %e, "reading an env source"),
        }
    }
    objects
}

/// What the container's main process runs: its command and args, or its image's entrypoint and cmd where it sets
/// none, as the kubelet decides them, with `$(NAME)` references to its environment expanded; None when neither the
/// container nor its image says anything (a server of an image the registry knows nothing about).
pub(super) fn argv(
    world: &World,
    container: &Container,
    env: &ContainerEnv,
) -> Option<Vec<String>> {
    let config = world
        .registry
        .image_config(container.image.as_deref().unwrap_or_default());
    let argv = container_argv(
        container.command.as_deref().unwrap_or_default(),
        container.args.as_deref().unwrap_or_default(),
        &config,
    );
    (!argv.is_empty()).then(|| environment::expand_argv(&argv, &env.env))
}

/// Run the container's main process, `argv`, in `env` until it exits; what it writes is the container's log.
pub(super) async fn run_main(
    world: &World,
    pod: &Pod,
    container: &Container,
    env: &ContainerEnv,
    argv: &[String],
    stdin: Option<mpsc::Receiver<Vec<u8>>>,
) -> Outcome {
    let started = world.clock.now();
    let log = Arc::new(LogWriter {
        server: world.server.clone(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        pod: pod.metadata.name.clone().unwrap_or_default(),
        container: container.name.clone(),
        partial: Mutex::default(),
    });
    let writer = log.clone();
    let sink: shell::Sink = Arc::new(move |stream, bytes: &[u8]| writer.write(stream, bytes));
    let code = shell::run(env, argv, Stdio { stdin, sink }).await;
    log.flush();
    let ran = world.clock.now().saturating_sub(started);
    if ran < START_TO_EXIT {
        world.clock.sleep(START_TO_EXIT - ran).await;
    }
    Outcome::exited(code, Vec::new(), None)
}

/// Appends what a process writes to its container's log, a line at a time, as the kubelet's log does.
struct LogWriter {
    server: ApiServer,
    namespace: String,
    pod: String,
    container: String,
    /// The unfinished last line of each stream.
    partial: Mutex<[Vec<u8>; 2]>,
}

/// The longest line kept whole: a longer one is split, as the kubelet splits lines longer than 16 KiB.
const MAX_LINE: usize = 16 * 1024;

impl LogWriter {
    fn write(&self, stream: Stream, bytes: &[u8]) {
        let mut partial = locked(&self.partial);
        let pending = &mut partial[stream as usize];
        pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            lines.push(line[..line.len() - 1].to_vec());
        }
        while pending.len() >= MAX_LINE {
            lines.push(pending.drain(..MAX_LINE).collect());
        }
        drop(partial);
        for line in lines {
            self.append(stream, &line);
        }
    }

    /// Write out the unfinished last lines, once the process has exited.
    fn flush(&self) {
        let pending = std::mem::take(&mut *locked(&self.partial));
        for (stream, line) in [Stream::Stdout, Stream::Stderr].into_iter().zip(pending) {
            if !line.is_empty() {
                self.append(stream, &line);
            }
        }
    }

    fn append(&self, stream: Stream, line: &[u8]) {
        let timestamp = jiff::Timestamp::now().to_string();
        self.server.logs().append_on(
            &self.namespace,
            &self.pod,
            &self.container,
            &timestamp,
            stream,
            &String::from_utf8_lossy(line),
        );
    }
}
