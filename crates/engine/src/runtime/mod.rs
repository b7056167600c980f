//! What every family's reconcilers run on: the shared context and its error policy, events, failure streaks and
//! back-off, finalizers, status writes, metrics and health endpoints, the resync period, leader election, the
//! watches the families share, the upstream operators the engine steps aside for, and the RBAC it needs.

pub(crate) mod attention;
pub(crate) mod backoff;
pub mod causes;
pub(crate) mod context;
pub(crate) mod digest;
pub mod endpoint;
pub(crate) mod events;
pub(crate) mod failures;
pub(crate) mod family;
pub(crate) mod finalizers;
pub(crate) mod first_list;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod nodes;
pub mod object_names;
pub mod operators;
pub mod rbac;
pub(crate) mod resync;
pub(crate) mod settings;
pub mod shared;
pub mod status;
pub(crate) mod stopping;
pub(crate) mod wiring;
pub mod writes;
