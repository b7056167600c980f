//! The fleet view on several embedded clusters at once, each served over HTTPS on its own loopback port and named
//! in one merged kubeconfig, followed by the real per-cluster tasks: rows appear with versions and nodes, counts
//! follow changes, the read-only viewer sees what the administrator sees, a cluster that never answers times out
//! without holding up the others, a certificate from another CA is a TLS failure, one that stops is shown as
//! refused, one that comes back with other credentials as unauthorized, and it returns once the kubeconfig is
//! fixed. Then `enter` and `esc` between the fleet and a cluster's panes.

use std::path::Path;
use std::time::Duration;

use crate::support::press;
use crossterm::event::KeyCode;
use kmm_api::kmm::Module;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, EngineMode, Request, Session, View};
use kmm_tui::tui::fleet::rows::{Attention, FleetRow};
use kmm_tui::tui::fleet_feed::{self, Member, Source, Timing};
use kmm_tui::tui::keymap::Keymap;
use kmm_tui::tui::theme::Theme;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

/// Two ready nodes.
const TWO_NODES: &str = r#"
seed: 1
nodes:
  - namePrefix: worker-
    count: 2
    kernelVersion: 5.14.0-284.30.1.el9_2.x86_64
    osImage: Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)
"#;

/// Fast retries, so a cluster that comes back is seen within a second or two; answers may still take a few
/// seconds on a busy machine.
const QUICK: Timing = Timing {
    probe_timeout: Duration::from_secs(3),
    probe_every: Duration::from_secs(1),
    retry_first: Duration::from_millis(100),
    retry_max: Duration::from_millis(400),
};

async fn serve(scenario: Option<&str>, state: Option<&Path>, port: u16) -> EmbeddedCluster {
    let scenario =
        scenario.map(|text| Scenario::parse(text, "fleet", None).expect("the scenario parses"));
    EmbeddedCluster::start(EmbeddedOptions {
        scenario,
        state_dir: state.map(Path::to_path_buf),
        listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts")
}

/// One kubeconfig naming each cluster's administrator context `name`, and a context whose server nothing serves.
fn merged(clusters: &[(&str, &EmbeddedCluster)]) -> Kubeconfig {
    let mut merged = Kubeconfig::default();
    for (name, cluster) in clusters {
        let text = cluster.kubeconfig().expect("the cluster serves HTTPS");
        let mut one: Kubeconfig = serde_json::from_value(
            serde_json::to_value(
                Kubeconfig::from_yaml(text).expect("the cluster's kubeconfig parses"),
            )
            .expect("a kubeconfig as JSON"),
        )
        .expect("a kubeconfig");
        let mut context = one
            .contexts
            .into_iter()
            .find(|c| Some(&c.name) == one.current_context.as_ref())
            .expect("the current context");
        let inner = context.context.as_mut().expect("a context");
        let user = inner.user.clone().expect("a user");
        let mut cluster_entry = one.clusters.remove(0);
        let mut auth = one
            .auth_infos
            .into_iter()
            .find(|a| a.name == user)
            .expect("the user");
        cluster_entry.name = (*name).to_owned();
        auth.name = (*name).to_owned();
        inner.cluster = (*name).to_owned();
        inner.user = Some((*name).to_owned());
        context.name = (*name).to_owned();
        merged.clusters.push(cluster_entry);
        merged.auth_infos.push(auth);
        merged.contexts.push(context);
    }
    merged
}

fn write(path: &Path, kubeconfig: &Kubeconfig) {
    let text = serde_json::to_string(kubeconfig).expect("a kubeconfig as JSON");
    std::fs::write(path, text).expect("writing the kubeconfig");
}

fn console(context: &str) -> App {
    let session = Session {
        context: context.to_owned(),
        contexts: Vec::new(),
        embedded: false,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: Some("kmm-tui-console-1".to_owned()),
    };
    App::new(session, Theme::monochrome(), Keymap::default(), None)
}

/// Feed the app what the tasks send until `check` holds of the fleet's rows, or fail after `secs` seconds.
async fn until(
    app: &mut App,
    actions: &mut UnboundedReceiver<Action>,
    secs: u64,
    what: &str,
    check: impl Fn(&[FleetRow]) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !check(&app.rows.fleet) {
        match tokio::time::timeout_at(deadline, actions.recv()).await {
            Ok(Some(action)) => {
                app.update(action);
            }
            _ => panic!("{what}: not within {secs}s; rows: {:#?}", app.rows.fleet),
        }
    }
}

fn row<'a>(rows: &'a [FleetRow], context: &str) -> &'a FleetRow {
    rows.iter()
        .find(|row| row.context == context)
        .unwrap_or_else(|| panic!("no row for {context}"))
}

