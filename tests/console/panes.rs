//! Every pane of the console drawn on fixed data at 120x40 and 80x24, compared with reviewed text snapshots, plus
//! the states around them: no data yet, a failing watch, an object that disappears, and 200 Modules over 5,000
//! nodes. The console is driven only through `App::update`, as the terminal and the watches drive it.

use crate::support::{command, press, screen, type_text};
use crossterm::event::{Event, KeyCode};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, DetailSection, EngineMode, ListId, Mode, Request, Session, View};
use kmm_tui::tui::data::{FeedState, Kind, KindSnapshot};
use kmm_tui::tui::fleet::reach::{Reach, Why};
use kmm_tui::tui::fleet::state::FleetChange;
use kmm_tui::tui::keymap::Keymap;
use kmm_tui::tui::sample::{self, sample, snapshots};
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::ui;
use kmm_tui::tui::view::consequences::consequences;
use kmm_tui::tui::view::module_detail::NodeState;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The two sizes every pane is drawn at.
const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

/// A console with no data, at `size`, its clock pinned to the sample's.
fn empty_console(size: (u16, u16)) -> App {
    let session = Session {
        context: "snapshot".to_owned(),
        contexts: vec!["snapshot".to_owned(), "staging".to_owned()],
        embedded: true,
        engine: EngineMode::Foreground,
        readonly: false,
        engine_identity: Some("snapshot-engine".to_owned()),
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    app.pin_clock(sample::now());
    app.update(Action::EngineLease(Some(sample::engine_lease(
        "snapshot-engine",
    ))));
    app.update(Action::Terminal(Event::Resize(size.0, size.1)));
    app
}

/// A console at `size` fed the sample of `modules` Modules over `nodes` nodes.
fn console(size: (u16, u16), modules: usize, nodes: usize) -> App {
    let mut app = empty_console(size);
    for snapshot in snapshots(&sample(modules, nodes)) {
        app.update(Action::Data(snapshot));
    }
    app
}

/// The standard console of the pane snapshots: 12 Modules over 40 nodes.
fn standard(size: (u16, u16)) -> App {
    console(size, 12, 40)
}

/// Open the detail of the Module whose name contains `name`.
fn open_detail(app: &mut App, name: &str) {
    command(app, "modules");
    press(app, KeyCode::Char('/'));
    type_text(app, name);
    press(app, KeyCode::Enter);
    press(app, KeyCode::Enter);
}

/// Answer the open YAML view's request with its Module as the sample cluster has it, as the event loop does with
/// the object the API server sends.
fn arrive_yaml(app: &mut App) {
    let View::Yaml(target) = app.view().clone() else {
        panic!("the YAML view is open: {:?}", app.view());
    };
    assert!(
        app.requests
            .contains(&Request::Follow(Some(target.clone())))
    );
    let module = app
        .data
        .module(
            target.namespace.as_deref().unwrap_or_default(),
            &target.name,
        )
        .expect("the sample Module");
    let object = serde_json::to_value(module.as_ref()).expect("json");
    app.update(Action::Object(target, Ok(Some(object))));
}

/// Compare the screen with the reviewed snapshot `name` (the size is appended).
fn check(name: &str, app: &App) {
    let (width, height) = app.size;
    let text = screen(app);
    insta::with_settings!({
        snapshot_path => "snapshots/panes",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), text);
    });
}

#[test]
fn modules_pane() {
    for size in SIZES {
        check("modules", &standard(size));
    }
}

#[test]
fn detail_pane() {
    for size in SIZES {
        let mut app = standard(size);
        open_detail(&mut app, "smartnic");
        assert!(
            matches!(app.view(), View::ModuleDetail(_)),
            "{:?}",
            app.view()
        );
        check("detail_loading", &app);
        let mut app = standard(size);
        open_detail(&mut app, "nvme-tuning");
        press(&mut app, KeyCode::Tab);
        check("detail_building", &app);
    }
}

#[test]
fn images_pane() {
    for size in SIZES {
        let mut app = standard(size);
        command(&mut app, "images");
        check("images", &app);
    }
}

