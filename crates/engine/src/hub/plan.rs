//! What a ManagedClusterModule asks of the hub right now, from the MCM, the clusters it selects, the ManifestWorks
//! they hold and the hub's ModuleImagesConfig alone: the images to build, and per cluster the kernel mappings to
//! deliver and why anything is missing. Pure, so every rule is tested without a cluster.

use std::collections::{BTreeMap, BTreeSet};

use crate::kmm::kernel::{self, ResolvedMapping};
use crate::kmm::mic::stage::{ImageStage, requested_generation, stage};
use kmm_api::hub::{ManagedClusterModule, reasons};
use kmm_api::kmm::{ImageState, ModuleImageSpec, ModuleImagesConfig};
use kmm_api::ocm::cluster::ManagedCluster;

/// What one selected cluster is delivered: one literal mapping per kernel, kernel → image.
pub(crate) type Mappings = BTreeMap<String, Mapping>;

/// The image one kernel of a cluster gets, and the in-tree modules it unloads first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// The image, its templates expanded.
    pub(crate) image: String,
    /// In-tree modules to unload before loading.
    pub(crate) in_tree_modules_to_remove: Vec<String>,
}

/// What the pass does for one selected cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Write the cluster's ManifestWork with these mappings (no write when it carries them already).
    Deliver(Mappings),
    /// Leave the cluster's ManifestWork as it is, or absent: nothing new can be delivered yet.
    Keep,
}

/// One selected cluster: what to deliver and, until it is applied, why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClusterPlan {
    /// The ManagedCluster's name.
    pub(crate) name: String,
    /// What to write.
    pub(crate) delivery: Delivery,
    /// Why the cluster is not served as the spec asks, when the hub side already knows: one of
    /// [`reasons`] and its message. `None` when the cluster's own answer (its ManifestWork's conditions) decides.
    pub(crate) blocked: Option<(&'static str, String)>,
    /// The images its kernels map to, each once, whether delivered yet or not.
    pub(crate) images: Vec<String>,
}

/// What the MCM asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// The images the hub's ModuleImagesConfig checks, builds and signs: one per distinct image any selected
    /// cluster needs. `None` when the spec cannot be acted on (a typo in a mapping): the MIC is left as it is.
    pub(crate) images: Option<Vec<ModuleImageSpec>>,
    /// Every selected cluster, by name.
    pub(crate) clusters: Vec<ClusterPlan>,
}

/// The kernels a cluster states, as KMM keys images by them: without a trailing `+`, each once.
pub(crate) fn cluster_kernels(cluster: &ManagedCluster) -> Vec<String> {
    let kernels: BTreeSet<String> = cluster
        .kernel_versions()
        .into_iter()
        .map(|kernel| kernel.strip_suffix('+').unwrap_or(kernel).to_owned())
        .filter(|kernel| !kernel.is_empty())
        .collect();
    kernels.into_iter().collect()
}

