//! The engines competing for the Lease: each one `kmm_engine::run` on a runtime of its own, in a thread of its
//! own, with its own identity, client and CancellationToken.
//!
//! A runtime per engine makes `kill -9` faithful: killing drops the runtime with everything the engine spawned on it
//! (its Lease watch, its watches and reconciles, its connections), mid-request wherever they are, and never runs the
//! engine's shutdown path. A clean stop cancels the token and waits for `run` to return, as SIGTERM does to
//! `kmm-tui controller`.

use std::thread::JoinHandle;
use std::time::Duration;

use kmm_api::lease::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_engine::{self, EngineConfig, LeaseConfig, PodImages, Settings};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::server::{ENGINE_AGENT, Link};

/// How an engine's run ended.
#[derive(Debug)]
enum Ended {
    /// `run` returned.
    Returned(anyhow::Result<()>),
    /// It was killed.
    Killed,
}

struct Running {
    stop: CancellationToken,
    kill: oneshot::Sender<()>,
    thread: JoinHandle<Ended>,
}

/// One engine, started, killed and stopped again and again under the same identity (as a restarted pod keeps its
/// name).
pub(super) struct Engine {
    /// Its identity on the Lease.
    pub identity: String,
    lease: Duration,
    settings: Settings,
    running: Option<Running>,
}

impl Engine {
    /// An engine that is not running yet.
    pub(super) fn new(identity: &str, lease: Duration, settings: Settings) -> Self {
        Self {
            identity: identity.to_owned(),
            lease,
            settings,
            running: None,
        }
    }

    /// Whether it runs.
    pub(super) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Start it with every family, on the default Lease.
    pub(super) fn start(&mut self, link: &Link) {
        assert!(self.running.is_none(), "{} runs already", self.identity);
        let stop = CancellationToken::new();
        let (kill, killed) = oneshot::channel();
        let config = EngineConfig {
            images: PodImages::default(),
            lease: LeaseConfig::new(
                DEFAULT_LEASE_NAMESPACE,
                DEFAULT_LEASE_NAME,
                &self.identity,
                self.lease,
            ),
            settings: self.settings.clone(),
        };
        let link = link.clone();
        let token = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("engine-{}", self.identity))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("an engine runtime");
                // Everything the engine does runs on this thread, whose name its log lines carry.
                let ended = runtime.block_on(async move {
                    let client = link.client(ENGINE_AGENT);
                    tokio::select! {
                        result = kmm_engine::run(client, config, token) => Ended::Returned(result),
                        _ = killed => Ended::Killed,
                    }
                });
                // Whatever the engine spawned dies here, without running another line.
                runtime.shutdown_background();
                ended
            })
            .expect("an engine thread");
        self.running = Some(Running { stop, kill, thread });
    }

    /// `kill -9`: the engine stops wherever it is; its Lease is not released.
    pub(super) async fn kill(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let _ = running.kill.send(());
        let ended = join(running.thread).await;
        assert!(
            matches!(ended, Ended::Killed | Ended::Returned(Ok(()))),
            "{} ended badly: {ended:?}",
            self.identity
        );
    }

    /// A clean stop: the work winds down and the Lease is released. Returns how long it took, or, when it took
    /// longer than `limit`, an error saying so (the engine is then killed).
    pub(super) async fn stop(&mut self, limit: Duration) -> Result<Duration, String> {
        let Some(running) = self.running.take() else {
            return Ok(Duration::ZERO);
        };
        let started = tokio::time::Instant::now();
        running.stop.cancel();
        while !running.thread.is_finished() && started.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = started.elapsed();
        if !running.thread.is_finished() {
            let _ = running.kill.send(());
            join(running.thread).await;
            return Err(format!(
                "{} did not stop within {:.0} s of being asked to (killed)",
                self.identity,
                limit.as_secs_f64()
            ));
        }
        match join(running.thread).await {
            Ended::Returned(Ok(())) => Ok(took),
            ended => Err(format!("{} did not stop cleanly: {ended:?}", self.identity)),
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.kill.send(());
            let _ = running.thread.join();
        }
    }
}

/// Wait for an engine thread that is ending without blocking the caller's runtime.
async fn join(thread: JoinHandle<Ended>) -> Ended {
    tokio::task::spawn_blocking(move || thread.join().expect("the engine thread panicked"))
        .await
        .expect("joining the engine thread")
}
