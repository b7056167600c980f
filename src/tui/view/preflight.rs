//! The Preflight pane: planning a kernel upgrade. Three tables made from what the cluster shows:
//!
//! - the kernels the cluster knows of: those its nodes run, those PreflightValidations name, those Modules map by
//!   literal (a mapping written ahead of an upgrade), and those the OS images of MachineConfigs and of the release
//!   boot (as the engine read them from the images, see [`kmm_api::kmm::os_image_kernels`]) — the one being
//!   validated marked; an OS image whose kernel could not be read is a note under the table;
//! - per Module, whether it is ready for the validated kernel and why, from the PreflightValidation's verdicts, and
//!   whether its mapping for that kernel can build (and sign) the image;
//! - per node that will move to the kernel, the device plugins and DRA drivers it loses while its kernel module
//!   reloads: every Module with a device plugin or DRA driver whose module runs there (loaded per its
//!   NodeModulesConfig, or labelled ready), and the ResourceClaims allocated there on those drivers' devices, whose
//!   pods the reload disturbs.
//!
//! The PreflightValidation shown is the newest one: the console validates one kernel at a time, since two
//! validations share each Module's preflight image check.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::tui::data::ClusterData;
use kmm_api::kmm::labels;
use kmm_api::kmm::os_image_kernels::{self, OsImageKernel};
use kmm_api::kmm::{Module, PreflightValidation, VerificationStatus};
use kmm_engine::kmm::kernel;

use super::{Health, devices, matches_filter};

/// The pane's three tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PreflightSection {
    /// Kernels to validate against.
    #[default]
    Kernels,
    /// Verdicts per Module.
    Modules,
    /// Device plugins lost per node.
    Nodes,
}

impl PreflightSection {
    /// The section `tab` moves to.
    pub fn next(self) -> Self {
        match self {
            PreflightSection::Kernels => PreflightSection::Modules,
            PreflightSection::Modules => PreflightSection::Nodes,
            PreflightSection::Nodes => PreflightSection::Kernels,
        }
    }

    /// The section `shift-tab` moves to.
    pub fn previous(self) -> Self {
        self.next().next()
    }
}

/// The validation the pane shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightSummary {
    /// The PreflightValidation's name.
    pub name: String,
    /// The kernel it validates against.
    pub kernel: String,
    /// Whether images built for it are pushed.
    pub push_built_image: bool,
}

/// A kernel the cluster knows of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRow {
    /// The kernel version.
    pub kernel: String,
    /// Where the cluster mentions it: `6 nodes run it`, `mapped by ns/name`, `PreflightValidation p`.
    pub known_from: String,
    /// Whether it is the kernel being validated.
    pub validated: bool,
}

impl KernelRow {
    /// Whether the row matches a `/` filter.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(needle, &[&self.kernel, &self.known_from])
    }
}

/// Whether a Module is ready for the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Its image exists.
    Ready,
    /// Its image was built but not pushed: `B` builds and pushes it.
    Buildable,
    /// Being checked, built or signed.
    Checking,
    /// It will not load on the kernel.
    NotReady,
    /// No verdict yet.
    Waiting,
}

impl Readiness {
    /// The word the pane shows.
    pub fn label(self) -> &'static str {
        match self {
            Readiness::Ready => "Ready",
            Readiness::Buildable => "Builds",
            Readiness::Checking => "Checking",
            Readiness::NotReady => "Not ready",
            Readiness::Waiting => "Waiting",
        }
    }

    /// How to colour it.
    pub fn health(self) -> Health {
        match self {
            Readiness::Ready => Health::Ok,
            Readiness::Buildable => Health::Warning,
            Readiness::Checking => Health::Progressing,
            Readiness::NotReady => Health::Error,
            Readiness::Waiting => Health::Unknown,
        }
    }
}

/// One Module's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightModuleRow {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Ready or not.
    pub readiness: Readiness,
    /// Why, as the engine words it.
    pub reason: String,
    /// Whether its mapping for the kernel builds or signs the image, and pushing would help: a Module `B` builds.
    pub can_build: bool,
}

impl PreflightModuleRow {
    /// Whether the row matches a `/` filter.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.namespace,
                &self.name,
                self.readiness.label(),
                &self.reason,
            ],
        )
    }
}

/// One node that moves to the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightNodeRow {
    /// Node name.
    pub node: String,
    /// The kernel it runs now.
    pub kernel: String,
    /// `namespace/name` of each Module whose device plugin stops while its module reloads.
    pub device_plugins: Vec<String>,
    /// `namespace/name (driver)` of each Module whose DRA driver stops while its module reloads.
    pub dra_drivers: Vec<String>,
    /// `namespace/name` of each ResourceClaim allocated on the node from those drivers' devices.
    pub claims: Vec<String>,
}