#[test]
fn nodes_pane() {
    for size in SIZES {
        let mut app = standard(size);
        command(&mut app, "nodes");
        check("nodes", &app);
    }
}

/// The standard console with its first Module running a device plugin: meant for the uncordoned nodes that loaded
/// the module, and ready on all of them but the first, where it is still starting.
fn with_device_plugin(size: (u16, u16)) -> App {
    let mut data = sample(12, 40);
    let module = std::sync::Arc::make_mut(&mut data.modules[0]);
    let (namespace, name) = (
        module.metadata.namespace.clone().unwrap_or_default(),
        module.metadata.name.clone().unwrap_or_default(),
    );
    module.spec.device_plugin = Some(
        serde_json::from_value(serde_json::json!({"container": {"image": "quay.io/acme/dp:1.0"}}))
            .expect("a device plugin"),
    );
    let loaded_on: Vec<String> = data
        .nmcs
        .iter()
        .filter(|nmc| {
            nmc.status.as_ref().is_some_and(|s| {
                s.modules
                    .iter()
                    .any(|m| m.name == name && m.namespace == namespace)
            })
        })
        .filter_map(|nmc| nmc.metadata.name.clone())
        .collect();
    assert!(loaded_on.len() > 1, "the module is loaded on several nodes");
    let mut targets = 0;
    for node in data.nodes.iter_mut() {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
        if cordoned || !loaded_on.contains(&node_name) {
            continue;
        }
        let labels = std::sync::Arc::make_mut(node)
            .metadata
            .labels
            .get_or_insert_with(Default::default);
        labels.insert(
            kmm_api::kmm::labels::device_plugin_target_label(&namespace, &name),
            String::new(),
        );
        if targets > 0 {
            labels.insert(
                kmm_api::kmm::labels::device_plugin_ready_label(&namespace, &name),
                String::new(),
            );
        }
        targets += 1;
    }
    let module = std::sync::Arc::make_mut(&mut data.modules[0]);
    module
        .status
        .get_or_insert_with(Default::default)
        .device_plugin = Some(kmm_api::kmm::DaemonSetCounts {
        nodes_matching_selector_number: targets,
        desired_number: targets,
        available_number: targets - 1,
    });
    let mut app = empty_console(size);
    for snapshot in snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    app
}

#[test]
fn device_plugin_readiness_in_the_modules_and_nodes_panes() {
    for size in SIZES {
        let mut app = with_device_plugin(size);
        check("device_plugin_modules", &app);
        command(&mut app, "nodes");
        check("device_plugin_nodes", &app);
        let mut app = with_device_plugin(size);
        open_detail(&mut app, "acme-accel");
        check("device_plugin_detail", &app);
    }
}

#[test]
fn events_pane() {
    for size in SIZES {
        let mut app = standard(size);
        command(&mut app, "events");
        check("events", &app);
    }
}

#[test]
fn yaml_view() {
    for size in SIZES {
        let mut app = standard(size);
        press(&mut app, KeyCode::Char('y'));
        arrive_yaml(&mut app);
        check("yaml_module", &app);
    }
}

#[test]
fn help_view() {
    for size in SIZES {
        let mut app = standard(size);
        press(&mut app, KeyCode::Char('?'));
        check("help", &app);
    }
}

#[test]
fn help_lists_every_prompt_command_and_the_action_names_of_keymap_files() {
    let mut app = standard((120, 200));
    press(&mut app, KeyCode::Char('?'));
    let text = screen(&app);
    for command in &kmm_tui::tui::prompt::PROMPT_COMMANDS {
        assert!(
            text.contains(&command.usage()),
            "{} missing:\n{text}",
            command.usage()
        );
    }
    for command in kmm_tui::tui::keymap::Command::ALL {
        assert!(
            text.contains(command.as_str()),
            "{command} missing:\n{text}"
        );
    }
    assert!(
        text.contains("A keymap file binds keys by the names"),
        "{text}"
    );
}

