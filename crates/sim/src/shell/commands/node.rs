//! The node's kernel and runtime as a container on it sees them: `lsmod` and `modinfo` of the modules its machine
//! has loaded (any container sees the kernel), and `crictl images` of its image store — only through the runtime's
//! socket, when the container mounts it. The machine is read afresh by each command.

use sha2::{Digest, Sha256};

use super::view::{CONTAINERD_SOCKET, machine};
use super::{Status, complain};
use crate::machine::Machine;
use crate::shell::fs::resolve;
use crate::shell::io::Cx;

/// A module's size in `lsmod`: the simulation does not model sizes, so a stable number of 4 KiB pages derived
/// from the name, for the column to read as on a real node.
fn module_size(module: &str) -> u64 {
    let digest = Sha256::digest(module.as_bytes());
    4096 * (4 + u64::from(digest[0]) % 60)
}

/// `lsmod`: the modules the node's kernel has loaded (none known without a machine).
pub(super) fn lsmod(cx: &mut Cx<'_>) -> Status {
    let mut text = format!("{:<24}{:>8}  Used by\n", "Module", "Size");
    for module in machine(cx).map(|m| m.modules).unwrap_or_default() {
        text.push_str(&format!("{module:<24}{:>8}  0\n", module_size(&module)));
    }
    cx.stdout.print(&text).map(|()| 0)
}

/// `modinfo MODULE`: a loaded module (the machine knows only those); modules are named with `-` or `_` alike.
pub(super) fn modinfo(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let Some(module) = args.iter().find(|a| !a.starts_with('-')) else {
        complain(cx, "modinfo", "ERROR: missing module or filename.")?;
        return Ok(1);
    };
    let name = module.replace('-', "_");
    let Some(kernel) = machine(cx)
        .filter(|m| m.modules.contains(&name))
        .map(|m| m.kernel_version)
    else {
        complain(cx, "modinfo", &format!("ERROR: Module {module} not found."))?;
        return Ok(1);
    };
    cx.stdout
        .print(&format!(
            "filename:       /lib/modules/{kernel}/extra/{name}.ko\nname:           {name}\n\
             vermagic:       {kernel} SMP mod_unload modversions\n"
        ))
        .map(|()| 0)
}

/// `crictl [--runtime-endpoint E | -r E | --image-endpoint E | -i E] images`: the node's images, when the
/// endpoint is the node's containerd socket and the container mounts it; without the socket crictl cannot
/// connect. Other subcommands are not simulated.
pub(super) fn crictl(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut endpoint = format!("unix://{CONTAINERD_SOCKET}");
    let mut rest: &[String] = args;
    let command = loop {
        match rest {
            [flag, value, tail @ ..]
                if matches!(
                    flag.as_str(),
                    "-r" | "-i" | "--runtime-endpoint" | "--image-endpoint"
                ) =>
            {
                endpoint = value.clone();
                rest = tail;
            }
            [flag, tail @ ..]
                if flag.starts_with("--runtime-endpoint=")
                    || flag.starts_with("--image-endpoint=") =>
            {
                endpoint = flag.split_once('=').map_or("", |(_, v)| v).to_owned();
                rest = tail;
            }
            other => break other,
        }
    };
    if command != ["images"] {
        complain(
            cx,
            "crictl",
            &format!(
                "{}: not simulated (a simulated container answers crictl images)",
                command.join(" ")
            ),
        )?;
        return Ok(127);
    }
    let socket = endpoint.strip_prefix("unix://").unwrap_or(&endpoint);
    let reached = cx
        .container
        .mounts
        .on_node(&resolve(cx.cwd, socket))
        .as_deref()
        == Some(CONTAINERD_SOCKET);
    let Some(node) = machine(cx).filter(|_| reached) else {
        complain(
            cx,
            "crictl",
            &format!(
                "cannot connect to the runtime at {endpoint}: dial unix {socket}: connect: no such file or directory"
            ),
        )?;
        return Ok(1);
    };
    cx.stdout.print(&images(&node)).map(|()| 0)
}

/// `crictl images`: the node's image store, with an image ID derived from the name (images have no digests here).
fn images(machine: &Machine) -> String {
    let mut text = format!(
        "{:<56} {:<16} {:<15} {}\n",
        "IMAGE", "TAG", "IMAGE ID", "SIZE"
    );
    for (image, stored) in machine.images.iter() {
        let (repository, tag) = split_tag(image);
        let digest = Sha256::digest(image.as_bytes());
        let id: String = digest.iter().take(7).map(|b| format!("{b:02x}")).collect();
        let size = format!("{:.1}MB", stored.size_bytes as f64 / 1_000_000.0);
        text.push_str(&format!(
            "{repository:<56} {tag:<16} {:<15} {size}\n",
            &id[..13]
        ));
    }
    text
}

/// An image reference's repository and tag (`<none>` without one, as crictl shows).
fn split_tag(image: &str) -> (&str, &str) {
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => (&image[..name_start + i], &image[name_start + i + 1..]),
        None => (image, "<none>"),
    }
}

#[cfg(test)]
mod tests;
