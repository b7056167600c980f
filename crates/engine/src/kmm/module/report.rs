//! Why a Module is where it is: findings from the plan and what the cluster shows (image states, pull pods,
//! workers), folded into the `Available`, `Progressing`, `Degraded` and `Ready` conditions with reasons a person
//! can act on. Pure, so every message is tested without a cluster.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::plan::{Plan, SkipReason};
use crate::runtime::status::set_condition;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING, READY};
use kmm_api::kmm::ImageState;

/// What the cluster shows about a Module's work beyond the plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// State of each image the MIC has checked.
    pub image_states: BTreeMap<String, ImageState>,
    /// Pull pods stuck pulling: image → the kubelet's reason and message.
    pub pull_waits: BTreeMap<String, String>,
    /// Targeted nodes that have an NMC entry.
    pub desired: i32,
    /// Nodes whose loaded module matches their entry.
    pub available: i32,
    /// Worker pods failing: node → what the worker said.
    pub worker_failures: BTreeMap<String, String>,
    /// The name of the Module's MIC, for messages that tell the user where to act.
    pub mic_name: String,
    /// Images to build or sign whose recipe names an input that is missing: image → what is missing.
    pub missing_inputs: BTreeMap<String, String>,
    /// Objects the spec refers to that do not exist (field, what is missing): while any is missing, every node
    /// keeps the entry it has.
    pub missing_references: Vec<String>,
    /// Held nodes (the spec cannot be prepared for them) that keep an entry, and so still count as targeted.
    pub held: i32,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    /// Needs a person.
    Degraded,
    /// Will resolve by itself.
    Progressing,
    /// Worth knowing (a node deliberately left out).
    Info,
}

/// One reason, and the subjects it applies to.
struct Finding {
    severity: Severity,
    reason: &'static str,
    subjects: Vec<String>,
}

/// How many subjects of one finding a message names before "and N more".
const NAMED_SUBJECTS: usize = 3;

impl Finding {
    fn message(&self) -> String {
        let named: Vec<&str> = self
            .subjects
            .iter()
            .take(NAMED_SUBJECTS)
            .map(String::as_str)
            .collect();
        let mut text = format!("{}: {}", self.reason, named.join("; "));
        if self.subjects.len() > NAMED_SUBJECTS {
            text.push_str(&format!(
                "; and {} more",
                self.subjects.len() - NAMED_SUBJECTS
            ));
        }
        text
    }
}

/// Collects subjects under (severity, reason), keeping first-seen order.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, severity: Severity, reason: &'static str, subject: String) {
        match self
            .0
            .iter_mut()
            .find(|f| f.reason == reason && f.severity == severity)
        {
            Some(finding) => finding.subjects.push(subject),
            None => self.0.push(Finding {
                severity,
                reason,
                subjects: vec![subject],
            }),
        }
    }

    fn of(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.0.iter().filter(move |f| f.severity == severity)
    }
}

/// The nodes of each distinct mapping error, in node order: one typo on a thousand nodes is one finding.
fn bad_mappings(plan: &Plan) -> Vec<(&str, Vec<&str>)> {
    let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
    for skip in &plan.skipped {
        let SkipReason::BadMapping(error) = &skip.reason else {
            continue;
        };
        match grouped.iter_mut().find(|(seen, _)| seen == error) {
            Some((_, nodes)) => nodes.push(&skip.node),
            None => grouped.push((error, vec![&skip.node])),
        }
    }
    grouped
}

/// `nodes` named for a message: the first few, then how many more.
pub(crate) fn named(nodes: &[&str]) -> String {
    let shown = nodes[..nodes.len().min(NAMED_SUBJECTS)].join(", ");
    match nodes.len() {
        1 => format!("node {shown}"),
        n if n <= NAMED_SUBJECTS => format!("nodes {shown}"),
        n => format!("nodes {shown} and {} more", n - NAMED_SUBJECTS),
    }
}

