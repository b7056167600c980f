//! What a write will do, for its confirmation dialog: the batch an approval lets start, its nodes, how the batch
//! before it ended and how many failures the rollout still tolerates; the installs a pause lets finish; the failed
//! nodes a retry installs again; the nodes an image is pulled again on or purged from. A person answers `y` to
//! what they read here, so it is read from the same cluster data the panes show.

use std::collections::HashSet;

use crate::tui::data::ClusterData;
use crate::tui::writes::WriteRequest;
use kmm_api::kmm::ModuleImageSpec;
use kmm_api::plural::{count, plural};
use kmm_api::shim::names::{self, node_batch_annotation};
use kmm_api::shim::{Shim, ShimNodeState};
use kmm_engine::day0::images::mic_name;

use super::cache_detail;

/// The names shown before `and N more`.
const SHOWN: usize = 4;

/// The lines under the dialog's question for `request`: none when the question says it all.
pub fn consequences(data: &ClusterData, request: &WriteRequest) -> Vec<String> {
    match request {
        WriteRequest::ApproveBatch { shim, batch } => data
            .shim(&shim.name)
            .map(|s| approval(data, s, *batch))
            .unwrap_or_default(),
        WriteRequest::SetPaused { shim, paused } => data
            .shim(&shim.name)
            .map(|s| pause(s, *paused))
            .unwrap_or_default(),
        WriteRequest::RetryNodes { shim, nodes } => data
            .shim(&shim.name)
            .map(|s| retry(s, nodes))
            .unwrap_or_default(),
        WriteRequest::Repull { cache, image, node } => cache_detail::detail(
            data,
            cache.namespace.as_deref().unwrap_or_default(),
            &cache.name,
        )
        .map(|detail| repull(&detail, image.as_deref(), node.as_deref()))
        .unwrap_or_default(),
        WriteRequest::Purge { cache } => cache_detail::detail(
            data,
            cache.namespace.as_deref().unwrap_or_default(),
            &cache.name,
        )
        .map(|detail| purge(&detail))
        .unwrap_or_default(),
        WriteRequest::Rebuild { module, image } => rebuild(
            data,
            module.namespace.as_deref().unwrap_or_default(),
            &module.name,
            image.as_deref(),
        ),
        WriteRequest::RebuildDay0 { day0 } => rebuild(
            data,
            day0.namespace.as_deref().unwrap_or_default(),
            &mic_name(&day0.name),
            None,
        ),
        WriteRequest::ValidateKernel { kernel, .. } => validation(data, kernel),
        WriteRequest::PushBuiltImages { modules, .. } => vec![
            format!("Built again and pushed: {}", names(modules)),
            "Build (and sign) pods run in the cluster and push to each Module's registry"
                .to_owned(),
        ],
        WriteRequest::Recheck { module, image } => recheck(
            data,
            module.namespace.as_deref().unwrap_or_default(),
            &module.name,
            image.as_deref(),
        ),
        WriteRequest::RebuildOnHub { images, .. } => vec![
            format!(
                "The hub checks {} again under a new generation and builds (and signs) {} missing",
                if images.len() == 1 { "the image" } else { "each image" },
                if images.len() == 1 { "it if" } else { "those" }
            ),
            "Each cluster keeps the image it runs until the new one exists, then gets it through its ManifestWork"
                .to_owned(),
        ],
        WriteRequest::Delete { .. } | WriteRequest::Apply { .. } => Vec::new(),
    }
}

/// What validating against `kernel` does: check every Module's image with pull pods, build the missing ones
/// that have a build section without pushing them, and which nodes the kernel is new to.
fn validation(data: &ClusterData, kernel: &str) -> Vec<String> {
    let moving = data
        .nodes
        .iter()
        .filter(|n| kmm_engine::kmm::kernel::node_kernel(n).is_some_and(|k| k != kernel))
        .count();
    vec![
        "Each Module's image is checked with a pull pod; missing images with a build or sign section are built, \
         not pushed (B pushes them)"
            .to_owned(),
        format!(
            "{moving} of {} run another kernel now",
            count(data.nodes.len(), "node")
        ),
    ]
}

/// `a, b, c, d and 3 more`: the first few of a list of names, then how many more.
pub fn names(list: &[String]) -> String {
    if list.len() <= SHOWN {
        list.join(", ")
    } else {
        format!(
            "{} and {} more",
            list[..SHOWN].join(", "),
            list.len() - SHOWN
        )
    }
}