fn module(name: &str) -> Module {
    serde_json::from_value(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"none": "none"}, "moduleLoader": {"container": {
            "modprobe": {"moduleName": name},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/x/y:${KERNEL_FULL_VERSION}"}]}}}
    }))
    .expect("a Module")
}

/// Add a context `name` for the read-only viewer of `cluster`, bound to the `view` ClusterRole.
fn add_viewer(kubeconfig: &mut Kubeconfig, cluster: &EmbeddedCluster, name: &str) {
    let text = cluster.kubeconfig().expect("the cluster serves HTTPS");
    let one = Kubeconfig::from_yaml(text).expect("the cluster's kubeconfig parses");
    let mut context = one
        .contexts
        .into_iter()
        .find(|c| {
            c.name
                == kmm_cluster::kubeconfig::Names::new(kmm_cluster::kubeconfig::DEFAULT_NAME)
                    .viewer_context()
        })
        .expect("the viewer's context");
    let inner = context.context.as_mut().expect("a context");
    let user = inner.user.clone().expect("a user");
    let mut auth = one
        .auth_infos
        .into_iter()
        .find(|a| a.name == user)
        .expect("the viewer");
    let mut entry = one.clusters.into_iter().next().expect("the cluster");
    entry.name = name.to_owned();
    auth.name = name.to_owned();
    inner.cluster = name.to_owned();
    inner.user = Some(name.to_owned());
    context.name = name.to_owned();
    kubeconfig.clusters.push(entry);
    kubeconfig.auth_infos.push(auth);
    kubeconfig.contexts.push(context);
}

