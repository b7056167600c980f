//! The console's behaviour, driven through `App::update` with key presses and data as the event loop delivers them:
//! navigation, commands, filters, confirmations and what a write turns into; and the fleet view on several embedded
//! clusters at once ([`fleet`]).

use std::sync::Arc;

use crate::support::press;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use kmm_api::kmm::{Module, ModuleImagesConfig};
use kmm_tui::tui::access::{AccessReport, Capability};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, Availability, EngineMode, Mode, Request, Session, View};
use kmm_tui::tui::data::{Kind, KindSnapshot};
use kmm_tui::tui::keymap::{Command, Keymap};
use kmm_tui::tui::target::Target;
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::writes::{WriteError, WriteOutcome, WriteRequest};
use serde_json::json;

fn session(readonly: bool) -> Session {
    Session {
        context: "test".to_owned(),
        contexts: vec!["test".to_owned(), "other".to_owned()],
        embedded: true,
        engine: EngineMode::Foreground,
        readonly,
        engine_identity: Some("console".to_owned()),
    }
}

fn module(namespace: &str, name: &str) -> Arc<Module> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {}, "moduleLoader": {"container": {
                "modprobe": {"moduleName": name},
                "kernelMappings": [{"regexp": "^.+$", "containerImage": "quay.io/x/y:${KERNEL_FULL_VERSION}"}]}}}
        }))
        .expect("module"),
    )
}

fn mic(namespace: &str, name: &str, images: &[&str]) -> Arc<ModuleImagesConfig> {
    let images: Vec<_> = images
        .iter()
        .map(|image| json!({"image": image, "kernelVersion": "6.1.0", "generation": 1}))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"images": images, "imagePullPolicy": "IfNotPresent"}
        }))
        .expect("mic"),
    )
}

fn app(readonly: bool) -> App {
    let mut app = App::new(
        session(readonly),
        Theme::monochrome(),
        Keymap::default(),
        None,
    );
    app.update(Action::Data(KindSnapshot::Modules(vec![
        module("b", "zeta"),
        module("a", "alpha"),
        module("a", "beta"),
    ])));
    app.update(Action::Data(KindSnapshot::ModuleImagesConfigs(vec![mic(
        "a",
        "alpha",
        &["quay.io/x/y:6.1.0", "quay.io/x/y:6.2.0"],
    )])));
    app
}

fn ctrl(app: &mut App, c: char) {
    app.update(Action::Terminal(Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    ))));
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn modules_are_sorted_and_j_k_g_move_the_selection() {
    let mut app = app(false);
    let names: Vec<_> = app
        .rows
        .modules
        .iter()
        .map(|r| format!("{}/{}", r.namespace, r.name))
        .collect();
    assert_eq!(names, ["a/alpha", "a/beta", "b/zeta"]);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(app.selection(app.list()).index, 2, "stops at the last row");
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.selection(app.list()).index, 0);
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.selection(app.list()).index, 2);
    press(&mut app, KeyCode::Up);
    assert_eq!(app.selection(app.list()).index, 1);
}

#[test]
fn enter_opens_the_detail_and_esc_goes_back() {
    let mut app = app(false);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.view(),
        &View::ModuleDetail(Target::namespaced(Kind::Module, "a", "alpha"))
    );
    let detail = app.module_detail.as_ref().expect("detail of a/alpha");
    assert_eq!(detail.images.len(), 2);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Modules);
}

#[test]
fn the_command_prompt_completes_and_switches_views() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "no");
    assert_eq!(app.completions("no"), ["nodes"]);
    press(&mut app, KeyCode::Tab);
    assert!(matches!(&app.mode, Mode::Command(p) if p.text == "nodes"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view(), &View::Nodes);
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "bogus");
    press(&mut app, KeyCode::Enter);
    assert!(
        status(&app).contains("Unknown command :bogus"),
        "{}",
        status(&app)
    );
    press(&mut app, KeyCode::Char(':'));
    typed(&mut app, "q");
    press(&mut app, KeyCode::Enter);
    assert!(app.quit);
}

#[test]
fn namespaces_and_contexts_complete_from_what_exists() {
    let mut app = app(false);
    assert_eq!(app.completions("ns "), ["ns a", "ns all", "ns b"]);
    let mut elsewhere = (*cache(json!({}))).clone();
    elsewhere.metadata.namespace = Some("web".to_owned());
    app.update(Action::Data(KindSnapshot::ImageCaches(vec![Arc::new(
        elsewhere,
    )])));
    assert_eq!(
        app.completions("ns "),
        ["ns a", "ns all", "ns b", "ns web"],
        "namespaces of caches complete too"
    );
    assert_eq!(app.completions("ctx o"), ["ctx other"]);
}

