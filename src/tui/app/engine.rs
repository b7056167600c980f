//! The console's side of moving the engine: the `:engine` view's state, the hand-off and take-over keys behind a
//! confirmation, what the header says about who acts, and the notice when nobody took a handed-off Lease.
//!
//! The console never changes the Lease itself here: a hand-off tells the console's engine to stand aside (it
//! finishes its work and releases the Lease), a take-over tells it to compete again and asks the holder, through an
//! annotation on the Lease, to hand over. What the view shows comes back through the Lease watch.

use std::collections::{BTreeMap, HashMap};

use crossterm::event::KeyEvent;

use super::{App, Availability, EngineMode, ListId, Mode, Request, Severity, View};
use crate::tui::action::EngineEvent;
use crate::tui::keymap::{Command, Scope};
use crate::tui::view::engine::{EngineFacts, EngineView, Place, engine_view, family_label};
use kmm_engine::Family;
use kmm_engine::runtime::operators::Upstream;

/// A move of the engine the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineMove {
    /// This console's engine finishes its work, releases the Lease and stops competing for it.
    HandOff,
    /// This console's engine competes again, and the holder is asked to hand the Lease over.
    TakeOver,
}

impl EngineMove {
    /// The question of the confirmation dialog.
    pub fn describe(self) -> &'static str {
        match self {
            EngineMove::HandOff => {
                "Hand the engine off: finish the work in flight, release the Lease and let a controller in the cluster act"
            }
            EngineMove::TakeOver => {
                "Take the engine over: ask the holder to hand the Lease to this console, then act here"
            }
        }
    }
}

/// The console's engine state beyond the Lease.
#[derive(Clone, Debug, Default)]
pub struct EnginePane {
    /// This console's engine was told to stand aside.
    pub handed_off: bool,
    /// Nobody took the Lease within the lease duration after the hand-off.
    pub unclaimed: bool,
    /// A take-over was asked for and this console does not hold the Lease yet.
    pub taking_over: bool,
    /// Identities seen holding the Lease or asked for, with when they were seen last.
    pub seen: BTreeMap<String, jiff::Timestamp>,
    /// Families an upstream operator acts on.
    pub upstream: BTreeMap<Family, Upstream>,
}

impl App {
    /// Who acts, for the header: this console's engine, a controller in the cluster (and which pod), another
    /// console, or nobody; then the families an upstream operator acts on.
    pub fn engine_summary(&self) -> String {
        let holder = self.data.engine_holder(self.now);
        let own = self.session.engine_identity.as_deref();
        let place = holder.map(|holder| Place::of(holder, own));
        let foreground = self.session.engine == EngineMode::Foreground;
        if self.data.unreachable().is_some() {
            // The Lease cannot be read: who acts is not known, which is not the same as nobody acting.
            return "engine: unknown (cannot reach the cluster)".to_owned();
        }
        let mut summary = match (place, foreground) {
            (Some(Place::ThisConsole), _) => "engine: foreground".to_owned(),
            (Some(place), true) if !self.engine.handed_off => {
                format!("engine: {}, foreground standing by", place.describe())
            }
            (Some(place), _) => format!("engine: {}", place.describe()),
            (None, true) if self.engine.handed_off => "engine: handed off (none acting)".to_owned(),
            (None, true) => "engine: foreground (starting)".to_owned(),
            (None, false) => "engine: off (none acting)".to_owned(),
        };
        for (family, upstream) in &self.engine.upstream {
            summary.push_str(&format!(
                "; {}: {} acts",
                family_label(*family),
                upstream.operator
            ));
        }
        summary
    }

