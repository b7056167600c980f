//! The kernels of the OS images the cluster names, as the engine records them for planning an upgrade.
//!
//! No API object says which kernel an OS image boots: MachineConfigs (`spec.osImageURL`) and the release's
//! `machine-config-osimageurl` ConfigMap name images, and the kernel is inside the image (`/usr/lib/modules/<kernel>`).
//! The engine runs each image once in a short pod that lists that directory, and keeps what it learnt in one
//! ConfigMap, [`CONFIG_MAP`] in [`NAMESPACE`]: key [`DATA_KEY`], a JSON list of [`OsImageKernel`] (image references
//! are not valid ConfigMap keys). The console reads the same ConfigMap to offer those kernels for validation.

use serde::{Deserialize, Serialize};

/// Namespace of the record and of the pods that read the images: where KMM runs on OpenShift.
pub const NAMESPACE: &str = "openshift-kmm";
/// Name of the ConfigMap recording each OS image's kernel.
pub const CONFIG_MAP: &str = "kmm-tui-os-image-kernels";
/// Its one data key.
pub const DATA_KEY: &str = "osImages.json";
/// Label of the pods that list an OS image's kernels; its value is the hash naming the pod.
pub const POD_LABEL: &str = "kmm-tui.io/os-image-kernel";
/// Annotation of those pods naming the whole image reference (too long and too free for a label value).
pub const IMAGE_ANNOTATION: &str = "kmm-tui.io/os-image";

/// One OS image the cluster names, and what running it told.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsImageKernel {
    /// The image reference, as the cluster names it.
    pub image: String,
    /// Who names it, e.g. `MachineConfig 99-worker-os`, `release 4.15.3`.
    #[serde(default)]
    pub named_by: Vec<String>,
    /// The kernel it boots, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Why its kernel could not be read (the image cannot be pulled, holds no kernel, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl OsImageKernel {
    /// Whether the image was read, well or badly: a recorded image is not run again.
    pub fn resolved(&self) -> bool {
        self.kernel.is_some() || self.failure.is_some()
    }
}

/// The entries of the record's data, or why they cannot be read. No data is no entry.
pub fn parse(
    data: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<Vec<OsImageKernel>, String> {
    match data.and_then(|d| d.get(DATA_KEY)) {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text).map_err(|error| {
            format!("ConfigMap {NAMESPACE}/{CONFIG_MAP} key {DATA_KEY} is not a list of OS images: {error}")
        }),
    }
}

/// The data key's text for `entries`.
pub fn render(entries: &[OsImageKernel]) -> String {
    // A list of plain strings always serialises.
    serde_json::to_string_pretty(entries).unwrap_or_default()
}

/// The kernel in the output of `ls /usr/lib/modules` in an OS image: its one directory. An image holding several
/// kernels (a real-time kernel beside the default one) boots the default, which sorts first; anything but one
/// plausible kernel version per line is no answer.
pub fn kernel_from_listing(lines: &[String]) -> Result<String, String> {
    let kernels: Vec<&str> = lines
        .iter()
        .flat_map(|line| line.split_whitespace())
        .filter(|word| !word.is_empty())
        .collect();
    let plausible =
        |word: &str| word.chars().next().is_some_and(|c| c.is_ascii_digit()) && word.contains('.');
    match kernels.iter().copied().filter(|word| plausible(word)).min() {
        Some(kernel) => Ok(kernel.to_owned()),
        None if kernels.is_empty() => Err("the image has no kernel in /usr/lib/modules".to_owned()),
        None => Err(format!(
            "/usr/lib/modules holds no kernel version: {}",
            kernels.join(" ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_gives_the_default_kernel() {
        let lines = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            kernel_from_listing(&lines(&["5.14.0-362.8.1.el9_3.x86_64"])),
            Ok("5.14.0-362.8.1.el9_3.x86_64".to_owned())
        );
        assert_eq!(
            kernel_from_listing(&lines(&[
                "5.14.0-362.8.1.el9_3.x86_64+rt 5.14.0-362.8.1.el9_3.x86_64"
            ])),
            Ok("5.14.0-362.8.1.el9_3.x86_64".to_owned())
        );
        assert!(kernel_from_listing(&[]).is_err());
        assert!(kernel_from_listing(&lines(&["README"])).is_err());
    }

    #[test]
    fn entries_round_trip_and_bad_data_is_an_error() {
        let entries = vec![OsImageKernel {
            image: "quay.io/os@sha256:415".into(),
            named_by: vec!["release 4.15.3".into()],
            kernel: Some("5.14.0-362.8.1.el9_3.x86_64".into()),
            failure: None,
        }];
        let data = [(DATA_KEY.to_owned(), render(&entries))].into();
        assert_eq!(parse(Some(&data)), Ok(entries));
        assert_eq!(parse(None), Ok(Vec::new()));
        let bad = [(DATA_KEY.to_owned(), "{".to_owned())].into();
        assert!(parse(Some(&bad)).is_err());
    }
}