#[test]
fn the_filter_narrows_rows_as_typed_and_esc_clears_it() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "ZET");
    assert_eq!(app.visible(app.list()).len(), 1, "case-insensitive");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter(app.list()), "zet");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.visible(app.list()).len(), 3);
}

#[test]
fn ns_limits_namespaced_lists() {
    let mut app = app(false);
    app.execute("ns b");
    assert_eq!(app.visible(app.list()).len(), 1);
    app.execute("ns all");
    assert_eq!(app.visible(app.list()).len(), 3);
}

#[test]
fn rebuild_asks_first_then_requests_the_write() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('R'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("R opens a confirmation");
    };
    assert_eq!(
        request.describe(),
        "Rebuild the images of Module a/alpha",
        "the dialog names what will happen"
    );
    press(&mut app, KeyCode::Char('n'));
    assert!(app.requests.is_empty(), "n sends nothing");
    press(&mut app, KeyCode::Char('R'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.requests,
        [Request::Write(WriteRequest::Rebuild {
            module: Target::namespaced(Kind::Module, "a", "alpha"),
            image: None
        })]
    );
}

#[test]
fn rebuild_from_the_detail_image_section_names_the_image() {
    let mut app = app(false);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('R'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.requests,
        [Request::Write(WriteRequest::Rebuild {
            module: Target::namespaced(Kind::Module, "a", "alpha"),
            image: Some("quay.io/x/y:6.2.0".to_owned())
        })]
    );
}

#[test]
fn readonly_refuses_writes_before_asking() {
    let mut app = app(true);
    press(&mut app, KeyCode::Char('R'));
    assert!(matches!(app.mode, Mode::Normal), "no dialog");
    assert!(status(&app).contains("read-only"), "{}", status(&app));
    ctrl(&mut app, 'd');
    assert!(app.requests.is_empty());
    assert!(matches!(
        app.availability(Command::Delete),
        Availability::Unavailable(_)
    ));
}

#[test]
fn writes_the_cluster_forbids_are_unavailable() {
    let mut app = app(false);
    let mut report = AccessReport {
        context: "test".to_owned(),
        ..Default::default()
    };
    report
        .allowed
        .insert(Capability::Delete(Kind::Module), false);
    report.allowed.insert(Capability::Rebuild, true);
    app.update(Action::Access(report));
    assert_eq!(app.availability(Command::Rebuild), Availability::Available);
    ctrl(&mut app, 'd');
    assert!(matches!(app.mode, Mode::Normal), "no dialog");
    assert!(status(&app).contains("not permitted"), "{}", status(&app));
}

#[test]
fn a_failed_write_shows_in_the_footer() {
    let mut app = app(false);
    app.update(Action::Written(WriteOutcome {
        request: WriteRequest::Delete {
            target: Target::namespaced(Kind::Module, "a", "alpha"),
        },
        result: Err(WriteError {
            message: "not permitted: cannot delete modules".to_owned(),
            fields: Vec::new(),
            code: Some(403),
        }),
    }));
    assert_eq!(status(&app), "not permitted: cannot delete modules");
}

#[test]
fn y_follows_the_object_and_shows_it_without_managed_fields() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('y'));
    let target = Target::namespaced(Kind::Module, "a", "alpha");
    assert_eq!(app.view(), &View::Yaml(target.clone()));
    assert_eq!(
        app.requests,
        [Request::Follow(Some(target.clone()))],
        "the object is read whole from the API server"
    );
    assert!(app.yaml.is_none(), "nothing is shown before it arrives");

    let mut object = serde_json::to_value(&*module("a", "alpha")).expect("json");
    object["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
    object["status"] = json!({"moduleLoader": {"desiredNumber": 7}});
    assert!(app.update(Action::Object(target.clone(), Ok(Some(object)))));
    let lines = app.yaml.clone().expect("open").expect("shown");
    assert!(lines.iter().any(|l| l.contains("name: alpha")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("desiredNumber: 7")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("managedFields")));

    app.update(Action::Object(target.clone(), Ok(None)));
    assert_eq!(
        app.yaml,
        Some(Err("Module a/alpha no longer exists".to_owned()))
    );
    app.requests.clear();
    press(&mut app, KeyCode::Esc);
    assert_eq!(
        app.requests,
        [Request::Follow(None)],
        "closing stops following"
    );
    assert!(app.yaml.is_none());
    assert!(
        !app.update(Action::Object(target, Ok(None))),
        "an object arriving after its view closed changes nothing"
    );
}