impl PreflightNodeRow {
    /// Whether the row matches a `/` filter.
    pub fn matches(&self, needle: &str) -> bool {
        let plugins = self.device_plugins.join(" ");
        let drivers = self.dra_drivers.join(" ");
        let claims = self.claims.join(" ");
        matches_filter(
            needle,
            &[&self.node, &self.kernel, &plugins, &drivers, &claims],
        )
    }
}

/// Everything the pane shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreflightPane {
    /// The validation shown, if any.
    pub preflight: Option<PreflightSummary>,
    /// Kernels the cluster knows of, sorted.
    pub kernels: Vec<KernelRow>,
    /// OS images whose kernel is not known, and why (or why the engine's record cannot be read).
    pub os_image_notes: Vec<String>,
    /// One row per Module that loads a kernel module.
    pub modules: Vec<PreflightModuleRow>,
    /// One row per node not on the validated kernel.
    pub nodes: Vec<PreflightNodeRow>,
}

/// The PreflightValidation the pane works with: the newest (ties broken by name).
pub fn current(data: &ClusterData) -> Option<&Arc<PreflightValidation>> {
    data.preflights
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .max_by(|a, b| {
            let created =
                |p: &PreflightValidation| p.metadata.creation_timestamp.clone().map(|t| t.0);
            created(a)
                .cmp(&created(b))
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        })
}

/// The pane's tables.
pub fn pane(data: &ClusterData) -> PreflightPane {
    let preflight = current(data).map(|p| PreflightSummary {
        name: p.metadata.name.clone().unwrap_or_default(),
        kernel: p.spec.kernel_version.trim().to_owned(),
        push_built_image: p.spec.push_built_image,
    });
    let target = preflight.as_ref().map(|p| p.kernel.as_str());
    let (os_images, os_image_notes) = os_images(data);
    PreflightPane {
        kernels: kernels(data, &os_images, target),
        os_image_notes,
        modules: current(data)
            .map(|p| module_rows(data, p))
            .unwrap_or_default(),
        nodes: target.map(|k| node_rows(data, k)).unwrap_or_default(),
        preflight,
    }
}

/// The engine's record of the OS images' kernels, and a note for each image it could not read (or for the record
/// itself when it cannot be read).
fn os_images(data: &ClusterData) -> (Vec<OsImageKernel>, Vec<String>) {
    let record = data.os_image_kernels.as_ref().and_then(|r| r.data.as_ref());
    match os_image_kernels::parse(record) {
        Err(why) => (Vec::new(), vec![why]),
        Ok(entries) => {
            let notes = entries
                .iter()
                .filter(|e| e.kernel.is_none())
                .map(|e| {
                    let why = e.failure.as_deref().unwrap_or("not read yet");
                    let of = match e.named_by.as_slice() {
                        [] => String::new(),
                        namers => format!(" of {}", namers.join(", ")),
                    };
                    format!("OS image{of}: kernel unknown, {why} ({})", e.image)
                })
                .collect();
            (entries, notes)
        }
    }
}

fn kernels(
    data: &ClusterData,
    os_images: &[OsImageKernel],
    target: Option<&str>,
) -> Vec<KernelRow> {
    let mut nodes: BTreeMap<String, usize> = BTreeMap::new();
    for node in &data.nodes {
        if let Some(k) = kernel::node_kernel(node) {
            *nodes.entry(k.to_owned()).or_default() += 1;
        }
    }
    let mut sources: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, count) in nodes {
        let noun = if count == 1 { "node runs" } else { "nodes run" };
        sources
            .entry(k)
            .or_default()
            .push(format!("{count} {noun} it"));
    }
    let mut mapped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for module in &data.modules {
        let Some(loader) = &module.spec.module_loader else {
            continue;
        };
        for literal in loader
            .container
            .kernel_mappings
            .iter()
            .filter_map(|m| m.literal.as_deref())
            .filter(|l| !l.trim().is_empty())
        {
            mapped
                .entry(literal.trim().to_owned())
                .or_default()
                .push(module_key(module));
        }
    }
    for (k, mut modules) in mapped {
        modules.dedup();
        let by = match modules.as_slice() {
            [one] => one.clone(),
            [one, two] => format!("{one} and {two}"),
            many => format!("{} Modules", many.len()),
        };
        sources
            .entry(k)
            .or_default()
            .push(format!("mapped by {by}"));
    }
    for entry in os_images {
        let Some(k) = entry
            .kernel
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
        else {
            continue;
        };
        let namers = sources.entry(k.to_owned()).or_default();
        if entry.named_by.is_empty() {
            namers.push(format!("OS image {}", entry.image));
        }
        namers.extend(
            entry
                .named_by
                .iter()
                .map(|namer| format!("OS image of {namer}")),
        );
    }
    for preflight in &data.preflights {
        let k = preflight.spec.kernel_version.trim();
        if !k.is_empty() {
            sources.entry(k.to_owned()).or_default().push(format!(
                "PreflightValidation {}",
                preflight.metadata.name.as_deref().unwrap_or_default()
            ));
        }
    }
    sources
        .into_iter()
        .map(|(kernel, mut from)| {
            from.dedup();
            KernelRow {
                validated: Some(kernel.as_str()) == target,
                kernel,
                known_from: from.join(", "),
            }
        })
        .collect()
}

