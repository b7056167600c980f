//! A fault-injection soak of the engine, shared by `cargo test --test soak` (short) and `cargo bench --bench soak`
//! (long): the same run with other sizes.
//!
//! What runs: `kmm-tui serve` (the real binary) on a durable state directory, simulating nodes in three groups with
//! all four families at work (a Module whose images for new kernels are built, a rolling Shim whose batches are
//! approved by hand, an ImageCache, a day-0 pool), and two engines (`kmm_engine::run`, every family) with
//! their own identities competing for the Lease. Everything talks to the server over HTTPS with `kube::Client`.
//!
//! What happens: faults and changes drawn from a seeded ChaCha RNG at exponential intervals (see [`faults`]) —
//! engines killed (`kill -9`) or stopped and started again, the API server killed with SIGKILL and started again
//! on the same state directory and port, every watch closed by the server, registry outages, nodes NotReady,
//! reboots, failing worker, installer and cache puller pods, bursts of conflicting writes, kernel upgrades of a
//! pool and of the day-0 image, new shim versions, cache changes — while a person approves batches and retries
//! what needs a person ([`operator`]) and two more clients write ([`writers`]).
//!
//! What is checked, continuously from watches ([`invariants`]) and by the writers: no engine writes outside its
//! term; no two live pods for one purpose; never more unfinished installers than `maxUpdate`; no resourceVersion
//! going back; no acknowledged write lost. Once the faults stop, everything must converge ([`convergence`]) within
//! the bound of the run: `settle`, plus the longest back-off the cache engine had pending then (it retries a failed
//! pull after `cache_retry`, doubling per attempt up to twenty times that, as documented).
//!
//! The report says which faults were injected, the violations with their detail, the time to converge after the
//! last fault, and the peak resident memory of the server and of this process (and, for long runs, whether it stayed
//! flat, with what the server's watch history held beside it). Reproduce a run with its seed: `SOAK_SEED=<seed>`.

mod convergence;
mod engines;
mod faults;
mod invariants;
pub(crate) mod memory;
mod operator;
mod server;
mod workload;
mod writers;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kmm_engine::{Settings, imagecache};
use kube::api::{Api, ListParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use engines::Engine;
use faults::Chaos;
use server::{Server, status_kib};

/// What a run does.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// Seeds every random choice of the soak and the simulation.
    pub seed: u64,
    /// Simulated nodes.
    pub nodes: usize,
    /// How long faults are injected, in simulated time.
    pub simulated: Duration,
    /// Simulated seconds per real second.
    pub time_scale: f64,
    /// The engines' lease duration.
    pub lease: Duration,
    /// Mean real time between two faults.
    pub mean_gap: Duration,
    /// How long everything may take to converge once the faults stop (before cache back-off).
    pub settle: Duration,
    /// Weight of API server kills among the faults.
    pub server_kills: u32,
    /// The Shim's `maxUpdate`.
    pub max_update: i64,
    /// How often a registry outage or a failing pull lasts 30 to 50 s (past the cache engine's first retry).
    pub long_outages: f64,
    /// How long after a failed pull the cache engine tries again (doubling per attempt).
    pub cache_retry: Duration,
    /// Whether resident memory must stay flat after warm-up (by the rule of [`memory`]).
    pub flat_memory: bool,
}

impl Config {
    /// This config with what the environment (`SOAK_SEED`, `SOAK_NODES`, `SOAK_DURATION`, `SOAK_TIME_SCALE`)
    /// and then `args` (`--seed N`, `--nodes N`, `--duration 2h`, `--time-scale X`, `--server-kills W`: the
    /// weight of API server kills, 0 for none) say instead.
    pub(crate) fn overridden(mut self, args: impl Iterator<Item = String>) -> Self {
        let mut settings: Vec<(String, String)> = ["SEED", "NODES", "DURATION", "TIME_SCALE"]
            .iter()
            .filter_map(|key| {
                let value = std::env::var(format!("SOAK_{key}")).ok()?;
                Some((key.to_lowercase().replace('_', "-"), value))
            })
            .collect();
        let args: Vec<String> = args.collect();
        for pair in args.windows(2) {
            if let Some(key) = pair[0].strip_prefix("--") {
                settings.push((key.to_owned(), pair[1].clone()));
            }
        }
        for (key, value) in settings {
            let bad = || -> ! { panic!("--{key} {value}: not a valid value") };
            match key.as_str() {
                "seed" => self.seed = value.parse().unwrap_or_else(|_| bad()),
                "nodes" => self.nodes = value.parse().unwrap_or_else(|_| bad()),
                "time-scale" => self.time_scale = value.parse().unwrap_or_else(|_| bad()),
                "server-kills" => self.server_kills = value.parse().unwrap_or_else(|_| bad()),
                "duration" => {
                    self.simulated = value
                        .parse::<jiff::SignedDuration>()
                        .ok()
                        .and_then(|d| Duration::try_from(d).ok())
                        .or_else(|| value.parse().ok().map(Duration::from_secs))
                        .unwrap_or_else(|| bad())
                }
                _ => {}
            }
        }
        self
    }

