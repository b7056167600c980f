//! Approving a Shim's next batch end to end: the real `kmm-tui` binary on the embedded demo cluster, in a
//! detached tmux session, with its engine rolling the Shims. The Shim `spin-v2` waits for a person to approve a
//! batch; `A` `y` in its detail raises `approvedBatch`, the engine starts the batch, and both show on screen and
//! through the API. Skipped, saying why, where tmux is not installed.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kmm_api::shim::Shim;
use kube::Api;
use kube::api::ListParams;

use crate::screen::{self, cells, client_from, skip, status_line};

/// The demo's Shim that waits for approval.
const SHIM: &str = "spin-v2";
/// Where installer pods run, and how they name their Shim and their batch.
const INSTALLER_NAMESPACE: &str = "kube-system";
const SHIM_LABEL: &str = "spinkube.dev/shimName";
const BATCH_ANNOTATION: &str = "shims.kmm-tui.io/batch";

/// Start-up of the binary with its embedded cluster, and the demo reaching the approval, on a busy two-core machine.
const CONVERGE_LIMIT: Duration = Duration::from_secs(240);
/// A reaction to one key press, or a write reaching the cluster and coming back through the watches.
const REACT_LIMIT: Duration = Duration::from_secs(60);

/// Each table row of the screen, split into its cells (table borders dropped).
fn rows(screen: &str) -> impl Iterator<Item = Vec<&str>> {
    screen.lines().map(cells)
}

/// The Shim's `approvedBatch` and the batch its status says waits for approval.
async fn approval(shims: &Api<Shim>) -> Result<(i32, Option<i32>), String> {
    let shim = shims.get(SHIM).await.map_err(|error| error.to_string())?;
    let approved = shim
        .spec
        .rollout_strategy
        .rolling
        .as_ref()
        .and_then(|r| r.approved_batch)
        .unwrap_or(0);
    let waiting = shim
        .status
        .and_then(|s| s.rollout)
        .filter(|r| r.awaiting_approval)
        .map(|r| r.batch);
    Ok((approved, waiting))
}

/// The nodes of the Shim's installer pods of batch `batch`.
async fn installers_of_batch(pods: &Api<Pod>, batch: i32) -> Result<Vec<String>, String> {
    let listed = pods
        .list(&ListParams::default().labels(&format!("{SHIM_LABEL}={SHIM}")))
        .await
        .map_err(|error| error.to_string())?;
    Ok(listed
        .items
        .into_iter()
        .filter(|pod| {
            pod.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(BATCH_ANNOTATION))
                .is_some_and(|b| *b == batch.to_string())
        })
        .filter_map(|pod| pod.spec.and_then(|s| s.node_name))
        .collect())
}

#[test]
fn approving_the_waiting_batch_starts_it() {
    if skip("the Shim approval end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = screen::start(
        dir.path(),
        [
            "--embedded".as_ref(),
            "--scenario".as_ref(),
            "demo".as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );
    console.wait_for("the console", CONVERGE_LIMIT, |screen| {
        screen.contains("Modules [")
    });
    console.press(&[":", "shims", "Enter"]);
    console.wait_for(
        "spin-v2 awaiting approval in the Shims pane",
        CONVERGE_LIMIT,
        |screen| {
            rows(screen)
                .any(|cells| cells.first() == Some(&SHIM) && cells.contains(&"AwaitingApproval"))
        },
    );

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let client = runtime.block_on(client_from(&kubeconfig));
    let shims: Api<Shim> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client, INSTALLER_NAMESPACE);
    let (approved, batch) = console.poll("the batch spin-v2 waits for", REACT_LIMIT, || {
        runtime
            .block_on(approval(&shims))
            .map(|(approved, waiting)| waiting.map(|batch| (approved, batch)))
    });
    if approved >= batch {
        console.fail(&format!(
            "batch {batch} waits for approval although approvedBatch is {approved}"
        ));
    }
    let before = runtime
        .block_on(installers_of_batch(&pods, batch))
        .unwrap_or_else(|error| console.fail(&format!("listing installer pods: {error}")));
    if !before.is_empty() {
        console.fail(&format!(
            "batch {batch} has installers before its approval: {before:?}"
        ));
    }

    console.press(&["/", SHIM, "Enter", "Enter"]);
    console.wait_for("the detail of spin-v2", REACT_LIMIT, |screen| {
        screen.contains("Nodes [") && screen.contains(&format!("batch {batch} of"))
    });
    console.press(&["A"]);
    let question = format!("Approve batch {batch} of Shim {SHIM}?");
    console.wait_for("a confirmation naming the batch", REACT_LIMIT, |screen| {
        screen.contains("Confirm") && screen.contains(&question)
    });
    console.press(&["y"]);

    // The write reaches the cluster, and the engine starts the batch.
    console.poll("approvedBatch raised", REACT_LIMIT, || {
        runtime
            .block_on(approval(&shims))
            .map(|(approved, _)| (approved == batch).then_some(()))
    });
    let started = console.poll("installers of the approved batch", REACT_LIMIT, || {
        runtime
            .block_on(installers_of_batch(&pods, batch))
            .map(|nodes| (!nodes.is_empty()).then_some(nodes))
    });

    // And on screen: the footer says what was approved, and a node of that batch is installing or installed.
    let batch_cell = batch.to_string();
    console.wait_for(
        "the approval in the footer and the batch's nodes at work",
        REACT_LIMIT,
        |screen| {
            status_line(screen).contains(&format!("Approved batch {batch} of Shim {SHIM}"))
                && rows(screen).any(|cells| {
                    cells
                        .first()
                        .is_some_and(|node| started.iter().any(|n| n == node))
                        && cells.get(2) == Some(&batch_cell.as_str())
                        && matches!(cells.get(1), Some(&"Pending" | &"Provisioned"))
                })
        },
    );

    console.press(&["C-c"]);
    let pane = console.wait_for_exit(REACT_LIMIT);
    if pane.exit_status != Some(0) || pane.alternate_screen {
        console.fail(&format!("kmm-tui did not exit cleanly: {pane:?}"));
    }
}
