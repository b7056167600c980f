//! Answers to "does a fault apply now?", for the components that inject them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::scenario::Fault;

/// The scenario's faults, with the counters of the ones that fail a limited number of times.
#[derive(Debug, Default)]
pub struct Faults {
    faults: Vec<Fault>,
    used: Mutex<HashMap<(usize, String), u32>>,
}

impl Faults {
    /// Faults from a scenario.
    pub fn new(faults: Vec<Fault>) -> Self {
        Self {
            faults,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the registry is down at simulated time `now`.
    pub fn registry_down(&self, now: Duration) -> bool {
        self.faults
            .iter()
            .any(|f| matches!(f, Fault::RegistryOutage { from, to } if *from <= now && now < *to))
    }

    /// Whether pulling `image` on `node` fails.
    pub fn pull_fails(&self, image: &str, node: &str) -> bool {
        self.faults.iter().any(|f| matches!(f, Fault::PullFailure { image: i, nodes } if i == image && (nodes.is_empty() || nodes.iter().any(|n| n == node))))
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
        self.faults.iter().any(|f| matches!(f, Fault::NodeNotReady { node: n, from, to } if n == node && *from <= now && now < *to))
    }

    /// Images the registry (no nodes) or some nodes' stores lose, with when.
    pub fn image_removals(&self) -> Vec<(String, Duration, Vec<String>)> {
        self.faults
            .iter()
            .filter_map(|f| {
                if let Fault::RemoveImage { image, at, nodes } = f {
                    Some((image.clone(), *at, nodes.clone()))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Every time at which some fault starts or ends, so components can wake up exactly then.
    pub fn boundaries(&self) -> Vec<Duration> {
        let mut times: Vec<Duration> = self
            .faults
            .iter()
            .flat_map(|f| match f {
                Fault::RegistryOutage { from, to } | Fault::NodeNotReady { from, to, .. } => {
                    vec![*from, *to]
                }
                Fault::RemoveImage { at, .. } => vec![*at],
                _ => Vec::new(),
            })
            .collect();
        times.sort();
        times.dedup();
        times
    }

    fn consume(&self, subject: &str, limit: impl Fn(&Fault) -> Option<u32>) -> bool {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        for (i, fault) in self.faults.iter().enumerate() {
            if let Some(times) = limit(fault) {
                let count = used.entry((i, subject.to_string())).or_insert(0);
                if *count < times {
                    *count += 1;
                    return true;
                }
            }
        }
        false
    }
}
