//! The MIC's side of building and signing: what the MBSC's outcomes mean for image states, and which entries the
//! MBSC must hold for the images that need building or signing.

use std::collections::BTreeMap;

use super::wanted::Wanted;
use kmm_api::kmm::{
    BuildSignAction, BuildSignImageStatus, BuildSignOutcome, ImageState, ModuleBuildSignConfigSpec,
    ModuleBuildSignImage, ModuleImagesConfig,
};

/// The state of an image once the MBSC's outcomes for its current generation are taken into account: a failed
/// build or sign means `DoesNotExist`; a successful build means `NeedsSigning` when the image is also signed, else
/// `Exists`; a successful sign means `Exists`. Outcomes of other generations answer nothing.
pub(super) fn after_build_sign(
    wanted: &Wanted,
    state: ImageState,
    outcomes: &[BuildSignImageStatus],
) -> ImageState {
    let outcome = |action: BuildSignAction| {
        outcomes
            .iter()
            .find(|o| {
                o.image == wanted.image()
                    && o.action == action
                    && o.generation.unwrap_or(1) == wanted.generation
            })
            .map(|o| o.status)
    };
    let state = match (state, outcome(BuildSignAction::BuildImage)) {
        (ImageState::NeedsBuilding, Some(BuildSignOutcome::Failure)) => ImageState::DoesNotExist,
        (ImageState::NeedsBuilding, Some(BuildSignOutcome::Success)) if wanted.signs() => {
            ImageState::NeedsSigning
        }
        (ImageState::NeedsBuilding, Some(BuildSignOutcome::Success)) => ImageState::Exists,
        (state, _) => state,
    };
    match (state, outcome(BuildSignAction::SignImage)) {
        (ImageState::NeedsSigning, Some(BuildSignOutcome::Failure)) => ImageState::DoesNotExist,
        (ImageState::NeedsSigning, Some(BuildSignOutcome::Success)) => ImageState::Exists,
        (state, _) => state,
    }
}

/// The digest the image's last step pushed at its current generation: the sign's when it is signed, else the
/// build's.
pub(super) fn pushed_digest<'o>(
    wanted: &Wanted,
    outcomes: &'o [BuildSignImageStatus],
) -> Option<&'o str> {
    let last = if wanted.signs() {
        BuildSignAction::SignImage
    } else {
        BuildSignAction::BuildImage
    };
    outcomes
        .iter()
        .find(|o| {
            o.image == wanted.image()
                && o.action == last
                && o.status == BuildSignOutcome::Success
                && o.generation.unwrap_or(1) == wanted.generation
        })
        .and_then(|o| o.digest.as_deref())
}

