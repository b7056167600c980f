//! The writes the console makes on the user's behalf, each confirmed first, each reported back to the UI task as a
//! [`WriteOutcome`] so the footer (or the editor) can say what happened.
//!
//! - [`images`] asks for new image checks: a rebuild (a new image generation) or a recheck (a forgotten state).
//! - [`caches`] asks the cache engine to pull images again or to purge them, by annotating the ImageCache.
//! - [`apply`] checks edited YAML locally, then with a server dry-run, then replaces the object.
//! - [`delete`] deletes, and says when a finalizer keeps the object a while.
//! - [`day0`] asks for a ModuleDay0's OS image to be checked again and built if missing.
//! - [`hub`] asks a hub to build a ManagedClusterModule's images again, for the clusters that use them.
//! - [`shims`] steers a Shim's rollout: approve the next batch, pause or resume, retry failed nodes.
//! - [`preflight`] validates every Module against a kernel, and has the validation push what it builds.
//! - [`retry`] computes a write again when another writer changed the object since it was read.
//! - [`errors`] turns what the API server (or the network) answered into one line and field-level causes.

pub mod apply;
pub mod caches;
pub mod day0;
mod delete;
pub mod errors;
pub mod hub;
pub mod images;
pub mod preflight;
pub mod resources;
pub mod retry;
pub mod shims;

use kube::Client;
use kube::api::PatchParams;

use super::target::Target;

/// The field manager of every write the console makes, so `managedFields` says who changed what.
pub const FIELD_MANAGER: &str = "kmm-tui-console";

/// Patch parameters naming the console as field manager.
fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

/// One write the user asked for and confirmed.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteRequest {
    /// Check a Module's images again and build the missing ones: bump each image's `generation` in its
    /// ModuleImagesConfig (or the Module's `imageRebuildTriggerGeneration` on clusters with upstream CRDs).
    /// `image` narrows it to one image.
    Rebuild {
        /// The Module.
        module: Target,
        /// One image of it, or every image.
        image: Option<String>,
    },
    /// Have a hub build a ManagedClusterModule's images again: bump their generations in its ModuleImagesConfig
    /// `<name>-fleet` (or the module's `imageRebuildTriggerGeneration` where upstream's operator runs the hub).
    RebuildOnHub {
        /// The hub's context: the write goes there, whichever cluster's panes are open.
        hub: String,
        /// The ManagedClusterModule.
        module: Target,
        /// The images to build again; every image when empty.
        images: Vec<String>,
        /// The clusters those images serve, as the user saw them; every selected one when empty.
        clusters: Vec<String>,
    },
    /// Check a ModuleDay0's OS image again and build it if missing: bump the image's `generation` in its
    /// ModuleImagesConfig `<name>-day0`.
    RebuildDay0 {
        /// The ModuleDay0.
        day0: Target,
    },
    /// Start a fresh pull check of a Module's images without asking for a build.
    Recheck {
        /// The Module.
        module: Target,
        /// One image of it, or every image.
        image: Option<String>,
    },
    /// Pull an ImageCache's images again: one image on one node, one image on every node, or (no image) every
    /// image on every node.
    Repull {
        /// The ImageCache.
        cache: Target,
        /// One image of it, or every image.
        image: Option<String>,
        /// One node, or every node.
        node: Option<String>,
    },
    /// Remove every image of an ImageCache from its nodes.
    Purge {
        /// The ImageCache.
        cache: Target,
    },
    /// Delete an object.
    Delete {
        /// The object.
        target: Target,
    },
    /// Replace an object with edited YAML, after a server dry-run.
    Apply {
        /// The object being edited.
        target: Target,
        /// The edited text.
        yaml: String,
    },
    /// Let a Shim's rollout start batch `batch` (raise `approvedBatch` to it).
    ApproveBatch {
        /// The Shim.
        shim: Target,
        /// The batch waiting for approval.
        batch: i32,
    },
    /// Pause or resume a Shim's rollout.
    SetPaused {
        /// The Shim.
        shim: Target,
        /// Pause (`true`) or resume.
        paused: bool,
    },
    /// Install a Shim again on nodes where it failed.
    RetryNodes {
        /// The Shim.
        shim: Target,
        /// The nodes; every failed node when empty.
        nodes: Vec<String>,
    },
    /// Validate every Module against a kernel: set the PreflightValidation's `kernelVersion` (creating it when
    /// `create`), with pushing off.
    ValidateKernel {
        /// The PreflightValidation.
        preflight: Target,
        /// The kernel of the planned upgrade.
        kernel: String,
        /// Whether the PreflightValidation is created.
        create: bool,
    },
    /// Have the PreflightValidation build and push the images it can build: set `pushBuiltImage`.
    PushBuiltImages {
        /// The PreflightValidation.
        preflight: Target,
        /// The kernel it validates, as the user saw it.
        kernel: String,
        /// `namespace/name` of the Modules whose images are built, as the user saw them.
        modules: Vec<String>,
    },
}

