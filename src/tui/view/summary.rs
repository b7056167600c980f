//! How many Modules, Shims, ImageCaches, ModuleDay0s and nodes are in each state: what the header counts for the
//! open cluster and the fleet view counts for every cluster, from the same rows, so the two never disagree.

use std::collections::BTreeMap;

use super::Health;
use super::caches::CacheRow;
use super::day0::{Day0Row, Day0State};
use super::modules::ModuleRow;
use super::shims::{ShimRow, ShimState};

/// Counts per state of one cluster's objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Modules by health.
    pub modules: Tally<Health>,
    /// Shims by rollout state.
    pub shims: Tally<ShimState>,
    /// ImageCaches by health.
    pub caches: Tally<Health>,
    /// ModuleDay0s (and kmm-managed MachineConfigs not handed over) by state.
    pub day0s: Tally<Day0State>,
    /// Nodes whose kubelet reports Ready.
    pub nodes_ready: usize,
    /// Every node.
    pub nodes_total: usize,
}

/// How many objects are in each state, and in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally<S: Ord> {
    /// Objects counted.
    pub total: usize,
    /// Objects per state; a state with none is absent.
    pub by_state: BTreeMap<S, usize>,
}

impl<S: Ord> Default for Tally<S> {
    fn default() -> Self {
        Tally {
            total: 0,
            by_state: BTreeMap::new(),
        }
    }
}

impl<S: Ord + Copy> Tally<S> {
    /// Count `states`, one per object.
    pub fn of(states: impl IntoIterator<Item = S>) -> Tally<S> {
        let mut tally = Tally::default();
        for state in states {
            tally.total += 1;
            *tally.by_state.entry(state).or_default() += 1;
        }
        tally
    }

    /// How many objects are in `state`.
    pub fn get(&self, state: S) -> usize {
        self.by_state.get(&state).copied().unwrap_or_default()
    }
}

impl Summary {
    /// The counts of these rows, as the panes built them; nodes are counted by whoever watches them.
    pub fn of(
        modules: &[ModuleRow],
        shims: &[ShimRow],
        caches: &[CacheRow],
        day0s: &[Day0Row],
    ) -> Summary {
        Summary {
            modules: Tally::of(modules.iter().map(|row| row.health)),
            shims: Tally::of(shims.iter().map(|row| row.state)),
            caches: Tally::of(caches.iter().map(|row| row.health)),
            day0s: Tally::of(day0s.iter().map(|row| row.state)),
            nodes_ready: 0,
            nodes_total: 0,
        }
    }

    /// With these node counts.
    pub fn with_nodes(mut self, ready: usize, total: usize) -> Summary {
        self.nodes_ready = ready;
        self.nodes_total = total;
        self
    }

    /// Shim rollouts whose next batch waits for a person's approval.
    pub fn awaiting_approval(&self) -> usize {
        self.shims.get(ShimState::AwaitingApproval)
    }

    /// Objects that failed and need a person: degraded Modules, Shims, ImageCaches and ModuleDay0s.
    pub fn degraded(&self) -> usize {
        self.modules.get(Health::Error)
            + self.shims.get(ShimState::Degraded)
            + self.caches.get(Health::Error)
            + self.day0s.get(Day0State::Degraded)
    }

    /// Objects waiting on something short of failing: Modules and ImageCaches waiting, paused rollouts, pools
    /// kept on their image.
    pub fn waiting(&self) -> usize {
        self.modules.get(Health::Warning)
            + self.shims.get(ShimState::Paused)
            + self.caches.get(Health::Warning)
            + self.day0s.get(Day0State::Kept)
    }
}
