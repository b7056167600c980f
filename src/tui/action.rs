//! The messages the UI task receives. Background tasks (terminal input, watches, writes, access reviews) only send
//! these; the UI task alone owns and changes the console's state.

use std::collections::BTreeMap;

use crossterm::event::Event as TerminalEvent;

use super::access::AccessReport;
use super::data::{DraServing, FeedState, Kind, KindSnapshot};
use super::target::Target;
use super::writes::WriteOutcome;
use kmm_engine::Family;
use kmm_engine::runtime::operators::Upstream;

/// One message to the UI task.
#[derive(Debug)]
pub enum Action {
    /// A key press, paste or resize from the terminal.
    Terminal(TerminalEvent),
    /// A new list of one watched kind.
    Data(KindSnapshot),
    /// The first list of one kind as far as its pages have arrived: shown at once, the kind still loading.
    Listing(KindSnapshot),
    /// A watch failed or recovered.
    Feed(Kind, FeedState),
    /// Whether the cluster serves DRA (resource.k8s.io/v1), as its discovery answered.
    Dra(DraServing),
    /// A write finished, well or badly.
    Written(WriteOutcome),
    /// What the user may do on this cluster.
    Access(AccessReport),
    /// The Lease that elects the acting engine changed (`None`: no engine holds it).
    EngineLease(Option<std::sync::Arc<k8s_openapi::api::coordination::v1::Lease>>),
    /// The engine's record of the kernels of the cluster's OS images changed (`None`: there is none).
    OsImageKernels(Option<std::sync::Arc<k8s_openapi::api::core::v1::ConfigMap>>),
    /// Something about the engine besides its Lease: a hand-off deadline, a failed request, upstream operators.
    Engine(EngineEvent),
    /// The object the YAML view follows, as the API server has it now (`None`: it is gone), or why it cannot be
    /// read.
    Object(Target, Result<Option<serde_json::Value>, String>),
    /// The object to edit, read from the API server, or why it could not be.
    Editable(Target, Result<serde_json::Value, String>),
    /// A pod's log arrived: its lines, or why it could not be read.
    PodLog(Target, Result<Vec<String>, String>),
    /// News about one cluster of the fleet, by context name.
    Fleet(String, super::fleet::state::FleetChange),
    /// The backoff after a reconnect ran out: the event loop may read the kubeconfig again.
    ReconnectDue,
}

/// What background tasks tell the UI about the engine, besides the Lease itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// One lease duration passed since a hand-off.
    HandoffDeadline,
    /// A take-over request could not be written.
    RequestFailed(String),
    /// The families upstream operators act on changed.
    Upstream(BTreeMap<Family, Upstream>),
}
