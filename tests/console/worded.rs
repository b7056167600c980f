//! How the console words failures, from real errors of a real `kube::Client`: a port nothing listens on, the
//! embedded cluster served over HTTPS with a token it never issued, a CA it does not know, a user it forbids, a
//! name it does not have. None of the client's own wording (`ServiceError: …`, a `Status` printed with `Debug`)
//! reaches the words, and an unreachable cluster's panes say it cannot be reached rather than that it is empty.

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, EngineMode, Session};
use kmm_tui::tui::data::{FeedState, Kind};
use kmm_tui::tui::keymap::Keymap;
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::worded::{Why, server_of};
use kube::api::{Api, DeleteParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use std::collections::BTreeSet;
use tokio_util::sync::CancellationToken;

use crate::support::screen;

/// A loopback port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A client of `https://127.0.0.1:port`, and the server its failures name.
fn client_of_port(port: u16) -> (kube::Client, Option<String>) {
    let config = kube::Config::new(format!("https://127.0.0.1:{port}").parse().expect("a url"));
    let server = server_of(&config);
    (kube::Client::try_from(config).expect("a client"), server)
}

/// The embedded cluster served over HTTPS on a free loopback port.
async fn served() -> EmbeddedCluster {
    EmbeddedCluster::start(EmbeddedOptions {
        listen: Some("127.0.0.1:0".parse().expect("an address")),
        ..Default::default()
    })
    .await
    .expect("the embedded cluster starts")
}

/// A client of `cluster`'s kubeconfig in `context`, after `change` had its way with the kubeconfig.
async fn client_of(
    cluster: &EmbeddedCluster,
    context: Option<String>,
    change: impl FnOnce(&mut serde_json::Value),
) -> (kube::Client, Option<String>) {
    let text = cluster.kubeconfig().expect("served over HTTPS");
    let mut json =
        serde_json::to_value(Kubeconfig::from_yaml(text).expect("the kubeconfig parses"))
            .expect("as JSON");
    change(&mut json);
    let kubeconfig: Kubeconfig = serde_json::from_value(json).expect("still a kubeconfig");
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("the kubeconfig loads");
    let server = server_of(&config);
    (kube::Client::try_from(config).expect("a client"), server)
}

/// Nothing of the client's own wording.
fn assert_worded(why: &Why, raw: &str) {
    for leak in [
        "ServiceError",
        "HyperError",
        "ApiError",
        "Status {",
        "Some(",
        "client error",
    ] {
        assert!(
            !why.detail.contains(leak),
            "{leak:?} leaks into {:?} (the client said {raw:?})",
            why.detail
        );
    }
}

#[tokio::test]
async fn a_closed_port_is_connection_refused_at_its_address() {
    let port = closed_port();
    let (client, server) = client_of_port(port);
    let error = client
        .apiserver_version()
        .await
        .expect_err("nothing listens");
    let why = Why::of(&error, server.as_deref());
    assert_eq!(why.word, "refused");
    assert_eq!(
        why.detail,
        format!("connection refused at 127.0.0.1:{port}")
    );
    assert!(why.unreachable());
    assert_worded(&why, &error.to_string());

    let mut watch = watcher(Api::<Node>::all(client), watcher::Config::default()).boxed();
    // The watch announces its first list before asking for it.
    let error = loop {
        match watch.next().await.expect("the watch says something") {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    let why = Why::of_watch(&error, server.as_deref());
    assert_eq!(
        why.detail,
        format!("connection refused at 127.0.0.1:{port}")
    );
}

#[tokio::test]
async fn the_servers_refusals_are_worded_from_its_status() {
    let cluster = served().await;

    let (stranger, server) = client_of(&cluster, None, |json| {
        json["users"][0]["user"]["token"] = "a-token-this-server-never-issued".into();
    })
    .await;
    let error = Api::<Namespace>::all(stranger)
        .list(&Default::default())
        .await
        .expect_err("the token is refused");
    assert!(
        error.to_string().contains("Status {"),
        "the client's own words dump the Status: {error}"
    );
    let why = Why::of(&error, server.as_deref());
    assert!(why.unauthorized());
    assert_eq!(
        why.detail,
        "the server rejected the credentials (401): the kubeconfig's token is no longer valid"
    );
    assert_worded(&why, &error.to_string());

    let viewer =
        kmm_cluster::kubeconfig::Names::new(kmm_cluster::kubeconfig::DEFAULT_NAME).viewer_context();
    let (viewer, server) = client_of(&cluster, Some(viewer), |_| {}).await;
    let error = Api::<ConfigMap>::namespaced(viewer.clone(), "default")
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect_err("the viewer may not delete");
    let why = Why::of(&error, server.as_deref());
    assert_eq!(why.word, "forbidden");
    assert!(why.detail.starts_with("forbidden: "), "{}", why.detail);
    assert!(why.detail.contains("cannot delete"), "{}", why.detail);
    assert_worded(&why, &error.to_string());

    let error = Api::<Namespace>::all(viewer)
        .get("nowhere")
        .await
        .expect_err("there is no such namespace");
    let why = Why::of(&error, server.as_deref());
    assert_eq!(why.word, "not found");
    assert_eq!(why.detail, r#"not found: namespaces "nowhere" not found"#);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_a_tls_failure() {
    let cluster = served().await;
    let other =
        kmm_cluster::tls::TlsMaterial::generate(std::time::SystemTime::now()).expect("another CA");
    let (client, server) = client_of(&cluster, None, |json| {
        use base64::Engine;
        json["clusters"][0]["cluster"]["certificate-authority-data"] =
            base64::engine::general_purpose::STANDARD
                .encode(&other.ca_pem)
                .into();
    })
    .await;
    let error = client
        .apiserver_version()
        .await
        .expect_err("the server is not trusted");
    let why = Why::of(&error, server.as_deref());
    assert_eq!(why.word, "TLS");
    let address = cluster.address().expect("served");
    assert_eq!(
        why.detail,
        format!(
            "TLS failure with {address}: the server's certificate is not signed by the kubeconfig's CA"
        )
    );
    assert_worded(&why, &error.to_string());
    cluster.shutdown().await;
}

/// A console that entered `context` from the fleet, as `enter` on a fleet row leaves it.
fn entered(context: &str) -> App {
    let session = Session {
        context: context.to_owned(),
        contexts: vec![context.to_owned()],
        embedded: false,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: Some("kmm-tui-console-1".to_owned()),
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    app.size = (120, 20);
    app
}

/// The embedded cluster keeping its state (CA, tokens) in `state`, served on `port`; retried while the port is
/// still held by the cluster that served it before.
async fn served_on(state: &std::path::Path, port: u16) -> EmbeddedCluster {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let started = EmbeddedCluster::start(EmbeddedOptions {
            state_dir: Some(state.to_path_buf()),
            listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
            ..Default::default()
        })
        .await;
        match started {
            Ok(cluster) => return cluster,
            Err(error) if tokio::time::Instant::now() < deadline => {
                let _ = error;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the cluster does not start again: {error:#}"),
        }
    }
}

/// Apply actions to `app` until `done` says so, within 60 s.
async fn until(
    app: &mut App,
    actions: &mut tokio::sync::mpsc::UnboundedReceiver<Action>,
    what: &str,
    mut done: impl FnMut(&App) -> bool,
) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done(app) {
        let action = tokio::time::timeout_at(deadline, actions.recv())
            .await
            .unwrap_or_else(|_| panic!("{what}: not within 60 s:\n{}", screen(app)))
            .expect("the feed runs");
        app.update(action);
    }
}

#[tokio::test]
async fn every_pane_of_an_unreachable_cluster_says_it_cannot_be_reached_until_it_answers() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("gone");
    let cluster = served_on(&state, 0).await;
    let port = cluster.address().expect("served").port();
    let (client, server) = client_of(&cluster, None, |_| {}).await;
    cluster.shutdown().await;

    let (sender, mut actions) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    kmm_tui::tui::feed::start(&client, server.as_deref(), None, &sender, &cancel);
    let mut app = entered("gone");
    let mut failed = BTreeSet::new();
    until(&mut app, &mut actions, "every watch fails", |app| {
        for (kind, state) in &app.data.feeds {
            if matches!(state, FeedState::Failing(_)) {
                failed.insert(*kind);
            }
        }
        failed.len() == Kind::ALL.len()
    })
    .await;
    let refused = format!("connection refused at 127.0.0.1:{port}");
    for pane in [
        "modules", "images", "nodes", "events", "shims", "caches", "day0", "engine",
    ] {
        crate::support::command(&mut app, pane);
        let text = screen(&app);
        let header = text.lines().next().unwrap_or_default();
        assert!(
            header.contains(&format!("cannot reach the cluster: {refused}")),
            ":{pane} header: {header}\n{text}"
        );
        assert!(!header.contains("none acting"), ":{pane}: {header}");
        assert!(
            !text.contains("Create one"),
            ":{pane} says it is empty:\n{text}"
        );
        assert!(!text.contains("ServiceError"), ":{pane}:\n{text}");
    }
    crate::support::command(&mut app, "modules");
    assert!(
        screen(&app).contains(&format!("Cannot reach the cluster: {refused}")),
        "{}",
        screen(&app)
    );

    // It answers again (same port, same CA and tokens): the panes say what it has.
    let cluster = served_on(&state, port).await;
    until(&mut app, &mut actions, "the cluster answers", |app| {
        app.data.unreachable().is_none() && app.data.failure().is_none() && app.data.loaded()
    })
    .await;
    let text = screen(&app);
    assert!(!text.contains("cannot reach"), "{text}");
    assert!(text.contains("No Modules"), "{text}");
    cancel.cancel();
    cluster.shutdown().await;
}
