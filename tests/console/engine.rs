//! The `:engine` view and moving the engine from the console, driven through `App::update` as the terminal and the
//! Lease watch drive it: what the view and header show, the hand-off and take-over keys behind `y`, what they ask
//! of the event loop, and the notice when nobody takes a handed-off Lease.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::support::{command, press, screen};
use crossterm::event::{Event, KeyCode};
use k8s_openapi::api::coordination::v1::Lease;
use kmm_engine::Family;
use kmm_engine::runtime::operators::{Installed, Upstream};
use kmm_tui::tui::action::{Action, EngineEvent};
use kmm_tui::tui::app::{App, Availability, EngineMode, EngineMove, Mode, Request, Session, View};
use kmm_tui::tui::keymap::{Command, Keymap};
use kmm_tui::tui::sample;
use kmm_tui::tui::theme::Theme;
use serde_json::json;

/// This console's engine identity.
const OWN: &str = "kmm-tui-console-4242";

/// The controller pod of the tests.
const POD: &str = "kmm-tui-controller-6d4b9-x7k2p";

fn console(size: (u16, u16), engine: EngineMode) -> App {
    let session = Session {
        context: "embedded".to_owned(),
        contexts: vec!["embedded".to_owned()],
        embedded: true,
        engine,
        readonly: false,
        engine_identity: Some(OWN.to_owned()),
    };
    let mut app = App::new(session, Theme::monochrome(), Keymap::default(), None);
    app.pin_clock(sample::now());
    app.update(Action::Terminal(Event::Resize(size.0, size.1)));
    app
}

/// The engine Lease held by `holder` (none: released), acquired 5 minutes and renewed 2 seconds before the sample's
/// clock, after `transitions` changes of hands, with a hand-off request naming `requested`.
fn lease(holder: Option<&str>, transitions: i32, requested: Option<&str>) -> Arc<Lease> {
    let now = sample::now();
    let ago = |seconds: i64| (now - jiff::SignedDuration::from_secs(seconds)).to_string();
    let annotations = requested
        .map(|to| json!({"kmm-tui.io/handoff-to": to}))
        .unwrap_or_else(|| json!({}));
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "kmm-tui-engine", "namespace": "kube-system", "annotations": annotations},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": ago(300),
                     "renewTime": ago(2), "leaseTransitions": transitions}
        }))
        .expect("a Lease"),
    )
}