#[test]
fn command_prompt_with_completion() {
    for size in SIZES {
        let mut app = standard(size);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "no");
        assert_eq!(app.completions("no"), ["nodes"]);
        check("command_prompt", &app);
    }
}

#[test]
fn filter_prompt() {
    for size in SIZES {
        let mut app = standard(size);
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "nvme");
        assert!(matches!(app.mode, Mode::Filter(_)));
        check("filter_prompt", &app);
    }
}

#[test]
fn confirm_dialog() {
    for size in SIZES {
        let mut app = standard(size);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('R'));
        let Mode::Confirm(request) = &app.mode else {
            panic!("a confirmation");
        };
        // The dialog names the images the rebuild checks again.
        let details = consequences(&app.data, request);
        assert_eq!(details.len(), 1, "{details:?}");
        assert!(details[0].contains("(kernel "), "{details:?}");
        check("confirm_rebuild", &app);
    }
}

#[test]
fn empty_states() {
    for size in SIZES {
        check("loading", &empty_console(size));
        let mut app = console(size, 0, 0);
        check("empty_modules", &app);
        command(&mut app, "nodes");
        check("empty_nodes", &app);
        command(&mut app, "events");
        check("empty_events", &app);
    }
}

#[test]
fn error_states() {
    for size in SIZES {
        let mut app = standard(size);
        app.update(Action::Feed(
            Kind::Pod,
            FeedState::Failing(Why {
                word: "forbidden",
                detail: r#"forbidden: pods is forbidden: User "dev" cannot watch resource "pods""#
                    .to_owned(),
            }),
        ));
        let text = screen(&app);
        assert!(
            text.lines().next().is_some_and(|l| l.contains("Pod")),
            "{text}"
        );
        check("feed_failing", &app);

        // A cluster that cannot be reached says so in the header and where its lists would be.
        let mut app = console(size, 0, 0);
        for kind in Kind::ALL {
            app.update(Action::Feed(
                kind,
                FeedState::Failing(Why {
                    word: "refused",
                    detail: "connection refused at 10.0.0.1:6443".to_owned(),
                }),
            ));
        }
        check("cluster_unreachable", &app);

        let mut app = standard(size);
        open_detail(&mut app, "smartnic");
        let View::ModuleDetail(target) = app.view().clone() else {
            panic!("the detail is open: {:?}", app.view());
        };
        let without: Vec<_> = app
            .data
            .modules
            .iter()
            .filter(|m| m.metadata.name.as_deref() != Some(target.name.as_str()))
            .cloned()
            .collect();
        app.update(Action::Data(KindSnapshot::Modules(without.clone())));
        assert!(app.module_detail.is_none());
        check("detail_gone", &app);

        let mut app = standard(size);
        open_detail(&mut app, "smartnic");
        press(&mut app, KeyCode::Char('y'));
        arrive_yaml(&mut app);
        app.update(Action::Data(KindSnapshot::Modules(without)));
        let View::Yaml(shown) = app.view().clone() else {
            panic!("the YAML view is open: {:?}", app.view());
        };
        app.update(Action::Object(shown, Ok(None)));
        assert!(matches!(app.yaml, Some(Err(_))), "{:?}", app.yaml);
        check("yaml_gone", &app);
    }
}

#[test]
fn five_thousand_nodes() {
    let mut app = console((120, 40), 200, 5000);
    assert_eq!(app.rows.nodes.len(), 5000);
    assert_eq!(app.rows.modules.len(), 200);
    check("large_modules", &app);
    command(&mut app, "nodes");
    check("large_nodes", &app);
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.selection(ListId::Nodes).index, 4999);
    assert!(screen(&app).contains("worker-4999"));
    app.update(Action::Terminal(Event::Resize(80, 24)));
    press(&mut app, KeyCode::Char('g'));
    check("large_nodes", &app);
    command(&mut app, "modules");
    check("large_modules", &app);
    open_detail(&mut app, "smartnic-001");
    let detail = app
        .module_detail
        .as_ref()
        .expect("detail of a large Module");
    assert_eq!(detail.nodes.len(), 100);
    check("large_detail", &app);
}

