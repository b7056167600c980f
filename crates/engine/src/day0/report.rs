//! The ModuleDay0's status: `Available` (and `Ready`, its mirror), `Progressing` and `Degraded` with reasons a person
//! can act on, the MachineConfig it manages and the image it last wrote there.

use crate::status::set_condition;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING, READY};
use kmm_api::day0::ModuleDay0Status;

/// Available: every node of the pool runs the target image's OS.
pub const APPLIED: &str = "Applied";
/// Available: the pool runs the mapped image while the cluster moved to another y-stream without opting in.
pub const LAYERED_IMAGE_KEPT: &str = "LayeredImageKept";
/// Progressing: a pull pod is checking the registry for the image.
pub const CHECKING_IMAGE: &str = "CheckingImage";
/// Progressing: the image is missing, nothing builds it, and the engine waits for it to be pushed.
pub const WAITING_FOR_IMAGE: &str = "WaitingForImage";
/// Progressing: the image is being built.
pub const BUILDING: &str = "Building";
/// Progressing: the image is being signed.
pub const SIGNING: &str = "Signing";
/// Progressing: the MachineConfig names the image but the pool does not roll (paused, or no node in it).
pub const WAITING_FOR_POOL: &str = "WaitingForPool";
/// Progressing: the pool's nodes are moving onto the image.
pub const ROLLING: &str = "Rolling";
/// Degraded: another ModuleDay0 already targets the pool.
pub const DUPLICATE_POOL: &str = "PoolAlreadyManaged";
/// Degraded: no MachineConfigPool has the selector.
pub const NO_POOL: &str = "NoMachineConfigPool";
/// Degraded: no MachineConfig labelled kmm-managed feeds the pool.
pub const NO_MACHINE_CONFIG: &str = "NoMachineConfig";
/// Degraded: a node of the pool failed to update.
pub const POOL_DEGRADED: &str = "PoolDegraded";
/// Progressing or Degraded is false: nothing to do, or nothing wrong.
pub const AS_EXPECTED: &str = "AsExpected";

/// The outcome of a pass, as conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// `Available`: (status, reason, message).
    pub available: (bool, &'static str, String),
    /// `Progressing`.
    pub progressing: (bool, &'static str, String),
    /// `Degraded`.
    pub degraded: (bool, &'static str, String),
}

impl Report {
    /// Work under way: not available yet, nothing wrong.
    pub fn progressing(reason: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            available: (false, reason, message.clone()),
            progressing: (true, reason, message),
            degraded: (false, AS_EXPECTED, String::new()),
        }
    }

    /// Stuck until a person acts: not available, not progressing.
    pub fn degraded(reason: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            available: (false, reason, message.clone()),
            progressing: (false, reason, message.clone()),
            degraded: (true, reason, message),
        }
    }

    /// Done.
    pub fn available(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            available: (true, reason, message.into()),
            progressing: (false, AS_EXPECTED, String::new()),
            degraded: (false, AS_EXPECTED, String::new()),
        }
    }

    /// The most telling reason, for events: the degraded one, else the progressing one, else the available one.
    pub fn reason(&self) -> &'static str {
        if self.degraded.0 {
            self.degraded.1
        } else if self.progressing.0 {
            self.progressing.1
        } else {
            self.available.1
        }
    }

    /// The message that goes with [`Report::reason`].
    pub fn message(&self) -> &str {
        if self.degraded.0 {
            &self.degraded.2
        } else if self.progressing.0 {
            &self.progressing.2
        } else {
            &self.available.2
        }
    }

    /// `current` with this report's conditions and `generation` observed.
    pub fn apply(&self, current: &ModuleDay0Status, generation: Option<i64>) -> ModuleDay0Status {
        let mut status = current.clone();
        status.observed_generation = generation;
        // `Ready` mirrors `Available`, as on a Module, so `kubectl get` and `kubectl wait` read both kinds alike.
        for (type_, (value, reason, message)) in [
            (AVAILABLE, &self.available),
            (PROGRESSING, &self.progressing),
            (DEGRADED, &self.degraded),
            (READY, &self.available),
        ] {
            set_condition(
                &mut status.conditions,
                type_,
                *value,
                reason,
                message.clone(),
                generation,
            );
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_sets_every_condition() {
        let status = Report::progressing(ROLLING, "1 of 2 nodes updated")
            .apply(&ModuleDay0Status::default(), Some(3));
        let find = |t: &str| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .expect("condition")
        };
        assert_eq!(
            (
                find(PROGRESSING).status.as_str(),
                find(PROGRESSING).reason.as_str()
            ),
            ("True", ROLLING)
        );
        assert_eq!(find(AVAILABLE).status, "False");
        assert_eq!(find(DEGRADED).status, "False");
        assert_eq!(
            (find(READY).status.as_str(), find(READY).reason.as_str()),
            ("False", ROLLING)
        );
        assert_eq!(status.observed_generation, Some(3));
        let failed = Report::degraded(DUPLICATE_POOL, "pool worker is managed by ns/first");
        assert_eq!(
            (failed.reason(), failed.message()),
            (DUPLICATE_POOL, "pool worker is managed by ns/first")
        );
    }
}
