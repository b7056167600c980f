//! The verdict on one Module for the target kernel, worded as upstream KMM words it (`verified image exists`,
//! `verified image does not exist`, `mapping not found`, `verification is not finished yet`), each followed by
//! what the engine knows beyond that: which kernel had no mapping, and what the check, build or sign is doing or
//! why it failed.

use crate::kmm::mic::stage::ImageStage;
use kmm_api::kmm::VerificationStatus;

/// The outcome and the reason told for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Success, Failure or InProgress.
    pub status: VerificationStatus,
    /// Why, for people.
    pub reason: String,
}

impl Verdict {
    fn new(status: VerificationStatus, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
        }
    }

    /// No kernel mapping of the Module matches the kernel.
    pub fn no_mapping(kernel: &str) -> Self {
        Self::new(
            VerificationStatus::Failure,
            format!("mapping not found for kernel {kernel}"),
        )
    }

    /// The Module's mappings cannot be applied to the kernel (a bad regexp, a mapping naming no image, …).
    pub fn bad_mapping(error: &str) -> Self {
        Self::new(VerificationStatus::Failure, error)
    }

    /// The Module's preflight ModuleImagesConfig is held by `owner` (another PreflightValidation verifying the
    /// same Module); this one waits until that lets go of it.
    pub fn busy(mic: &str, owner: &str) -> Self {
        Self::new(
            VerificationStatus::InProgress,
            format!(
                "verification is not finished yet: ModuleImagesConfig {mic} is held by {owner}"
            ),
        )
    }

    /// The verdict told by the stage of `image` in the Module's preflight ModuleImagesConfig. `builds` says
    /// whether the Module's mapping for the kernel has a build or sign section; `built_unpushed` whether the image
    /// exists only because it was built with pushing turned off. The check has one image, so the details drop the
    /// `<image>: ` the ModuleImagesConfig puts before each.
    pub fn of_image(
        stage: Option<&ImageStage>,
        image: &str,
        builds: bool,
        built_unpushed: bool,
    ) -> Self {
        let prefix = format!("{image}: ");
        let detail = |text: &str| text.strip_prefix(&prefix).unwrap_or(text).to_owned();
        let unfinished = |text: &str| {
            Self::new(
                VerificationStatus::InProgress,
                format!("verification is not finished yet: {}", detail(text)),
            )
        };
        match stage {
            None => unfinished("waiting for the image check to start"),
            Some(ImageStage::Exists) if built_unpushed => Self::new(
                VerificationStatus::Success,
                "verified image builds; it was not pushed (pushBuiltImage is false)",
            ),
            Some(ImageStage::Exists) => {
                Self::new(VerificationStatus::Success, "verified image exists")
            }
            Some(
                ImageStage::Checking(detail)
                | ImageStage::WaitingForImage(detail)
                | ImageStage::Building(detail)
                | ImageStage::Signing(detail),
            ) => unfinished(detail),
            Some(ImageStage::Failed { message, .. }) if builds => Self::new(
                VerificationStatus::Failure,
                format!(
                    "verified image does not exist and build/sign failed: {}",
                    detail(message)
                ),
            ),
            Some(ImageStage::Failed { .. }) => Self::new(
                VerificationStatus::Failure,
                "verified image does not exist and the Module has no build or sign section for this kernel",
            ),
        }
    }

    /// Whether the verdict is final (upstream's `Done` stage).
    pub fn done(&self) -> bool {
        self.status != VerificationStatus::InProgress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_stages_become_upstream_verdicts_with_details() {
        let exists = Verdict::of_image(Some(&ImageStage::Exists), "i", false, false);
        assert_eq!(exists.status, VerificationStatus::Success);
        assert_eq!(exists.reason, "verified image exists");
        assert!(exists.done());
        let unpushed = Verdict::of_image(Some(&ImageStage::Exists), "i", true, true);
        assert!(unpushed.reason.contains("not pushed"));
        let building = Verdict::of_image(
            Some(&ImageStage::Building("i: pod b: running".into())),
            "i",
            true,
            false,
        );
        assert_eq!(building.status, VerificationStatus::InProgress);
        assert_eq!(
            building.reason,
            "verification is not finished yet: pod b: running"
        );
        assert!(!building.done());
        let failed = ImageStage::Failed {
            reason: "BuildFailed",
            message: "exit 2".into(),
        };
        let build_failed = Verdict::of_image(Some(&failed), "i", true, false);
        assert_eq!(build_failed.status, VerificationStatus::Failure);
        assert_eq!(
            build_failed.reason,
            "verified image does not exist and build/sign failed: exit 2"
        );
        let missing = Verdict::of_image(Some(&failed), "i", false, false);
        assert!(
            missing
                .reason
                .starts_with("verified image does not exist and the Module has no build")
        );
        assert_eq!(
            Verdict::of_image(None, "i", false, false).status,
            VerificationStatus::InProgress
        );
        assert_eq!(
            Verdict::no_mapping("6.1.0").reason,
            "mapping not found for kernel 6.1.0"
        );
    }
}
