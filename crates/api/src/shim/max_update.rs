//! The one reading of a rolling Shim's `maxUpdate`: validation rejects what it does not accept, the engine sizes its
//! batches by it and refuses to roll a value it does not accept (an upstream CRD on a real cluster may let one
//! through), and the console shows it as the engine reads it.
//!
//! The rule is the one Kubernetes applies to `maxUnavailable`: a whole number of nodes, or a string that is a
//! percentage (`"25%"`); a percentage is taken of the nodes the rollout covers and rounded down. Unlike
//! `maxUnavailable`, nothing less than one node or `"1%"`, and nothing above `"100%"`, is accepted: a rollout that
//! never moves is a mistake, not a choice. A batch is at least one node, so a small percentage of a few nodes still
//! moves.

use std::fmt;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A `maxUpdate` the rule accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxUpdate {
    /// At most this many nodes per batch (at least 1).
    Nodes(u32),
    /// At most this percentage of the nodes the rollout covers per batch (1 to 100).
    Percent(u32),
}

/// A `maxUpdate` the rule does not accept; says what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidMaxUpdate {
    shown: String,
}

impl fmt::Display for InvalidMaxUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "maxUpdate {} must be a node count of at least 1 or a percentage from \"1%\" to \"100%\"",
            self.shown
        )
    }
}

impl std::error::Error for InvalidMaxUpdate {}

impl MaxUpdate {
    /// Read `value` by the rule: an integer of at least 1, or a string of digits followed by `%` from 1 to 100. A
    /// string without `%` (`"3"`) and surrounding spaces are refused, as kube-apiserver refuses them in
    /// `maxUnavailable`.
    pub fn parse(value: &IntOrString) -> Result<Self, InvalidMaxUpdate> {
        let accepted = match value {
            IntOrString::Int(count) => u32::try_from(*count)
                .ok()
                .filter(|count| *count >= 1)
                .map(MaxUpdate::Nodes),
            IntOrString::String(text) => text
                .strip_suffix('%')
                .and_then(|number| number.parse::<u32>().ok())
                .filter(|percent| (1..=100).contains(percent))
                .map(MaxUpdate::Percent),
        };
        accepted.ok_or_else(|| InvalidMaxUpdate {
            shown: match value {
                IntOrString::Int(count) => count.to_string(),
                IntOrString::String(text) => format!("{text:?}"),
            },
        })
    }

    /// Nodes per batch when the rollout covers `targets` nodes: a percentage rounded down, and at least 1.
    pub fn batch_size(self, targets: usize) -> usize {
        let size = match self {
            MaxUpdate::Nodes(count) => usize::try_from(count).unwrap_or(usize::MAX),
            MaxUpdate::Percent(percent) => targets.saturating_mul(percent as usize) / 100,
        };
        size.max(1)
    }
}

impl fmt::Display for MaxUpdate {
    /// As the spec spells it: `2` or `25%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaxUpdate::Nodes(count) => write!(f, "{count}"),
            MaxUpdate::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

/// Nodes per batch for `max_update` over `targets` nodes, or why `max_update` is not accepted.
pub fn batch_size(max_update: &IntOrString, targets: usize) -> Result<usize, InvalidMaxUpdate> {
    MaxUpdate::parse(max_update).map(|accepted| accepted.batch_size(targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: i32) -> IntOrString {
        IntOrString::Int(value)
    }

    fn text(value: &str) -> IntOrString {
        IntOrString::String(value.to_owned())
    }

    #[test]
    fn max_update_rounds_down_and_never_below_one() {
        // (maxUpdate, nodes covered, batch size or refused)
        let table: [(IntOrString, usize, Option<usize>); 17] = [
            (int(2), 10, Some(2)),
            (int(1), 0, Some(1)),
            (int(20), 5, Some(20)),
            (text("25%"), 10, Some(2)),
            (text("10%"), 5, Some(1)),
            (text("10%"), 5000, Some(500)),
            (text("100%"), 7, Some(7)),
            (text("1%"), 3, Some(1)),
            (int(0), 5, None),
            (int(-1), 5, None),
            (text("0%"), 5, None),
            (text("101%"), 5, None),
            (text("3"), 5, None),
            (text(" 25%"), 5, None),
            (text("25 %"), 5, None),
            (text("2.5%"), 5, None),
            (text(""), 5, None),
        ];
        for (value, targets, expected) in table {
            assert_eq!(
                batch_size(&value, targets).ok(),
                expected,
                "maxUpdate {value:?} over {targets} nodes"
            );
        }
    }

    #[test]
    fn accepted_values_show_as_the_spec_spells_them_and_refusals_name_the_value() {
        assert_eq!(
            MaxUpdate::parse(&int(2)).map(|m| m.to_string()),
            Ok("2".to_owned())
        );
        assert_eq!(
            MaxUpdate::parse(&text("25%")).map(|m| m.to_string()),
            Ok("25%".to_owned())
        );
        let refused = MaxUpdate::parse(&text("3")).expect_err("a bare number string is refused");
        assert_eq!(
            refused.to_string(),
            "maxUpdate \"3\" must be a node count of at least 1 or a percentage from \"1%\" to \"100%\""
        );
    }
}