impl WriteRequest {
    /// The object the write acts on.
    pub fn target(&self) -> &Target {
        match self {
            WriteRequest::Rebuild { module, .. } | WriteRequest::Recheck { module, .. } => module,
            WriteRequest::RebuildDay0 { day0 } => day0,
            WriteRequest::RebuildOnHub { module, .. } => module,
            WriteRequest::Repull { cache, .. } | WriteRequest::Purge { cache } => cache,
            WriteRequest::Delete { target } | WriteRequest::Apply { target, .. } => target,
            WriteRequest::ApproveBatch { shim, .. }
            | WriteRequest::SetPaused { shim, .. }
            | WriteRequest::RetryNodes { shim, .. } => shim,
            WriteRequest::ValidateKernel { preflight, .. }
            | WriteRequest::PushBuiltImages { preflight, .. } => preflight,
        }
    }

    /// The context the write goes to when it is not the open cluster's: a hub's, from the fleet view.
    pub fn context(&self) -> Option<&str> {
        match self {
            WriteRequest::RebuildOnHub { hub, .. } => Some(hub),
            _ => None,
        }
    }

    /// What the write will do, in the words of the confirmation dialog ("Rebuild the images of Module ns/name").
    pub fn describe(&self) -> String {
        let images = |image: &Option<String>| match image {
            Some(image) => format!("image {image} of"),
            None => "the images of".to_owned(),
        };
        match self {
            WriteRequest::Rebuild { module, image } => {
                format!("Rebuild {} {module}", images(image))
            }
            WriteRequest::Recheck { module, image } => {
                format!("Check {} {module} again", images(image))
            }
            WriteRequest::RebuildDay0 { day0 } => format!("Rebuild the OS image of {day0}"),
            WriteRequest::RebuildOnHub {
                module,
                images,
                clusters,
                ..
            } => {
                let what = match images.as_slice() {
                    [] => "every image".to_owned(),
                    [image] => format!("image {image}"),
                    images => format!("{} images ({})", images.len(), images.join(", ")),
                };
                let serves = match clusters.as_slice() {
                    [] => "every cluster it selects".to_owned(),
                    [cluster] => format!("cluster {cluster}"),
                    clusters => format!("clusters {}", clusters.join(", ")),
                };
                format!("Rebuild {what} of {module} on its hub, used by {serves}")
            }
            WriteRequest::Repull {
                cache,
                image: Some(image),
                node: Some(node),
            } => format!("Pull {image} again on node {node} ({cache})"),
            WriteRequest::Repull {
                cache,
                image: Some(image),
                node: None,
            } => format!("Pull {image} again on every node of {cache}"),
            WriteRequest::Repull { cache, .. } => {
                format!("Refresh {cache}: pull every image again on every node")
            }
            WriteRequest::Purge { cache } => {
                format!("Purge {cache}: remove its images from every node")
            }
            WriteRequest::Delete { target } => format!("Delete {target}"),
            WriteRequest::Apply { target, .. } => format!("Apply the edited {target}"),
            WriteRequest::ApproveBatch { shim, batch } => {
                format!("Approve batch {batch} of {shim}")
            }
            WriteRequest::SetPaused { shim, paused: true } => {
                format!("Pause the rollout of {shim}")
            }
            WriteRequest::SetPaused {
                shim,
                paused: false,
            } => {
                format!("Resume the rollout of {shim}")
            }
            WriteRequest::RetryNodes { shim, nodes } if nodes.is_empty() => {
                format!("Retry {shim} on every failed node")
            }
            WriteRequest::RetryNodes { shim, nodes } => {
                format!("Retry {shim} on {}", nodes.join(", "))
            }
            WriteRequest::ValidateKernel {
                preflight,
                kernel,
                create,
            } => format!(
                "Validate every Module against kernel {kernel} ({} {preflight})",
                if *create { "create" } else { "update" }
            ),
            WriteRequest::PushBuiltImages {
                preflight, kernel, ..
            } => format!(
                "Build and push the images Modules need for kernel {kernel} (pushBuiltImage on {preflight})"
            ),
        }
    }
}