/// The nodes of the Shim's status in `state` (and batch `batch`, when given).
fn nodes_in(shim: &Shim, state: ShimNodeState, batch: Option<i32>) -> Vec<String> {
    shim.status
        .iter()
        .flat_map(|s| s.node_statuses.iter())
        .filter(|n| n.state == state && batch.is_none_or(|b| n.batch == Some(b)))
        .map(|n| n.node.clone())
        .collect()
}

/// What approving `batch` starts, how the batch before it ended, and the failures still tolerated.
fn approval(data: &ClusterData, shim: &Shim, batch: i32) -> Vec<String> {
    let name = shim.metadata.name.clone().unwrap_or_default();
    let batches = shim
        .status
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .map_or(0, |r| r.batches);
    let starting = nodes_in(shim, ShimNodeState::Waiting, Some(batch));
    let mut lines = vec![format!(
        "Batch {batch} of {batches} installs on {}: {}",
        count(starting.len(), "node"),
        names(&starting)
    )];
    if batch > 1 {
        let previous = batch - 1;
        let provisioned = provisioned_in(data, &name, previous);
        let failed = nodes_in(shim, ShimNodeState::Failed, Some(previous));
        let failures = if failed.is_empty() {
            "0 failed".to_owned()
        } else {
            format!("{} failed ({})", failed.len(), names(&failed))
        };
        lines.push(format!(
            "Batch {previous} before it: {provisioned} provisioned, {failures}"
        ));
    }
    let allowed = shim
        .spec
        .rollout_strategy
        .rolling
        .as_ref()
        .and_then(|r| r.max_failures)
        .unwrap_or(0);
    let failed = shim
        .status
        .as_ref()
        .and_then(|s| s.node_counts.as_ref())
        .map_or(0, |c| c.failed);
    lines.push(format!(
        "maxFailures {allowed}: {failed} failed so far, {} more tolerated before the rollout stops",
        (allowed - failed).max(0)
    ));
    let paused = shim
        .spec
        .rollout_strategy
        .rolling
        .as_ref()
        .is_some_and(|r| r.paused);
    if paused {
        lines.push(format!(
            "The rollout is paused: the approval is recorded now, and batch {batch} starts once the rollout is resumed"
        ));
    }
    lines
}

/// How many nodes batch `batch` of Shim `name` provisioned: nodes labelled `<name>=provisioned` whose batch is
/// `batch`, as the node records it (or, while it is still there, its installer pod).
fn provisioned_in(data: &ClusterData, name: &str, batch: i32) -> usize {
    let wanted = batch.to_string();
    let node_key = node_batch_annotation(name);
    let installed_in_batch: HashSet<&str> = data
        .pods
        .iter()
        .filter(|pod| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(names::SHIM_NAME))
                .map(String::as_str)
                == Some(name)
                && pod
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(names::POD_BATCH))
                    == Some(&wanted)
        })
        .filter_map(|pod| pod.spec.as_ref()?.node_name.as_deref())
        .collect();
    data.nodes
        .iter()
        .filter(|node| {
            let node_name = node.metadata.name.as_deref().unwrap_or_default();
            let labelled = node
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(name))
                .map(String::as_str)
                == Some("provisioned");
            let recorded = node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(&node_key));
            labelled
                && (recorded == Some(&wanted)
                    || (recorded.is_none() && installed_in_batch.contains(node_name)))
        })
        .count()
}

/// The images of ModuleImagesConfig `namespace/mic` a rebuild or recheck acts on (every image, or just `image`).
fn images_of<'a>(
    data: &'a ClusterData,
    namespace: &str,
    mic: &str,
    image: Option<&'a str>,
) -> Vec<&'a ModuleImageSpec> {
    data.mic(namespace, mic)
        .into_iter()
        .flat_map(|mic| mic.spec.images.iter())
        .map(|entry| &entry.spec)
        .filter(|spec| image.is_none_or(|wanted| spec.image == wanted))
        .collect()
}

/// `image (kernel k)`, for lists of images.
fn with_kernel(spec: &ModuleImageSpec) -> String {
    format!("{} (kernel {})", spec.image, spec.kernel_version)
}

/// What a rebuild does with each image: check it again, and build or sign the missing ones that have a recipe to
/// produce them; an image without a build or sign section is only checked again, so the dialog never promises a
/// build that cannot happen.
fn rebuild(data: &ClusterData, namespace: &str, mic: &str, image: Option<&str>) -> Vec<String> {
    let images = images_of(data, namespace, mic, image);
    if images.is_empty() {
        return image
            .map(|image| {
                vec![format!(
                    "{image} is checked again, and built if the registry lacks it and the Module can build it."
                )]
            })
            .unwrap_or_default();
    }
    // Images grouped by what happens to them, in the order they come.
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for spec in images {
        let outcome = rebuild_outcome(spec);
        match groups.iter_mut().find(|(what, _)| *what == outcome) {
            Some((_, listed)) => listed.push(with_kernel(spec)),
            None => groups.push((outcome, vec![with_kernel(spec)])),
        }
    }
    groups
        .into_iter()
        .map(|(what, listed)| {
            let verb = if listed.len() == 1 { "is" } else { "are" };
            format!(
                "{} {verb} {what}: {}",
                count(listed.len(), "image"),
                names(&listed)
            )
        })
        .collect()
}