#[test]
fn selection_moves_and_names_the_selected_object() {
    let mut app = standard((120, 40));
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(app.selection(ListId::Modules).index, 2);
    let third = &app.rows.modules[app.visible(ListId::Modules)[2]];
    let selected = app.selected_object().expect("a Module is selected");
    assert_eq!(selected.name, third.name);
    press(&mut app, KeyCode::Char('k'));
    assert_eq!(app.selection(ListId::Modules).index, 1);
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.selection(ListId::Modules).index, 11);
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(
        app.selection(ListId::Modules).index,
        11,
        "stays on the last row"
    );
}

#[test]
fn the_filter_keeps_only_matching_rows() {
    let mut app = standard((120, 40));
    let all = app.visible(ListId::Modules).len();
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "nvme");
    let kept = app.visible(ListId::Modules).to_vec();
    assert!(
        !kept.is_empty() && kept.len() < all,
        "{} of {all}",
        kept.len()
    );
    assert!(
        kept.iter()
            .all(|i| app.rows.modules[*i].name.contains("nvme"))
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.visible(ListId::Modules).len(), all);
}

#[test]
fn the_detail_explains_every_node_the_module_matches() {
    let mut app = standard((120, 40));
    open_detail(&mut app, "nvme-tuning");
    let detail = app.module_detail.as_ref().expect("detail");
    assert_eq!(detail.nodes.len(), 40, "every node matches the selector");
    let state = |node: &str| {
        detail
            .nodes
            .iter()
            .find(|row| row.node == node)
            .map(|row| (row.state, row.why.clone()))
    };
    assert_eq!(state("worker-0000").map(|s| s.0), Some(NodeState::Loaded));
    let (waiting, why) = state("worker-0006").expect("a second-kernel node");
    assert_eq!(waiting, NodeState::WaitingForImage);
    assert!(why.contains("NeedsBuilding (build Running)"), "{why}");
    let (unmapped, why) = state("worker-0009").expect("a third-kernel node");
    assert_eq!(unmapped, NodeState::NoMapping);
    assert_eq!(why, "no kernel mapping matches 6.1.0-18-amd64");
    let (tainted, why) = state("worker-0007").expect("a tainted node");
    assert_eq!(tainted, NodeState::Unschedulable);
    assert!(why.contains("maintenance=true:NoSchedule"), "{why}");
    assert_eq!(state("worker-0013").map(|s| s.0), Some(NodeState::NotReady));
    assert!(
        detail.events.iter().any(|e| e.reason == "BuildRequested"),
        "the detail lists the events of the Module's images: {:?}",
        detail.events
    );
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.section, DetailSection::Nodes);
}

#[test]
fn the_detail_shows_loading_and_unloading_with_their_workers() {
    let mut app = standard((120, 40));
    open_detail(&mut app, "smartnic");
    let detail = app.module_detail.as_ref().expect("detail");
    let row = |node: &str| {
        detail
            .nodes
            .iter()
            .find(|row| row.node == node)
            .expect(node)
    };
    assert_eq!(row("worker-0014").state, NodeState::Loading);
    assert_eq!(row("worker-0014").why, "load worker Running");
    assert_eq!(row("worker-0007").state, NodeState::Unloading);
    assert!(row("worker-0007").why.ends_with("unload worker Running"));
    assert!(
        detail
            .events
            .iter()
            .any(|e| e.reason == "ModuleLoaded" && e.object.starts_with("Node ")),
        "node events naming the Module are listed: {:?}",
        detail.events
    );
}

/// Open the detail of the Shim `name` from the Shims pane.
fn open_shim(app: &mut App, name: &str) {
    command(app, "shims");
    press(app, KeyCode::Char('/'));
    type_text(app, name);
    press(app, KeyCode::Enter);
    press(app, KeyCode::Enter);
}