    /// Who acts, in a word, for narrow headers: `engine:fg`, `engine:cluster`, `engine:console`, `engine:off`.
    pub fn engine_badge(&self) -> &'static str {
        let own = self.session.engine_identity.as_deref();
        if self.data.unreachable().is_some() {
            return "engine:?";
        }
        match self.data.engine_holder(self.now).map(|h| Place::of(h, own)) {
            Some(Place::ThisConsole) => "engine:fg",
            Some(Place::Pod(_) | Place::Embedded) => "engine:cluster",
            Some(Place::AnotherConsole(_)) => "engine:console",
            None if self.session.engine == EngineMode::Foreground && !self.engine.handed_off => {
                "engine:fg"
            }
            None => "engine:off",
        }
    }

    /// Whether an engine other than this console's holds the Lease.
    pub fn engine_elsewhere(&self) -> bool {
        let own = self.session.engine_identity.as_deref();
        self.data
            .engine_holder(self.now)
            .is_some_and(|holder| Some(holder) != own)
    }

    /// The `:engine` view's content.
    pub fn engine_view(&self) -> EngineView {
        let this_console = match (&self.session.engine, self.engine.handed_off) {
            (EngineMode::Off, _) => "runs no engine (started with the engine off)".to_owned(),
            (EngineMode::Foreground, true) => {
                "handed off: its engine stands aside until taken over".to_owned()
            }
            (EngineMode::Foreground, false) => format!(
                "runs the foreground engine as {}",
                self.session.engine_identity.as_deref().unwrap_or("?")
            ),
        };
        let notice = self.engine.unclaimed.then(|| {
            let keys = self.keymap.keys(Command::TakeOver);
            let key = keys.first().map_or_else(|| "take-over".to_owned(), ToString::to_string);
            format!("Nobody took the Lease within its duration after the hand-off: press {key} to take it back")
        });
        engine_view(&EngineFacts {
            lease: self.data.engine_lease.as_deref(),
            holder: self.data.engine_holder(self.now),
            own: self.session.engine_identity.as_deref(),
            this_console,
            notice,
            seen: &self.engine.seen,
            upstream: &self.engine.upstream,
            now: self.now,
        })
    }

    /// The Lease changed: remember who was seen, and settle a hand-off or take-over it answers.
    pub(super) fn on_engine_lease(&mut self) {
        let now = self.now;
        let lease = self.data.engine_lease.clone();
        let requested = lease
            .as_ref()
            .and_then(|l| l.metadata.annotations.as_ref())
            .and_then(|a| a.get(kmm_api::lease::HANDOFF_ANNOTATION))
            .filter(|t| !t.trim().is_empty() && t.as_str() != kmm_api::lease::ANYONE)
            .cloned();
        let holder = self.data.engine_holder(now).map(str::to_owned);
        for identity in holder.iter().chain(requested.iter()) {
            self.engine.seen.insert(identity.clone(), now);
        }
        let own = self.session.engine_identity.clone();
        let ours = holder.is_some() && holder == own;
        if ours && self.engine.taking_over {
            self.engine.taking_over = false;
            self.set_status(
                Severity::Info,
                "This console's engine holds the Lease again",
            );
        }
        if let Some(holder) = holder.filter(|_| !ours && self.engine.handed_off) {
            self.engine.unclaimed = false;
            let handing_off = self
                .status
                .as_ref()
                .is_some_and(|s| s.text.starts_with("Handing off"));
            if handing_off {
                let place = Place::of(&holder, own.as_deref()).describe();
                self.set_status(
                    Severity::Info,
                    format!("Engine handed off: {holder} acts ({place})"),
                );
            }
        }
        self.refresh_engine_list();
    }

    /// Apply what a background task said about the engine.
    pub(super) fn on_engine_event(&mut self, event: EngineEvent) {
        match event {
            EngineEvent::HandoffDeadline => {
                let nobody = self.data.engine_holder(self.now).is_none();
                if self.engine.handed_off && nobody {
                    self.engine.unclaimed = true;
                    let key = self
                        .keymap
                        .keys(Command::TakeOver)
                        .first()
                        .map_or_else(|| "take-over".to_owned(), ToString::to_string);
                    self.set_status(
                        Severity::Warning,
                        format!(
                            "Nobody took the engine Lease after the hand-off; :engine and {key} take it back"
                        ),
                    );
                }
            }
            EngineEvent::RequestFailed(message) => {
                self.engine.taking_over = false;
                self.set_status(
                    Severity::Error,
                    format!("Take-over request failed: {message}"),
                );
            }
            EngineEvent::Upstream(upstream) => self.engine.upstream = upstream,
        }
    }

    /// Ask for a `y` before moving the engine.
    pub(super) fn run_engine(&mut self, command: Command) {
        if let Availability::Unavailable(why) = self.availability(command) {
            self.set_status(Severity::Warning, why);
            return;
        }
        let movement = if command == Command::HandOff {
            EngineMove::HandOff
        } else {
            EngineMove::TakeOver
        };
        self.mode = Mode::ConfirmEngine(movement);
    }

    /// The dialog's keys: `y` moves the engine, `n`/`esc` cancel.
    pub(super) fn on_engine_confirm_key(&mut self, key: KeyEvent) {
        match self.keymap.command_for(Scope::Dialog, key) {
            Some(Command::Confirm) => {
                let Mode::ConfirmEngine(movement) = std::mem::take(&mut self.mode) else {
                    return;
                };
                match movement {
                    EngineMove::HandOff => {
                        self.engine.handed_off = true;
                        self.engine.unclaimed = false;
                        self.engine.taking_over = false;
                        self.set_status(
                            Severity::Info,
                            "Handing off: finishing the work in flight, then releasing the Lease…",
                        );
                    }
                    EngineMove::TakeOver => {
                        self.engine.handed_off = false;
                        self.engine.unclaimed = false;
                        self.engine.taking_over = true;
                        let message = match self.data.engine_holder(self.now) {
                            Some(holder) => {
                                format!("Asked {holder} to hand the Lease to this console…")
                            }
                            None => "Taking the Lease…".to_owned(),
                        };
                        self.set_status(Severity::Info, message);
                    }
                }
                self.requests.push(Request::Engine(movement));
            }
            Some(Command::Cancel | Command::Back) => {
                self.mode = Mode::Normal;
                self.set_status(Severity::Info, "Cancelled");
            }
            Some(Command::Quit) => self.quit = true,
            _ => {}
        }
    }

    /// Whether hand-off or take-over can run now, and if not, why.
    pub(super) fn engine_availability(&self, command: Command) -> Availability {
        let unavailable = |why: &str| Availability::Unavailable(why.to_owned());
        if self.view() != &View::Engine {
            return unavailable("Hand-off and take-over work in the :engine view");
        }
        if self.session.engine != EngineMode::Foreground {
            return unavailable("This console runs no engine (started with the engine off)");
        }
        if self.session.readonly {
            return unavailable("Moving the engine is off: read-only mode");
        }
        let ours = self.data.engine_holder(self.now).is_some()
            && self.data.engine_holder(self.now) == self.session.engine_identity.as_deref();
        match command {
            Command::HandOff if self.engine.handed_off => {
                unavailable("Already handed off; take-over brings the engine back")
            }
            Command::TakeOver if ours => {
                unavailable("This console's engine holds the Lease already")
            }
            _ => Availability::Available,
        }
    }

    /// The candidates list's rows, for selection.
    pub(super) fn engine_visible(&self, visible: &mut HashMap<ListId, Vec<usize>>) {
        visible.insert(ListId::Engine, (0..self.engine.seen.len()).collect());
    }

    fn refresh_engine_list(&mut self) {
        let mut visible = std::mem::take(&mut self.visible);
        self.engine_visible(&mut visible);
        self.visible = visible;
    }
}
