//! The panes of the console as the keymap knows them, and which commands act on each: the hint bar offers a
//! command only on the panes it acts on, so a key is never advertised where pressing it does nothing.

use super::Command;

/// A kind of pane: a list, a detail, or a view on top of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pane {
    /// Every Module.
    Modules,
    /// One Module in depth.
    ModuleDetail,
    /// Every image of every Module.
    Images,
    /// Every node.
    Nodes,
    /// Recent events.
    Events,
    /// Every Shim.
    Shims,
    /// One Shim in depth.
    ShimDetail,
    /// The log of an installer pod.
    Logs,
    /// Every ImageCache.
    Caches,
    /// One ImageCache's coverage.
    CacheDetail,
    /// Every ModuleDay0.
    Day0s,
    /// One ModuleDay0 in depth.
    Day0Detail,
    /// Who holds the engine.
    Engine,
    /// Planning a kernel upgrade.
    Preflight,
    /// Every cluster of the kubeconfig.
    Fleet,
    /// One object as YAML.
    Yaml,
    /// Every key binding and command.
    Help,
    /// Every DRA device.
    Devices,
}

impl Command {
    /// Whether the command acts on `pane`. Commands that need a selection act on the panes that can have one; whether
    /// they can run on the selection of the moment is the console's to say (it dims them).
    pub fn acts_on(self, pane: Pane) -> bool {
        use Pane as P;
        match self {
            // In the fleet view: a hub's ManagedClusterModule, built on the hub.
            Command::Rebuild => matches!(
                pane,
                P::Modules | P::ModuleDetail | P::Images | P::Day0s | P::Day0Detail | P::Fleet
            ),
            Command::Recheck => matches!(
                pane,
                P::Modules | P::ModuleDetail | P::Images | P::Caches | P::CacheDetail
            ),
            Command::Purge => matches!(pane, P::Caches | P::CacheDetail),
            Command::Approve | Command::PauseResume | Command::Retry => {
                matches!(pane, P::Shims | P::ShimDetail)
            }
            Command::Logs => pane == P::ShimDetail,
            Command::HandOff | Command::TakeOver => pane == P::Engine,
            Command::Build => pane == P::Preflight,
            // The panes with no object to show, edit or delete.
            Command::Yaml => !matches!(pane, P::Events | P::Engine | P::Fleet | P::Help),
            // A device's ResourceSlice is its driver's to write, and its claim its pod's.
            Command::Edit | Command::Delete => !matches!(
                pane,
                P::Events | P::Engine | P::Fleet | P::Help | P::Devices
            ),
            // The fleet's two tables (clusters, the hubs' modules) take `tab`; they have no columns to scroll.
            Command::Left | Command::Right => pane != P::Fleet,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Pane as P;

    #[test]
    fn image_commands_act_only_where_there_are_images() {
        for pane in [P::Nodes, P::Events, P::Engine, P::Help, P::Yaml, P::Logs] {
            assert!(!Command::Rebuild.acts_on(pane), "{pane:?}");
            assert!(!Command::Recheck.acts_on(pane), "{pane:?}");
        }
        assert!(!Command::Recheck.acts_on(P::Day0s));
        assert!(Command::Rebuild.acts_on(P::Day0s));
        assert!(Command::Recheck.acts_on(P::CacheDetail));
    }

    #[test]
    fn devices_are_shown_but_never_edited_or_deleted() {
        assert!(Command::Yaml.acts_on(P::Devices));
        assert!(Command::Filter.acts_on(P::Devices));
        assert!(!Command::Edit.acts_on(P::Devices));
        assert!(!Command::Delete.acts_on(P::Devices));
        assert!(!Command::Rebuild.acts_on(P::Devices));
    }
}