/// What a rebuild does with one image, by the recipes it has.
fn rebuild_outcome(spec: &ModuleImageSpec) -> &'static str {
    match (spec.build.is_some(), spec.sign.is_some()) {
        (true, true) => "checked again, each built and signed if the registry lacks it",
        (true, false) => "checked again, each built if the registry lacks it",
        (false, true) => "checked again, each signed if the registry lacks the signed image",
        (false, false) => {
            "checked again only: no build or sign section, so a missing image is reported, not built"
        }
    }
}

/// What a recheck does: a pull pod checks each image again; nothing is built.
fn recheck(data: &ClusterData, namespace: &str, mic: &str, image: Option<&str>) -> Vec<String> {
    let images: Vec<String> = images_of(data, namespace, mic, image)
        .into_iter()
        .map(with_kernel)
        .collect();
    let verb = if images.len() == 1 { "is" } else { "are" };
    let what = match (images.is_empty(), image) {
        (true, Some(image)) => format!("{image} is"),
        (true, None) => "Every image of the Module is".to_owned(),
        (false, _) => format!("{} {verb}", count(images.len(), "image")),
    };
    let listed = if images.is_empty() {
        String::new()
    } else {
        format!(": {}", names(&images))
    };
    vec![format!(
        "{what} checked again with a pull pod; no build is asked for{listed}"
    )]
}

/// What pausing or resuming does now.
fn pause(shim: &Shim, paused: bool) -> Vec<String> {
    let installing = nodes_in(shim, ShimNodeState::Pending, None);
    let waiting = nodes_in(shim, ShimNodeState::Waiting, None);
    if paused {
        let running = if installing.is_empty() {
            "No installer runs now".to_owned()
        } else {
            format!(
                "The {} running {} ({})",
                count(installing.len(), "installer"),
                if installing.len() == 1 {
                    "finishes"
                } else {
                    "finish"
                },
                names(&installing)
            )
        };
        vec![format!(
            "{running}; no new batch starts, and {} waiting {} {} until it resumes.",
            waiting.len(),
            plural(waiting.len(), "node"),
            if waiting.len() == 1 { "waits" } else { "wait" }
        )]
    } else {
        vec![format!(
            "The {} waiting {} ({}) {} installed batch by batch again.",
            waiting.len(),
            plural(waiting.len(), "node"),
            names(&waiting),
            if waiting.len() == 1 { "is" } else { "are" }
        )]
    }
}

/// Which failed installs a retry starts again.
fn retry(shim: &Shim, chosen: &[String]) -> Vec<String> {
    let failed: Vec<String> = nodes_in(shim, ShimNodeState::Failed, None)
        .into_iter()
        .filter(|node| chosen.is_empty() || chosen.contains(node))
        .collect();
    vec![format!(
        "Deletes the failed installer {} of {} ({}); the engine installs each again.",
        plural(failed.len(), "pod"),
        count(failed.len(), "node"),
        names(&failed)
    )]
}

/// Where a pull starts again.
fn repull(
    detail: &cache_detail::CacheDetail,
    image: Option<&str>,
    node: Option<&str>,
) -> Vec<String> {
    match (image, node) {
        (Some(image), Some(node)) => vec![format!("A pull pod pulls {image} on {node} once more.")],
        (Some(image), None) => {
            let coverage = detail.images.iter().find(|i| i.image == image);
            vec![format!(
                "A pull pod on each of the {} meant to hold {image} ({} hold it now).",
                count(coverage.map_or(0, |c| c.wanted), "node"),
                coverage.map_or(0, |c| c.cached)
            )]
        }
        _ => vec![format!(
            "Every image ({}) is pulled again on each node meant to hold it ({}).",
            detail.images.len(),
            count(detail.nodes.len(), "node")
        )],
    }
}