#[test]
fn e_reads_the_object_and_opens_the_editor_without_its_status() {
    let mut refused = app(false);
    let mut app = app(false);
    press(&mut app, KeyCode::Char('e'));
    let target = Target::namespaced(Kind::Module, "a", "alpha");
    assert_eq!(app.requests, [Request::Edit(target.clone())]);
    assert!(app.editor.is_none(), "the editor waits for the object");

    let mut object = serde_json::to_value(&*module("a", "alpha")).expect("json");
    object["status"] = json!({"moduleLoader": {"desiredNumber": 7}});
    app.update(Action::Editable(target.clone(), Ok(object)));
    let text = app.editor.as_ref().expect("the editor opens").text();
    assert!(text.contains("moduleName: alpha"), "{text}");
    assert!(!text.contains("desiredNumber"), "{text}");

    refused.update(Action::Editable(
        target,
        Err("cannot read Module a/alpha: forbidden".to_owned()),
    ));
    assert!(refused.editor.is_none());
    assert_eq!(status(&refused), "cannot read Module a/alpha: forbidden");
}

#[test]
fn a_selection_survives_rows_disappearing() {
    let mut app = app(false);
    press(&mut app, KeyCode::Char('G'));
    app.update(Action::Data(KindSnapshot::Modules(vec![module(
        "a", "alpha",
    )])));
    assert_eq!(app.selection(app.list()).index, 0);
    app.update(Action::Data(KindSnapshot::Modules(Vec::new())));
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('R'));
    assert!(app.requests.is_empty(), "nothing selected, nothing sent");
}

#[test]
fn ctrl_c_quits_from_anywhere() {
    for setup in [
        (|_: &mut App| {}) as fn(&mut App),
        |app| press(app, KeyCode::Char(':')),
        |app| press(app, KeyCode::Char('/')),
        |app| press(app, KeyCode::Char('R')),
    ] {
        let mut app = app(false);
        setup(&mut app);
        ctrl(&mut app, 'c');
        assert!(app.quit);
    }
}

#[test]
fn the_header_says_which_engine_acts() {
    use k8s_openapi::api::coordination::v1::Lease;
    let lease = |holder: &str, renewed: jiff::Timestamp| {
        Some(Arc::new(
            serde_json::from_value::<Lease>(json!({
                "metadata": {"name": "kmm-tui-engine", "namespace": "kube-system"},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                         "renewTime": renewed.to_string()}
            }))
            .expect("lease"),
        ))
    };
    let mut app = app(false);
    assert_eq!(app.engine_summary(), "engine: foreground (starting)");
    app.update(Action::EngineLease(lease(
        "console",
        jiff::Timestamp::now(),
    )));
    assert_eq!(app.engine_summary(), "engine: foreground");
    app.update(Action::EngineLease(lease(
        "controller-7",
        jiff::Timestamp::now(),
    )));
    assert_eq!(
        app.engine_summary(),
        "engine: in cluster (pod controller-7), foreground standing by"
    );
    let long_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(600);
    app.update(Action::EngineLease(lease("controller-7", long_ago)));
    assert_eq!(
        app.engine_summary(),
        "engine: foreground (starting)",
        "an expired Lease names nobody"
    );
}

#[test]
fn a_lease_renewal_redraws_only_where_it_shows() {
    use k8s_openapi::api::coordination::v1::Lease;
    let lease = |holder: &str, renewed: jiff::Timestamp| {
        Some(Arc::new(
            serde_json::from_value::<Lease>(json!({
                "metadata": {"name": "kmm-tui-engine", "namespace": "kube-system"},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                         "renewTime": renewed.to_string()}
            }))
            .expect("lease"),
        ))
    };
    let mut app = app(false);
    let start = jiff::Timestamp::now();
    assert!(
        app.update(Action::EngineLease(lease("console", start))),
        "the first holder changes the header"
    );
    let renewed = start + jiff::SignedDuration::from_secs(3);
    assert!(
        !app.update(Action::EngineLease(lease("console", renewed))),
        "a renewal by the same holder changes nothing on screen"
    );
    assert!(
        app.update(Action::EngineLease(lease("controller-7", renewed))),
        "a new holder changes the header"
    );
    app.views.push(View::Engine);
    assert!(
        app.update(Action::EngineLease(lease("controller-7", renewed))),
        "the :engine view shows the Lease itself"
    );
}

