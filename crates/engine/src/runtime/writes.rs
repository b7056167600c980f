//! Who the engine's writes are recorded under: the field manager and the parameters that carry it, a leaf so the
//! lease, the reconcilers and the tests name the same writer.

/// Name the engine reports events and field ownership under.
pub const MANAGER: &str = "kmm-tui-engine";

/// Create/replace parameters that record the engine as the writer.
pub fn post_params() -> kube::api::PostParams {
    kube::api::PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..Default::default()
    }
}

/// Patch parameters that record the engine as the writer.
pub fn patch_params() -> kube::api::PatchParams {
    kube::api::PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..Default::default()
    }
}
