//! The writes the console makes on the user's behalf, each confirmed first, each reported back to the UI task as a
//! [`WriteOutcome`] so the footer (or the editor) can say what happened.

use kube::Client;

use super::target::Target;

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
    /// Start a fresh pull check of a Module's images without asking for a build.
    Recheck {
        /// The Module.
        module: Target,
        /// One image of it, or every image.
        image: Option<String>,
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
}

impl WriteRequest {
    /// The object the write acts on.
    pub fn target(&self) -> &Target {
        match self {
            WriteRequest::Rebuild { module, .. } | WriteRequest::Recheck { module, .. } => module,
            WriteRequest::Delete { target } | WriteRequest::Apply { target, .. } => target,
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
            WriteRequest::Delete { target } => format!("Delete {target}"),
            WriteRequest::Apply { target, .. } => format!("Apply the edited {target}"),
        }
    }
}

/// A problem with one field of an edited object, from the shared validation or the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the field (`spec.moduleLoader.container.kernelMappings[0].regexp`).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
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

/// How a write ended.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOutcome {
    /// What was asked.
    pub request: WriteRequest,
    /// One line saying what happened, or why it failed.
    pub result: Result<String, WriteError>,
}

/// Perform a confirmed write.
pub async fn perform(client: &Client, request: WriteRequest) -> WriteOutcome {
    let _ = client;
    let result = Err(WriteError {
        message: format!("{} is not available yet", request.describe()),
        fields: Vec::new(),
        code: None,
    });
    WriteOutcome { request, result }
}