#[test]
fn node_rows_follow_every_node_and_nodemodulesconfig_change() {
    use k8s_openapi::api::core::v1::Node;
    use kmm_api::kmm::NodeModulesConfig;
    let node = |name: &str, cordoned: bool| {
        Arc::new(
            serde_json::from_value::<Node>(json!({
                "metadata": {"name": name},
                "spec": {"unschedulable": cordoned},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            }))
            .expect("node"),
        )
    };
    let nmc = |name: &str, loaded: bool| {
        let entry = json!({
            "name": "alpha", "namespace": "a", "serviceAccountName": "default",
            "config": {"kernelVersion": "6.1.0", "containerImage": "quay.io/x/y:6.1.0",
                       "imagePullPolicy": "IfNotPresent", "insecurePull": false,
                       "modprobe": {"moduleName": "alpha"}}
        });
        let mut loaded_entry = entry.clone();
        loaded_entry["bootId"] = json!("boot-1");
        let status: Vec<_> = if loaded {
            vec![loaded_entry]
        } else {
            Vec::new()
        };
        Arc::new(
            serde_json::from_value::<NodeModulesConfig>(json!({
                "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "NodeModulesConfig",
                "metadata": {"name": name},
                "spec": {"modules": [entry]},
                "status": {"modules": status}
            }))
            .expect("nmc"),
        )
    };
    let summary = |app: &App| -> Vec<(String, bool, usize, usize)> {
        app.rows
            .nodes
            .iter()
            .map(|r| {
                (
                    r.name.clone(),
                    r.unschedulable,
                    r.modules_loaded.len(),
                    r.modules_pending,
                )
            })
            .collect()
    };
    let mut app = app(false);
    let nodes: Vec<_> = (0..3).map(|i| node(&format!("n{i}"), false)).collect();
    app.update(Action::Data(KindSnapshot::Nodes(nodes.clone())));
    app.update(Action::Data(KindSnapshot::NodeModulesConfigs(vec![
        nmc("n0", false),
        nmc("n1", false),
    ])));
    assert_eq!(
        summary(&app),
        [
            ("n0".to_owned(), false, 0, 1),
            ("n1".to_owned(), false, 0, 1),
            ("n2".to_owned(), false, 0, 0)
        ]
    );
    // One node cordoned (a new object), the others handed over unchanged, in another order.
    app.update(Action::Data(KindSnapshot::Nodes(vec![
        nodes[2].clone(),
        node("n1", true),
        nodes[0].clone(),
    ])));
    app.update(Action::Data(KindSnapshot::NodeModulesConfigs(vec![
        nmc("n0", true),
        nmc("n1", false),
        nmc("n2", false),
    ])));
    assert_eq!(
        summary(&app),
        [
            ("n0".to_owned(), false, 1, 0),
            ("n1".to_owned(), true, 0, 1),
            ("n2".to_owned(), false, 0, 1)
        ]
    );
    // A node gone and one new.
    app.update(Action::Data(KindSnapshot::Nodes(vec![
        nodes[0].clone(),
        node("n3", false),
    ])));
    assert_eq!(
        summary(&app),
        [
            ("n0".to_owned(), false, 1, 0),
            ("n3".to_owned(), false, 0, 0)
        ]
    );
}

#[test]
fn access_reviews_are_kept_per_context() {
    let mut app = app(false);
    let mut report = AccessReport {
        context: "test".to_owned(),
        ..Default::default()
    };
    report.allowed.insert(Capability::Rebuild, false);
    app.update(Action::Access(report));
    assert!(matches!(
        app.availability(Command::Rebuild),
        Availability::Unavailable(_)
    ));
    app.switch_context("other");
    assert!(!app.reviewed("other"), "a new context is asked");
    assert_eq!(
        app.availability(Command::Rebuild),
        Availability::Unavailable("Rebuild needs a Module or an image".to_owned()),
        "its data is not loaded yet"
    );
    app.switch_context("test");
    assert!(app.reviewed("test"), "a known context is not asked again");
    assert_eq!(app.access.allowed.get(&Capability::Rebuild), Some(&false));
}

