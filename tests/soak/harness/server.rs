//! The API server under test: a `kmm-tui serve` process on a fixed loopback port and a durable state directory,
//! killed with SIGKILL and started again on both, and the clients every part of the soak reaches it with.
//!
//! A restarted server keeps its store, TLS material, port and bearer tokens. Clients still present the token
//! through a [`Link`] the server side updates from each new kubeconfig, so a server started with other tokens
//! (`--rotate-tokens`) would be followed too; while the server is down the link has no token and requests fail at
//! once, as they would against a closed port.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use http::HeaderValue;
use kube::client::Body;

/// How long a server may take to come up and write its kubeconfig.
const STARTUP_LIMIT: Duration = Duration::from_secs(120);

/// What clients need to reach the server: its address and CA (fixed across restarts) and the bearer token of
/// the running server (none while it is down).
#[derive(Clone)]
pub(super) struct Link {
    config: kube::Config,
    token: Arc<RwLock<Option<HeaderValue>>>,
}

impl Link {
    /// A client of the server, for use on the runtime that calls it (its connections live there). Its requests
    /// carry the User-Agent `agent`, which the server's request metrics count them under.
    pub(super) fn client(&self, agent: &'static str) -> kube::Client {
        let inner = kube::Client::try_from(self.config.clone()).expect("a client of the server");
        let token = self.token.clone();
        let service = tower::service_fn(move |mut request: http::Request<Body>| {
            let inner = inner.clone();
            let token = token.read().expect("the token lock").clone();
            async move {
                let Some(token) = token else {
                    return Err(kube::Error::Service(Box::new(std::io::Error::new(
                        std::io::ErrorKind::ConnectionRefused,
                        "the API server is down",
                    ))));
                };
                let headers = request.headers_mut();
                headers.insert(http::header::AUTHORIZATION, token);
                headers.insert(http::header::USER_AGENT, HeaderValue::from_static(agent));
                inner.send(request).await
            }
        });
        kube::Client::new(service, "default")
    }

    fn set_token(&self, token: Option<HeaderValue>) {
        *self.token.write().expect("the token lock") = token;
    }
}

/// One `kmm-tui serve` after another on the same port and state directory.
pub(super) struct Server {
    dir: PathBuf,
    scenario: PathBuf,
    port: u16,
    /// How long Events live, in real time.
    event_ttl: Duration,
    child: Option<Child>,
    /// Runs so far, for log names.
    pub runs: usize,
    /// The peak resident memory of each run that ended (and of the running one, once noted), in KiB.
    pub peaks: Vec<u64>,
    link: Option<Link>,
}

/// How long an Event lives, in simulated time: kube-apiserver's default.
pub(super) const EVENT_TTL_SIMULATED: Duration = Duration::from_secs(3600);

