//! What about a Module starts a pass, shared by the two reconcilers that write its status (the Module's and the
//! device plugin's) so neither wakes the other.

use kmm_api::kmm::Module;

/// What about a Module starts a pass: its spec (through the generation), its finalizers and its deletion. The
/// status is left out: it is this reconciler's own output, and a pass over thousands of nodes after each status
/// write would never let a busy Module rest. The device plugin reconciler, which writes the status too, follows the
/// same fields.
pub(super) fn module_fingerprint(module: &Module) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    module.metadata.generation.hash(&mut hasher);
    module.metadata.finalizers.hash(&mut hasher);
    module
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}