/// An ImageCache `a/warm` with two lists: `nginx:1.27` on every node, `ghcr.io/acme/tool:2` on `gpu=true` nodes.
fn cache(failures: serde_json::Value) -> Arc<kmm_api::imagecache::ImageCache> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache",
            "metadata": {"name": "warm", "namespace": "a"},
            "spec": {"cacheSpec": [
                {"images": ["nginx:1.27"]},
                {"images": ["ghcr.io/acme/tool:2"], "nodeSelector": {"gpu": "true"}},
            ]},
            "status": {"status": "Failed", "reason": "ImageCacheCreate", "message": "some pulls failed",
                "startTime": "2025-03-01T11:00:00Z", "nodesTargeted": 3, "nodesCached": 1,
                "failures": failures},
        }))
        .expect("cache"),
    )
}

fn node(name: &str, gpu: bool, images: &[&str]) -> Arc<k8s_openapi::api::core::v1::Node> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"gpu": gpu.to_string(), "kubernetes.io/hostname": name}},
            "status": {"images": images.iter().map(|i| json!({"names": [i]})).collect::<Vec<_>>()},
        }))
        .expect("node"),
    )
}

fn puller(node: &str, image: &str, phase: &str) -> Arc<k8s_openapi::api::core::v1::Pod> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("warm-{node}"), "namespace": "a",
                "labels": {"app": "kubefledged", "imagecache": "warm"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{"name": "imagepuller", "image": image}]},
            "status": {"phase": phase},
        }))
        .expect("pod"),
    )
}

/// Three nodes: `n1` (GPU) holds nginx under its full name and pulls the tool; `n2` (GPU) failed nginx and lacks
/// the tool; `n3` holds `nginx:1.2`, which is not `nginx:1.27`, and is not meant to get the tool.
fn cache_app(readonly: bool) -> App {
    let mut app = app(readonly);
    app.update(Action::Data(KindSnapshot::Nodes(vec![
        node("n1", true, &["docker.io/library/nginx:1.27"]),
        node("n2", true, &[]),
        node("n3", false, &["docker.io/library/nginx:1.2"]),
    ])));
    app.update(Action::Data(KindSnapshot::Pods(vec![puller(
        "n1",
        "ghcr.io/acme/tool:2",
        "Running",
    )])));
    app.update(Action::Data(KindSnapshot::ImageCaches(vec![cache(json!({
        "nginx:1.27": [{"node": "n2", "reason": "ErrImagePull", "message": "registry unreachable"}],
    }))])));
    app
}

fn open_matrix(app: &mut App) {
    typed(app, ":caches");
    press(app, KeyCode::Enter);
    press(app, KeyCode::Enter);
}

#[test]
fn caches_are_a_root_view_and_enter_opens_the_matrix() {
    let mut app = cache_app(false);
    typed(&mut app, ":shims");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view(), &View::Caches, "tab reaches the Caches pane");
    assert_eq!(app.completions("ca"), ["caches"]);
    let row = &app.rows.caches[0];
    assert_eq!((row.name.as_str(), row.images), ("warm", 2));
    assert_eq!((row.cached, row.targeted), (1, 3));
    assert_eq!(row.state, "Failed");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.view(),
        &View::CacheDetail(Target::namespaced(Kind::ImageCache, "a", "warm"))
    );
    assert_eq!(
        app.list(),
        kmm_tui::tui::app::ListId::Coverage,
        "the matrix has the focus"
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Caches);
}

#[test]
fn the_matrix_reads_node_images_puller_pods_and_failures() {
    use kmm_tui::tui::view::cache_detail::CellState::{
        Cached, Failed, Missing, NotWanted, Pulling,
    };
    let mut app = cache_app(false);
    open_matrix(&mut app);
    let detail = app.caches.detail.as_ref().expect("the matrix");
    let cells: Vec<(&str, Vec<_>)> = detail
        .nodes
        .iter()
        .map(|row| (row.node.as_str(), row.cells.clone()))
        .collect();
    assert_eq!(
        cells,
        [
            ("n1", vec![Cached, Pulling]),
            ("n2", vec![Failed, Missing]),
            ("n3", vec![Missing, NotWanted]),
        ]
    );
    let failed = detail.nodes[1].note(0).and_then(|n| n.why.clone());
    assert_eq!(
        failed.as_deref(),
        Some("ErrImagePull: registry unreachable")
    );
    let pulling = detail.nodes[0].note(1).and_then(|n| n.pod.clone());
    assert_eq!(pulling.as_deref(), Some("warm-n1"));
    let summary: Vec<_> = detail
        .images
        .iter()
        .map(|i| (i.wanted, i.cached, i.pulling, i.failed, i.missing))
        .collect();
    assert_eq!(summary, [(3, 1, 0, 1, 1), (2, 0, 1, 0, 1)]);
    // The Nodes pane counts, per node, the caches holding every image meant for it.
    let nodes: Vec<_> = app
        .rows
        .nodes
        .iter()
        .map(|n| (n.caches_complete, n.caches_wanted))
        .collect();
    assert_eq!(nodes, [(0, 1), (0, 1), (0, 1)]);
}

