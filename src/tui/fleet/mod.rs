//! The fleet: every cluster of the kubeconfig (or a chosen set) on one screen, each followed cheaply by its own
//! task so that one slow or unreachable cluster never stalls the others.
//!
//! - [`fleet_feed`](crate::tui::fleet_feed) runs one task per cluster: a `/version` probe, the few watches the
//!   counts need, retries with backoff, and sends [`Action::Fleet`](crate::tui::action::Action::Fleet).
//! - [`reach`] says why a cluster does not answer, in an administrator's words.
//! - [`state`] is what the UI task keeps of each cluster; [`rows`] turns it into the fleet view's rows, most
//!   urgent first, and [`modules`] the hubs' ManagedClusterModules into the rows of its second table.
pub mod modules;
pub mod reach;
pub mod rows;
pub mod state;
