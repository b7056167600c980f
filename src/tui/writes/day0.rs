//! Asking for a ModuleDay0's OS image to be checked again: the image's `generation` in the ModuleDay0's
//! ModuleImagesConfig (`<name>-day0`) moves up, as a Module's rebuild does, and the engine keeps the higher
//! generation, checks the registry under it and builds (and signs) the image when it is missing.

use kube::Client;

use super::WriteError;
use super::images::bump_image_generations;
use crate::tui::data::Kind;
use crate::tui::target::Target;
use kmm_engine::day0::images::mic_name;

/// Ask for a rebuild of the OS image of the ModuleDay0 `day0`.
pub async fn rebuild(client: &Client, day0: &Target) -> Result<String, WriteError> {
    let mic = Target {
        kind: Kind::ModuleImagesConfig,
        name: mic_name(&day0.name),
        ..day0.clone()
    };
    bump_image_generations(client, &mic, day0, None)
        .await?
        .ok_or_else(|| {
            WriteError::local(format!(
                "The cluster's ModuleImagesConfig CRD has no per-image generation: edit {day0} to build again"
            ))
        })
}
