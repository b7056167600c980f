//! Answers to "does a fault apply now?", for the components that inject them: the scenario's faults, and the faults
//! injected while the simulation runs (see [`super::inject`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::scenario::Fault;

/// A fault injected at run time.
#[derive(Debug, Clone)]
pub struct Injected {
    /// Its entry in the faults ConfigMap.
    pub key: String,
    /// The entry's text, as written.
    pub text: String,
    /// The fault, its times moved on by the simulated time at which it was first read.
    pub fault: Fault,
    /// An instant fault that has happened (its entry is on its way out of the ConfigMap).
    pub fired: bool,
}

/// Where a fault comes from, for the counters of faults that fail a limited number of times.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Source {
    Scenario(usize),
    Injected(String),
}

/// The scenario's faults and the injected ones, with the counters of the ones that fail a limited number of times.
#[derive(Debug)]
pub struct Faults {
    faults: Vec<Fault>,
    injected: Mutex<Vec<Injected>>,
    /// Bumped whenever the injected faults change, so that components wake up to apply them.
    changes: watch::Sender<u64>,
    used: Mutex<HashMap<(Source, String), u32>>,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// `fault` with every time moved on by `by`; windows that never close stay so.
fn shifted(fault: Fault, by: Duration) -> Fault {
    let later = |t: Duration| t.saturating_add(by);
    match fault {
        Fault::RegistryOutage { from, to } => Fault::RegistryOutage {
            from: later(from),
            to: later(to),
        },
        Fault::NodeNotReady { node, from, to } => Fault::NodeNotReady {
            node,
            from: later(from),
            to: later(to),
        },
        Fault::RemoveImage { image, at, nodes } => Fault::RemoveImage {
            image,
            at: later(at),
            nodes,
        },
        Fault::Reboot { node, at } => Fault::Reboot {
            node,
            at: later(at),
        },
        Fault::CloseWatches { at } => Fault::CloseWatches { at: later(at) },
        other @ (Fault::PullFailure { .. }
        | Fault::ContainerdRestartFailure { .. }
        | Fault::BuildFailure { .. }) => other,
    }
}

/// When an instant fault happens; `None` for the others.
pub(crate) fn instant(fault: &Fault) -> Option<Duration> {
    match fault {
        Fault::RemoveImage { at, .. } | Fault::Reboot { at, .. } | Fault::CloseWatches { at } => {
            Some(*at)
        }
        _ => None,
    }
}

impl Faults {
    /// Faults from a scenario.
    pub fn new(faults: Vec<Fault>) -> Self {
        Self {
            faults,
            injected: Mutex::new(Vec::new()),
            changes: watch::channel(0).0,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Whether any fault in force (scenario or injected) satisfies `test`.
    fn any(&self, test: impl Fn(&Fault) -> bool) -> bool {
        self.faults.iter().any(&test) || locked(&self.injected).iter().any(|i| test(&i.fault))
    }

    /// Whether the registry is down at simulated time `now`.
    pub fn registry_down(&self, now: Duration) -> bool {
        self.any(|f| matches!(f, Fault::RegistryOutage { from, to } if *from <= now && now < *to))
    }

    /// Whether pulling `image` on `node` fails.
    pub fn pull_fails(&self, image: &str, node: &str) -> bool {
        self.any(|f| matches!(f, Fault::PullFailure { image: i, nodes } if i == image && (nodes.is_empty() || nodes.iter().any(|n| n == node))))
    }

    /// Whether this restart of containerd on `node` fails (each failure is counted against the fault's `times`).
    pub fn containerd_restart_fails(&self, node: &str) -> bool {
        self.consume(node, |f| match f {
            Fault::ContainerdRestartFailure { nodes, times }
                if nodes.is_empty() || nodes.iter().any(|n| n == node) =>
            {
                Some(*times)
            }
            _ => None,
        })
    }

    /// Whether this build of `image` fails (each failure is counted against the fault's `times`).
    pub fn build_fails(&self, image: &str) -> bool {
        self.consume(image, |f| match f {
            Fault::BuildFailure { image: i, times } if i == image => Some(*times),
            _ => None,
        })
    }

    /// Whether `node` is held NotReady at `now`.
    pub fn node_not_ready(&self, node: &str, now: Duration) -> bool {
        self.any(|f| matches!(f, Fault::NodeNotReady { node: n, from, to } if n == node && *from <= now && now < *to))
    }

    /// The scenario's instant faults (images lost, reboots, watches closed) that happen at `at`.
    pub fn scenario_instants_at(&self, at: Duration) -> Vec<Fault> {
        self.faults
            .iter()
            .filter(|f| instant(f) == Some(at))
            .cloned()
            .collect()
    }

    /// The nodes the scenario holds NotReady in a window that opens or closes at `at`.
    pub fn scenario_windows_at(&self, at: Duration) -> Vec<String> {
        self.faults
            .iter()
            .filter_map(|f| match f {
                Fault::NodeNotReady { node, from, to } if *from == at || *to == at => {
                    Some(node.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// Every time at which some fault of the scenario starts, ends or happens, so components can wake up exactly
    /// then.
    pub fn boundaries(&self) -> Vec<Duration> {
        let mut times: Vec<Duration> = self
            .faults
            .iter()
            .flat_map(|f| match f {
                Fault::RegistryOutage { from, to } | Fault::NodeNotReady { from, to, .. } => {
                    vec![*from, *to]
                }
                other => instant(other).into_iter().collect(),
            })
            .filter(|t| *t != Duration::MAX)
            .collect();
        times.sort();
        times.dedup();
        times
    }

    /// Replace the injected faults with `entries` (key, text, fault as written), read at simulated time `now`. An
    /// entry read before with the same text keeps its times and counters; a new or changed one starts now.
    pub fn set_injected(&self, entries: Vec<(String, String, Fault)>, now: Duration) {
        let mut injected = locked(&self.injected);
        let mut next = Vec::with_capacity(entries.len());
        for (key, text, fault) in entries {
            match injected.iter().position(|i| i.key == key && i.text == text) {
                Some(known) => next.push(injected.swap_remove(known)),
                None => next.push(Injected {
                    key,
                    text,
                    fault: shifted(fault, now),
                    fired: false,
                }),
            }
        }
        let gone: Vec<String> = injected.drain(..).map(|i| i.key).collect();
        *injected = next;
        drop(injected);
        locked(&self.used).retain(
            |(source, _), _| !matches!(source, Source::Injected(key) if gone.contains(key)),
        );
        self.changes.send_modify(|n| *n += 1);
    }

    /// The injected faults now.
    pub fn injected(&self) -> Vec<Injected> {
        locked(&self.injected).clone()
    }

    /// A receiver that sees every change of the injected faults.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The injected instant faults due at `now` that have not happened yet, marked as happened.
    pub fn take_due(&self, now: Duration) -> Vec<Injected> {
        let mut due = Vec::new();
        for injected in locked(&self.injected).iter_mut() {
            if !injected.fired && instant(&injected.fault).is_some_and(|at| at <= now) {
                injected.fired = true;
                due.push(injected.clone());
            }
        }
        due
    }

    /// The next simulated time after `now` at which an injected fault starts, ends or happens.
    pub fn next_injected_boundary(&self, now: Duration) -> Option<Duration> {
        locked(&self.injected)
            .iter()
            .filter(|i| !i.fired)
            .flat_map(|i| match &i.fault {
                Fault::RegistryOutage { from, to } | Fault::NodeNotReady { from, to, .. } => {
                    vec![*from, *to]
                }
                other => instant(other).into_iter().collect(),
            })
            .filter(|t| *t > now && *t != Duration::MAX)
            .min()
    }

    fn consume(&self, subject: &str, limit: impl Fn(&Fault) -> Option<u32>) -> bool {
        let injected = locked(&self.injected);
        let sources = self
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| (Source::Scenario(i), f))
            .chain(
                injected
                    .iter()
                    .map(|i| (Source::Injected(i.key.clone()), &i.fault)),
            );
        let mut used = locked(&self.used);
        for (source, fault) in sources {
            if let Some(times) = limit(fault) {
                let count = used.entry((source, subject.to_string())).or_insert(0);
                if *count < times {
                    *count += 1;
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outage(to: Duration) -> Fault {
        Fault::RegistryOutage {
            from: Duration::ZERO,
            to,
        }
    }

    #[test]
    fn injected_faults_count_from_when_they_are_read_and_keep_their_times() {
        let faults = Faults::default();
        let now = Duration::from_secs(100);
        let entry = |to| ("outage".to_owned(), format!("to {to:?}"), outage(to));
        faults.set_injected(vec![entry(Duration::from_secs(60))], now);
        assert!(!faults.registry_down(Duration::from_secs(99)));
        assert!(faults.registry_down(Duration::from_secs(159)));
        assert!(!faults.registry_down(Duration::from_secs(160)));
        // Read again later, unchanged: the window stays where it was.
        faults.set_injected(vec![entry(Duration::from_secs(60))], now * 2);
        assert!(faults.registry_down(Duration::from_secs(120)));
        // A window without an end lasts until the entry goes.
        faults.set_injected(vec![entry(Duration::MAX)], now);
        assert!(faults.registry_down(Duration::from_secs(1_000_000)));
        faults.set_injected(Vec::new(), now);
        assert!(!faults.registry_down(Duration::from_secs(120)));
    }

    #[test]
    fn instant_faults_are_due_once() {
        let faults = Faults::default();
        let reboot = Fault::Reboot {
            node: "w-1".to_owned(),
            at: Duration::from_secs(5),
        };
        faults.set_injected(
            vec![("r".to_owned(), "reboot".to_owned(), reboot)],
            Duration::from_secs(10),
        );
        assert_eq!(
            faults.next_injected_boundary(Duration::from_secs(10)),
            Some(Duration::from_secs(15))
        );
        assert!(faults.take_due(Duration::from_secs(14)).is_empty());
        assert_eq!(faults.take_due(Duration::from_secs(15)).len(), 1);
        assert!(faults.take_due(Duration::from_secs(16)).is_empty());
        assert_eq!(faults.next_injected_boundary(Duration::from_secs(10)), None);
    }

    #[test]
    fn counted_faults_count_per_entry_and_start_again_when_it_changes() {
        let faults = Faults::default();
        let fail = |times| Fault::BuildFailure {
            image: "img".to_owned(),
            times,
        };
        faults.set_injected(vec![("b".into(), "1".into(), fail(1))], Duration::ZERO);
        assert!(faults.build_fails("img"));
        assert!(!faults.build_fails("img"));
        faults.set_injected(vec![("b".into(), "2".into(), fail(1))], Duration::ZERO);
        assert!(faults.build_fails("img"), "a changed entry counts afresh");
        faults.set_injected(Vec::new(), Duration::ZERO);
        faults.set_injected(vec![("b".into(), "2".into(), fail(1))], Duration::ZERO);
        assert!(
            faults.build_fails("img"),
            "a removed entry's count goes with it"
        );
    }
}