fn status(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn upstream_kmm() -> BTreeMap<Family, Upstream> {
    [(
        Family::Kmm,
        Upstream {
            operator: "upstream KMM operator",
            evidence: "Lease kmm-operator-system/kmm.sigs.x-k8s.io held by kmm-operator-7f9"
                .to_owned(),
            deployment: Installed {
                namespace: "kmm-operator-system".to_owned(),
                name: "kmm-operator".to_owned(),
                uid: None,
            },
        },
    )]
    .into_iter()
    .collect()
}

fn check(name: &str, app: &App) {
    let (width, height) = app.size;
    let text = screen(app);
    insta::with_settings!({
        snapshot_path => "snapshots/engine",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(format!("{name}_{width}x{height}"), text);
    });
}

#[test]
fn the_engine_view_shows_the_holder_where_it_runs_and_who_acts() {
    for size in [(120, 40), (80, 24)] {
        let mut app = console(size, EngineMode::Foreground);
        app.update(Action::EngineLease(Some(lease(Some(OWN), 2, None))));
        app.update(Action::EngineLease(Some(lease(Some(POD), 3, None))));
        app.update(Action::Engine(EngineEvent::Upstream(upstream_kmm())));
        command(&mut app, "engine");
        assert_eq!(app.view(), &View::Engine);
        check("engine_in_cluster", &app);
        press(&mut app, KeyCode::Char('t'));
        check("engine_confirm_take_over", &app);
    }
}

#[test]
fn the_view_model_names_holder_place_times_and_candidates() {
    let mut app = console((120, 40), EngineMode::Foreground);
    app.update(Action::EngineLease(Some(lease(Some(OWN), 2, None))));
    app.update(Action::EngineLease(Some(lease(Some(POD), 3, Some(OWN)))));
    let view = app.engine_view();
    assert_eq!(view.holder, POD);
    assert_eq!(view.place, format!("in cluster (pod {POD})"));
    assert!(view.since.ends_with("(5m ago)"), "{}", view.since);
    assert!(view.renewed.ends_with("(2s ago)"), "{}", view.renewed);
    assert_eq!(view.transitions, "3");
    assert_eq!(
        view.request.as_deref(),
        Some(format!("the holder is asked to hand the Lease to {OWN}").as_str())
    );
    let seen: Vec<(&str, &str, bool)> = view
        .candidates
        .iter()
        .map(|c| (c.identity.as_str(), c.place.as_str(), c.holds))
        .collect();
    assert_eq!(
        seen,
        [
            (OWN, "this console", false),
            (POD, &*format!("in cluster (pod {POD})"), true)
        ]
    );
    assert!(
        view.families
            .iter()
            .all(|f| f.acts == format!("kmm-tui in cluster (pod {POD})"))
    );
}

#[test]
fn hand_off_asks_for_y_then_tells_the_engine_to_stand_aside() {
    let mut app = console((120, 40), EngineMode::Foreground);
    app.update(Action::EngineLease(Some(lease(Some(OWN), 0, None))));
    assert_eq!(app.engine_summary(), "engine: foreground");
    command(&mut app, "engine");
    press(&mut app, KeyCode::Char('h'));
    assert!(matches!(app.mode, Mode::ConfirmEngine(EngineMove::HandOff)));
    press(&mut app, KeyCode::Char('n'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(app.requests.is_empty(), "cancelled: nothing asked");

    press(&mut app, KeyCode::Char('h'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.requests, [Request::Engine(EngineMove::HandOff)]);
    assert!(status(&app).starts_with("Handing off"), "{}", status(&app));
    // The engine releases the Lease; the header says nobody acts until the controller takes it.
    app.update(Action::EngineLease(Some(lease(None, 0, None))));
    assert_eq!(app.engine_summary(), "engine: handed off (none acting)");
    app.update(Action::EngineLease(Some(lease(Some(POD), 1, None))));
    assert_eq!(
        app.engine_summary(),
        format!("engine: in cluster (pod {POD})")
    );
    assert_eq!(app.engine_badge(), "engine:cluster");
    assert!(status(&app).contains(POD), "{}", status(&app));
    assert_eq!(
        app.availability(Command::HandOff),
        Availability::Unavailable(
            "Already handed off; take-over brings the engine back".to_owned()
        )
    );
}

#[test]
fn take_over_asks_the_holder_and_the_header_returns_to_foreground() {
    let mut app = console((120, 40), EngineMode::Foreground);
    app.update(Action::EngineLease(Some(lease(Some(POD), 4, None))));
    command(&mut app, "engine");
    assert_eq!(app.availability(Command::TakeOver), Availability::Available);
    press(&mut app, KeyCode::Char('t'));
    assert!(matches!(
        app.mode,
        Mode::ConfirmEngine(EngineMove::TakeOver)
    ));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.requests, [Request::Engine(EngineMove::TakeOver)]);
    assert_eq!(
        status(&app),
        format!("Asked {POD} to hand the Lease to this console…")
    );
    app.update(Action::EngineLease(Some(lease(Some(OWN), 5, None))));
    assert_eq!(app.engine_summary(), "engine: foreground");
    assert_eq!(status(&app), "This console's engine holds the Lease again");
    assert_eq!(
        app.availability(Command::TakeOver),
        Availability::Unavailable("This console's engine holds the Lease already".to_owned())
    );
}

#[test]
fn a_hand_off_nobody_answers_is_reported_with_the_way_back() {
    let mut app = console((120, 40), EngineMode::Foreground);
    app.update(Action::EngineLease(Some(lease(Some(OWN), 0, None))));
    command(&mut app, "engine");
    press(&mut app, KeyCode::Char('h'));
    press(&mut app, KeyCode::Char('y'));
    app.update(Action::EngineLease(Some(lease(None, 0, None))));
    app.update(Action::Engine(EngineEvent::HandoffDeadline));
    assert!(
        status(&app).starts_with("Nobody took the engine Lease"),
        "{}",
        status(&app)
    );
    let notice = app.engine_view().notice.expect("the view says so");
    assert!(notice.contains("press t to take it back"), "{notice}");
    assert_eq!(app.availability(Command::TakeOver), Availability::Available);
    check("engine_unclaimed", &app);

    // Someone took it after all: the notice goes.
    app.update(Action::EngineLease(Some(lease(Some(POD), 1, None))));
    assert_eq!(app.engine_view().notice, None);
}

#[test]
fn the_keys_work_only_in_the_engine_view_and_not_without_an_engine() {
    let mut app = console((120, 40), EngineMode::Foreground);
    app.update(Action::EngineLease(Some(lease(Some(OWN), 0, None))));
    press(&mut app, KeyCode::Char('h'));
    assert!(matches!(app.mode, Mode::Normal));
    assert!(status(&app).contains(":engine"), "{}", status(&app));
    assert!(!app.applies(Command::HandOff), "no hint outside :engine");
    command(&mut app, "engine");
    assert!(app.applies(Command::HandOff));

    let mut off = console((120, 40), EngineMode::Off);
    off.update(Action::EngineLease(Some(lease(Some(POD), 0, None))));
    assert_eq!(
        off.engine_summary(),
        format!("engine: in cluster (pod {POD})")
    );
    command(&mut off, "engine");
    press(&mut off, KeyCode::Char('t'));
    assert!(matches!(off.mode, Mode::Normal));
    assert!(off.requests.is_empty());
}

#[test]
fn the_header_names_upstream_operators_that_act_on_a_family() {
    let mut app = console((120, 40), EngineMode::Off);
    app.update(Action::EngineLease(Some(lease(Some(POD), 0, None))));
    app.update(Action::Engine(EngineEvent::Upstream(upstream_kmm())));
    assert_eq!(
        app.engine_summary(),
        format!("engine: in cluster (pod {POD}); KMM: upstream KMM operator acts")
    );
    let kmm = &app.engine_view().families[0];
    assert_eq!(kmm.family, "KMM");
    assert!(
        kmm.acts.starts_with("upstream KMM operator (Lease "),
        "{}",
        kmm.acts
    );
}

/// `lease(holder)` carrying the activity `families` published by its holder over `window` seconds.
fn lease_with_activity(holder: &str, window: u64, families: serde_json::Value) -> Arc<Lease> {
    let mut lease = Arc::unwrap_or_clone(lease(Some(holder), 3, None));
    let activity = json!({"windowSeconds": window, "families": families}).to_string();
    lease
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(kmm_api::lease::ACTIVITY_ANNOTATION.to_owned(), activity);
    Arc::new(lease)
}

#[test]
fn the_engine_view_shows_what_the_acting_engine_did_lately_and_a_stall() {
    let mut app = console((120, 40), EngineMode::Off);
    app.update(Action::EngineLease(Some(lease_with_activity(
        POD,
        300,
        json!({
            "kmm": {"lastMinute": 42, "reconciles": 180, "errors": 3, "waiting": 2, "oldestWaitingSeconds": 4},
            "shims": {"lastMinute": 6, "reconciles": 20, "errors": 0, "waiting": 0, "oldestWaitingSeconds": 0},
        }),
    ))));
    command(&mut app, "engine");
    let view = app.engine_view();
    let activity = view.activity.expect("the holder's activity");
    assert_eq!(activity.window, "last 5 min");
    assert_eq!(activity.stalled, None);
    assert_eq!(
        activity
            .rows
            .iter()
            .map(|r| (r.family, r.per_minute.as_str(), r.oldest.as_str()))
            .collect::<Vec<_>>(),
        [("KMM", "42", "4s"), ("shims", "6", "-")]
    );
    check("engine_activity", &app);

    // Holding the Lease, nothing done over five minutes, objects waiting: stalled.
    app.update(Action::EngineLease(Some(lease_with_activity(
        POD,
        300,
        json!({
            "kmm": {"lastMinute": 0, "reconciles": 0, "errors": 0, "waiting": 4, "oldestWaitingSeconds": 290},
        }),
    ))));
    let activity = app.engine_view().activity.expect("the holder's activity");
    assert_eq!(
        activity.stalled.as_deref(),
        Some("stalled: 0 reconciles in 5 min, 4 objects waiting")
    );
    check("engine_stalled", &app);

    // A released Lease shows no activity: it belonged to the engine that held it.
    app.update(Action::EngineLease(Some(lease(None, 3, None))));
    assert_eq!(app.engine_view().activity, None);
}
