//! Rows of the Day-0 pane: one per ModuleDay0, with the pool it targets, the OS image it maps the pool to, how far
//! the pool's rollout got (from the MachineConfigPool's machine counts) and its state and reason (from its
//! conditions); then one per kmm-managed MachineConfig the engine has not handed over yet, with the engine's
//! latest word on why (the Event it published on the MachineConfig: a namespace to create, a grant to give). A
//! MachineConfig has no status of kmm-tui's, so that Event is where the engine says it.

use std::sync::Arc;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::tui::data::ClusterData;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING};
use kmm_api::day0::reasons::LAYERED_IMAGE_KEPT;
use kmm_api::day0::{MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::kmm::labels;
use kmm_engine::day0::handover::NAMESPACE;
use kmm_engine::day0::pools::{pool_fed_by, pool_for_selector};

use super::{Health, condition, matches_filter};

/// Where a ModuleDay0 stands, from its conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Day0State {
    /// Every node of the pool runs the target OS.
    Available,
    /// The pool stays on its layered image while the cluster moved to another release without opting in.
    Kept,
    /// Work under way: checking, building, signing the image, or rolling the pool.
    Progressing,
    /// Stuck until a person acts.
    Degraded,
    /// No status yet.
    Pending,
}

impl Day0State {
    /// Every state, in the order the header counts them.
    pub const ALL: [Day0State; 5] = [
        Day0State::Available,
        Day0State::Kept,
        Day0State::Progressing,
        Day0State::Degraded,
        Day0State::Pending,
    ];

    /// The word the pane and the header show.
    pub fn label(self) -> &'static str {
        match self {
            Day0State::Available => "Available",
            Day0State::Kept => "Kept",
            Day0State::Progressing => "Progressing",
            Day0State::Degraded => "Degraded",
            Day0State::Pending => "Pending",
        }
    }

    /// The header's short mark, as the cache counts use them.
    pub fn glyph(self) -> &'static str {
        match self {
            Day0State::Available => "●",
            Day0State::Kept => "·",
            Day0State::Progressing => "◐",
            Day0State::Degraded => "✗",
            Day0State::Pending => "?",
        }
    }

    /// How to colour it: a kept image waits for a person's opt-in.
    pub fn health(self) -> Health {
        match self {
            Day0State::Available => Health::Ok,
            Day0State::Kept => Health::Warning,
            Day0State::Progressing => Health::Progressing,
            Day0State::Degraded => Health::Error,
            Day0State::Pending => Health::Unknown,
        }
    }
}

/// A pool's rollout as its MachineConfigPool status counts machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    /// Machines in the pool.
    pub machines: i32,
    /// Machines on the current rendered configuration.
    pub updated: i32,
    /// Updated machines that are ready.
    pub ready: i32,
    /// Machines that failed to update.
    pub degraded: i32,
}

impl Rollout {
    /// The counts of `pool`'s status (zero where it says nothing).
    pub fn of(pool: &MachineConfigPool) -> Rollout {
        let status = pool.status.as_ref();
        let count = |field: fn(&kmm_api::day0::MachineConfigPoolStatus) -> Option<i32>| {
            status.and_then(field).unwrap_or(0).max(0)
        };
        Rollout {
            machines: count(|s| s.machine_count),
            updated: count(|s| s.updated_machine_count),
            ready: count(|s| s.ready_machine_count),
            degraded: count(|s| s.degraded_machine_count),
        }
    }
}

/// One ModuleDay0 as the Day-0 pane shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Day0Row {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The MachineConfigPool its selector names, when one does.
    pub pool: Option<String>,
    /// The OS image it maps the pool to (`osMapping.containerImage`).
    pub image: String,
    /// The OS release the image is for (`osMapping.literal`).
    pub literal: String,
    /// The pool's rollout, when the pool exists.
    pub rollout: Option<Rollout>,
    /// Its state.
    pub state: Day0State,
    /// The reason of the telling condition (`Building`, `LayeredImageKept`, ...).
    pub reason: Option<String>,
    /// `Reason: message` of the telling condition.
    pub why: Option<String>,
    /// Whether a cluster upgrade rebuilds the image on the new release (`clusterUpgradeTriggerNodeUpgrade`).
    pub upgrade_trigger: bool,
    /// Whether the row stands for a kmm-managed MachineConfig whose ModuleDay0 does not exist yet (named after it,
    /// in [`NAMESPACE`]), rather than for a ModuleDay0.
    pub awaiting_hand_over: bool,
}

impl Day0Row {
    /// The row of one ModuleDay0, its pool found among `pools`.
    pub fn of(day0: &ModuleDay0, pools: &[MachineConfigPool]) -> Day0Row {
        let spec = &day0.spec;
        let pool = pool_for_selector(pools, &spec.machine_config_pool_selector);
        let conditions = day0
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        let (state, telling) = judge(conditions);
        Day0Row {
            namespace: day0.metadata.namespace.clone().unwrap_or_default(),
            name: day0.metadata.name.clone().unwrap_or_default(),
            pool: pool.and_then(|p| p.metadata.name.clone()),
            image: spec.os_mapping.container_image.clone(),
            literal: spec.os_mapping.literal.clone(),
            rollout: pool.map(Rollout::of),
            state,
            reason: telling.map(|c| c.reason.clone()),
            why: telling.map(explain),
            upgrade_trigger: spec.os_mapping.cluster_upgrade_trigger_node_upgrade,
            awaiting_hand_over: false,
        }
    }