#[test]
fn shims_pane() {
    for size in SIZES {
        let mut app = standard(size);
        command(&mut app, "shims");
        assert_eq!(app.view(), &View::Shims);
        let text = screen(&app);
        for state in [
            "Complete",
            "Rolling",
            "AwaitingApproval",
            "Degraded",
            "Uninstalling",
        ] {
            assert!(text.contains(state), "{state} missing:\n{text}");
        }
        check("shims", &app);
    }
}

#[test]
fn shim_detail_pane() {
    for size in SIZES {
        let mut app = standard(size);
        open_shim(&mut app, "spin-v2");
        assert!(
            matches!(app.view(), View::ShimDetail(_)),
            "{:?}",
            app.view()
        );
        let detail = app.shim.detail.as_ref().expect("the detail of spin-v2");
        assert_eq!(detail.nodes.len(), 40);
        assert_eq!(detail.summary.awaiting_batch, Some(2));
        assert_eq!(
            detail.next_batch,
            Some((2, vec!["worker-0002".to_owned(), "worker-0003".to_owned()]))
        );
        let text = screen(&app);
        assert!(
            text.contains("batch 2 waits for approval: worker-0002, worker-0003"),
            "{text}"
        );
        assert!(text.contains("batch 1 by kmm-tui-console"), "{text}");
        // Every node gets the same archive: it is said once, and the table leaves its room to WHY.
        let artifact = &detail.nodes[0].artifact;
        assert_eq!(detail.shared_artifact.as_ref(), Some(artifact));
        assert!(!text.contains("ARTIFACT"), "{text}");
        if size.0 >= 120 {
            assert_eq!(text.matches(artifact.as_str()).count(), 1, "{text}");
        } else {
            assert!(text.contains(" archive "), "{text}");
        }
        check("shim_detail_awaiting", &app);

        let mut app = standard(size);
        open_shim(&mut app, "broken-spin");
        let text = screen(&app);
        assert!(text.contains("404 Not Found"), "{text}");
        check("shim_detail_failed", &app);
    }
}

#[test]
fn shim_approval_and_log_views() {
    for size in SIZES {
        let mut app = standard(size);
        open_shim(&mut app, "spin-v2");
        press(&mut app, KeyCode::Char('A'));
        assert!(matches!(app.mode, Mode::Confirm(_)));
        // The dialog says what the approval starts, where, and how the rollout stands.
        let Mode::Confirm(request) = &app.mode else {
            panic!("a confirmation");
        };
        assert_eq!(
            consequences(&app.data, request),
            [
                "Batch 2 of 20 installs on 2 nodes: worker-0002, worker-0003",
                "Batch 1 before it: 2 provisioned, 0 failed",
                "maxFailures 0: 0 failed so far, 0 more tolerated before the rollout stops",
            ]
        );
        check("confirm_approve", &app);

        let mut app = standard(size);
        open_shim(&mut app, "broken-spin");
        press(&mut app, KeyCode::Char('l'));
        let View::Logs(pod) = app.view().clone() else {
            panic!("the log view is open: {:?}", app.view());
        };
        let mut lines = vec!["── downloader ──".to_owned()];
        lines.extend((1..=40).map(|n| format!("attempt {n}: 404 Not Found")));
        lines.extend(["── provisioner ──".to_owned(), "(no output)".to_owned()]);
        app.update(Action::PodLog(pod, Ok(lines)));
        check("shim_log", &app);
    }
}
/// Open the coverage matrix of the sample cache `name`.
fn open_cache(app: &mut App, name: &str) {
    command(app, "caches");
    press(app, KeyCode::Char('/'));
    type_text(app, name);
    press(app, KeyCode::Enter);
    press(app, KeyCode::Enter);
    assert!(
        matches!(app.view(), View::CacheDetail(t) if t.name == name),
        "{:?}",
        app.view()
    );
}

#[test]
fn caches_pane() {
    for size in SIZES {
        let mut app = standard(size);
        command(&mut app, "caches");
        let text = screen(&app);
        for name in ["warm-ml", "warm-net", "warm-web"] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
        check("caches", &app);
    }
}