/// A problem with one field of an edited object, from the shared validation or the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the field (`spec.moduleLoader.container.kernelMappings[0].regexp`), or where in the text a
    /// YAML syntax error is (`line 3, column 7`).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A problem with `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Why a write failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteError {
    /// One line for the footer.
    pub message: String,
    /// Field-level causes, shown inline in the editor.
    pub fields: Vec<FieldError>,
    /// The HTTP status, where the API server answered (403, 404, 409, 422).
    pub code: Option<u16>,
}

impl WriteError {
    /// A failure the console found itself, before or without the API server's answer.
    pub fn local(message: impl Into<String>) -> WriteError {
        WriteError {
            message: message.into(),
            fields: Vec::new(),
            code: None,
        }
    }

    /// A failure of an edited object's own content, found before anything was sent.
    pub fn invalid(fields: Vec<FieldError>) -> WriteError {
        WriteError {
            message: problems_found(fields.len()),
            fields,
            code: None,
        }
    }
}

/// "2 problems found; nothing was sent": the summary of a check that stopped a write.
pub fn problems_found(count: usize) -> String {
    format!(
        "{count} problem{} found; nothing was sent",
        if count == 1 { "" } else { "s" }
    )
}

/// How a write ended.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOutcome {
    /// What was asked.
    pub request: WriteRequest,
    /// One line saying what happened, or why it failed.
    pub result: Result<String, WriteError>,
}

/// Perform a confirmed write. Every failure, the network's included, comes back as a [`WriteError`].
pub async fn perform(client: &Client, request: WriteRequest) -> WriteOutcome {
    let result = match &request {
        WriteRequest::Rebuild { module, image } => {
            images::rebuild(client, module, image.as_deref()).await
        }
        WriteRequest::Recheck { module, image } => {
            images::recheck(client, module, image.as_deref()).await
        }
        WriteRequest::RebuildDay0 { day0 } => day0::rebuild(client, day0).await,
        WriteRequest::RebuildOnHub { module, images, .. } => {
            hub::rebuild(client, module, images).await
        }
        WriteRequest::Repull { cache, image, node } => {
            caches::repull(client, cache, image.as_deref(), node.as_deref()).await
        }
        WriteRequest::Purge { cache } => caches::purge(client, cache).await,
        WriteRequest::Delete { target } => delete::delete(client, target).await,
        WriteRequest::Apply { target, yaml } => apply::apply(client, target, yaml).await,
        WriteRequest::ApproveBatch { shim, batch } => shims::approve(client, shim, *batch).await,
        WriteRequest::SetPaused { shim, paused } => shims::set_paused(client, shim, *paused).await,
        WriteRequest::RetryNodes { shim, nodes } => shims::retry(client, shim, nodes).await,
        WriteRequest::ValidateKernel {
            preflight, kernel, ..
        } => preflight::validate(client, preflight, kernel).await,
        WriteRequest::PushBuiltImages {
            preflight, kernel, ..
        } => preflight::push_built_images(client, preflight, kernel).await,
    };
    WriteOutcome { request, result }
}