impl Server {
    /// Start the first run: state in `dir/state`, logs in `dir/serve-<n>.log`, the scenario file `scenario`, on a
    /// loopback port that is free now. Events live an hour of simulated time (`time_scale` simulated seconds per
    /// real one), as kube-apiserver's default keeps them an hour, so a run of a few simulated hours holds steady.
    pub(super) async fn start(dir: &Path, scenario: &Path, time_scale: f64) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut server = Self {
            dir: dir.to_path_buf(),
            scenario: scenario.to_path_buf(),
            port,
            event_ttl: EVENT_TTL_SIMULATED
                .div_f64(time_scale)
                .max(Duration::from_secs(1)),
            child: None,
            runs: 0,
            peaks: Vec::new(),
            link: None,
        };
        server.restart().await;
        server
    }

    /// The link clients use.
    pub(super) fn link(&self) -> Link {
        self.link.clone().expect("the server started once")
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// Start a run (after a kill, or the first), and wait until it serves.
    pub(super) async fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        let kubeconfig = self.kubeconfig();
        // The server writes it atomically once it serves: waiting for the file is waiting for the server.
        let _ = std::fs::remove_file(&kubeconfig);
        self.runs += 1;
        let log = File::create(self.dir.join(format!("serve-{}.log", self.runs)))
            .expect("creating the server log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .arg("serve")
            .env("KMM_TUI_LOG", "warn")
            .arg("--state-dir")
            .arg(self.dir.join("state"))
            .args(["--listen", &format!("127.0.0.1:{}", self.port)])
            .arg("--scenario")
            .arg(&self.scenario)
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .arg("--event-ttl")
            .arg(format!("{}s", self.event_ttl.as_secs()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("sharing the server log"))
            .stderr(log)
            .spawn()
            .expect("starting kmm-tui serve");
        let deadline = Instant::now() + STARTUP_LIMIT;
        let log = self.dir.join(format!("serve-{}.log", self.runs));
        while !kubeconfig.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "kmm-tui serve exited early ({status}); see {}",
                    log.display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "kmm-tui serve did not start within {STARTUP_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.child = Some(child);
        let (config, token) = read_kubeconfig(&kubeconfig).await;
        let token = HeaderValue::from_str(&format!("Bearer {token}")).expect("a printable token");
        match &self.link {
            Some(link) => link.set_token(Some(token)),
            None => {
                self.link = Some(Link {
                    config,
                    token: Arc::new(RwLock::new(Some(token))),
                })
            }
        }
    }

    /// SIGKILL: no shutdown path runs. Clients see the server down from just before.
    pub(super) fn kill_9(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(link) = &self.link {
            link.set_token(None);
        }
        self.note_peak(child.id());
        child.kill().expect("sending SIGKILL");
        child.wait().expect("reaping the killed server");
    }

    /// Whether a run is up.
    pub(super) fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The resident memory of the running server now, in KiB.
    pub(super) fn rss_kib(&self) -> Option<u64> {
        let pid = self.child.as_ref()?.id();
        status_kib(&format!("/proc/{pid}/status"), "VmRSS:")
    }

    /// Note the running server's peak in [`Server::peaks`].
    pub(super) fn note_running_peak(&mut self) {
        if let Some(pid) = self.child.as_ref().map(Child::id) {
            self.note_peak(pid);
        }
    }

    fn note_peak(&mut self, pid: u32) {
        if let Some(peak) = status_kib(&format!("/proc/{pid}/status"), "VmHWM:") {
            self.peaks.push(peak);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The User-Agent of the engines' requests.
pub(super) const ENGINE_AGENT: &str = "kmm-tui-engine";

/// The 409s the running server answered to the engines, by verb and resource, from its request metrics (which a
/// restart starts again from zero).
pub(super) async fn conflicts_answered_to_engines(
    client: &kube::Client,
) -> Option<std::collections::BTreeMap<String, u64>> {
    let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = client.request_text(request).await.ok()?;
    let mut conflicts = std::collections::BTreeMap::new();
    for sample in kmm_testing::metrics::samples(&text, "apiserver_request_total") {
        if sample.label("code") == Some("409") && sample.label("client") == Some(ENGINE_AGENT) {
            let key = format!(
                "{} {}",
                sample.label("verb").unwrap_or_default(),
                sample.label("resource").unwrap_or_default()
            );
            *conflicts.entry(key).or_default() += sample.value as u64;
        }
    }
    Some(conflicts)
}

/// A field of a `/proc/<pid>/status` file in KiB (`VmRSS:`, `VmHWM:`).
pub(super) fn status_kib(path: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The kubeconfig's cluster (address and CA) as a kube Config without credentials, and the bearer token of its
/// current context's user.
async fn read_kubeconfig(path: &Path) -> (kube::Config, String) {
    let text = std::fs::read_to_string(path).expect("reading the kubeconfig");
    let document: serde_json::Value = serde_saphyr::from_str(&text).expect("a kubeconfig");
    let current = document["current-context"].as_str().unwrap_or_default();
    let user = document["contexts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == current)
        .and_then(|c| c["context"]["user"].as_str())
        .expect("the current context names a user");
    let token = document["users"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|u| u["name"] == user)
        .and_then(|u| u["user"]["token"].as_str())
        .expect("the user has a token")
        .to_owned();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).expect("a kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("the kubeconfig loads");
    config.auth_info = Default::default();
    (config, token)
}