    /// How long faults are injected, in real time.
    fn fault_phase(&self) -> Duration {
        self.simulated.div_f64(self.time_scale)
    }
}

/// One sample of resident memory.
struct Sample {
    at: Duration,
    soak_kib: u64,
    /// This process's live heap, when its allocator counts it (see [`live_heap_kib`]).
    soak_heap_kib: Option<u64>,
    server: Option<ServerSample>,
}

/// The API server's resident memory at a sample.
#[derive(Clone, Copy)]
struct ServerSample {
    kib: u64,
    /// What its watch history holds (`apiserver_watch_history_size_bytes`), a cache bounded by the store: shown
    /// beside the resident memory, so a trend can be told from the history filling up.
    history_kib: u64,
    /// The run it belongs to.
    run: usize,
    /// How long that run had been up.
    age: Duration,
}

/// Whether the next memory sample is due (one every 2 s).
fn sample_due(samples: &[Sample], started: Instant) -> bool {
    samples
        .last()
        .is_none_or(|last| started.elapsed() >= last.at + Duration::from_secs(2))
}

/// This process's live heap in KiB, when its allocator counts it (the `heap-count` feature, which the long soak
/// requires): resident memory also holds what the allocator keeps after a burst, the live heap only what the
/// engines, watches and writers hold.
fn live_heap_kib() -> Option<u64> {
    #[cfg(feature = "heap-count")]
    return Some(kmm_tui::allocator::heap::live_bytes() / 1024);
    #[cfg(not(feature = "heap-count"))]
    None
}

/// The bytes the API server's watch history holds, from its metrics, in KiB; none while it does not answer.
async fn history_kib(client: &kube::Client) -> Option<u64> {
    let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = client.request_text(request).await.ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("apiserver_watch_history_size_bytes "))
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(|bytes| bytes / 1024)
}

/// What a run did and found.
pub(crate) struct Report {
    config: Config,
    dir: PathBuf,
    tally: faults::Tally,
    acted: operator::Acted,
    durable: writers::Written,
    marks: writers::Written,
    summary: invariants::Summary,
    /// Promises the engines broke as the soak drove them (clean stops that did not finish).
    engines: invariants::Violations,
    server_runs: usize,
    /// Time from the end of the last fault until everything converged, if it did within the bound.
    converged: Option<Duration>,
    bound: Duration,
    /// What had not converged when the bound passed.
    missing: Vec<String>,
    server_peak_kib: u64,
    /// The peak of each run of the API server, in order.
    server_peaks: Vec<u64>,
    soak_peak_kib: u64,
    samples: Vec<Sample>,
    wall: Duration,
}

/// Run the soak on a runtime of its own.
pub(crate) fn run(config: Config) -> Report {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(soak(config))
}

/// Log the engines (by thread name) and everything else of this process to `soak.log` in the run's directory, at
/// the level `SOAK_LOG` says (tracing's env-filter syntax; `info` without it).
fn log_to(dir: &std::path::Path) {
    let file = std::fs::File::create(dir.join("soak.log")).expect("creating the soak log");
    let filter = std::env::var("SOAK_LOG")
        .ok()
        .and_then(|filter| tracing_subscriber::EnvFilter::try_new(filter).ok())
        .unwrap_or_else(|| {
            tracing_subscriber::EnvFilter::new("info,kube_client=warn,kube_runtime=warn")
        });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_thread_names(true)
        .try_init();
}

/// A real duration drawn from an exponential distribution of mean `mean`.
fn exponential(rng: &mut ChaCha8Rng, mean: Duration) -> Duration {
    let uniform: f64 = rng.random_range(f64::EPSILON..1.0);
    mean.mul_f64(-uniform.ln())
}