#[test]
fn coverage_matrix() {
    for size in SIZES {
        let mut app = standard(size);
        open_cache(&mut app, "warm-ml");
        // The node with a failed pull and its pod, on the image the registry lacks.
        press(&mut app, KeyCode::Char('L'));
        check("coverage_failed_cell", &app);
        // A GPU node whose image GC removed weights-base:7 (fourth image).
        let mut app = standard(size);
        open_cache(&mut app, "warm-ml");
        for _ in 0..3 {
            press(&mut app, KeyCode::Char('L'));
        }
        for _ in 0..8 {
            press(&mut app, KeyCode::Char('j'));
        }
        check("coverage_missing_cell", &app);
    }
}

#[test]
fn coverage_matrix_of_five_thousand_nodes() {
    let mut app = console((80, 24), 20, 5000);
    open_cache(&mut app, "warm-ml");
    let detail = app.caches.detail.as_ref().expect("the cache detail");
    assert_eq!(detail.nodes.len(), 5000);
    assert_eq!(detail.images.len(), 5);
    press(&mut app, KeyCode::Char('G'));
    press(&mut app, KeyCode::Char('L'));
    assert!(screen(&app).contains("worker-4999"));
    check("large_coverage", &app);
}

/// The standard console with the sample's ModuleDay0s.
fn day0_console(size: (u16, u16)) -> App {
    let mut data = sample(12, 40);
    sample::day0::add(&mut data);
    let mut app = empty_console(size);
    for snapshot in snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    app
}

fn open_day0(app: &mut App, name: &str) {
    command(app, "day0");
    press(app, KeyCode::Char('/'));
    type_text(app, name);
    press(app, KeyCode::Enter);
    press(app, KeyCode::Enter);
}

#[test]
fn day0_pane() {
    for size in SIZES {
        let mut app = day0_console(size);
        command(&mut app, "day0");
        assert_eq!(app.view(), &View::Day0s);
        let text = screen(&app);
        for state in ["Progressing", "Kept", "Degraded"] {
            assert!(text.contains(state), "{state} missing:\n{text}");
        }
        // At 80 columns the header is cut before the Day-0 counts, as it is before the Nodes count.
        if size.0 >= 120 {
            assert!(text.contains("D0 3 ✗1 ◐1 ·1"), "header:\n{text}");
        }
        check("day0", &app);
    }
}

/// The selected row's gauge keeps its colour on the selection's background, as every row's gauge does.
#[test]
fn a_selected_gauge_keeps_its_colour() {
    let mut app = day0_console((120, 40));
    app.theme = Theme::load("dark").expect("the dark theme").0;
    command(&mut app, "day0");
    // The first row has no pool, so no gauge; the second has one.
    press(&mut app, KeyCode::Char('j'));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test terminal");
    terminal
        .draw(|frame| ui::draw(frame, &app))
        .expect("draw on a test backend");
    let buffer = terminal.backend().buffer();
    let selection = app.theme.selection();
    let gauge: Vec<_> = (0..40)
        .flat_map(|y| (0..120).map(move |x| (x, y)))
        .filter_map(|position| buffer.cell(position))
        .filter(|cell| cell.bg == selection.bg.expect("a selection background"))
        .filter(|cell| ["█", "▒", "░"].contains(&cell.symbol()))
        .collect();
    assert!(!gauge.is_empty(), "the selected row has a gauge");
    assert!(
        gauge.iter().all(|cell| Some(cell.fg) != selection.fg),
        "the selected gauge is drawn in the selection's foreground: {gauge:?}"
    );
}

#[test]
fn day0_detail_pane() {
    for size in SIZES {
        let mut app = day0_console(size);
        open_day0(&mut app, "worker");
        assert!(
            matches!(app.view(), View::Day0Detail(_)),
            "{:?}",
            app.view()
        );
        let text = screen(&app);
        assert!(text.contains("worker-0000"), "{text}");
        assert!(text.contains("→"), "{text}");
        check("day0_detail_building", &app);

        let mut app = day0_console(size);
        open_day0(&mut app, "infra");
        assert!(screen(&app).contains("clusterUpgradeTriggerNodeUpgrade"));
        check("day0_detail_kept", &app);
    }
}