/// Add a context `name` with the first cluster's credentials and a server on loopback `port`.
fn add_elsewhere(kubeconfig: &mut Kubeconfig, name: &str, port: u16) {
    let mut cluster = kubeconfig.clusters[0].clone();
    cluster.name = name.to_owned();
    if let Some(inner) = cluster.cluster.as_mut() {
        inner.server = Some(format!("https://127.0.0.1:{port}"));
    }
    let mut context = kubeconfig.contexts[0].clone();
    context.name = name.to_owned();
    if let Some(inner) = context.context.as_mut() {
        inner.cluster = name.to_owned();
    }
    kubeconfig.clusters.push(cluster);
    kubeconfig.contexts.push(context);
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_fleet_follows_several_clusters_and_one_that_stops_and_comes_back() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let east = serve(Some(TWO_NODES), None, 0).await;
    let west = serve(None, None, 0).await;
    let north_state = dir.path().join("north");
    let north = serve(None, Some(&north_state), 0).await;
    let north_port = north.address().expect("north serves").port();
    let mut kubeconfig = merged(&[("east", &east), ("west", &west), ("north", &north)]);
    // A context whose server is gone from the start, and one whose server accepts connections and never answers.
    add_elsewhere(&mut kubeconfig, "gone", closed_port());
    let hung = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener that never answers");
    add_elsewhere(
        &mut kubeconfig,
        "hung",
        hung.local_addr().expect("its address").port(),
    );
    // And one that reaches west with east's CA: a certificate it cannot trust.
    add_elsewhere(
        &mut kubeconfig,
        "mixed",
        west.address().expect("west serves").port(),
    );
    add_viewer(&mut kubeconfig, &east, "east-viewer");
    let path = dir.path().join("kubeconfig");
    write(&path, &kubeconfig);

    let contexts: Vec<String> = [
        "east",
        "west",
        "north",
        "gone",
        "hung",
        "mixed",
        "east-viewer",
    ]
    .map(str::to_owned)
    .to_vec();
    let members = contexts
        .iter()
        .map(|context| Member {
            context: context.clone(),
            source: Source::Kubeconfig(Some(path.clone())),
        })
        .collect();
    let (sender, mut actions): (UnboundedSender<Action>, _) =
        tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let mut app = console("east");
    app.start_in_fleet(&contexts);
    assert_eq!(app.view(), &View::Fleet);
    assert_eq!(app.rows.fleet.len(), 7, "every context has a row at once");
    fleet_feed::start_with(members, QUICK, &sender, &cancel);

    until(
        &mut app,
        &mut actions,
        30,
        "every reachable cluster listed",
        |rows| {
            ["east", "west", "north"]
                .iter()
                .all(|c| row(rows, c).state == "ok")
                && row(rows, "gone").state == "refused"
                && row(rows, "mixed").state == "TLS"
        },
    )
    .await;
    until(
        &mut app,
        &mut actions,
        30,
        "the silent cluster timed out",
        |rows| row(rows, "hung").state == "timeout",
    )
    .await;
    // The read-only `view` role is enough for the fleet's watches.
    until(&mut app, &mut actions, 30, "the viewer sees east", |rows| {
        row(rows, "east-viewer").state == "ok" && row(rows, "east-viewer").nodes == "2/2"
    })
    .await;
    let rows = &app.rows.fleet;
    let first: Vec<&str> = rows[..3].iter().map(|r| r.context.as_str()).collect();
    assert_eq!(
        first,
        ["gone", "hung", "mixed"],
        "unreachable clusters come first"
    );
    assert_eq!(rows[0].attention, Attention::Unreachable);
    assert!(
        row(rows, "east").version.starts_with('v'),
        "{:?}",
        row(rows, "east")
    );
    until(
        &mut app,
        &mut actions,
        30,
        "east's two nodes ready",
        |rows| row(rows, "east").nodes == "2/2",
    )
    .await;
    assert_eq!(row(&app.rows.fleet, "west").nodes, "0/0");

    // Counts follow changes: a Module appears in west, then turns degraded.
    let modules: Api<Module> = Api::namespaced(west.client(), "default");
    modules
        .create(&PostParams::default(), &module("acme"))
        .await
        .expect("creating a Module");
    until(
        &mut app,
        &mut actions,
        30,
        "west counts its Module",
        |rows| row(rows, "west").summary.modules.total == 1,
    )
    .await;
    let degraded = json!({"status": {"conditions": [{
        "type": "Degraded", "status": "True", "reason": "ImagesMissing",
        "message": "no image for kernel 5.14", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    modules
        .patch_status("acme", &PatchParams::default(), &Patch::Merge(&degraded))
        .await
        .expect("marking the Module degraded");
    until(
        &mut app,
        &mut actions,
        30,
        "west shows a degraded Module",
        |rows| row(rows, "west").degraded == 1,
    )
    .await;
    let order: Vec<&str> = app.rows.fleet.iter().map(|r| r.context.as_str()).collect();
    assert_eq!(
        &order[..4],
        ["gone", "hung", "mixed", "west"],
        "what needs a person first"
    );

    // North stops: refused, while the others keep answering.
    north.shutdown().await;
    until(&mut app, &mut actions, 30, "north refused", |rows| {
        row(rows, "north").state == "refused"
    })
    .await;
    assert_eq!(row(&app.rows.fleet, "east").state, "ok");
    assert!(
        row(&app.rows.fleet, "north").detail.contains("for "),
        "says for how long: {:?}",
        row(&app.rows.fleet, "north")
    );

    // North comes back on its port with its state, but with its tokens rotated: unauthorized until the kubeconfig
    // has the new ones.
    let north = loop {
        match EmbeddedCluster::start(EmbeddedOptions {
            state_dir: Some(north_state.clone()),
            listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], north_port))),
            rotate_tokens: true,
            ..Default::default()
        })
        .await
        {
            Ok(cluster) => break cluster,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    until(&mut app, &mut actions, 30, "north unauthorized", |rows| {
        row(rows, "north").state == "unauthorized"
    })
    .await;
    let renewed = merged(&[("north", &north)]);
    let index = kubeconfig
        .auth_infos
        .iter()
        .position(|a| a.name == "north")
        .expect("north's user");
    kubeconfig.auth_infos[index] = renewed.auth_infos[0].clone();
    write(&path, &kubeconfig);
    until(&mut app, &mut actions, 30, "north back", |rows| {
        row(rows, "north").state == "ok"
    })
    .await;

    // Enter opens a cluster through the context switch; esc comes back.
    let index = app
        .visible(kmm_tui::tui::app::ListId::Fleet)
        .iter()
        .position(|i| app.rows.fleet[*i].context == "west")
        .expect("west is listed");
    for _ in 0..index {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    assert!(
        app.requests
            .contains(&Request::SwitchContext("west".to_owned())),
        "{:?}",
        app.requests
    );
    app.requests.clear();
    app.switch_context("west");
    assert_eq!(app.views, [View::Fleet, View::Modules]);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Fleet);
    drop(hung);
    north.shutdown().await;
    east.shutdown().await;
    west.shutdown().await;
}