fn module_key(module: &Module) -> String {
    format!(
        "{}/{}",
        module.metadata.namespace.as_deref().unwrap_or_default(),
        module.metadata.name.as_deref().unwrap_or_default()
    )
}

fn module_rows(data: &ClusterData, preflight: &PreflightValidation) -> Vec<PreflightModuleRow> {
    let target = preflight.spec.kernel_version.trim();
    let verdicts = preflight
        .status
        .as_ref()
        .map(|s| s.modules.as_slice())
        .unwrap_or_default();
    data.modules
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .filter_map(|module| {
            let loader = module.spec.module_loader.as_ref()?;
            let namespace = module.metadata.namespace.clone().unwrap_or_default();
            let name = module.metadata.name.clone().unwrap_or_default();
            let builds = matches!(
                kernel::resolve(&loader.container, target, &name, &namespace),
                Ok(Some(mapping)) if mapping.build.is_some() || mapping.sign.is_some()
            );
            let verdict = verdicts
                .iter()
                .find(|v| v.namespace == namespace && v.name == name)
                .map(|v| &v.verdict);
            let reason = verdict
                .and_then(|v| v.status_reason.clone())
                .unwrap_or_else(|| "not verified yet".to_owned());
            let readiness = match verdict.map(|v| v.verification_status) {
                None => Readiness::Waiting,
                Some(VerificationStatus::InProgress) => Readiness::Checking,
                Some(VerificationStatus::Success) if builds && !preflight.spec.push_built_image => {
                    Readiness::Buildable
                }
                Some(VerificationStatus::Success) => Readiness::Ready,
                Some(VerificationStatus::Failure) => Readiness::NotReady,
            };
            Some(PreflightModuleRow {
                can_build: builds && !preflight.spec.push_built_image,
                namespace,
                name,
                readiness,
                reason,
            })
        })
        .collect()
}

fn node_rows(data: &ClusterData, target: &str) -> Vec<PreflightNodeRow> {
    let key = |m: &Module| {
        (
            m.metadata.namespace.clone().unwrap_or_default(),
            m.metadata.name.clone().unwrap_or_default(),
        )
    };
    let with_plugin: Vec<(String, String)> = data
        .modules
        .iter()
        .filter(|m| m.spec.device_plugin.is_some())
        .map(|m| key(m))
        .collect();
    let with_dra: Vec<((String, String), String)> = data
        .modules
        .iter()
        .filter_map(|m| Some((key(m), m.spec.dra.as_ref()?.driver_name.clone())))
        .collect();
    let claims = devices::claims_per_node(data);
    data.nodes
        .iter()
        .filter_map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let current = kernel::node_kernel(node).unwrap_or_default();
            if current == target {
                return None;
            }
            let node_labels = node.metadata.labels.as_ref();
            let labelled = |label: &str| node_labels.is_some_and(|l| l.contains_key(label));
            let loaded = data
                .nmc(&name)
                .and_then(|n| n.status.as_ref())
                .map(|s| s.modules.as_slice())
                .unwrap_or_default();
            let runs_there = |ns: &str, module: &str| {
                loaded.iter().any(|l| l.namespace == ns && l.name == module)
                    || labelled(&labels::node_ready(ns, module))
            };
            let device_plugins = with_plugin
                .iter()
                .filter(|(ns, module)| {
                    runs_there(ns, module)
                        || labelled(&labels::device_plugin_ready_label(ns, module))
                })
                .map(|(ns, module)| format!("{ns}/{module}"))
                .collect();
            let drivers: Vec<&((String, String), String)> = with_dra
                .iter()
                .filter(|((ns, module), _)| runs_there(ns, module))
                .collect();
            let claims = claims
                .get(&name)
                .into_iter()
                .flatten()
                .filter(|(driver, _)| drivers.iter().any(|(_, d)| d == driver))
                .map(|(_, claim)| claim.clone())
                .collect();
            Some(PreflightNodeRow {
                node: name,
                kernel: current.to_owned(),
                device_plugins,
                dra_drivers: drivers
                    .iter()
                    .map(|((ns, module), driver)| format!("{ns}/{module} ({driver})"))
                    .collect(),
                claims,
            })
        })
        .collect()
}