/// What a purge removes, from where.
fn purge(detail: &cache_detail::CacheDetail) -> Vec<String> {
    let images: Vec<String> = detail.images.iter().map(|i| i.image.clone()).collect();
    vec![format!(
        "Removes {} ({}) from {}; the cache then stays purged.",
        count(images.len(), "image"),
        names(&images),
        count(detail.nodes.len(), "node")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::data::Kind;
    use crate::tui::sample::sample;
    use crate::tui::target::Target;

    fn shim(name: &str) -> Target {
        Target::cluster(Kind::Shim, name)
    }

    #[test]
    fn a_retry_names_the_failed_nodes_it_installs_again() {
        let data = sample(12, 40);
        let lines = consequences(
            &data,
            &WriteRequest::RetryNodes {
                shim: shim("broken-spin"),
                nodes: Vec::new(),
            },
        );
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("Deletes the failed installer pod of 1 node (worker-"),
            "{lines:?}"
        );
    }

    #[test]
    fn approving_a_paused_rollout_says_the_batch_starts_on_resume() {
        let mut data = sample(12, 40);
        for shim in &mut data.shims {
            if shim.metadata.name.as_deref() == Some("spin-v2") {
                let shim = std::sync::Arc::make_mut(shim);
                if let Some(rolling) = shim.spec.rollout_strategy.rolling.as_mut() {
                    rolling.paused = true;
                }
            }
        }
        let lines = consequences(
            &data,
            &WriteRequest::ApproveBatch {
                shim: shim("spin-v2"),
                batch: 2,
            },
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some(
                "The rollout is paused: the approval is recorded now, and batch 2 starts once the rollout is resumed"
            ),
            "{lines:?}"
        );
    }

    #[test]
    fn a_pause_names_the_installs_that_finish_and_the_nodes_that_wait() {
        let data = sample(12, 40);
        let lines = consequences(
            &data,
            &WriteRequest::SetPaused {
                shim: shim("spin-v2"),
                paused: true,
            },
        );
        assert_eq!(
            lines,
            [
                "No installer runs now; no new batch starts, and 38 waiting nodes wait until it resumes."
            ]
        );
    }

    #[test]
    fn a_purge_names_the_images_and_how_many_nodes_lose_them() {
        let data = sample(12, 40);
        let lines = consequences(
            &data,
            &WriteRequest::Purge {
                cache: Target::namespaced(Kind::ImageCache, "acme", "warm-web"),
            },
        );
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("Removes "), "{lines:?}");
        assert!(
            lines[0].contains(" nodes; the cache then stays purged."),
            "{lines:?}"
        );
    }

    #[test]
    fn a_rebuild_of_images_without_a_build_section_only_checks_them_again() {
        let data = sample(12, 40);
        let module = Target::namespaced(Kind::Module, "kmm-net", "nvme-tuning");
        let rebuild = consequences(
            &data,
            &WriteRequest::Rebuild {
                module: module.clone(),
                image: None,
            },
        );
        assert_eq!(rebuild.len(), 1, "{rebuild:?}");
        assert!(
            rebuild[0].starts_with(
                "2 images are checked again only: no build or sign section, so a missing image is reported, not built: "
            ),
            "{rebuild:?}"
        );
        let recheck = consequences(
            &data,
            &WriteRequest::Recheck {
                module,
                image: None,
            },
        );
        assert_eq!(recheck.len(), 1, "{recheck:?}");
        assert!(
            recheck[0]
                .starts_with("2 images are checked again with a pull pod; no build is asked for: "),
            "{recheck:?}"
        );
    }

    #[test]
    fn a_rebuild_lists_its_groups_in_the_order_the_images_come() {
        let mut data = sample(12, 40);
        // The first image of nvme-tuning has no recipe; the second gets a build section.
        let build: kmm_api::kmm::Build = serde_json::from_value(
            serde_json::json!({"dockerfileConfigMap": {"name": "nvme-dockerfile"}}),
        )
        .expect("a build section");
        let mic = data
            .mics
            .iter_mut()
            .find(|mic| mic.metadata.name.as_deref() == Some("nvme-tuning"))
            .expect("the nvme-tuning ModuleImagesConfig");
        let mic = std::sync::Arc::make_mut(mic);
        assert_eq!(mic.spec.images.len(), 2);
        assert!(
            mic.spec
                .images
                .iter()
                .all(|entry| entry.spec.build.is_none() && entry.spec.sign.is_none())
        );
        mic.spec.images[1].spec.build = Some(build);
        let lines = consequences(
            &data,
            &WriteRequest::Rebuild {
                module: Target::namespaced(Kind::Module, "kmm-net", "nvme-tuning"),
                image: None,
            },
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("1 image is checked again only: no build or sign section"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("1 image is checked again, each built if the registry lacks it: "),
            "{lines:?}"
        );
    }

    #[test]
    fn names_show_the_first_few_then_a_count() {
        let list: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
        assert_eq!(names(&list), "n0, n1, n2, n3 and 2 more");
        assert_eq!(names(&list[..2]), "n0, n1");
    }
}