fn findings(plan: &Plan, observed: &Observed) -> Findings {
    let mut found = Findings::default();
    for image in &plan.images {
        let name = &image.image;
        let recipe = image.build.is_some() || image.sign.is_some();
        match observed.image_states.get(name) {
            Some(ImageState::Exists) => {}
            Some(state @ (ImageState::NeedsBuilding | ImageState::NeedsSigning)) => {
                match observed.missing_inputs.get(name) {
                    Some(why) => found.add(
                        Severity::Degraded,
                        "InvalidReference",
                        format!("{name} {state:?}, but {why}"),
                    ),
                    None => found.add(
                        Severity::Progressing,
                        "ImageMissing",
                        format!("{name} {state:?}"),
                    ),
                }
            }
            Some(ImageState::DoesNotExist) if recipe => found.add(
                Severity::Degraded,
                "ImageMissing",
                format!(
                    "{name} DoesNotExist: its build or sign failed (see ModuleImagesConfig {}; bump the image's \
                     generation there to retry)",
                    observed.mic_name
                ),
            ),
            Some(ImageState::DoesNotExist) => found.add(
                Severity::Degraded,
                "ImageMissing",
                format!("{name} DoesNotExist and the Module has no build section for it"),
            ),
            None => match observed.pull_waits.get(name) {
                Some(wait) if recipe => found.add(
                    Severity::Progressing,
                    "ImageChecking",
                    format!("{name} not pulled yet ({wait})"),
                ),
                Some(wait) => found.add(
                    Severity::Degraded,
                    "ImageMissing",
                    format!(
                        "{name} cannot be pulled ({wait}); there is no build section, so the module waits until \
                         the image is pushed"
                    ),
                ),
                None => found.add(
                    Severity::Progressing,
                    "ImageChecking",
                    format!("{name} is being checked by a pull pod"),
                ),
            },
        }
    }
    for skip in &plan.skipped {
        let node = &skip.node;
        match &skip.reason {
            SkipReason::Taint(taint) => found.add(
                Severity::Info,
                "NodeUnschedulable",
                format!("{node} has taint {taint} that the Module does not tolerate"),
            ),
            SkipReason::NoMapping(kernel) => found.add(
                Severity::Info,
                "NoKernelMapping",
                format!("{node} runs kernel {kernel}, which no kernel mapping matches"),
            ),
            SkipReason::NoKernel => found.add(
                Severity::Info,
                "NodeKernelUnknown",
                format!("{node} reports no kernel version yet"),
            ),
            // Told once per error below, with the nodes it holds.
            SkipReason::BadMapping(_) => {}
            SkipReason::AwaitingVersion(version) => found.add(
                Severity::Info,
                "AwaitingVersionLabel",
                format!("{node} is not labelled for version {version} yet"),
            ),
        }
    }
    for (error, nodes) in bad_mappings(plan) {
        found.add(
            Severity::Degraded,
            "InvalidKernelMapping",
            format!("{error}; {} keep what they have loaded", named(&nodes)),
        );
    }
    for missing in &observed.missing_references {
        found.add(
            Severity::Degraded,
            "InvalidReference",
            format!("{missing}; every node keeps what it has loaded"),
        );
    }
    for (node, message) in &observed.worker_failures {
        found.add(
            Severity::Degraded,
            "WorkerFailing",
            format!("{node}: {message}"),
        );
    }
    let targets = plan.targets.len() as i32;
    if observed.available < observed.desired {
        found.add(
            Severity::Progressing,
            "Loading",
            format!(
                "loaded on {} of {} nodes with an entry",
                observed.available, observed.desired
            ),
        );
    }
    if targets == 0 && plan.skipped.is_empty() && plan.held.is_empty() {
        found.add(
            Severity::Info,
            "NoMatchingNodes",
            "no node matches the selector".to_owned(),
        );
    }
    found
}