#[test]
fn day0_pane_names_what_blocks_a_hand_over() {
    for size in SIZES {
        let mut data = sample(12, 40);
        sample::day0::add_awaiting_hand_over(&mut data);
        let mut app = empty_console(size);
        for snapshot in snapshots(&data) {
            app.update(Action::Data(snapshot));
        }
        command(&mut app, "day0");
        let text = screen(&app);
        assert!(text.contains("99-edge-kmod-os"), "{text}");
        assert!(text.contains("Degraded"), "{text}");
        assert!(text.contains("NamespaceMissing"), "{text}");
        check("day0_hand_over_blocked", &app);
        // Enter shows the MachineConfig's events: there is no ModuleDay0 to open yet.
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.view(), &View::Events);
        let text = screen(&app);
        assert!(text.contains("NamespaceMissing"), "{text}");
        check("day0_hand_over_blocked_events", &app);
    }
}

/// The standard console with the sample's kernel upgrade plan.
fn preflight_console(size: (u16, u16)) -> App {
    let mut data = sample(12, 40);
    sample::preflight::add(&mut data);
    let mut app = empty_console(size);
    for snapshot in snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    app
}

#[test]
fn preflight_pane() {
    for size in SIZES {
        let mut app = preflight_console(size);
        command(&mut app, "preflight");
        assert_eq!(app.view(), &View::Preflight);
        let text = screen(&app);
        for word in ["Ready", "Builds", "Checking", "Not ready", "Waiting"] {
            assert!(text.contains(word), "{word} missing:\n{text}");
        }
        check("preflight", &app);
        // B asks first, naming the Module whose image it builds and pushes.
        press(&mut app, KeyCode::Char('B'));
        assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.status);
        check("preflight_build", &app);
    }
}

#[test]
fn preflight_pane_without_a_validation_offers_the_clusters_kernels() {
    let mut app = standard((120, 40));
    command(&mut app, "preflight");
    let kernels: Vec<&str> = app
        .preflight
        .pane
        .kernels
        .iter()
        .map(|k| k.kernel.as_str())
        .collect();
    assert_eq!(
        kernels,
        [
            "5.14.0-284.30.1.el9_2.x86_64",
            "5.14.0-362.8.1.el9_3.x86_64",
            "6.1.0-18-amd64"
        ]
    );
    check("preflight_empty", &app);
}

#[test]
fn preflight_pane_offers_the_kernels_of_the_cluster_s_os_images() {
    let mut app = preflight_console((120, 40));
    app.update(Action::OsImageKernels(Some(
        sample::preflight::os_image_kernels(),
    )));
    command(&mut app, "preflight");
    let row = |app: &App, kernel: &str| {
        app.preflight
            .pane
            .kernels
            .iter()
            .find(|row| row.kernel == kernel)
            .map(|row| row.known_from.clone())
    };
    assert_eq!(
        row(&app, sample::preflight::NEXT_OS_KERNEL).as_deref(),
        Some("OS image of MachineConfig 99-worker-next-os")
    );
    assert_eq!(
        row(&app, "5.14.0-362.8.1.el9_3.x86_64").as_deref(),
        Some("12 nodes run it, OS image of release 4.15.3, PreflightValidation preflight"),
        "one row per kernel, its sources joined"
    );
    assert_eq!(
        app.completions("preflight 5.14.0-4"),
        [format!("preflight {}", sample::preflight::NEXT_OS_KERNEL)]
    );
    check("preflight_os_images", &app);

    // A record the console cannot read is a note, not a crash.
    let mut unreadable = sample::preflight::os_image_kernels().as_ref().clone();
    unreadable.data = Some([("osImages.json".to_owned(), "{".to_owned())].into());
    app.update(Action::OsImageKernels(Some(unreadable.into())));
    assert!(row(&app, sample::preflight::NEXT_OS_KERNEL).is_none());
    assert!(
        app.preflight.pane.os_image_notes[0].contains("is not a list of OS images"),
        "{:?}",
        app.preflight.pane.os_image_notes
    );
}