/// Whether `selector` (labels that must all be equal, as upstream's hub reads it) picks `cluster`. An empty
/// selector picks every cluster, as upstream's does.
pub(crate) fn selects(selector: &BTreeMap<String, String>, cluster: &ManagedCluster) -> bool {
    let labels = cluster.metadata.labels.as_ref();
    selector
        .iter()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

/// Compute the plan of `mcm` for `clusters` (the selected ones), each holding the mappings `delivered` says it was
/// last delivered, with image states read from `mic`.
pub(crate) fn plan(
    mcm: &ManagedClusterModule,
    clusters: &[&ManagedCluster],
    delivered: &BTreeMap<String, Mappings>,
    mic: Option<&ModuleImagesConfig>,
) -> Plan {
    let name = mcm.metadata.name.as_deref().unwrap_or_default();
    let namespace = mcm.spec.spoke_namespace.as_str();
    let Some(loader) = &mcm.spec.module_spec.module_loader else {
        // Only a device plugin or DRA driver: nothing to build, the Module goes as it is.
        return Plan {
            images: Some(Vec::new()),
            clusters: clusters
                .iter()
                .map(|cluster| ClusterPlan {
                    name: cluster.metadata.name.clone().unwrap_or_default(),
                    delivery: Delivery::Deliver(Mappings::new()),
                    blocked: None,
                    images: Vec::new(),
                })
                .collect(),
        };
    };
    let container = &loader.container;
    // Kernels are shared between clusters: each is resolved (and its regexps compiled) once. `$MOD_NAMESPACE` is the
    // spoke namespace, where the Module runs, in the images built here and in the images delivered alike.
    let mut resolved: BTreeMap<String, Option<ResolvedMapping>> = BTreeMap::new();
    for cluster in clusters {
        for kernel in cluster_kernels(cluster) {
            if resolved.contains_key(&kernel) {
                continue;
            }
            match kernel::resolve(container, &kernel, name, namespace) {
                Ok(mapping) => {
                    resolved.insert(kernel, mapping);
                }
                Err(error) => return held(clusters, error.to_string()),
            }
        }
    }
    let mut images: Vec<ModuleImageSpec> = Vec::new();
    for mapping in resolved.values().flatten() {
        if images.iter().all(|image| image.image != mapping.image) {
            images.push(ModuleImageSpec {
                image: mapping.image.clone(),
                kernel_version: mapping.kernel.clone(),
                build: mapping.build.clone(),
                sign: mapping.sign.clone(),
                skip_wait_missing_image: false,
                registry_tls: mapping.registry_tls.clone(),
                dir_name: container.modprobe.dir_name.clone(),
            });
        }
    }
    let clusters = clusters
        .iter()
        .map(|cluster| {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            let before = delivered.get(&name);
            plan_cluster(name, cluster, &resolved, before, mic)
        })
        .collect();
    Plan {
        images: Some(images),
        clusters,
    }
}

/// The plan when the mappings cannot be applied: every cluster keeps what it was delivered, and says why.
fn held(clusters: &[&ManagedCluster], message: String) -> Plan {
    Plan {
        images: None,
        clusters: clusters
            .iter()
            .map(|cluster| ClusterPlan {
                name: cluster.metadata.name.clone().unwrap_or_default(),
                delivery: Delivery::Keep,
                blocked: Some((
                    reasons::BAD_MAPPING,
                    format!("{message}; the cluster keeps the Module it was delivered"),
                )),
                images: Vec::new(),
            })
            .collect(),
    }
}

/// One cluster's plan: each kernel gets its image once it exists; until then a kernel keeps the image it was
/// delivered, so a new image being built never unloads the module from a spoke.
fn plan_cluster(
    name: String,
    cluster: &ManagedCluster,
    resolved: &BTreeMap<String, Option<ResolvedMapping>>,
    before: Option<&Mappings>,
    mic: Option<&ModuleImagesConfig>,
) -> ClusterPlan {
    let kernels = cluster_kernels(cluster);
    if kernels.is_empty() {
        return ClusterPlan {
            name,
            delivery: Delivery::Keep,
            blocked: Some((
                reasons::NO_KERNELS,
                format!(
                    "the cluster states no kernels (its {} claim is missing or empty): no image can be chosen for it",
                    kmm_api::ocm::names::CLAIM_KERNEL_VERSIONS
                ),
            )),
            images: Vec::new(),
        };
    }
    let mut mappings = Mappings::new();
    let mut failed: Vec<String> = Vec::new();
    let mut waiting: Vec<String> = Vec::new();
    let mut unmapped: Vec<&str> = Vec::new();
    let mut images: BTreeSet<String> = BTreeSet::new();
    for kernel in &kernels {
        let Some(Some(mapping)) = resolved.get(kernel) else {
            unmapped.push(kernel);
            continue;
        };
        images.insert(mapping.image.clone());
        let wanted = Mapping {
            image: mapping.image.clone(),
            in_tree_modules_to_remove: mapping.in_tree_modules_to_remove.clone(),
        };
        match image_stage(mic, &mapping.image) {
            ImageStage::Exists => {
                let image = pinned(
                    &mapping.image,
                    mic.and_then(|m| exists_at(m, &mapping.image)),
                );
                mappings.insert(kernel.clone(), Mapping { image, ..wanted });
                continue;
            }
            ImageStage::Failed { message, .. } => failed.push(message),
            ImageStage::Checking(message)
            | ImageStage::WaitingForImage(message)
            | ImageStage::Building(message)
            | ImageStage::Signing(message) => waiting.push(message),
        }
        if let Some(kept) = before.and_then(|before| before.get(kernel)) {
            mappings.insert(kernel.clone(), kept.clone());
        }
    }
    if mappings.is_empty() && failed.is_empty() && waiting.is_empty() {
        return ClusterPlan {
            name,
            delivery: Delivery::Keep,
            blocked: Some((
                reasons::NO_MAPPING,
                format!(
                    "no kernel mapping matches a kernel the cluster runs ({})",
                    unmapped.join(", ")
                ),
            )),
            images: Vec::new(),
        };
    }
    let blocked = if !failed.is_empty() {
        Some((reasons::IMAGE_FAILED, failed.join("; ")))
    } else if !waiting.is_empty() {
        Some((reasons::WAITING_FOR_IMAGES, waiting.join("; ")))
    } else {
        None
    };
    let delivery = if mappings.is_empty() {
        Delivery::Keep
    } else {
        Delivery::Deliver(mappings)
    };
    ClusterPlan {
        name,
        delivery,
        blocked,
        images: images.into_iter().collect(),
    }
}

/// The digest the hub's MIC says `image` exists at, for the generation it asks for now.
fn exists_at<'m>(mic: &'m ModuleImagesConfig, image: &str) -> Option<&'m str> {
    let generation = requested_generation(mic, image)?;
    mic.status
        .as_ref()?
        .images_states
        .iter()
        .find(|state| {
            state.image == image
                && state.status == ImageState::Exists
                && state.observed_generation.unwrap_or(1) == generation
        })?
        .digest
        .as_deref()
}

