//! The periodic look at every object a reconciler owns, whether or not a watch said it changed (controller-runtime's
//! SyncPeriod). Watches miss what they were never told: a change to something no reconciler watches (a namespace's
//! label, a Dockerfile ConfigMap), an event dropped between a watch's failure and its re-list, a write filtered out
//! as the reconciler's own. A pass that ends without failing asks to be looked at again after the resync period,
//! so anything like that heals within it.
//!
//! Each object draws its own delay, the period moved by up to a fifth either way: the thousands of objects a
//! start-up pass or a rollout touched at once (one NodeModulesConfig per node) come back spread over two fifths of
//! the period instead of in one burst, and spread further every period after. One timer waking every object at
//! once (kube's `Controller::reconcile_all_on`) would instead queue 5,000 NodeModulesConfig passes and a pass of
//! every Module over every node in the same instant.

use std::time::Duration;

use kube::runtime::controller::Action;

use crate::runtime::backoff::jittered;

/// The default resync period. Ten minutes bounds how long a missed change goes unhealed, while an idle engine on
/// 5,000 nodes makes about eight NodeModulesConfig passes a second (a few reads each, no writes) for it.
pub(crate) const DEFAULT_PERIOD: Duration = Duration::from_secs(600);

/// What a pass that ended without failing returns: look again after about `period`.
pub(crate) fn after(period: Duration) -> Action {
    crate::runtime::metrics::requeue(jittered(period))
}

/// What a pass that needs to look again within `soon` returns (a pull's deadline, a backoff it keeps itself): the
/// sooner of that and the resync.
pub(crate) fn within(period: Duration, soon: Duration) -> Action {
    crate::runtime::metrics::requeue(jittered(period).min(soon))
}
