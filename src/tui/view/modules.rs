//! Rows of the Modules pane: one per Module, with where it is loaded, its images, its device plugin or DRA driver,
//! and why it is not available.

use crate::tui::data::ClusterData;
use kmm_api::conditions::{AVAILABLE, DEGRADED, PROGRESSING};
use kmm_api::kmm::Module;

use super::{Health, condition, matches_filter};

/// One Module as the Modules pane shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleRow {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Distinct kernels of the targeted nodes that have a mapping.
    pub kernels: usize,
    /// Nodes matching the selector.
    pub targeted: i32,
    /// Nodes that should load the module.
    pub desired: i32,
    /// Nodes where it is loaded.
    pub available: i32,
    /// Images known to exist.
    pub images_existing: i32,
    /// Images the Module needs.
    pub images_total: i32,
    /// Overall state.
    pub health: Health,
    /// `Reason: message` of the condition that explains a Module not available.
    pub reason: Option<String>,
    /// Its device plugin's nodes, when it has one.
    pub plugin: Option<PluginCounts>,
    /// Its DRA driver's nodes, when it has one.
    pub dra: Option<PluginCounts>,
}

/// Where a Module's device plugin (or DRA driver) should run and where it is available, from `status.devicePlugin`
/// (or `status.dra`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginCounts {
    /// Nodes that should run the plugin.
    pub desired: i32,
    /// Nodes where it runs and is available.
    pub available: i32,
}

impl PluginCounts {
    /// Whether the plugin is available everywhere it should run.
    pub fn complete(&self) -> bool {
        self.available >= self.desired
    }
}

impl ModuleRow {
    /// The row of one Module.
    pub fn of(module: &Module, data: &ClusterData) -> ModuleRow {
        let namespace = module.metadata.namespace.clone().unwrap_or_default();
        let name = module.metadata.name.clone().unwrap_or_default();
        let status = module.status.as_ref();
        let counts = status
            .and_then(|s| s.module_loader.clone())
            .unwrap_or_default();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let mic_status = data
            .mic(&namespace, &name)
            .and_then(|mic| mic.status.as_ref());
        let (health, reason) = judge(conditions, module.metadata.deletion_timestamp.is_some());
        let plugin = module.spec.device_plugin.as_ref().map(|_| {
            let counts = status
                .and_then(|s| s.device_plugin.clone())
                .unwrap_or_default();
            PluginCounts {
                desired: counts.desired_number,
                available: counts.available_number,
            }
        });
        let dra = module.spec.dra.as_ref().map(|_| {
            let counts = status.and_then(|s| s.dra.clone()).unwrap_or_default();
            PluginCounts {
                desired: counts.desired_number,
                available: counts.available_number,
            }
        });
        ModuleRow {
            plugin,
            dra,
            kernels: status.map_or(0, |s| s.kernels.len()),
            targeted: counts.nodes_matching_selector_number,
            desired: counts.desired_number,
            available: counts.available_number,
            images_existing: mic_status.and_then(|s| s.existing_images).unwrap_or(0),
            images_total: mic_status.and_then(|s| s.total_images).unwrap_or(0),
            health,
            reason,
            namespace,
            name,
        }
    }

    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.namespace,
                &self.name,
                self.reason.as_deref().unwrap_or_default(),
            ],
        )
    }
}

/// Health and explanation from a Module's conditions: Degraded wins, then Available, then Progressing.
fn judge(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    deleting: bool,
) -> (Health, Option<String>) {
    let is_true = |type_| condition(conditions, type_).filter(|c| c.status == "True");
    let explain = |c: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition| {
        Some(if c.message.is_empty() {
            c.reason.clone()
        } else if c.message.starts_with(&c.reason) {
            c.message.clone()
        } else {
            format!("{}: {}", c.reason, c.message)
        })
    };
    if deleting {
        return (
            Health::Progressing,
            Some("Deleting: unloading from every node".to_owned()),
        );
    }
    if let Some(degraded) = is_true(DEGRADED) {
        return (Health::Error, explain(degraded));
    }
    if is_true(AVAILABLE).is_some() {
        return (Health::Ok, None);
    }
    if let Some(progressing) = is_true(PROGRESSING) {
        return (Health::Progressing, explain(progressing));
    }
    match condition(conditions, AVAILABLE) {
        Some(available) => (Health::Warning, explain(available)),
        None => (
            Health::Unknown,
            Some("Pending: no status reported yet".to_owned()),
        ),
    }
}

/// Every Module's row, in namespace/name order.
pub fn rows(data: &ClusterData) -> Vec<ModuleRow> {
    data.modules
        .iter()
        .map(|module| ModuleRow::of(module, data))
        .collect()
}
