//! What every family's reconcilers run on: the shared context and its error policy, events, failure streaks and
//! back-off, finalizers, status writes, metrics and health endpoints, the resync period, leader election, the
//! watches the families share, the upstream operators the engine steps aside for, and the RBAC it needs.

pub mod attention;
pub mod backoff;
pub mod causes;
pub mod context;
pub mod digest;
pub mod endpoint;
pub mod events;
pub mod failures;
pub mod family;
pub mod finalizers;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod nodes;
pub mod object_names;
pub mod operators;
pub mod rbac;
pub mod resync;
pub mod settings;
pub mod shared;
pub mod status;
pub mod stopping;
pub mod writes;
