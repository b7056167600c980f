//! Containers of an OS image listing its kernels: a container whose image is one of the scenario's `osImages` and
//! whose command is `ls /usr/lib/modules` (or `/lib/modules`, directly or in a `sh -c` script) prints the kernel
//! that image boots. What it prints is decided by the image, not by the node the pod runs on, as on a real node,
//! where the container sees the image's filesystem and not the host's.

use kmm_api::image_ref::comparison_key;

use super::podspec::command_line;
use super::{ContainerRun, Outcome};
use crate::World;

/// Where an OS image keeps one directory per kernel it carries.
const MODULE_DIRECTORIES: [&str; 2] = ["/usr/lib/modules", "/lib/modules"];

/// The kernel the container's image boots, when it is an OS image of the scenario and the container lists its
/// module directory.
pub(super) fn listed_kernel<'w>(world: &'w World, run: &ContainerRun) -> Option<&'w str> {
    let image = comparison_key(run.container.image.as_deref()?);
    let os_image = world
        .scenario
        .os_images
        .iter()
        .find(|candidate| comparison_key(&candidate.url) == image)?;
    lists_modules(&command_line(run.container)).then_some(os_image.kernel_version.as_str())
}

/// Whether a command line is `ls <module directory>`, alone or as the script of `sh -c`.
fn lists_modules(line: &[&str]) -> bool {
    match line {
        [shell, "-c", script] if shell.rsplit('/').next() == Some("sh") => {
            let words: Vec<&str> = script.split_whitespace().collect();
            lists_modules(&words)
        }
        [program, directory] => {
            program.rsplit('/').next() == Some("ls")
                && MODULE_DIRECTORIES.contains(&directory.trim_end_matches('/'))
        }
        _ => false,
    }
}

/// The listing: the one kernel directory of the image.
pub(super) fn finish(kernel: &str) -> Outcome {
    Outcome::success(vec![kernel.to_owned()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_commands_are_recognised() {
        assert!(lists_modules(&["ls", "/usr/lib/modules"]));
        assert!(lists_modules(&["/bin/ls", "/lib/modules/"]));
        assert!(lists_modules(&["/bin/sh", "-c", "ls /usr/lib/modules"]));
        assert!(!lists_modules(&["ls", "/etc"]));
        assert!(!lists_modules(&["cat", "/usr/lib/modules"]));
        assert!(!lists_modules(&["sh", "-c", "rm -rf /usr/lib/modules"]));
    }
}
