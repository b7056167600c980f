//! What each cluster of a fleet simulates: the scenario of the hub and of every spoke, built from a kernel list so
//! that spokes differ in what images their Modules need.

use kmm_sim::scenario::{Scenario, ScenarioError};

/// Kernels the default spokes run, with the OS image that ships each: spoke `i` runs the `i`-th (and, every other
/// spoke, the next one too), so no two neighbouring spokes need the same set of images.
pub const DEFAULT_KERNELS: &[(&str, &str)] = &[
    (
        "5.14.0-284.30.1.el9_2.x86_64",
        "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)",
    ),
    (
        "5.14.0-362.8.1.el9_3.x86_64",
        "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)",
    ),
    (
        "5.14.0-427.13.1.el9_4.x86_64",
        "Red Hat Enterprise Linux CoreOS 416.94.202405291527-0 (Plow)",
    ),
];

/// One spoke of a fleet.
#[derive(Debug, Clone)]
pub struct SpokeOptions {
    /// Its name: the kubeconfig context, the ManagedCluster and the cluster namespace on the hub.
    pub name: String,
    /// The kernels its nodes run (`uname -r`), one node group each.
    pub kernels: Vec<String>,
    /// Nodes per kernel.
    pub nodes_per_kernel: u32,
}

impl SpokeOptions {
    /// Spoke number `number` (from 1) of a default fleet: named `spoke-<number>`, on its share of
    /// [`DEFAULT_KERNELS`].
    pub fn numbered(number: usize, nodes_per_kernel: u32) -> Self {
        let index = number.saturating_sub(1);
        let count = DEFAULT_KERNELS.len();
        let mut kernels = vec![DEFAULT_KERNELS[index % count].0.to_owned()];
        if index.is_multiple_of(2) {
            kernels.push(DEFAULT_KERNELS[(index + 1) % count].0.to_owned());
        }
        Self {
            name: format!("spoke-{number}"),
            kernels,
            nodes_per_kernel,
        }
    }
}

/// The OS image a node on `kernel` reports: the one [`DEFAULT_KERNELS`] pairs with it, else a generic one.
fn os_image(kernel: &str) -> &'static str {
    DEFAULT_KERNELS
        .iter()
        .find(|(known, _)| *known == kernel)
        .map_or("Linux", |(_, image)| image)
}

/// The scenario of a cluster with `nodes_per_kernel` workers on each of `kernels`, named `source` in messages,
/// running at `time_scale` (the simulation's default when None).
pub(crate) fn scenario(
    source: &str,
    kernels: &[String],
    nodes_per_kernel: u32,
    time_scale: Option<f64>,
) -> Result<Scenario, ScenarioError> {
    let groups: Vec<serde_json::Value> = kernels
        .iter()
        .enumerate()
        .map(|(index, kernel)| {
            serde_json::json!({
                "namePrefix": format!("worker-{}-", index + 1),
                "count": nodes_per_kernel,
                "labels": {"node-role.kubernetes.io/worker": ""},
                "kernelVersion": kernel,
                "osImage": os_image(kernel),
            })
        })
        .collect();
    let mut scenario = serde_json::json!({ "nodes": groups });
    if let Some(scale) = time_scale {
        scenario["timeScale"] = scale.into();
    }
    let text = scenario.to_string();
    // JSON is YAML: the scenario reader checks it as it checks any file.
    Scenario::parse(&text, source, None)
}
