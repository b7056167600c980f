//! The fleet: every cluster of the kubeconfig (or a chosen set) on one screen, each followed cheaply by its own
//! task so that one slow or unreachable cluster never stalls the others.
//!
//! - [`follow`] runs one task per cluster: a `/version` probe, the few watches the counts need, retries with
//!   backoff, and sends [`Action::Fleet`](crate::tui::action::Action::Fleet).
//! - [`reach`] says why a cluster does not answer, in an administrator's words.
//! - [`state`] is what the UI task keeps of each cluster; [`view::fleet`](crate::tui::view::fleet) turns it
//!   into rows, most urgent first.
pub mod follow;
pub mod reach;
pub mod state;
