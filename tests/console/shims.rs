//! The Shims pane's behaviour, driven through `App::update` as the event loop drives it: keys open the pane and a
//! Shim's detail, rollout commands ask for a confirmation that names them and then become write requests, `l`
//! asks for an installer's log, and commands that cannot run (nothing to approve, read-only, not permitted) are
//! refused before anything is asked.

use crate::support::{command, press, type_text};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use kmm_tui::tui::access::{AccessReport, Capability};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{
    App, Availability, DetailSection, EngineMode, Mode, Request, Session, View,
};
use kmm_tui::tui::data::{Kind, KindSnapshot};
use kmm_tui::tui::keymap::{Command, Keymap};
use kmm_tui::tui::sample::{self, sample, snapshots};
use kmm_tui::tui::target::Target;
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::view::shims::ShimState;
use kmm_tui::tui::writes::WriteRequest;

fn console(readonly: bool, keymap: Keymap) -> App {
    let session = Session {
        context: "test".to_owned(),
        contexts: vec!["test".to_owned()],
        embedded: true,
        engine: EngineMode::Foreground,
        readonly,
        engine_identity: None,
    };
    let mut app = App::new(session, Theme::monochrome(), keymap, None);
    app.pin_clock(sample::now());
    for snapshot in snapshots(&sample(2, 10)) {
        app.update(Action::Data(snapshot));
    }
    app
}

/// Select the Shim `name` in the Shims pane.
fn select_shim(app: &mut App, name: &str) {
    command(app, "shims");
    press(app, KeyCode::Char('/'));
    type_text(app, name);
    press(app, KeyCode::Enter);
}

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn shim(name: &str) -> Target {
    Target::cluster(Kind::Shim, name)
}

#[test]
fn the_shims_pane_is_a_root_view_reached_by_command_and_tab() {
    let mut app = console(false, Keymap::default());
    command(&mut app, "sh");
    assert_eq!(app.view(), &View::Shims);
    let names: Vec<&str> = app.rows.shims.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["broken-spin", "lunatic", "slight", "spin-v2", "wasmedge"]
    );
    let states: Vec<ShimState> = app.rows.shims.iter().map(|r| r.state).collect();
    assert_eq!(
        states,
        [
            ShimState::Degraded,
            ShimState::Complete,
            ShimState::Rolling,
            ShimState::AwaitingApproval,
            ShimState::Uninstalling
        ]
    );
    command(&mut app, "events");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view(), &View::Shims);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view(), &View::Caches, "the next root view");
}

#[test]
fn enter_opens_a_shims_detail_and_tab_moves_between_its_sections() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "spin-v2");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view(), &View::ShimDetail(shim("spin-v2")));
    assert_eq!(app.section, DetailSection::Nodes);
    let detail = app.shim.detail.as_ref().expect("the detail is built");
    assert_eq!(detail.nodes.len(), 10);
    assert_eq!(detail.node_states.get("Provisioned"), Some(&2));
    assert_eq!(detail.nodes[2].batch, Some(2));
    // The batch's approval, start and end.
    assert_eq!(detail.events.len(), 3, "{:?}", detail.events);
    assert_eq!(
        app.selected_object(),
        Some(Target::cluster(Kind::Node, "worker-0000"))
    );
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.section, DetailSection::Events);
    assert_eq!(app.selected_object(), Some(shim("spin-v2")));
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.section, DetailSection::Nodes);
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view(), &View::Shims);
}

