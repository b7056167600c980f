//! The ModuleDay0's status: `Available` (and `Ready`, its mirror), `Progressing` and `Degraded` with reasons a person
//! can act on, the MachineConfig it manages and the image it last wrote there.

use crate::runtime::status::set_condition;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING, READY};
use kmm_api::day0::ModuleDay0Status;
use kmm_api::day0::reasons::AS_EXPECTED;

/// The outcome of a pass, as conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Report {
    /// `Available`: (status, reason, message).
    pub available: (bool, &'static str, String),
    /// `Progressing`.
    pub progressing: (bool, &'static str, String),
    /// `Degraded`.
    pub degraded: (bool, &'static str, String),
}

impl Report {
    /// Work under way: not available yet, nothing wrong.
    pub(super) fn progressing(reason: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            available: (false, reason, message.clone()),
            progressing: (true, reason, message),
            degraded: (false, AS_EXPECTED, String::new()),
        }
    }

    /// Stuck until a person acts: not available, not progressing.
    pub(super) fn degraded(reason: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            available: (false, reason, message.clone()),
            progressing: (false, reason, message.clone()),
            degraded: (true, reason, message),
        }
    }

    /// Done.
    pub(super) fn available(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            available: (true, reason, message.into()),
            progressing: (false, AS_EXPECTED, String::new()),
            degraded: (false, AS_EXPECTED, String::new()),
        }
    }

    /// The most telling reason, for events: the degraded one, else the progressing one, else the available one.
    pub(super) fn reason(&self) -> &'static str {
        if self.degraded.0 {
            self.degraded.1
        } else if self.progressing.0 {
            self.progressing.1
        } else {
            self.available.1
        }
    }

    /// The message that goes with [`Report::reason`].
    pub(super) fn message(&self) -> &str {
        if self.degraded.0 {
            &self.degraded.2
        } else if self.progressing.0 {
            &self.progressing.2
        } else {
            &self.available.2
        }
    }

    /// `current` with this report's conditions and `generation` observed.
    pub(super) fn apply(
        &self,
        current: &ModuleDay0Status,
        generation: Option<i64>,
    ) -> ModuleDay0Status {
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
    use kmm_api::day0::reasons::{DUPLICATE_POOL, ROLLING};

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