    /// The row of a kmm-managed MachineConfig the engine has not handed over: `Degraded` with the reason and note
    /// of the latest Event on it when that is a warning (what a person must fix), else `Pending`.
    pub fn awaiting(
        config: &MachineConfig,
        pools: &[MachineConfigPool],
        events: &[Arc<Event>],
    ) -> Day0Row {
        let name = config.metadata.name.clone().unwrap_or_default();
        let pool = pool_fed_by(config, pools);
        let word = latest_event(events, &name);
        let (state, reason, why) = match word {
            Some(event) if event.type_.as_deref() == Some("Warning") => {
                let reason = event.reason.clone().unwrap_or_default();
                let why = match event.note.as_deref().filter(|n| !n.is_empty()) {
                    Some(note) => format!("{reason}: {note}"),
                    None => reason.clone(),
                };
                (Day0State::Degraded, Some(reason), why)
            }
            _ => (
                Day0State::Pending,
                None,
                format!(
                    "Pending: MachineConfig {name} is kmm-managed; the engine has not handed it over yet"
                ),
            ),
        };
        Day0Row {
            namespace: NAMESPACE.to_owned(),
            name,
            pool: pool.and_then(|p| p.metadata.name.clone()),
            image: config.spec.os_image_url.clone().unwrap_or_default(),
            literal: String::new(),
            rollout: pool.map(Rollout::of),
            state,
            reason,
            why: Some(why),
            upgrade_trigger: false,
            awaiting_hand_over: true,
        }
    }

    /// `worker`, or `-` when no pool has the selector.
    pub fn pool_label(&self) -> &str {
        self.pool.as_deref().unwrap_or("-")
    }

    /// Whether a cluster upgrade waits for the pool to opt in.
    pub fn awaits_upgrade_opt_in(&self) -> bool {
        self.reason.as_deref() == Some(LAYERED_IMAGE_KEPT)
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.namespace,
                &self.name,
                self.pool_label(),
                &self.image,
                self.state.label(),
                self.why.as_deref().unwrap_or_default(),
            ],
        )
    }
}

/// The state and the condition that tells it: Degraded first, then Progressing, then Available.
fn judge(conditions: &[Condition]) -> (Day0State, Option<&Condition>) {
    let is_true = |type_| condition(conditions, type_).filter(|c| c.status == "True");
    if let Some(degraded) = is_true(DEGRADED) {
        return (Day0State::Degraded, Some(degraded));
    }
    if let Some(progressing) = is_true(PROGRESSING) {
        return (Day0State::Progressing, Some(progressing));
    }
    if let Some(available) = is_true(AVAILABLE) {
        let state = if available.reason == LAYERED_IMAGE_KEPT {
            Day0State::Kept
        } else {
            Day0State::Available
        };
        return (state, Some(available));
    }
    match condition(conditions, AVAILABLE) {
        Some(available) => (Day0State::Progressing, Some(available)),
        None => (Day0State::Pending, None),
    }
}

/// `Reason: message`, without repeating a reason the message starts with.
fn explain(condition: &Condition) -> String {
    if condition.message.is_empty() {
        condition.reason.clone()
    } else if condition.message.starts_with(&condition.reason) {
        condition.message.clone()
    } else {
        format!("{}: {}", condition.reason, condition.message)
    }
}

/// The pools as the pool lookups of the engine take them.
pub fn pool_list(data: &ClusterData) -> Vec<MachineConfigPool> {
    data.pools.iter().map(|pool| (**pool).clone()).collect()
}

/// Every ModuleDay0's row, in namespace/name order, then a row per kmm-managed MachineConfig no ModuleDay0 was
/// created for, in name order.
pub fn rows(data: &ClusterData) -> Vec<Day0Row> {
    let pools = pool_list(data);
    let handed_over = |config: &MachineConfig| {
        data.day0s.iter().any(|day0| {
            day0.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::MACHINE_CONFIG))
                == config.metadata.name.as_ref()
        })
    };
    let day0s = data.day0s.iter().map(|day0| Day0Row::of(day0, &pools));
    let awaiting = data
        .machine_configs
        .iter()
        .filter(|config| !handed_over(config))
        .map(|config| Day0Row::awaiting(config, &pools, &data.events));
    day0s.chain(awaiting).collect()
}

/// The newest Event on MachineConfig `name` (events come newest first): only the engine publishes any.
fn latest_event<'e>(events: &'e [Arc<Event>], name: &str) -> Option<&'e Event> {
    events.iter().map(Arc::as_ref).find(|event| {
        event.regarding.as_ref().is_some_and(|r| {
            r.kind.as_deref() == Some("MachineConfig") && r.name.as_deref() == Some(name)
        })
    })
}
