//! kmm-tui's own controller in a pod: a container of kmm-tui's image (the scenario's `controllerImage`
//! repository, any tag) whose args start with `controller` runs the real engine in-process, with the Lease, identity
//! and families its args name, for as long as the container runs. Its log lines become the container's log.
//!
//! Args are expanded as the kubelet expands them: `$(NAME)` is the value of the container's env `NAME`, literal or
//! from the pod's `metadata.name`, `metadata.namespace`, `spec.nodeName` or `spec.serviceAccountName`. An identity
//! that is not given is the pod's name (the hostname a process in the pod would see).
//!
//! When the pod is deleted its engine is dropped where it stands, as a killed process would be: no step of an
//! orderly shutdown runs, so the Lease is not released and a standby takes over once it expires.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use tracing::instrument::WithSubscriber;
use tracing_subscriber::fmt::MakeWriter;

use super::podspec::flag_value;
use super::{ContainerRun, Outcome};
use crate::api::lease::{DEFAULT_LEASE_DURATION, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use crate::cluster::apiserver::ApiServer;
use crate::cluster::sim::World;
use crate::engine::{EngineConfig, Family, LeaseConfig, PodImages, Settings};

/// The first argument that makes a kmm-tui container a controller.
const CONTROLLER_ARG: &str = "controller";

/// How long the token a controller pod's engine presents stays valid: as long as the kubelet's projected
/// ServiceAccount tokens (kube-apiserver's one-year maximum for legacy clients), since the in-process engine keeps
/// its client for the pod's whole life.
const POD_TOKEN_SECONDS: i64 = 365 * 24 * 3600;

/// What the engine logs unless `--log` says otherwise.
const DEFAULT_LOG_FILTER: &str = "info";

/// An engine a controller container runs.
pub struct InProcessEngine {
    config: EngineConfig,
    /// The pod's client, or why the kubelet could not give it one (its ServiceAccount is missing).
    client: Result<kube::Client, String>,
    log: PodLog,
    filter: String,
}

/// Recognise a controller container, with its args expanded.
pub fn recognise(world: &World, run: &ContainerRun) -> Option<InProcessEngine> {
    if run.init {
        return None;
    }
    let image = run.container.image.as_deref().unwrap_or_default();
    if !world.registry.is_own(image) {
        return None;
    }
    let args = expanded_args(run.node, run.pod, run.container);
    if args.first().map(String::as_str) != Some(CONTROLLER_ARG) {
        return None;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let pod_name = run.pod.metadata.name.clone().unwrap_or_default();
    let lease_duration = flag_value(&args, &["--lease-duration"])
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(DEFAULT_LEASE_DURATION, Duration::from_secs);
    let lease = LeaseConfig::new(
        flag_value(&args, &["--lease-namespace"]).unwrap_or(DEFAULT_LEASE_NAMESPACE),
        flag_value(&args, &["--lease-name"]).unwrap_or(DEFAULT_LEASE_NAME),
        flag_value(&args, &["--identity"]).unwrap_or(&pod_name),
        lease_duration,
    );
    let config = EngineConfig {
        images: images(&args),
        lease,
        settings: settings(&args),
    };
    Some(InProcessEngine {
        config,
        client: pod_client(&world.server, run.pod),
        log: PodLog {
            server: world.server.clone(),
            namespace: run.pod.metadata.namespace.clone().unwrap_or_default(),
            pod: pod_name,
            container: run.container.name.clone(),
        },
        filter: flag_value(&args, &["--log"])
            .unwrap_or(DEFAULT_LOG_FILTER)
            .to_owned(),
    })
}

/// The client a controller pod's engine talks to the API server with: the one place its identity is decided.
///
/// As a kubelet mounts a projected token, the pod's `spec.serviceAccountName` (else `default`) gets a token the API
/// server issues, and every request presents it, so the engine has exactly the RBAC that `kmm-tui install` bound
/// to that account. Without the account there is no token, and the container fails saying so.
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
    crate::cluster::client_with_token(server, &issued.token).map_err(|e| format!("{e:#}"))
}

impl InProcessEngine {
    /// Run the engine until it stops by itself (which it only does for a configuration it cannot run); the caller
    /// drops this future when the pod is deleted.
    pub async fn run(self) -> Outcome {
        let filter = tracing_subscriber::EnvFilter::try_new(&self.filter)
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
        let never = tokio_util::sync::CancellationToken::new();
        let ran = crate::engine::run(client, self.config, never)
            .with_subscriber(subscriber)
            .await;
        match ran {
            Ok(()) => Outcome::success(Vec::new()),
            Err(error) => Outcome::failure(1, Vec::new(), format!("kmm-tui: {error:#}")),
        }
    }
}

/// The pod images the args replace, else the defaults.
fn images(args: &[&str]) -> PodImages {
    let mut images = PodImages::default();
    let flags: [(&str, &mut String); 7] = [
        ("--worker-image", &mut images.worker),
        ("--build-image", &mut images.build),
        ("--sign-image", &mut images.sign),
        ("--shim-downloader-image", &mut images.shim_downloader),
        ("--shim-installer-image", &mut images.shim_installer),
        ("--cache-busybox-image", &mut images.cache_busybox),
        ("--cache-cri-client-image", &mut images.cache_cri_client),
    ];
    for (flag, image) in flags {
        if let Some(value) = flag_value(args, &[flag]) {
            *image = value.to_owned();
        }
    }
    images
}

/// The families `--families` names (every family when absent or when none is known).
fn settings(args: &[&str]) -> Settings {
    let mut settings = Settings::default();
    let named: std::collections::BTreeSet<Family> = flag_value(args, &["--families"])
        .unwrap_or_default()
        .split(',')
        .filter_map(|name| <Family as clap::ValueEnum>::from_str(name.trim(), true).ok())
        .collect();
    if !named.is_empty() {
        settings.families = named;
    }
    settings
}

/// The container's args with `$(NAME)` references to its env expanded; unknown references stay as written.
fn expanded_args(node: &str, pod: &Pod, container: &Container) -> Vec<String> {
    let mut env = BTreeMap::new();
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (Some(value), _) => Some(value.clone()),
            (None, Some(from)) => from
                .field_ref
                .as_ref()
                .and_then(|field| pod_field(node, pod, &field.field_path)),
            (None, None) => Some(String::new()),
        };
        if let Some(value) = value {
            env.insert(var.name.clone(), value);
        }
    }
    container
        .args
        .iter()
        .flatten()
        .map(|arg| expand(arg, &env))
        .collect()
}