/// The longest back-off the cache engine has pending: for each of its pods not done, when its next attempt is due
/// after a failure ([`imagecache::backoff`] from `first_retry`).
async fn pending_cache_backoff(client: &kube::Client, first_retry: Duration) -> Duration {
    let Ok(pods) = Api::<Pod>::all(client.clone())
        .list(&ListParams::default().labels(kmm_api::imagecache::names::SELECTOR))
        .await
    else {
        return Duration::ZERO;
    };
    let now = jiff::Timestamp::now();
    pods.items
        .iter()
        .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Succeeded"))
        .filter_map(|pod| {
            let attempt: u32 = pod
                .metadata
                .annotations
                .as_ref()?
                .get(kmm_api::imagecache::names::ATTEMPT_ANNOTATION)?
                .parse()
                .ok()?;
            let created = pod.metadata.creation_timestamp.as_ref()?.0;
            let backoff = imagecache::backoff(attempt, first_retry);
            let due = created + jiff::SignedDuration::try_from(backoff).ok()?;
            Duration::try_from(due.duration_since(now)).ok()
        })
        .max()
        .unwrap_or_default()
}

async fn soak(config: Config) -> Report {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("kmm-tui-soak-")
        .tempdir()
        .expect("a temporary directory")
        .keep();
    log_to(&dir);
    println!(
        "soak: seed {} (SOAK_SEED={} reproduces it), {} nodes, {:?} simulated at time scale {} ({:.0} s of faults), \
         lease {:?}, in {}",
        config.seed,
        config.seed,
        config.nodes,
        config.simulated,
        config.time_scale,
        config.fault_phase().as_secs_f64(),
        config.lease,
        dir.display()
    );
    let scenario = dir.join("scenario.yaml");
    std::fs::write(
        &scenario,
        workload::scenario(config.seed, config.time_scale, config.nodes),
    )
    .expect("writing the scenario");
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let server = Server::start(&dir, &scenario, config.time_scale).await;
    let link = server.link();
    let client = link.client("kmm-tui-soak");
    let invariants = invariants::Invariants::start(&client);
    let nodes = workload::node_names(config.nodes);
    let engines: Vec<Engine> = ["soak-a", "soak-b"]
        .into_iter()
        .map(|identity| {
            let settings = Settings {
                cache_retry: config.cache_retry,
                ..Settings::default()
            };
            Engine::new(identity, config.lease, settings)
        })
        .collect();
    let mut chaos = Chaos::new(
        server,
        engines,
        client.clone(),
        rng.random(),
        faults::weights(config.server_kills),
        nodes.clone(),
        config.lease,
        config.max_update,
        config.time_scale,
        config.long_outages,
    );
    chaos.prepare().await.expect("the faults ConfigMap");
    chaos.undo_due(true).await;
    workload::create(&client, config.max_update)
        .await
        .expect("the workload is created");
    let handed = workload::hand_over_day0(&client, &mut chaos.asked)
        .await
        .expect("the day-0 hand-over");
    println!("  set up: {handed}");

    let stop = CancellationToken::new();
    let writers = writers::start(
        &client,
        chaos.runs.subscribe(),
        chaos.burst.clone(),
        &mut rng,
        &nodes,
        stop.clone(),
    );
    let operator = tokio::spawn(operator::run(
        client.clone(),
        ChaCha8Rng::seed_from_u64(rng.random()),
        stop.clone(),
    ));

    let mut samples = Vec::new();
    let mut server_started = (chaos.server.runs, Instant::now());
    let mut sample = |chaos: &Chaos, samples: &mut Vec<Sample>, history_kib: Option<u64>| {
        if chaos.server.runs != server_started.0 {
            server_started = (chaos.server.runs, Instant::now());
        }
        let server = match (chaos.server.rss_kib(), history_kib) {
            (Some(kib), Some(history_kib)) => Some(ServerSample {
                kib,
                history_kib,
                run: server_started.0,
                age: server_started.1.elapsed(),
            }),
            _ => None,
        };
        samples.push(Sample {
            at: started.elapsed(),
            soak_kib: status_kib("/proc/self/status", "VmRSS:").unwrap_or(0),
            soak_heap_kib: live_heap_kib(),
            server,
        });
    };

    println!("  faults for {:.0} s:", config.fault_phase().as_secs_f64());
    let faults_end = Instant::now() + config.fault_phase();
    let mut next_fault = Instant::now() + exponential(&mut rng, config.mean_gap);
    let mut progress = Instant::now();
    while Instant::now() < faults_end {
        chaos.undo_due(false).await;
        if sample_due(&samples, started) {
            let history = history_kib(&client).await;
            sample(&chaos, &mut samples, history);
        }
        if Instant::now() >= next_fault {
            chaos.strike().await;
            next_fault = Instant::now() + exponential(&mut rng, config.mean_gap);
        }
        if progress.elapsed() > Duration::from_secs(30) {
            progress = Instant::now();
            println!(
                "  {:7.1} s  ({} violations so far)",
                started.elapsed().as_secs_f64(),
                invariants.violations()
            );
        }
        let wake = next_fault
            .min(faults_end)
            .min(Instant::now() + Duration::from_secs(1));
        tokio::time::sleep_until(wake).await;
    }
    chaos.undo_due(true).await;
    let last_fault = Instant::now();
    let bound = config.settle + pending_cache_backoff(&client, config.cache_retry).await;
    println!(
        "  faults over at {:.1} s; converging (bound {:.0} s)",
        started.elapsed().as_secs_f64(),
        bound.as_secs_f64()
    );
    let mut missing;
    let converged = loop {
        if sample_due(&samples, started) {
            let history = history_kib(&client).await;
            sample(&chaos, &mut samples, history);
        }
        missing = convergence::missing(&client, &chaos.asked, &nodes).await;
        if missing.is_empty() {
            break Some(last_fault.elapsed());
        }
        if last_fault.elapsed() > bound {
            break None;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };

    stop.cancel();
    let acted = operator.await.expect("the operator");
    let durable = writers.durable.await.expect("the durable writer");
    let mut marks = writers::Written::default();
    for writer in writers.marks {
        marks.absorb(writer.await.expect("a second writer"));
    }
    for index in 0..chaos.engines.len() {
        chaos.stop_engine(index).await;
    }
    let summary = invariants.finish(&client).await;
    chaos.count_conflicts().await;
    chaos.server.note_running_peak();
    let report = Report {
        config,
        dir,
        tally: std::mem::take(&mut chaos.tally),
        engines: std::mem::take(&mut chaos.violations),
        acted,
        durable,
        marks,
        summary,
        server_runs: chaos.server.runs,
        converged,
        bound,
        missing,
        server_peak_kib: chaos.server.peaks.iter().copied().max().unwrap_or(0),
        server_peaks: chaos.server.peaks.clone(),
        soak_peak_kib: status_kib("/proc/self/status", "VmHWM:").unwrap_or(0),
        samples,
        wall: started.elapsed(),
    };
    drop(chaos);
    report
}

/// One process's memory after warm-up, and whether the verdict rests on it.
struct MemoryTrend {
    what: &'static str,
    trend: Option<memory::Trend>,
    judged: bool,
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

impl Report {
    /// The memory trends after warm-up (see [`memory`]). This process warms up for the first quarter of the fault
    /// phase, or the Events' time to live if that is longer (until the first Events expire the store only grows,
    /// by design). Each run of the API server warms up for that time to live plus a minute from its start: a
    /// restarted server reads its store back compactly and rises as it rewrites what it read, until every Event it
    /// read back has expired; each run's samples form a segment.
    fn memory_trends(&self) -> Vec<MemoryTrend> {
        let events_settle = server::EVENT_TTL_SIMULATED.div_f64(self.config.time_scale);
        let warm = self.samples.first().map_or(Duration::ZERO, |s| s.at)
            + (self.config.fault_phase() / 4).max(events_settle);
        let server_warm = events_settle + Duration::from_secs(60);
        let point = |at: Duration, kib: u64| memory::Point { at, kib };
        let after_warm_up = || self.samples.iter().filter(|s| s.at >= warm);
        let resident: Vec<memory::Point> =
            after_warm_up().map(|s| point(s.at, s.soak_kib)).collect();
        let heap: Vec<memory::Point> = after_warm_up()
            .filter_map(|s| Some(point(s.at, s.soak_heap_kib?)))
            .collect();
        let mut runs: BTreeMap<usize, Vec<memory::Point>> = BTreeMap::new();
        for sample in after_warm_up() {
            if let Some(server) = sample.server.filter(|server| server.age >= server_warm) {
                runs.entry(server.run)
                    .or_default()
                    .push(point(sample.at, server.kib));
            }
        }
        let server: Vec<Vec<memory::Point>> = runs.into_values().collect();
        let mut trends = vec![MemoryTrend {
            what: "resident memory of this process",
            trend: memory::trend(&[resident]),
            // Judged when nothing better is counted: beside the live heap, resident memory is mostly code and the
            // allocator's reserve, which move with the allocator's choices more than with what is held.
            judged: heap.is_empty(),
        }];
        if !heap.is_empty() {
            trends.push(MemoryTrend {
                what: "the live heap of this process",
                trend: memory::trend(&[heap]),
                judged: true,
            });
        }
        let server = memory::trend(&server);
        trends.push(MemoryTrend {
            what: "resident memory of the API server",
            trend: server,
            // A server restarted so often that its runs outlive their warm-up by too little in all cannot be judged
            // (the report says so): that is what `--server-kills 0` is for.
            judged: self.server_runs == 1 || server.is_some(),
        });
        trends
    }

    /// Print the report and say why the run failed (nothing when it passed). The run's directory (logs, state) is
    /// removed when it passed and kept for a look when it failed.
    pub(crate) fn conclude(self) -> Vec<String> {
        self.write_samples();
        self.print();
        let failures = self.failures();
        if failures.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            println!(
                "FAILED (seed {}): {}",
                self.config.seed,
                failures.join("; ")
            );
        }
        failures
    }

    /// Every memory sample, to `memory.tsv` in the run's directory: what the report's twenty points and fitted
    /// slopes were drawn from, for a closer look at a failed run.
    fn write_samples(&self) {
        let mut table = String::from(
            "seconds\tthis_process_kib\tthis_process_heap_kib\tapi_server_kib\thistory_kib\tserver_run\n",
        );
        for sample in &self.samples {
            let server = sample.server.map_or_else(
                || "\t\t".to_owned(),
                |s| format!("{}\t{}\t{}", s.kib, s.history_kib, s.run),
            );
            let heap = sample.soak_heap_kib.map(|kib| kib.to_string());
            table.push_str(&format!(
                "{:.1}\t{}\t{}\t{server}\n",
                sample.at.as_secs_f64(),
                sample.soak_kib,
                heap.unwrap_or_default()
            ));
        }
        if let Err(error) = std::fs::write(self.dir.join("memory.tsv"), table) {
            println!("memory samples not written: {error}");
        }
    }

    /// Why the run failed; empty when it passed.
    fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        let violations = self.summary.violations.count()
            + self.engines.count()
            + self.durable.violations.count()
            + self.marks.violations.count();
        if violations > 0 {
            failures.push(format!("{violations} invariant violations"));
        }
        if self.converged.is_none() {
            failures.push(format!(
                "not converged within {:.0} s of the last fault",
                self.bound.as_secs_f64()
            ));
        }
        if self.config.flat_memory {
            for MemoryTrend {
                what,
                trend,
                judged,
            } in self.memory_trends()
            {
                match trend {
                    _ if !judged => {}
                    Some(trend) if trend.grows() => failures.push(format!(
                        "{what} grows after warm-up: {:+.1} MiB/h, {:+.1} % over {:.0} s",
                        trend.mib_per_hour(),
                        trend.rise() * 100.0,
                        trend.span.as_secs_f64()
                    )),
                    Some(_) => {}
                    None => failures.push(format!(
                        "too few samples of {what} after warm-up to tell whether it stays flat"
                    )),
                }
            }
        }
        failures
    }

    fn print(&self) {
        let c = &self.config;
        println!(
            "\nsoak report: seed {} ({} nodes, {:?} simulated, time scale {}, lease {:?}), {:.0} s wall",
            c.seed,
            c.nodes,
            c.simulated,
            c.time_scale,
            c.lease,
            self.wall.as_secs_f64()
        );
        let total: u64 = self.tally.injected.values().sum();
        println!("faults and changes injected: {total}");
        for (kind, count) in &self.tally.injected {
            println!("  {kind}: {count}");
        }
        if !self.tally.skipped.is_empty() {
            let skipped: Vec<String> = self
                .tally
                .skipped
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            println!(
                "  skipped (not possible at the time): {}",
                skipped.join(", ")
            );
        }
        println!(
            "  API server runs: {}; longest clean engine stop: {:.1} s",
            self.server_runs,
            self.tally.longest_stop.as_secs_f64()
        );
        let acted: Vec<String> = self
            .acted
            .writes
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "operator: {} ({} writes failed and were retried)",
            acted.join(", "),
            self.acted.failed
        );
        println!(
            "writers: {} durable writes, {} label patches ({} answered 409), {} checks after API server restarts",
            self.durable.durable,
            self.marks.marks,
            self.marks.conflicts,
            self.durable.checks + self.marks.checks
        );
        let conflicts: Vec<String> = self
            .tally
            .engine_conflicts
            .iter()
            .map(|(request, n)| format!("{request} {n}"))
            .collect();
        println!(
            "409s answered to the engines: {}",
            if conflicts.is_empty() {
                "none".to_owned()
            } else {
                conflicts.join(", ")
            }
        );
        let s = &self.summary;
        let judged: Vec<String> = s
            .writes_judged
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "engine writes judged against the Lease: {} ({} fell where the Lease history had a gap); Lease changed \
             hands {} times",
            judged.join(", "),
            s.writes_unjudged,
            s.handovers
        );
        let seen: Vec<String> = s
            .pods_seen
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "pods seen: {}; most installers unfinished at once: {:?} (maxUpdate {}); watch errors retried: {}",
            seen.join(", "),
            s.most_installing,
            c.max_update,
            s.watch_errors
        );
        let mut by_invariant: BTreeMap<&str, u64> = BTreeMap::new();
        let mut details = Vec::new();
        for violations in [
            &s.violations,
            &self.engines,
            &self.durable.violations,
            &self.marks.violations,
        ] {
            for (invariant, count) in violations.by_invariant() {
                *by_invariant.entry(invariant).or_default() += count;
            }
            details.extend(violations.details().iter().cloned());
        }
        println!(
            "invariant violations: {}",
            by_invariant.values().sum::<u64>()
        );
        for (invariant, count) in &by_invariant {
            println!("  {invariant}: {count}");
        }
        for detail in &details {
            println!("    {detail}");
        }
        match self.converged {
            Some(took) => println!(
                "converged {:.1} s after the last fault (bound {:.0} s)",
                took.as_secs_f64(),
                self.bound.as_secs_f64()
            ),
            None => {
                println!(
                    "NOT converged {:.0} s after the last fault; still missing:",
                    self.bound.as_secs_f64()
                );
                for line in &self.missing {
                    println!("  {line}");
                }
            }
        }
        let peaks: Vec<String> = self.server_peaks.iter().map(|kib| mib(*kib)).collect();
        println!(
            "peak resident memory: API server {} (its runs: {}), this process {} (engines, watches, writers)",
            mib(self.server_peak_kib),
            peaks.join(", "),
            mib(self.soak_peak_kib)
        );
        if self.config.flat_memory {
            // About twenty points of the samples, for the shape of the curve.
            let step = (self.samples.len() / 20).max(1);
            let points: Vec<String> = self
                .samples
                .iter()
                .step_by(step)
                .map(|s| {
                    let server = s
                        .server
                        .map(|server| {
                            format!(
                                "/{} ({} history, run {})",
                                mib(server.kib),
                                mib(server.history_kib),
                                server.run
                            )
                        })
                        .unwrap_or_default();
                    let heap = s
                        .soak_heap_kib
                        .map(|kib| format!(" (heap {})", mib(kib)))
                        .unwrap_or_default();
                    format!(
                        "{:.0} s {}{heap}{server}",
                        s.at.as_secs_f64(),
                        mib(s.soak_kib)
                    )
                })
                .collect();
            println!(
                "  resident memory over the run (this process/API server): {}",
                points.join(", ")
            );
        }
        for MemoryTrend {
            what,
            trend,
            judged,
        } in self.memory_trends()
        {
            let judged = if judged { "" } else { ", not judged" };
            match trend {
                Some(trend) => println!(
                    "  {what} after warm-up: {} median, fitted {:+.1} MiB/h, {:+.1} % over {:.0} s (bound {:.0} %{judged})",
                    mib(trend.level as u64),
                    trend.mib_per_hour(),
                    trend.rise() * 100.0,
                    trend.span.as_secs_f64(),
                    memory::BOUND * 100.0
                ),
                None => println!("  {what}: too few samples after warm-up{judged}"),
            }
        }
        println!(
            "logs, state and memory.tsv (every memory sample): {} (removed when the run passes)",
            self.dir.display()
        );
    }
}