#[test]
fn approve_names_the_waiting_batch_and_requests_the_write_on_y() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "spin-v2");
    press(&mut app, KeyCode::Char('A'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("A asks first: {:?}", app.mode);
    };
    let expected = WriteRequest::ApproveBatch {
        shim: shim("spin-v2"),
        batch: 2,
    };
    assert_eq!(request, &expected);
    assert_eq!(request.describe(), "Approve batch 2 of Shim spin-v2");
    assert!(app.requests.is_empty(), "nothing is sent before y");
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.requests, [Request::Write(expected)]);

    // From the detail as well; n cancels.
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "spin-v2");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('A'));
    assert!(matches!(app.mode, Mode::Confirm(_)));
    press(&mut app, KeyCode::Char('n'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(app.requests.is_empty());
}

#[test]
fn approve_is_refused_where_nothing_waits_for_approval() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "lunatic");
    assert!(matches!(
        app.availability(Command::Approve),
        Availability::Unavailable(why) if why.contains("waits for no approval")
    ));
    press(&mut app, KeyCode::Char('A'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(
        status(&app).contains("lunatic waits for no approval"),
        "{}",
        status(&app)
    );
    assert!(app.requests.is_empty());
}

#[test]
fn pause_and_retry_become_their_writes() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "slight");
    press(&mut app, KeyCode::Char('p'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("p asks first");
    };
    assert_eq!(
        request,
        &WriteRequest::SetPaused {
            shim: shim("slight"),
            paused: true
        }
    );
    assert_eq!(request.describe(), "Pause the rollout of Shim slight");

    // Once the spec says paused, the Shim is Paused and p resumes it.
    press(&mut app, KeyCode::Char('n'));
    let shims: Vec<_> = app
        .data
        .shims
        .iter()
        .map(|shim| {
            let mut shim = shim.as_ref().clone();
            if let Some(rolling) = shim.spec.rollout_strategy.rolling.as_mut() {
                rolling.paused = shim.metadata.name.as_deref() == Some("slight");
            }
            std::sync::Arc::new(shim)
        })
        .collect();
    app.update(Action::Data(KindSnapshot::Shims(shims)));
    assert_eq!(
        app.selected_shim().map(|s| s.state),
        Some(ShimState::Paused)
    );
    press(&mut app, KeyCode::Char('p'));
    assert!(matches!(
        &app.mode,
        Mode::Confirm(request @ WriteRequest::SetPaused { paused: false, .. })
            if request.describe() == "Resume the rollout of Shim slight"
    ));

    // Retry from the list: every failed node; from the failed node's row: that node.
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "broken-spin");
    press(&mut app, KeyCode::Char('r'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("r asks first");
    };
    assert_eq!(
        request.describe(),
        "Retry Shim broken-spin on every failed node"
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('r'));
    let Mode::Confirm(request) = &app.mode else {
        panic!("r asks first");
    };
    assert_eq!(
        request,
        &WriteRequest::RetryNodes {
            shim: shim("broken-spin"),
            nodes: vec!["worker-0002".to_owned()]
        }
    );

    // A Shim without failures has nothing to retry.
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "lunatic");
    press(&mut app, KeyCode::Char('r'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(status(&app).contains("no failed node"), "{}", status(&app));
}

#[test]
fn l_reads_the_selected_nodes_installer_log() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "broken-spin");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('l'));
    let pod = Target::namespaced(Kind::Pod, "kube-system", "worker-0002-broken-spin-install");
    assert_eq!(app.requests, [Request::PodLog(pod.clone())]);
    assert_eq!(app.view(), &View::Logs(pod.clone()));
    assert!(app.shim.log.is_none(), "nothing read yet");

    // A log of another pod is dropped; this pod's is shown, scrolled to its end.
    let other = Target::namespaced(Kind::Pod, "kube-system", "elsewhere");
    app.update(Action::PodLog(other, Ok(vec!["not this".to_owned()])));
    assert!(app.shim.log.is_none());
    let lines: Vec<String> = (1..=100).map(|n| format!("line {n}")).collect();
    app.update(Action::PodLog(pod.clone(), Ok(lines)));
    assert_eq!(app.selection(kmm_tui::tui::app::ListId::Logs).index, 99);

    // An error is shown, never panicked on.
    app.update(Action::PodLog(pod, Err("pods \"x\" not found".to_owned())));
    assert!(matches!(&app.shim.log, Some(Err(why)) if why.contains("not found")));
    press(&mut app, KeyCode::Esc);
    assert!(matches!(app.view(), View::ShimDetail(_)));
    assert!(app.shim.log.is_none());

    // A node with no installer pod has no log to read.
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "spin-v2");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('l'));
    assert!(app.requests.is_empty());
    assert!(
        status(&app).contains("No installer pod on worker-0002"),
        "{}",
        status(&app)
    );
}

