//! Image garbage collection, as the kubelet's image manager does it: when the images fill the disk above the high
//! threshold, remove images no running container uses and the runtime does not pin, least recently used first,
//! until usage is at or below the low threshold.

use std::collections::BTreeSet;

use crate::machine::Machine;

/// What a collection did.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Collected {
    /// Images removed, in the order they were removed.
    pub removed: Vec<String>,
    /// Bytes still needed to reach the low threshold when nothing more could be removed (0 when it was reached).
    pub short_bytes: u64,
}

/// The images to remove from `machine` (none when usage is at or below `high` percent), in order, and how far
/// usage would remain above `low` percent.
pub(super) fn plan(machine: &Machine, high: u8, low: u8, in_use: &BTreeSet<String>) -> Collected {
    let disk = u128::from(machine.disk_bytes);
    let mut used = u128::from(machine.images.used_bytes());
    if used * 100 <= disk * u128::from(high) {
        return Collected::default();
    }
    let target = disk * u128::from(low) / 100;
    let mut candidates: Vec<(&String, u64, std::time::Duration)> = machine
        .images
        .iter()
        .filter(|(name, image)| !image.pinned && !in_use.contains(*name))
        .map(|(name, image)| (name, image.size_bytes, image.last_used))
        .collect();
    candidates.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(b.0)));
    let mut removed = Vec::new();
    for (name, size, _) in candidates {
        if used <= target {
            break;
        }
        used -= u128::from(size);
        removed.push(name.clone());
    }
    Collected {
        removed,
        short_bytes: u64::try_from(used.saturating_sub(target)).unwrap_or(u64::MAX),
    }
}

/// Collect garbage on `machine`: plan, then remove.
pub(super) fn collect(
    machine: &mut Machine,
    high: u8,
    low: u8,
    in_use: &BTreeSet<String>,
) -> Collected {
    let collected = plan(machine, high, low, in_use);
    for image in &collected.removed {
        machine.images.remove(image);
    }
    collected
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::machine::{Containerd, ImageStore};

    const MIB: u64 = 1024 * 1024;

    fn machine(images: &[(&str, u64, u64, bool)]) -> Machine {
        let mut store = ImageStore::default();
        for (name, mib, used_at, pinned) in images {
            store.insert(name, mib * MIB, Duration::from_secs(*used_at), *pinned);
        }
        Machine {
            name: "n".into(),
            kernel_version: "k".into(),
            os_image: "o".into(),
            os_image_url: None,
            boot_id: "b".into(),
            architecture: "amd64".into(),
            operating_system: "linux".into(),
            disk_bytes: 1000 * MIB,
            modules: Default::default(),
            shims: Default::default(),
            containerd: Containerd {
                version: "1.7.13".into(),
                config_path: "/etc/containerd/config.toml".into(),
                config: String::new(),
                restarts: 0,
                last_restart: None,
            },
            images: store,
            ready: true,
        }
    }

    #[test]
    fn nothing_is_collected_at_or_below_the_high_threshold() {
        let m = machine(&[("a", 500, 1, false), ("b", 350, 2, false)]);
        assert_eq!(plan(&m, 85, 80, &BTreeSet::new()), Collected::default());
    }

    #[test]
    fn least_recently_used_go_first_down_to_the_low_threshold() {
        let m = machine(&[
            ("newest", 300, 30, false),
            ("oldest", 100, 1, false),
            ("middle", 200, 10, false),
            ("older", 300, 5, false),
        ]);
        // 900 MiB of 1000: above 85 %, must reach 800 MiB.
        let collected = plan(&m, 85, 80, &BTreeSet::new());
        assert_eq!(collected.removed, ["oldest"]);
        let m = machine(&[
            ("newest", 400, 30, false),
            ("oldest", 100, 1, false),
            ("middle", 200, 10, false),
            ("older", 250, 5, false),
        ]);
        // 950 MiB: must free 150 MiB, oldest (100) then older (250).
        let collected = plan(&m, 85, 80, &BTreeSet::new());
        assert_eq!(collected.removed, ["oldest", "older"]);
        assert_eq!(collected.short_bytes, 0);
    }

    #[test]
    fn pinned_and_in_use_images_are_spared() {
        let mut m = machine(&[
            ("pause", 150, 0, true),
            ("running", 400, 1, false),
            ("idle", 100, 50, false),
            ("recent", 300, 60, false),
        ]);
        let in_use = BTreeSet::from(["running".to_string()]);
        let collected = collect(&mut m, 85, 80, &in_use);
        assert_eq!(collected.removed, ["idle", "recent"]);
        assert!(m.images.contains("pause") && m.images.contains("running"));
        assert_eq!(collected.short_bytes, 0);

        let mut m = machine(&[("pause", 500, 0, true), ("running", 400, 1, false)]);
        let collected = collect(&mut m, 85, 80, &in_use);
        assert!(collected.removed.is_empty());
        assert_eq!(collected.short_bytes, 100 * MIB);
    }
}