/// `image` pinned to `digest` (`repository:tag@sha256:…`, which a runtime pulls by the digest alone and a person
/// still reads by its tag); as it is when no digest is known or it names one already.
fn pinned(image: &str, digest: Option<&str>) -> String {
    match digest {
        Some(digest) if !image.contains('@') => format!("{image}@{digest}"),
        _ => image.to_owned(),
    }
}

/// Where `image` stands in the hub's MIC; checking, until the MIC lists it.
fn image_stage(mic: Option<&ModuleImagesConfig>, image: &str) -> ImageStage {
    let Some(mic) = mic else {
        return ImageStage::Checking(format!("{image}: checking the registry"));
    };
    match requested_generation(mic, image) {
        Some(generation) => stage(mic, image, generation, false),
        None => ImageStage::Checking(format!("{image}: checking the registry")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OLD: &str = "5.14.0-284.30.1.el9_2.x86_64";
    const NEW: &str = "5.14.0-362.8.1.el9_3.x86_64";

    fn mcm(mappings: serde_json::Value) -> ManagedClusterModule {
        serde_json::from_value(json!({
            "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
            "metadata": {"name": "accmod"},
            "spec": {
                "spokeNamespace": "acme",
                "selector": {"cluster.open-cluster-management.io/clusterset": "default"},
                "moduleSpec": {
                    "selector": {"node-role.kubernetes.io/worker": ""},
                    "moduleLoader": {"container": {
                        "modprobe": {"moduleName": "accmod"},
                        "kernelMappings": mappings,
                    }},
                },
            },
        }))
        .expect("an MCM")
    }

    fn cluster(name: &str, kernels: &[&str]) -> ManagedCluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {"cluster.open-cluster-management.io/clusterset": "default"}},
            "spec": {"hubAcceptsClient": true},
            "status": {"clusterClaims": [
                {"name": "kernel-versions.kmm.node.kubernetes.io", "value": kernels.join("\n")},
            ]},
        }))
        .expect("a cluster")
    }

    fn mic(states: &[(&str, &str)]) -> ModuleImagesConfig {
        let images: Vec<_> = states
            .iter()
            .map(|(image, _)| json!({"image": image, "kernelVersion": OLD}))
            .collect();
        let states: Vec<_> = states
            .iter()
            .map(|(image, state)| json!({"image": image, "status": state}))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
            "metadata": {"name": "accmod-fleet", "namespace": "kmm-hub", "generation": 1},
            "spec": {"images": images},
            "status": {"imagesStates": states, "observedGeneration": 1},
        }))
        .expect("a MIC")
    }

    fn templated() -> ManagedClusterModule {
        mcm(json!([{
            "regexp": "^.+$",
            "containerImage": "quay.io/acme/${MOD_NAMESPACE}-accmod:${KERNEL_FULL_VERSION}",
            "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
        }]))
    }

    fn image(kernel: &str) -> String {
        format!("quay.io/acme/acme-accmod:{kernel}")
    }

    #[test]
    fn clusters_sharing_a_kernel_need_its_image_once_expanded_for_the_spoke_namespace() {
        let (one, two) = (cluster("spoke-1", &[OLD, NEW]), cluster("spoke-2", &[NEW]));
        let plan = plan(&templated(), &[&one, &two], &BTreeMap::new(), None);
        let images: Vec<&str> = plan
            .images
            .as_ref()
            .expect("images")
            .iter()
            .map(|i| i.image.as_str())
            .collect();
        assert_eq!(images, [image(OLD), image(NEW)]);
        assert!(
            plan.images
                .expect("images")
                .iter()
                .all(|i| i.build.is_some())
        );
        // Each cluster names the images its kernels need, so a rebuild for one says who else it serves.
        let needs: Vec<&[String]> = plan.clusters.iter().map(|c| c.images.as_slice()).collect();
        assert_eq!(needs, [&[image(OLD), image(NEW)][..], &[image(NEW)][..]]);
        for cluster in &plan.clusters {
            assert_eq!(cluster.delivery, Delivery::Keep, "nothing exists yet");
            assert_eq!(
                cluster.blocked.as_ref().map(|b| b.0),
                Some(reasons::WAITING_FOR_IMAGES)
            );
        }
    }

    #[test]
    fn a_cluster_gets_each_kernel_once_its_image_exists_and_keeps_the_old_one_meanwhile() {
        let one = cluster("spoke-1", &[OLD, &format!("{NEW}+")]);
        let exists = mic(&[(&image(OLD), "Exists"), (&image(NEW), "NeedsBuilding")]);
        let plan1 = plan(&templated(), &[&one], &BTreeMap::new(), Some(&exists));
        let Delivery::Deliver(mappings) = &plan1.clusters[0].delivery else {
            panic!("the existing image is delivered: {plan1:?}");
        };
        assert_eq!(mappings.keys().collect::<Vec<_>>(), [OLD]);
        assert_eq!(
            plan1.clusters[0].blocked.as_ref().map(|b| b.0),
            Some(reasons::WAITING_FOR_IMAGES)
        );
        // An edit moves the old kernel to an image not built yet: the cluster keeps what it runs meanwhile.
        let delivered = BTreeMap::from([("spoke-1".to_owned(), mappings.clone())]);
        let edited = mcm(json!([{
            "regexp": "^.+$",
            "containerImage": "quay.io/acme/accmod-v2:${KERNEL_FULL_VERSION}",
            "build": {"dockerfileConfigMap": {"name": "accmod-dockerfile"}},
        }]));
        let plan2 = plan(&edited, &[&one], &delivered, Some(&exists));
        assert_eq!(
            plan2.clusters[0].delivery,
            Delivery::Deliver(mappings.clone())
        );
    }

    #[test]
    fn an_image_is_delivered_pinned_to_the_digest_the_hub_found_it_at() {
        let one = cluster("spoke-1", &[OLD]);
        let digest = format!("sha256:{}", "d".repeat(64));
        let mut found = mic(&[(&image(OLD), "Exists")]);
        let delivered_image = |mic: &ModuleImagesConfig| {
            let plan = plan(&templated(), &[&one], &BTreeMap::new(), Some(mic));
            let Delivery::Deliver(mappings) = &plan.clusters[0].delivery else {
                panic!("the existing image is delivered: {plan:?}");
            };
            (mappings[OLD].image.clone(), plan.clusters[0].images.clone())
        };
        assert_eq!(
            delivered_image(&found).0,
            image(OLD),
            "no digest known: the tag as it is"
        );
        if let Some(status) = found.status.as_mut() {
            status.images_states[0].digest = Some(digest.clone());
        }
        let (pinned, needs) = delivered_image(&found);
        assert_eq!(pinned, format!("{}@{digest}", image(OLD)));
        assert_eq!(
            needs,
            [image(OLD)],
            "the images a cluster needs are named by tag"
        );
    }

    #[test]
    fn a_typo_holds_every_cluster_and_the_images() {
        let one = cluster("spoke-1", &[OLD]);
        let typo = mcm(json!([{"regexp": "^(5.14", "containerImage": "quay.io/acme/accmod:x"}]));
        let plan = plan(&typo, &[&one], &BTreeMap::new(), None);
        assert_eq!(plan.images, None);
        assert_eq!(plan.clusters[0].delivery, Delivery::Keep);
        let (reason, message) = plan.clusters[0].blocked.clone().expect("blocked");
        assert_eq!(reason, reasons::BAD_MAPPING);
        assert!(message.contains("kernelMappings[0].regexp"), "{message}");
    }

    #[test]
    fn clusters_without_kernels_or_mappings_say_so_and_a_failed_build_names_the_image() {
        let silent = cluster("spoke-1", &[]);
        let other = cluster("spoke-2", &["4.18.0-1.el8.x86_64"]);
        let literal = mcm(
            json!([{"literal": OLD, "containerImage": "quay.io/acme/accmod:old",
                                  "build": {"dockerfileConfigMap": {"name": "d"}}}]),
        );
        let plan1 = plan(&literal, &[&silent, &other], &BTreeMap::new(), None);
        assert_eq!(
            plan1.clusters[0].blocked.as_ref().map(|b| b.0),
            Some(reasons::NO_KERNELS)
        );
        assert_eq!(
            plan1.clusters[1].blocked.as_ref().map(|b| b.0),
            Some(reasons::NO_MAPPING)
        );
        let one = cluster("spoke-3", &[OLD]);
        let failed = mic(&[("quay.io/acme/accmod:old", "DoesNotExist")]);
        let plan2 = plan(&literal, &[&one], &BTreeMap::new(), Some(&failed));
        assert_eq!(
            plan2.clusters[0].blocked.as_ref().map(|b| b.0),
            Some(reasons::IMAGE_FAILED)
        );
    }

    #[test]
    fn selectors_are_equalities_and_an_empty_one_selects_all() {
        let one = cluster("spoke-1", &[OLD]);
        assert!(selects(&BTreeMap::new(), &one));
        let set = |value: &str| {
            BTreeMap::from([(
                "cluster.open-cluster-management.io/clusterset".to_owned(),
                value.to_owned(),
            )])
        };
        assert!(selects(&set("default"), &one));
        assert!(!selects(&set("other"), &one));
    }
}