#[test]
fn read_only_and_forbidden_rollout_commands_are_unavailable() {
    let mut app = console(true, Keymap::default());
    select_shim(&mut app, "spin-v2");
    assert!(matches!(
        app.availability(Command::Approve),
        Availability::Unavailable(why) if why.contains("read-only")
    ));
    press(&mut app, KeyCode::Char('A'));
    assert!(matches!(app.mode, Mode::Normal));

    let mut app = console(false, Keymap::default());
    let mut report = AccessReport {
        context: "test".to_owned(),
        ..AccessReport::default()
    };
    report.allowed.insert(Capability::SteerShim, false);
    app.update(Action::Access(report));
    select_shim(&mut app, "spin-v2");
    for command in [Command::Approve, Command::PauseResume] {
        assert!(matches!(
            app.availability(command),
            Availability::Unavailable(why) if why.contains("not permitted")
        ));
    }
    press(&mut app, KeyCode::Char('p'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(app.requests.is_empty());
}

#[test]
fn rollout_keys_show_only_where_they_apply_and_can_be_remapped() {
    let app = console(false, Keymap::default());
    assert_eq!(app.view(), &View::Modules);
    assert!(!app.applies(Command::Approve));
    assert!(app.applies(Command::Rebuild));

    let (keymap, warnings) = Keymap::from_toml("[keys]\napprove = \"ctrl-a\"\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut app = console(false, keymap);
    select_shim(&mut app, "spin-v2");
    assert!(app.applies(Command::Approve));
    assert!(!app.applies(Command::Rebuild));
    press(&mut app, KeyCode::Char('A'));
    assert!(matches!(app.mode, Mode::Normal), "A is unbound now");
    app.update(Action::Terminal(Event::Key(KeyEvent::new(
        KeyCode::Char('a'),
        KeyModifiers::CONTROL,
    ))));
    assert!(matches!(
        &app.mode,
        Mode::Confirm(WriteRequest::ApproveBatch { batch: 2, .. })
    ));
}

#[test]
fn the_hint_bar_offers_only_the_keys_that_act_on_the_pane() {
    let mut app = console(false, Keymap::default());
    for (pane, absent) in [
        ("nodes", &[Command::Rebuild, Command::Recheck][..]),
        ("day0", &[Command::Recheck][..]),
        ("engine", &[Command::Rebuild, Command::Recheck][..]),
        (
            "events",
            &[Command::Rebuild, Command::Recheck, Command::Yaml][..],
        ),
    ] {
        command(&mut app, pane);
        for command in absent {
            assert!(!app.applies(*command), ":{pane} offers {command}");
        }
    }
    command(&mut app, "modules");
    assert!(app.applies(Command::Rebuild) && app.applies(Command::Recheck));
}

#[test]
fn a_footer_message_clears_when_the_pane_changes() {
    let mut app = console(false, Keymap::default());
    select_shim(&mut app, "lunatic");
    press(&mut app, KeyCode::Char('A'));
    assert!(
        status(&app).contains("waits for no approval"),
        "{}",
        status(&app)
    );
    // Moving within the pane keeps it.
    press(&mut app, KeyCode::Char('j'));
    assert!(
        status(&app).contains("waits for no approval"),
        "{}",
        status(&app)
    );
    command(&mut app, "caches");
    assert_eq!(status(&app), "");
    // A message said on the new pane shows there.
    command(&mut app, "ns kmm-net");
    assert_eq!(status(&app), "Namespace kmm-net");
}