/// Set the Module's conditions in `conditions` from the plan and the observations.
pub fn set_conditions(
    conditions: &mut Vec<Condition>,
    plan: &Plan,
    observed: &Observed,
    generation: Option<i64>,
) {
    let found = findings(plan, observed);
    // Held nodes that keep an entry are still the Module's: what runs there counts until the spec is fixed.
    let targets = plan.targets.len() as i32 + observed.held;
    let available = targets > 0 && observed.desired == targets && observed.available == targets;
    let first_problem = found
        .of(Severity::Degraded)
        .chain(found.of(Severity::Progressing))
        .chain(found.of(Severity::Info))
        .next()
        .map(|f| f.reason);
    let summary = format!(
        "loaded on {} of {} targeted nodes",
        observed.available.min(targets),
        targets
    );
    let reason = if available {
        "Loaded"
    } else {
        first_problem.unwrap_or("NotLoaded")
    };
    let joined = |severity: Severity| {
        found
            .of(severity)
            .map(Finding::message)
            .collect::<Vec<_>>()
            .join(". ")
    };
    let blocking: Vec<String> = found
        .of(Severity::Degraded)
        .chain(found.of(Severity::Progressing))
        .map(Finding::message)
        .collect();
    let mut available_message = summary.clone();
    for part in &blocking {
        available_message.push_str(". ");
        available_message.push_str(part);
    }
    set_condition(
        conditions,
        AVAILABLE,
        available,
        reason,
        available_message.clone(),
        generation,
    );
    let progressing = found.of(Severity::Progressing).next();
    set_condition(
        conditions,
        PROGRESSING,
        progressing.is_some(),
        progressing.map_or("Idle", |f| f.reason),
        joined(Severity::Progressing),
        generation,
    );
    let degraded = found.of(Severity::Degraded).next();
    set_condition(
        conditions,
        DEGRADED,
        degraded.is_some(),
        degraded.map_or("AsExpected", |f| f.reason),
        joined(Severity::Degraded),
        generation,
    );
    let mut ready_message = available_message;
    let info = joined(Severity::Info);
    if !info.is_empty() {
        ready_message.push_str(". ");
        ready_message.push_str(&info);
    }
    set_condition(
        conditions,
        READY,
        available,
        reason,
        ready_message,
        generation,
    );
}

/// Set the conditions of a Module whose spec has no `moduleLoader`: the engine loads and unloads nothing for it, so
/// nothing is available, progressing or degraded, and every condition answers the generation that says so.
pub fn set_no_loader_conditions(conditions: &mut Vec<Condition>, generation: Option<i64>) {
    let message = "spec.moduleLoader is not set: the engine loads and unloads nothing for this Module (nodes keep \
                   what they have loaded)";
    for type_ in [AVAILABLE, READY] {
        set_condition(
            conditions,
            type_,
            false,
            "NoModuleLoader",
            message,
            generation,
        );
    }
    set_condition(conditions, PROGRESSING, false, "Idle", "", generation);
    set_condition(conditions, DEGRADED, false, "AsExpected", "", generation);
}