/// The MBSC spec the MIC needs: the current entries of images still in the MIC, with an entry (the image's recipe,
/// the action, its generation) upserted for each image that needs building or signing, and the MIC's registry
/// secret, push setting and tolerations.
pub(super) fn desired_spec(
    mic: &ModuleImagesConfig,
    wanted: &[Wanted],
    states: &BTreeMap<String, ImageState>,
    current: Option<&ModuleBuildSignConfigSpec>,
) -> ModuleBuildSignConfigSpec {
    let mut images: Vec<ModuleBuildSignImage> = current
        .map(|spec| {
            spec.images
                .iter()
                .filter(|entry| wanted.iter().any(|w| w.image() == entry.spec.image))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for w in wanted {
        let action = match states.get(w.image()) {
            Some(ImageState::NeedsBuilding) => BuildSignAction::BuildImage,
            Some(ImageState::NeedsSigning) => BuildSignAction::SignImage,
            _ => continue,
        };
        let entry = ModuleBuildSignImage {
            spec: w.spec.spec.clone(),
            action,
            generation: Some(w.generation),
        };
        match images.iter_mut().find(|e| e.spec.image == w.image()) {
            Some(existing) => *existing = entry,
            None => images.push(entry),
        }
    }
    ModuleBuildSignConfigSpec {
        images,
        image_repo_secret: mic.spec.image_repo_secret.clone(),
        push_built_image: mic.spec.push_built_image,
        tolerations: mic.spec.tolerations.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::mic::wanted::wanted;

    fn mic() -> ModuleImagesConfig {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1",
            "kind": "ModuleImagesConfig",
            "metadata": {"name": "acme", "namespace": "ns"},
            "spec": {
                "images": [
                    {"image": "built", "kernelVersion": "k1", "generation": 2,
                     "build": {"dockerfileConfigMap": {"name": "d"}}},
                    {"image": "signed", "kernelVersion": "k2",
                     "build": {"dockerfileConfigMap": {"name": "d"}},
                     "sign": {"keySecret": {"name": "k"}, "certSecret": {"name": "c"}}},
                    {"image": "there", "kernelVersion": "k3"},
                ],
                "pushBuiltImage": true,
            },
        }))
        .expect("mic")
    }

    fn outcome(
        image: &str,
        action: BuildSignAction,
        status: BuildSignOutcome,
        generation: i64,
    ) -> BuildSignImageStatus {
        BuildSignImageStatus {
            image: image.into(),
            action,
            status,
            generation: Some(generation),
            digest: None,
        }
    }

    #[test]
    fn outcomes_of_the_current_generation_move_the_state_on() {
        let mic = mic();
        let wanted = wanted(&mic.spec);
        let (built, signed) = (&wanted[0], &wanted[1]);
        let build_ok = |image, generation| {
            outcome(
                image,
                BuildSignAction::BuildImage,
                BuildSignOutcome::Success,
                generation,
            )
        };
        assert_eq!(
            after_build_sign(built, ImageState::NeedsBuilding, &[build_ok("built", 2)]),
            ImageState::Exists
        );
        assert_eq!(
            after_build_sign(built, ImageState::NeedsBuilding, &[build_ok("built", 1)]),
            ImageState::NeedsBuilding,
            "an outcome of an older generation answers nothing"
        );
        assert_eq!(
            after_build_sign(signed, ImageState::NeedsBuilding, &[build_ok("signed", 1)]),
            ImageState::NeedsSigning
        );
        let sign_failed = outcome(
            "signed",
            BuildSignAction::SignImage,
            BuildSignOutcome::Failure,
            1,
        );
        assert_eq!(
            after_build_sign(
                signed,
                ImageState::NeedsBuilding,
                &[build_ok("signed", 1), sign_failed]
            ),
            ImageState::DoesNotExist
        );
        let build_failed = outcome(
            "built",
            BuildSignAction::BuildImage,
            BuildSignOutcome::Failure,
            2,
        );
        assert_eq!(
            after_build_sign(
                built,
                ImageState::NeedsBuilding,
                std::slice::from_ref(&build_failed)
            ),
            ImageState::DoesNotExist
        );
        assert_eq!(
            after_build_sign(built, ImageState::Exists, &[build_failed]),
            ImageState::Exists,
            "only images waiting for a build or sign take outcomes"
        );
    }

    #[test]
    fn the_mbsc_holds_an_entry_per_image_to_build_or_sign() {
        let mic = mic();
        let wanted = wanted(&mic.spec);
        let stale = ModuleBuildSignImage {
            spec: serde_json::from_value(
                serde_json::json!({"image": "gone", "kernelVersion": "k9"}),
            )
            .expect("spec"),
            action: BuildSignAction::BuildImage,
            generation: Some(1),
        };
        let current = ModuleBuildSignConfigSpec {
            images: vec![stale],
            ..Default::default()
        };
        let states = BTreeMap::from([
            ("built".to_owned(), ImageState::NeedsBuilding),
            ("signed".to_owned(), ImageState::NeedsSigning),
            ("there".to_owned(), ImageState::Exists),
        ]);
        let spec = desired_spec(&mic, &wanted, &states, Some(&current));
        let entries: Vec<(&str, BuildSignAction, Option<i64>)> = spec
            .images
            .iter()
            .map(|e| (e.spec.image.as_str(), e.action, e.generation))
            .collect();
        assert_eq!(
            entries,
            [
                ("built", BuildSignAction::BuildImage, Some(2)),
                ("signed", BuildSignAction::SignImage, Some(1)),
            ]
        );
        assert!(spec.push_built_image);
    }
}
