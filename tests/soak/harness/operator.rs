//! The person at the console: approves each batch of the Shim's rollout some seconds after it starts waiting, and
//! does what the engine says needs a person — installs again the nodes whose shim install failed, rebuilds an image
//! whose build failed — through the console's own writes (`kmm_tui::tui::writes`), after noticing for a while.

use std::collections::BTreeMap;
use std::time::Duration;

use kmm_api::kmm::{BuildSignOutcome, ModuleBuildSignConfig};
use kmm_api::shim::Shim;
use kmm_tui::tui::data::Kind;
use kmm_tui::tui::target::Target;
use kmm_tui::tui::writes::{self, WriteRequest};
use kube::api::{Api, ListParams};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::workload::{DAY0, DAY0_NAMESPACE, MODULE, NAMESPACE, SHIM};

/// How long a state that needs a person lasts before the person acts.
const NOTICE: Duration = Duration::from_secs(3);

/// What the operator did.
#[derive(Default)]
pub(super) struct Acted {
    /// Writes by request kind ("approve batch", "retry failed installs", "rebuild", "rebuild day-0 image").
    pub writes: BTreeMap<&'static str, u64>,
    /// Writes the console reported as failed (the API was down, a race lost too often).
    pub failed: u64,
}

/// Act until `stop`.
pub(super) async fn run(
    client: kube::Client,
    mut rng: ChaCha8Rng,
    stop: CancellationToken,
) -> Acted {
    let mut acted = Acted::default();
    // When each situation was first noticed, and (for approvals) how long this person takes.
    let mut noticed: BTreeMap<String, (Instant, Duration)> = BTreeMap::new();
    while !stop.is_cancelled() {
        let mut now_seen = Vec::new();
        for (situation, request) in situations(&client).await {
            let (since, delay) = *noticed.entry(situation.clone()).or_insert_with(|| {
                let delay = if situation.starts_with("approve") {
                    Duration::from_millis(rng.random_range(500..4000))
                } else {
                    NOTICE
                };
                (Instant::now(), delay)
            });
            now_seen.push(situation.clone());
            if since.elapsed() < delay {
                continue;
            }
            let label = label(&request);
            match writes::perform(&client, request).await.result {
                Ok(_) => {
                    *acted.writes.entry(label).or_default() += 1;
                    noticed.remove(&situation);
                }
                Err(_) => acted.failed += 1,
            }
        }
        noticed.retain(|situation, _| now_seen.contains(situation));
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
    acted
}

fn label(request: &WriteRequest) -> &'static str {
    match request {
        WriteRequest::ApproveBatch { .. } => "approve batch",
        WriteRequest::RetryNodes { .. } => "retry failed installs",
        WriteRequest::Rebuild { .. } => "rebuild",
        WriteRequest::RebuildDay0 { .. } => "rebuild day-0 image",
        _ => "other",
    }
}

/// What needs the person now, each with the write that answers it. Nothing when the API cannot be read.
async fn situations(client: &kube::Client) -> Vec<(String, WriteRequest)> {
    let mut found = Vec::new();
    let shim = Target::cluster(Kind::Shim, SHIM);
    if let Ok(Some(current)) = Api::<Shim>::all(client.clone()).get_opt(SHIM).await
        && let Some(status) = current.status
    {
        if let Some(rollout) = status.rollout.filter(|r| r.awaiting_approval) {
            found.push((
                format!("approve batch {} of {:?}", rollout.batch, rollout.spec_hash),
                WriteRequest::ApproveBatch {
                    shim: shim.clone(),
                    batch: rollout.batch,
                },
            ));
        }
        if status.node_counts.is_some_and(|c| c.failed > 0) {
            found.push((
                "retry failed installs".to_owned(),
                WriteRequest::RetryNodes {
                    shim,
                    nodes: Vec::new(),
                },
            ));
        }
    }
    let configs: Api<ModuleBuildSignConfig> = Api::all(client.clone());
    let day0_config = format!("{DAY0}-day0");
    if let Ok(list) = configs.list(&ListParams::default()).await {
        for config in list.items {
            let name = config.metadata.name.clone().unwrap_or_default();
            let failed: Vec<String> = config
                .status
                .iter()
                .flat_map(|s| &s.images)
                .filter(|outcome| {
                    outcome.status == BuildSignOutcome::Failure
                        && config.spec.images.iter().any(|wanted| {
                            wanted.spec.image == outcome.image
                                && wanted.generation == outcome.generation
                        })
                })
                .map(|outcome| outcome.image.clone())
                .collect();
            for image in failed {
                let request = if name == day0_config {
                    WriteRequest::RebuildDay0 {
                        day0: Target::namespaced(Kind::ModuleDay0, DAY0_NAMESPACE, DAY0),
                    }
                } else if name == MODULE {
                    WriteRequest::Rebuild {
                        module: Target::namespaced(Kind::Module, NAMESPACE, MODULE),
                        image: Some(image.clone()),
                    }
                } else {
                    continue;
                };
                found.push((format!("build of {image} failed"), request));
            }
        }
    }
    found
}