#[test]
fn a_cell_turns_cached_when_its_node_reports_the_image() {
    use kmm_tui::tui::view::cache_detail::CellState;
    let mut app = cache_app(false);
    open_matrix(&mut app);
    app.update(Action::Data(KindSnapshot::Nodes(vec![
        node(
            "n1",
            true,
            &["docker.io/library/nginx:1.27", "ghcr.io/acme/tool:2"],
        ),
        node("n2", true, &[]),
        node("n3", false, &["nginx:1.27"]),
    ])));
    let detail = app.caches.detail.as_ref().expect("the matrix");
    assert_eq!(
        detail.nodes[0].cells,
        [CellState::Cached, CellState::Cached]
    );
    assert_eq!(
        detail.nodes[2].cells[0],
        CellState::Cached,
        "short names match too"
    );
    assert_eq!(app.rows.nodes[0].caches_complete, 1);
}

#[test]
fn p_in_the_matrix_repulls_the_selected_cell() {
    let mut app = cache_app(false);
    open_matrix(&mut app);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('L'));
    press(&mut app, KeyCode::Char('P'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("P opens a confirmation: {}", status(&app));
    };
    assert_eq!(
        request.describe(),
        "Pull ghcr.io/acme/tool:2 again on node n2 (ImageCache a/warm)"
    );
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.requests,
        [Request::Write(WriteRequest::Repull {
            cache: Target::namespaced(Kind::ImageCache, "a", "warm"),
            image: Some("ghcr.io/acme/tool:2".to_owned()),
            node: Some("n2".to_owned()),
        })]
    );
    // The tool is not meant for n3: nothing to pull there.
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('P'));
    assert!(matches!(app.mode, Mode::Normal), "no dialog");
    assert!(
        status(&app).contains("not meant for node n3"),
        "{}",
        status(&app)
    );
    // H and left go back; the column stops at the first image.
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Char('H'));
    assert_eq!(
        app.selected_cell()
            .map(|(row, column)| (row.node.as_str(), column)),
        Some(("n3", 0))
    );
}

#[test]
fn p_repulls_an_image_everywhere_or_the_whole_cache_and_x_purges() {
    let cache_target = Target::namespaced(Kind::ImageCache, "a", "warm");
    let mut app = cache_app(false);
    open_matrix(&mut app);
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('P'));
    press(&mut app, KeyCode::Char('y'));
    press(&mut app, KeyCode::Char('X'));
    press(&mut app, KeyCode::Char('y'));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('P'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("P opens a confirmation in the list");
    };
    assert_eq!(
        request.describe(),
        "Refresh ImageCache a/warm: pull every image again on every node"
    );
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.requests,
        [
            Request::Write(WriteRequest::Repull {
                cache: cache_target.clone(),
                image: Some("ghcr.io/acme/tool:2".to_owned()),
                node: None,
            }),
            Request::Write(WriteRequest::Purge {
                cache: cache_target.clone()
            }),
            Request::Write(WriteRequest::Repull {
                cache: cache_target,
                image: None,
                node: None,
            }),
        ]
    );
}

#[test]
fn cache_writes_are_unavailable_when_read_only_or_forbidden_and_purge_only_applies_to_caches() {
    let mut app = cache_app(true);
    open_matrix(&mut app);
    assert!(matches!(
        app.availability(Command::Recheck),
        Availability::Unavailable(why) if why.contains("read-only")
    ));
    press(&mut app, KeyCode::Char('X'));
    assert!(matches!(app.mode, Mode::Normal), "no dialog");

    let mut app = cache_app(false);
    let mut report = AccessReport {
        context: "test".to_owned(),
        ..Default::default()
    };
    report.allowed.insert(Capability::CacheWork, false);
    app.update(Action::Access(report));
    assert!(!app.applies(Command::Purge), "no purge hint among Modules");
    assert!(matches!(
        app.availability(Command::Purge),
        Availability::Unavailable(_)
    ));
    open_matrix(&mut app);
    assert!(app.applies(Command::Purge) && !app.applies(Command::Rebuild));
    assert_eq!(app.hint_label(Command::Recheck), "Re-pull");
    assert!(matches!(
        app.availability(Command::Recheck),
        Availability::Unavailable(why) if why.contains("not permitted")
    ));
    press(&mut app, KeyCode::Char('P'));
    assert!(app.requests.is_empty());
}