/// A console opened on the sample fleet, at `size`.
fn fleet_console(size: (u16, u16)) -> App {
    let mut app = empty_console(size);
    let contexts = sample::fleet::CONTEXTS.map(str::to_owned);
    app.start_in_fleet(&contexts);
    for (context, change) in sample::fleet::changes() {
        app.update(Action::Fleet(context, change));
    }
    app
}

#[test]
fn fleet_view() {
    for size in SIZES {
        check("fleet", &fleet_console(size));
    }
}

#[test]
fn a_hubs_module_rebuilds_on_the_hub_naming_the_clusters_it_serves_and_enters_a_spoke() {
    let mut app = fleet_console((120, 40));
    press(&mut app, KeyCode::Tab);
    assert_eq!(
        app.list(),
        ListId::FleetModules,
        "tab moves to the hubs' modules"
    );
    let prod_east = app
        .rows
        .hub_modules
        .iter()
        .position(|row| row.cluster.as_deref() == Some("prod-east"))
        .expect("prod-east's row");
    assert_eq!(
        app.rows.hub_modules[prod_east].health,
        kmm_tui::tui::view::Health::Progressing,
        "38 of 40 nodes loaded is still under way"
    );
    for _ in 0..prod_east {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Char('R'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("R asks first: {:?}", app.mode);
    };
    let image = "registry.example.com/acme/qat-driver:5.14.0-427.13.1.el9_4.x86_64";
    assert_eq!(
        request.describe(),
        format!(
            "Rebuild image {image} of ManagedClusterModule qat-driver on its hub, used by clusters prod-east, staging"
        ),
        "the clusters sharing the image are named, edge-lab's newer kernel is not"
    );
    assert_eq!(request.context(), Some("dev"), "the write goes to the hub");
    check("fleet_rebuild_on_hub", &app);
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.requests,
        [Request::SwitchContext("prod-east".to_owned())],
        "enter opens the spoke's own panes"
    );
    // A row about a whole module selecting nothing has no image to name: every image is rebuilt on the hub.
    app.requests.clear();
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.rows.hub_modules[0].module, "ofed");
    press(&mut app, KeyCode::Char('R'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("R asks first: {:?}", app.mode);
    };
    assert_eq!(
        request.describe(),
        "Rebuild every image of ManagedClusterModule ofed on its hub, used by every cluster it selects"
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.list(), ListId::Fleet, "tab comes back to the clusters");
}

#[test]
fn the_fleet_puts_what_needs_a_person_first_and_enters_a_cluster() {
    let mut app = fleet_console((120, 40));
    let order: Vec<&str> = app.rows.fleet.iter().map(|r| r.context.as_str()).collect();
    assert_eq!(
        order,
        [
            "edge-lab",
            "prod-west",
            "qa",
            "prod-east",
            "staging",
            "ci",
            "dev"
        ],
        "unreachable first, then degraded, then connecting, then fine"
    );
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    // dev stops answering and moves to the top: the selection stays on prod-east.
    app.update(Action::Fleet(
        "dev".to_owned(),
        FleetChange::Reach(Reach::Unreachable(Why {
            word: "refused",
            detail: "Connection refused".to_owned(),
        })),
    ));
    assert_eq!(app.rows.fleet[0].context, "dev");
    assert_eq!(
        app.selected_cluster().map(|row| row.context.as_str()),
        Some("prod-east")
    );
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.requests,
        [Request::SwitchContext("prod-east".to_owned())]
    );
    app.switch_context("prod-east");
    assert_eq!(app.views, [View::Fleet, View::Modules]);
    press(&mut app, KeyCode::Tab);
    assert_eq!(
        app.views,
        [View::Fleet, View::Images],
        "tab keeps the fleet below"
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Fleet);
}