/// The downward API fields a controller pod uses.
fn pod_field(node: &str, pod: &Pod, path: &str) -> Option<String> {
    let spec = pod.spec.as_ref();
    match path {
        "metadata.name" => pod.metadata.name.clone(),
        "metadata.namespace" => pod.metadata.namespace.clone(),
        "spec.nodeName" => Some(node.to_owned()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        _ => None,
    }
}

/// Expand `$(NAME)` from `env`; `$$` is a literal `$`.
fn expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = tail
            .strip_prefix("$(")
            .and_then(|t| t.split_once(')'))
            .filter(|(name, _)| env.contains_key(*name))
        {
            out.push_str(&env[name]);
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_expand_env_references() {
        let env = BTreeMap::from([("POD_NAME".to_owned(), "kmm-tui-abc".to_owned())]);
        assert_eq!(
            expand("--identity=$(POD_NAME)", &env),
            "--identity=kmm-tui-abc"
        );
        assert_eq!(expand("$(UNKNOWN) $$x $", &env), "$(UNKNOWN) $x $");
    }

    #[test]
    fn families_default_to_all() {
        assert_eq!(settings(&[]).families.len(), Family::ALL.len());
        let some = settings(&["controller", "--families=kmm,caches"]);
        assert_eq!(
            some.families.into_iter().collect::<Vec<_>>(),
            [Family::Kmm, Family::Caches]
        );
    }
}