#[test]
fn the_matrix_filter_keeps_nodes_by_name_or_by_a_cell_state() {
    let mut app = cache_app(false);
    open_matrix(&mut app);
    let shown = |app: &App| -> Vec<String> {
        let detail = app.caches.detail.as_ref().expect("the matrix");
        app.visible(kmm_tui::tui::app::ListId::Coverage)
            .iter()
            .map(|i| detail.nodes[*i].node.clone())
            .collect()
    };
    typed(&mut app, "/failed");
    press(&mut app, KeyCode::Enter);
    assert_eq!(shown(&app), ["n2"]);
    press(&mut app, KeyCode::Esc);
    typed(&mut app, "/missing");
    assert_eq!(shown(&app), ["n2", "n3"]);
    press(&mut app, KeyCode::Esc);
    typed(&mut app, "/n1");
    assert_eq!(shown(&app), ["n1"]);
}

/// A console fed the sample cluster with its ModuleDay0s.
fn day0_app(readonly: bool) -> App {
    let mut app = App::new(
        session(readonly),
        Theme::monochrome(),
        Keymap::default(),
        None,
    );
    let mut data = kmm_tui::tui::sample::sample(4, 40);
    kmm_tui::tui::sample::day0::add(&mut data);
    for snapshot in kmm_tui::tui::sample::snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    typed(&mut app, ":day0");
    press(&mut app, KeyCode::Enter);
    app
}

/// Select the Day-0 row named `name` with the filter.
fn select_day0(app: &mut App, name: &str) {
    press(app, KeyCode::Char('/'));
    typed(app, name);
    press(app, KeyCode::Enter);
}

#[test]
fn day0_is_a_root_view_with_pool_rollout_state_and_reason() {
    let mut app = day0_app(false);
    assert_eq!(app.view(), &View::Day0s);
    assert_eq!(app.completions("da"), ["day0"]);
    let rows: Vec<_> = app
        .rows
        .day0s
        .iter()
        .map(|r| (r.name.as_str(), r.pool_label(), r.state.label()))
        .collect();
    assert_eq!(
        rows,
        [
            ("99-gpu-kmod-os", "-", "Degraded"),
            ("99-infra-kmod-os", "infra", "Kept"),
            ("99-worker-kmod-os", "worker", "Progressing"),
        ]
    );
    let worker = &app.rows.day0s[2];
    let rollout = worker.rollout.expect("the worker pool's counts");
    assert_eq!(
        (rollout.machines, rollout.updated, rollout.ready),
        (40, 40, 39)
    );
    assert_eq!(worker.image, "registry.local/acme/rhcos-kmod:415.92");
    assert!(
        worker
            .why
            .as_deref()
            .unwrap_or_default()
            .starts_with("Building: ")
    );
    assert!(app.rows.day0s[1].awaits_upgrade_opt_in());
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view(), &View::Devices, "the devices follow Day-0");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view(), &View::Modules, "tab goes round the root views");
    press(&mut app, KeyCode::BackTab);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.view(), &View::Day0s);
}

