//! The MIC's Ready condition: True when every image exists, otherwise a reason naming the most pressing problem
//! and a message naming each image that does not exist yet and why, so that "built but never deployed" always has
//! an explanation on the object.

/// Reason: every image exists.
pub(super) const IMAGES_EXIST: &str = "ImagesExist";
/// Reason: pull pods are still checking the registry.
pub(super) const CHECKING: &str = "Checking";
/// Reason: an image is being built.
pub(super) const BUILDING: &str = "Building";
/// Reason: an image is being signed.
pub(super) const SIGNING: &str = "Signing";
/// Reason: an image is not in the registry and nothing produces it (or the engine waits for it to appear).
pub const IMAGE_MISSING: &str = "ImageMissing";
/// Reason: a build or sign failed.
pub(super) const BUILD_FAILED: &str = "BuildFailed";

/// Where one image stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ImageProgress {
    /// It exists.
    Exists,
    /// A pull pod is checking it; how far it got.
    Checking(String),
    /// The kubelet cannot pull it and the pull pod keeps trying; the kubelet's reason and message.
    AwaitingImage(String),
    /// It is not in the registry and nothing builds or signs it.
    Missing,
    /// It is being built; the build pod's progress.
    Building(String),
    /// It is being signed; the sign pod's progress.
    Signing(String),
    /// Its build or sign failed; which pod and its last words.
    Failed(String),
}

impl ImageProgress {
    /// The condition reason this image alone would give, with its rank (higher is more pressing).
    fn reason(&self) -> (u8, &'static str) {
        match self {
            ImageProgress::Exists => (0, IMAGES_EXIST),
            ImageProgress::Checking(_) => (1, CHECKING),
            ImageProgress::Signing(_) => (2, SIGNING),
            ImageProgress::Building(_) => (3, BUILDING),
            ImageProgress::AwaitingImage(_) | ImageProgress::Missing => (4, IMAGE_MISSING),
            ImageProgress::Failed(_) => (5, BUILD_FAILED),
        }
    }

    /// What the message says about this image, if anything.
    fn describe(&self, image: &str) -> Option<String> {
        Some(match self {
            ImageProgress::Exists => return None,
            ImageProgress::Checking(detail) => format!("{image}: checking the registry ({detail})"),
            ImageProgress::AwaitingImage(detail) => {
                format!("{image}: not in the registry ({detail}), waiting for it to appear")
            }
            ImageProgress::Missing => format!(
                "{image}: not in the registry and nothing builds it; a new image generation checks again"
            ),
            ImageProgress::Building(detail) => format!("{image}: building ({detail})"),
            ImageProgress::Signing(detail) => format!("{image}: signing ({detail})"),
            ImageProgress::Failed(detail) => format!("{image}: {detail}"),
        })
    }
}

/// The Ready condition's status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Readiness {
    /// Whether every image exists.
    pub ready: bool,
    /// The most pressing reason.
    pub reason: &'static str,
    /// Every image that does not exist, and why.
    pub message: String,
}

/// The Ready condition of images in spec order.
pub(super) fn readiness(images: &[(&str, ImageProgress)]) -> Readiness {
    let reason = images
        .iter()
        .map(|(_, progress)| progress.reason())
        .max()
        .map_or(IMAGES_EXIST, |(_, reason)| reason);
    let problems: Vec<String> = images
        .iter()
        .filter_map(|(image, progress)| progress.describe(image))
        .collect();
    if problems.is_empty() {
        let message = match images.len() {
            0 => "no images to check".to_owned(),
            1 => "the image exists".to_owned(),
            n => format!("all {n} images exist"),
        };
        return Readiness {
            ready: true,
            reason,
            message,
        };
    }
    Readiness {
        ready: false,
        reason,
        message: problems.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_image_exists() {
        let ready = readiness(&[("a", ImageProgress::Exists), ("b", ImageProgress::Exists)]);
        assert_eq!(
            ready,
            Readiness {
                ready: true,
                reason: IMAGES_EXIST,
                message: "all 2 images exist".into()
            }
        );
        assert!(readiness(&[]).ready);
    }

    #[test]
    fn the_most_pressing_problem_gives_the_reason_and_every_problem_is_named() {
        let ready = readiness(&[
            ("a", ImageProgress::Exists),
            ("b", ImageProgress::Checking("pull pod p: running".into())),
            (
                "c",
                ImageProgress::AwaitingImage("ImagePullBackOff: not found".into()),
            ),
            ("d", ImageProgress::Building("pod d-build: running".into())),
        ]);
        assert!(!ready.ready);
        assert_eq!(ready.reason, IMAGE_MISSING);
        assert_eq!(
            ready.message,
            "b: checking the registry (pull pod p: running); \
             c: not in the registry (ImagePullBackOff: not found), waiting for it to appear; \
             d: building (pod d-build: running)"
        );
        let failed = readiness(&[
            ("a", ImageProgress::Missing),
            (
                "b",
                ImageProgress::Failed("build pod b-build failed: exit status 2".into()),
            ),
        ]);
        assert_eq!(failed.reason, BUILD_FAILED);
        assert!(
            failed
                .message
                .ends_with("b: build pod b-build failed: exit status 2")
        );
        assert_eq!(
            readiness(&[
                ("a", ImageProgress::Signing("x".into())),
                ("b", ImageProgress::Checking("y".into()))
            ])
            .reason,
            SIGNING
        );
    }
}
