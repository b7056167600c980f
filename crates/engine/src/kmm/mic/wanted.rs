//! The images a MIC asks about, each at the generation it asks for, and the recorded states that still answer
//! them: a state recorded for an older generation (or an image no longer asked about) answers nothing.

use std::collections::BTreeMap;

use kmm_api::kmm::{ImageState, ModuleImageState, ModuleImagesConfigImage, ModuleImagesConfigSpec};

/// Pull pod type whose failed pull is an answer: the image is missing (something builds it, or the Module said
/// not to wait).
pub(super) const ONE_TIME_PULL: &str = "one-time-pull";

/// Pull pod type that keeps pulling until the image appears.
pub(super) const UNTIL_SUCCESS: &str = "until-success";

/// One image of the spec at the generation it asks for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wanted<'m> {
    /// The spec entry.
    pub spec: &'m ModuleImagesConfigImage,
    /// Its generation; unset means 1.
    pub generation: i64,
}

impl Wanted<'_> {
    /// The image reference.
    pub(super) fn image(&self) -> &str {
        &self.spec.spec.image
    }

    /// Whether a missing image is built.
    pub(super) fn builds(&self) -> bool {
        self.spec.spec.build.is_some()
    }

    /// Whether the image is signed.
    pub(super) fn signs(&self) -> bool {
        self.spec.spec.sign.is_some()
    }

    /// The state of the image once a pull proved it missing.
    pub(super) fn missing_state(&self) -> ImageState {
        if self.builds() {
            ImageState::NeedsBuilding
        } else if self.signs() {
            ImageState::NeedsSigning
        } else {
            ImageState::DoesNotExist
        }
    }

    /// Whether a recorded state still fits the image's recipes: an image waiting for a build or sign whose recipe
    /// was removed must be checked again rather than wait for work nobody will do.
    pub(super) fn fits(&self, state: ImageState) -> bool {
        match state {
            ImageState::NeedsBuilding => self.builds(),
            ImageState::NeedsSigning => self.signs(),
            ImageState::Exists | ImageState::DoesNotExist => true,
        }
    }

    /// The pull pod type checking this image.
    pub(super) fn pull_pod_type(&self) -> &'static str {
        if self.builds() || self.signs() || self.spec.spec.skip_wait_missing_image {
            ONE_TIME_PULL
        } else {
            UNTIL_SUCCESS
        }
    }
}

/// The spec's images, first occurrence of each image only, in spec order.
pub(super) fn wanted(spec: &ModuleImagesConfigSpec) -> Vec<Wanted<'_>> {
    let mut seen = std::collections::BTreeSet::new();
    spec.images
        .iter()
        .filter(|image| seen.insert(image.spec.image.as_str()))
        .map(|spec| Wanted {
            spec,
            generation: spec.generation.unwrap_or(1),
        })
        .collect()
}

/// The recorded states that answer the images at their current generation and still fit their recipes, by image.
pub(super) fn current_states(
    wanted: &[Wanted],
    recorded: &[ModuleImageState],
) -> BTreeMap<String, ImageState> {
    recorded
        .iter()
        .filter(|state| {
            wanted.iter().any(|w| {
                w.image() == state.image
                    && state.observed_generation.unwrap_or(1) == w.generation
                    && w.fits(state.status)
            })
        })
        .map(|state| (state.image.clone(), state.status))
        .collect()
}

/// The digests recorded for images whose recorded state still answers them (see [`current_states`]) and says
/// they exist.
pub(super) fn current_digests(
    recorded: &[ModuleImageState],
    states: &BTreeMap<String, ImageState>,
) -> BTreeMap<String, String> {
    recorded
        .iter()
        .filter(|state| states.get(&state.image) == Some(&ImageState::Exists))
        .filter_map(|state| Some((state.image.clone(), state.digest.clone()?)))
        .collect()
}

/// The states to record, in spec order, each stamped with the generation it answers, an existing image with the
/// digest it exists at when that is known.
pub(super) fn to_record(
    wanted: &[Wanted],
    states: &BTreeMap<String, ImageState>,
    digests: &BTreeMap<String, String>,
) -> Vec<ModuleImageState> {
    wanted
        .iter()
        .filter_map(|w| {
            states.get(w.image()).map(|status| ModuleImageState {
                image: w.image().to_owned(),
                status: *status,
                observed_generation: Some(w.generation),
                digest: (*status == ImageState::Exists)
                    .then(|| digests.get(w.image()).cloned())
                    .flatten(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(images: serde_json::Value) -> ModuleImagesConfigSpec {
        serde_json::from_value(serde_json::json!({ "images": images })).expect("spec")
    }

    #[test]
    fn pull_pod_type_and_missing_state_follow_the_recipes() {
        let spec = spec(serde_json::json!([
            {"image": "a", "kernelVersion": "k1"},
            {"image": "b", "kernelVersion": "k2", "skipWaitMissingImage": true},
            {"image": "c", "kernelVersion": "k3", "build": {"dockerfileConfigMap": {"name": "d"}}},
            {"image": "d", "kernelVersion": "k4", "sign": {"keySecret": {"name": "k"}, "certSecret": {"name": "c"}}},
            {"image": "a", "kernelVersion": "k5", "generation": 7},
        ]));
        let wanted = wanted(&spec);
        let summary: Vec<(&str, &str, ImageState, i64)> = wanted
            .iter()
            .map(|w| {
                (
                    w.image(),
                    w.pull_pod_type(),
                    w.missing_state(),
                    w.generation,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("a", UNTIL_SUCCESS, ImageState::DoesNotExist, 1),
                ("b", ONE_TIME_PULL, ImageState::DoesNotExist, 1),
                ("c", ONE_TIME_PULL, ImageState::NeedsBuilding, 1),
                ("d", ONE_TIME_PULL, ImageState::NeedsSigning, 1),
            ]
        );
    }

    #[test]
    fn states_of_other_generations_images_or_recipes_answer_nothing() {
        let spec = spec(serde_json::json!([
            {"image": "a", "kernelVersion": "k", "generation": 2},
            {"image": "b", "kernelVersion": "k"},
        ]));
        let wanted = wanted(&spec);
        let recorded = |image: &str, generation: Option<i64>| ModuleImageState {
            image: image.into(),
            status: ImageState::Exists,
            observed_generation: generation,
            digest: Some(format!("sha256:{image}")),
        };
        let building_without_recipe = ModuleImageState {
            status: ImageState::NeedsBuilding,
            ..recorded("a", Some(2))
        };
        let all = [
            recorded("a", Some(1)),
            building_without_recipe,
            recorded("b", None),
            recorded("gone", Some(1)),
        ];
        let states = current_states(&wanted, &all);
        assert_eq!(states.keys().map(String::as_str).collect::<Vec<_>>(), ["b"]);
        let digests = current_digests(&all, &states);
        assert_eq!(
            digests.keys().map(String::as_str).collect::<Vec<_>>(),
            ["b"]
        );
        let record = to_record(&wanted, &states, &digests);
        assert_eq!(record, [recorded("b", Some(1))]);
    }
}