#[test]
fn enter_opens_the_day0_detail_with_pool_nodes_image_pods_and_events() {
    let mut app = day0_app(false);
    select_day0(&mut app, "worker");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.view(),
        &View::Day0Detail(Target::namespaced(
            Kind::ModuleDay0,
            "openshift-kmm",
            "99-worker-kmod-os"
        ))
    );
    let detail = app.day0_detail.as_ref().expect("the detail");
    assert_eq!(detail.nodes.len(), 40, "every node of pool-00");
    let on_target = detail.nodes.iter().filter(|n| n.on_target()).count();
    assert_eq!(on_target, 12, "the nodes on kernel 1 run RHCOS 415 already");
    let before = &detail.nodes[0];
    assert_eq!(
        before.os_change(),
        "414.92.202312311229-0 (Plow) → 415.92.202402201450-0 (Plow)"
    );
    assert_eq!(before.kernel, "5.14.0-284.30.1.el9_2.x86_64");
    let roles: Vec<_> = detail
        .pods
        .iter()
        .map(|p| (p.role, p.phase.as_str()))
        .collect();
    assert_eq!(roles, [("Build", "Running"), ("Pull", "Failed")]);
    assert!(
        detail.image_stage.contains("generation 1, building"),
        "{}",
        detail.image_stage
    );
    let reasons: Vec<_> = detail.events.iter().map(|e| e.reason.as_str()).collect();
    for reason in ["ModuleDay0Created", "Building", "Started"] {
        assert!(
            reasons.contains(&reason),
            "{reason} missing from {reasons:?}"
        );
    }
    assert!(
        !reasons.contains(&"NoMachineConfigPool"),
        "another ModuleDay0's event"
    );
    assert!(detail.upgrade_note.is_none());
    assert_eq!(
        app.selected_object(),
        Some(Target::cluster(Kind::Node, &detail.nodes[0].node)),
        "the node section has the focus"
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Day0s);
    press(&mut app, KeyCode::Esc);
    select_day0(&mut app, "infra");
    press(&mut app, KeyCode::Enter);
    let note = app
        .day0_detail
        .as_ref()
        .and_then(|d| d.upgrade_note.clone());
    let note = note.expect("the opt-in explained");
    assert!(
        note.contains("clusterUpgradeTriggerNodeUpgrade: true"),
        "{note}"
    );
    assert!(note.contains("set osMapping.build too"), "{note}");
}

#[test]
fn rebuild_of_a_day0_image_asks_first_and_is_dimmed_without_image_work() {
    let mut app = day0_app(false);
    assert!(!app.applies(Command::Recheck) && app.applies(Command::Rebuild));
    select_day0(&mut app, "infra");
    assert!(matches!(
        app.availability(Command::Rebuild),
        Availability::Unavailable(why) if why.contains("no image work under way")
    ));
    press(&mut app, KeyCode::Char('R'));
    assert!(matches!(app.mode, Mode::Normal), "no dialog");
    press(&mut app, KeyCode::Esc);
    select_day0(&mut app, "worker");
    press(&mut app, KeyCode::Char('R'));
    let day0 = Target::namespaced(Kind::ModuleDay0, "openshift-kmm", "99-worker-kmod-os");
    assert!(
        matches!(&app.mode, Mode::Confirm(WriteRequest::RebuildDay0 { day0: t }) if *t == day0),
        "{:?}",
        app.mode
    );
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(
        app.requests,
        [Request::Write(WriteRequest::RebuildDay0 { day0 })]
    );

    let mut app = day0_app(true);
    select_day0(&mut app, "worker");
    assert!(matches!(
        app.availability(Command::Rebuild),
        Availability::Unavailable(why) if why.contains("read-only")
    ));
    let mut app = day0_app(false);
    let mut report = AccessReport {
        context: "test".to_owned(),
        ..Default::default()
    };
    report.allowed.insert(Capability::Rebuild, false);
    app.update(Action::Access(report));
    select_day0(&mut app, "worker");
    assert!(matches!(
        app.availability(Command::Rebuild),
        Availability::Unavailable(why) if why.contains("not permitted")
    ));
}

#[test]
fn fleet_opens_once_and_keeps_the_fleet_beneath_the_panes() {
    let mut app = app(false);
    typed(&mut app, ":fleet");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.views, [View::Fleet]);
    assert_eq!(
        app.requests,
        [Request::OpenFleet],
        "the fleet's tasks start"
    );
    app.requests.clear();
    typed(&mut app, ":modules");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.views,
        [View::Fleet, View::Modules],
        "esc leads back to the fleet"
    );
    typed(&mut app, ":fleet");
    press(&mut app, KeyCode::Enter);
    assert!(app.requests.is_empty(), "started once: {:?}", app.requests);
    assert_eq!(app.views, [View::Fleet]);
    app.fleet_contexts(&["test".to_owned(), "other".to_owned()]);
    assert_eq!(app.rows.fleet.len(), 2);
    // The console watches its context in full already: entering it needs no switch.
    let current = app
        .rows
        .fleet
        .iter()
        .position(|row| row.context == "test")
        .expect("a row for the open context");
    for _ in 0..current {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    assert!(app.requests.is_empty(), "{:?}", app.requests);
    assert_eq!(app.views, [View::Fleet, View::Modules]);
    assert!(
        app.applies(Command::Rebuild),
        "the panes' commands are back"
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Fleet);
    assert!(
        !app.applies(Command::Edit),
        "no object commands on the fleet"
    );
    assert!(
        matches!(
            app.availability(Command::Rebuild),
            Availability::Unavailable(_)
        ),
        "a rebuild on the fleet needs a hub's module"
    );
}
