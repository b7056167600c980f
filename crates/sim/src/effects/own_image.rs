//! The cluster's own image: a container of kmm-tui's image (the scenario's `controllerImage` repository, any tag)
//! runs in-process the program its args name, as that image's binary would, for as long as the container runs. Its
//! log lines become the container's log.
//!
//! Which args start which program is not the simulation's to know: it never depends on the engine it hosts. Whoever
//! starts the cluster registers an [`OwnImage`] (the `kmm-tui` binary registers its `controller` command); without
//! one, a container of the own image runs as any other image's does.
//!
//! Args are expanded as the kubelet expands them: `$(NAME)` is the value of the container's env `NAME`, literal or
//! from the pod's `metadata.name`, `metadata.namespace`, `spec.nodeName` or `spec.serviceAccountName`.
//!
//! When the pod is deleted its program is dropped where it stands, as a killed process would be: no step of an
//! orderly shutdown runs (an engine's Lease is not released, so a standby takes over once it expires).

use std::fmt;
use std::io::Write;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Container, Pod};
use tracing::instrument::WithSubscriber;
use tracing_subscriber::fmt::MakeWriter;

use super::{ContainerRun, Outcome};
use crate::World;
use crate::environment::{self, Objects, PodFacts};
use kmm_apiserver::apiserver::ApiServer;

/// How long the token a program presents stays valid: as long as the kubelet's projected ServiceAccount tokens
/// (kube-apiserver's one-year maximum for legacy clients), since an in-process program keeps its client for the
/// pod's whole life.
const POD_TOKEN_SECONDS: i64 = 365 * 24 * 3600;

/// What a program logs when it names no filter of its own.
const DEFAULT_LOG_FILTER: &str = "info";

/// The programs of the cluster's own image, registered by whoever starts the cluster.
pub trait OwnImage: Send + Sync + 'static {
    /// The program a container whose (expanded) args are `args` starts in the pod `pod` (the hostname its process
    /// would see), or None when the args start nothing in-process and the container runs as any other image's.
    fn program(&self, args: &[String], pod: &str) -> Option<Program>;
}

/// A program ready to run in a container.
pub struct Program {
    /// The `tracing` filter its log lines pass through on their way to the container's log.
    pub log_filter: String,
    /// Run it with the client of the pod's ServiceAccount, until it stops by itself (which an engine only does for a
    /// configuration it cannot run); an error is the process's last words, and exit code 1.
    pub run: Box<dyn FnOnce(kube::Client) -> BoxFuture<'static, anyhow::Result<()>> + Send>,
}

/// The registered [`OwnImage`], shareable and printable as the cluster's options are.
#[derive(Clone)]
pub struct OwnImagePrograms(pub Arc<dyn OwnImage>);

impl fmt::Debug for OwnImagePrograms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OwnImagePrograms")
    }
}

/// A program a container of the own image runs, with what it needs from its pod.
pub struct InProcess {
    program: Program,
    /// The pod's client, or why the kubelet could not give it one (its ServiceAccount is missing).
    client: Result<kube::Client, String>,
    log: PodLog,
}

/// Recognise a container of the own image that runs a registered program, with its args expanded.
pub fn recognise(world: &World, run: &ContainerRun) -> Option<InProcess> {
    let programs = world.own_image.as_ref()?;
    if run.init {
        return None;
    }
    let image = run.container.image.as_deref().unwrap_or_default();
    if !world.registry.is_own(image) {
        return None;
    }
    let args = expanded_args(run.node, run.pod, run.container);
    let pod_name = run.pod.metadata.name.clone().unwrap_or_default();
    let program = programs.program(&args, &pod_name)?;
    Some(InProcess {
        program,
        client: pod_client(&world.server, run.pod),
        log: PodLog {
            server: world.server.clone(),
            namespace: run.pod.metadata.namespace.clone().unwrap_or_default(),
            pod: pod_name,
            container: run.container.name.clone(),
        },
    })
}

/// The client an in-process program talks to the API server with: the one place its identity is decided.
///
/// As a kubelet mounts a projected token, the pod's `spec.serviceAccountName` (else `default`) gets a token the API
/// server issues, and every request presents it, so the program has exactly the RBAC bound to that account (for the
/// engine, what `kmm-tui install` binds). Without the account there is no token, and the container fails saying so.
pub fn pod_client(server: &ApiServer, pod: &Pod) -> Result<kube::Client, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let account = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.service_account_name.as_deref())
        .unwrap_or("default");
    let issued = server
        .auth()
        .issue_token(
            server.store(),
            namespace,
            account,
            POD_TOKEN_SECONDS,
            Vec::new(),
        )
        .map_err(|e| format!("no token for ServiceAccount {namespace}/{account}: {e}"))?;
    kmm_apiserver::client_with_token(server, &issued.token).map_err(|e| format!("{e:#}"))
}

impl InProcess {
    /// Run the program until it stops by itself; the caller drops this future when the pod is deleted.
    pub async fn run(self) -> Outcome {
        let filter = tracing_subscriber::EnvFilter::try_new(&self.program.log_filter)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER))
            .add_directive(
                "kube_client::client::builder=off"
                    .parse()
                    .expect("a valid directive"),
            );
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .without_time()
            .with_writer(self.log)
            .finish();
        let client = match self.client {
            Ok(client) => client,
            Err(why) => return Outcome::failure(1, Vec::new(), format!("kmm-tui: {why}")),
        };
        let ran = (self.program.run)(client).with_subscriber(subscriber).await;
        match ran {
            Ok(()) => Outcome::success(Vec::new()),
            Err(error) => Outcome::failure(1, Vec::new(), format!("kmm-tui: {error:#}")),
        }
    }
}

/// The container's args with `$(NAME)` references to its env expanded; unknown references stay as written.
fn expanded_args(node: &str, pod: &Pod, container: &Container) -> Vec<String> {
    let facts = PodFacts {
        pod,
        node,
        pod_ip: None,
        host_ip: None,
    };
    let env = environment::environment(&facts, container, &Objects::new());
    environment::expand_argv(container.args.as_deref().unwrap_or_default(), &env)
}

/// Where an in-process engine's log lines go: its container's log.
#[derive(Clone)]
struct PodLog {
    server: ApiServer,
    namespace: String,
    pod: String,
    container: String,
}

impl<'a> MakeWriter<'a> for PodLog {
    type Writer = LogLines;

    fn make_writer(&'a self) -> LogLines {
        LogLines {
            log: self.clone(),
            text: Vec::new(),
        }
    }
}

/// One log record, appended line by line to the container's log when complete.
struct LogLines {
    log: PodLog,
    text: Vec<u8>,
}

impl Write for LogLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLines {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let timestamp = jiff::Timestamp::now().to_string();
        let logs = self.log.server.logs();
        for line in text.lines().map(str::trim_start).filter(|l| !l.is_empty()) {
            logs.append(
                &self.log.namespace,
                &self.log.pod,
                &self.log.container,
                &timestamp,
                line,
            );
        }
    }
}