/// Set the conditions of a Module being deleted: it is no longer available anywhere it is still loaded, and
/// `progress` says what the deletion waits for.
pub fn set_deleting_conditions(
    conditions: &mut Vec<Condition>,
    progress: &str,
    generation: Option<i64>,
) {
    for type_ in [AVAILABLE, READY] {
        set_condition(conditions, type_, false, "Deleting", progress, generation);
    }
    set_condition(
        conditions,
        PROGRESSING,
        true,
        "Deleting",
        progress,
        generation,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmm::module::plan::{Skip, Target};
    use kmm_api::kmm::ModuleImageSpec;

    fn image(name: &str, build: bool) -> ModuleImageSpec {
        serde_json::from_value(serde_json::json!({
            "image": name, "kernelVersion": "5.14.0",
            "build": if build { serde_json::json!({"dockerfileConfigMap": {"name": "d"}}) } else { serde_json::Value::Null },
        }))
        .expect("image spec")
    }

    fn target(node: &str, image: &str) -> Target {
        Target {
            node: node.into(),
            node_uid: String::new(),
            mapping: crate::kmm::kernel::ResolvedMapping {
                kernel: "5.14.0".into(),
                image: image.into(),
                build: None,
                sign: None,
                registry_tls: None,
                in_tree_modules_to_remove: vec![],
            },
        }
    }

    fn condition<'c>(conditions: &'c [Condition], type_: &str) -> &'c Condition {
        conditions.iter().find(|c| c.type_ == type_).expect(type_)
    }

    #[test]
    fn everything_loaded_is_available() {
        let plan = Plan {
            targeted: 2,
            targets: vec![target("a", "q/x:1"), target("b", "q/x:1")],
            images: vec![image("q/x:1", false)],
            ..Default::default()
        };
        let observed = Observed {
            image_states: [("q/x:1".to_owned(), ImageState::Exists)].into(),
            desired: 2,
            available: 2,
            ..Default::default()
        };
        let mut conditions = Vec::new();
        set_conditions(&mut conditions, &plan, &observed, Some(1));
        let available = condition(&conditions, AVAILABLE);
        assert_eq!(
            (available.status.as_str(), available.reason.as_str()),
            ("True", "Loaded")
        );
        assert_eq!(available.message, "loaded on 2 of 2 targeted nodes");
        assert_eq!(condition(&conditions, DEGRADED).status, "False");
    }

    #[test]
    fn a_missing_image_names_itself_and_why() {
        let plan = Plan {
            targeted: 1,
            targets: vec![target("a", "q/x:1")],
            images: vec![image("q/x:1", true), image("q/y:1", false)],
            skipped: vec![Skip {
                node: "m".into(),
                reason: SkipReason::Taint("maintenance=true:NoSchedule".into()),
            }],
            ..Default::default()
        };
        let observed = Observed {
            image_states: [("q/x:1".to_owned(), ImageState::NeedsBuilding)].into(),
            pull_waits: [("q/y:1".to_owned(), "ImagePullBackOff: not found".to_owned())].into(),
            mic_name: "mod".into(),
            ..Default::default()
        };
        let mut conditions = Vec::new();
        set_conditions(&mut conditions, &plan, &observed, Some(1));
        let available = condition(&conditions, AVAILABLE);
        assert_eq!(available.status, "False");
        assert_eq!(available.reason, "ImageMissing");
        assert!(
            available
                .message
                .contains("ImageMissing: q/x:1 NeedsBuilding"),
            "{}",
            available.message
        );
        let degraded = condition(&conditions, DEGRADED);
        assert!(
            degraded
                .message
                .contains("q/y:1 cannot be pulled (ImagePullBackOff: not found)")
        );
        let ready = condition(&conditions, READY);
        assert!(
            ready
                .message
                .contains("NodeUnschedulable: m has taint maintenance=true:NoSchedule"),
            "{}",
            ready.message
        );
    }

    #[test]
    fn a_mapping_typo_is_degraded_once_and_what_runs_still_counts() {
        let typo = "spec.moduleLoader.container.kernelMappings[0].containerImage \"q/x:${KERNEL_XYZ\" opens a \
                    template with `${` and never closes it with `}`";
        let plan = Plan {
            targeted: 4,
            held: ["a", "b", "c", "d"].map(str::to_owned).into(),
            skipped: ["a", "b", "c", "d"]
                .map(|node| Skip {
                    node: node.into(),
                    reason: SkipReason::BadMapping(typo.to_owned()),
                })
                .into(),
            ..Default::default()
        };
        let observed = Observed {
            desired: 4,
            available: 4,
            held: 4,
            ..Default::default()
        };
        let mut conditions = Vec::new();
        set_conditions(&mut conditions, &plan, &observed, Some(3));
        let available = condition(&conditions, AVAILABLE);
        assert_eq!(available.status, "True", "{}", available.message);
        assert!(
            available
                .message
                .starts_with("loaded on 4 of 4 targeted nodes")
        );
        let degraded = condition(&conditions, DEGRADED);
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "InvalidKernelMapping")
        );
        assert_eq!(
            degraded.message,
            format!(
                "InvalidKernelMapping: {typo}; nodes a, b, c and 1 more keep what they have loaded"
            )
        );
        assert_eq!(degraded.observed_generation, Some(3));
    }

    #[test]
    fn many_subjects_are_counted_not_listed() {
        let plan = Plan {
            skipped: (0..10)
                .map(|i| Skip {
                    node: format!("n{i}"),
                    reason: SkipReason::NoKernel,
                })
                .collect(),
            ..Default::default()
        };
        let mut conditions = Vec::new();
        set_conditions(&mut conditions, &plan, &Observed::default(), None);
        assert!(
            condition(&conditions, READY)
                .message
                .ends_with("n2 reports no kernel version yet; and 7 more")
        );
    }
}
