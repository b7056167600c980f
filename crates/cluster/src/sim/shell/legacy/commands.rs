//! The commands a simulated container answers, each from the machine of its node: the kernel as any process sees
//! it, the node's files and container runtime only through the container's `hostPath` mounts. Other commands are
//! not simulated, and say so.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::Container;
use crate::apiserver::streams::ExecOutput;
use crate::sim::machine::Machine;

/// Exit status of a command the shell cannot find.
const NOT_FOUND: i32 = 127;

/// The node's containerd socket, where crictl looks when no endpoint is given.
const CONTAINERD_SOCKET: &str = "/run/containerd/containerd.sock";

/// Run the command `name` with `args` in `container`, writing to `output`; returns its exit status.
pub fn run(container: &Container<'_>, name: &str, args: &[String], output: &mut ExecOutput) -> i32 {
    let machine = container.machine;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match (name, args.as_slice()) {
        ("true", _) => 0,
        ("false", _) => 1,
        ("echo", ["-n", rest @ ..]) => {
            output.stdout.push_str(&rest.join(" "));
            0
        }
        ("echo", rest) => {
            output.stdout.push_str(&format!("{}\n", rest.join(" ")));
            0
        }
        ("uname", flags) => uname(machine, flags, output),
        ("lsmod", []) => {
            output.stdout.push_str(&lsmod(machine));
            0
        }
        ("modinfo", [module]) => modinfo(machine, module, output),
        ("cat", files) if !files.is_empty() => cat(container, files, output),
        ("ls", [dir]) => ls(container, dir, output),
        ("crictl", args) => crictl(container, args, output),
        (name, _) => {
            output.stderr.push_str(&format!(
                "{name}: command not simulated (a simulated container answers uname, lsmod, modinfo, cat, ls, \
                 crictl images, echo, true, false, exit and sh -c)\n"
            ));
            NOT_FOUND
        }
    }
}

/// `uname` with `-r`, `-s`, `-n`, `-m` or `-a`.
fn uname(machine: &Machine, flags: &[&str], output: &mut ExecOutput) -> i32 {
    let field = |flag: &str| match flag {
        "-s" => Some(format_kernel_name(machine)),
        "-n" => Some(machine.name.clone()),
        "-r" => Some(machine.kernel_version.clone()),
        "-m" => Some(arch(machine).to_owned()),
        _ => None,
    };
    let line = match flags {
        [] => Some(format_kernel_name(machine)),
        ["-a"] => Some(format!(
            "{} {} {} #1 SMP {} GNU/Linux",
            format_kernel_name(machine),
            machine.name,
            machine.kernel_version,
            arch(machine)
        )),
        flags => flags
            .iter()
            .map(|f| field(f))
            .collect::<Option<Vec<_>>>()
            .map(|f| f.join(" ")),
    };
    match line {
        Some(line) => {
            output.stdout.push_str(&format!("{line}\n"));
            0
        }
        None => {
            output
                .stderr
                .push_str(&format!("uname: invalid option -- '{}'\n", flags.join(" ")));
            1
        }
    }
}

fn format_kernel_name(machine: &Machine) -> String {
    match machine.operating_system.as_str() {
        "linux" | "" => "Linux".to_owned(),
        other => other.to_owned(),
    }
}

/// The machine's architecture as the kernel names it (`amd64` is Kubernetes' name for `x86_64`).
fn arch(machine: &Machine) -> &str {
    match machine.architecture.as_str() {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        other => other,
    }
}

/// A module's size in `lsmod`: the simulation does not model sizes, so a stable number of 4 KiB pages is derived
/// from the name, for the column to read as on a real node.
fn module_size(module: &str) -> u64 {
    let digest = Sha256::digest(module.as_bytes());
    4096 * (4 + u64::from(digest[0]) % 60)
}

fn lsmod(machine: &Machine) -> String {
    let mut text = format!("{:<24}{:>8}  Used by\n", "Module", "Size");
    for module in &machine.modules {
        text.push_str(&format!("{module:<24}{:>8}  0\n", module_size(module)));
    }
    text
}

/// `modinfo` of a loaded module (the machine knows only those); modules are named with `-` or `_` alike.
fn modinfo(machine: &Machine, module: &str, output: &mut ExecOutput) -> i32 {
    let name = module.replace('-', "_");
    if !machine.modules.contains(&name) {
        output
            .stderr
            .push_str(&format!("modinfo: ERROR: Module {module} not found.\n"));
        return 1;
    }
    output.stdout.push_str(&format!(
        "filename:       /lib/modules/{kernel}/extra/{name}.ko\nname:           {name}\n\
         vermagic:       {kernel} SMP mod_unload modversions\n",
        kernel = machine.kernel_version
    ));
    0
}

/// `cat` of the containerd configuration, the one file of a machine the simulation holds, where the container
/// mounts it.
fn cat(container: &Container<'_>, files: &[&str], output: &mut ExecOutput) -> i32 {
    let machine = container.machine;
    let mut status = 0;
    for file in files {
        if container.mounts.on_node(file).as_deref()
            == Some(machine.containerd.config_path.as_str())
        {
            output.stdout.push_str(&machine.containerd.config);
        } else {
            output
                .stderr
                .push_str(&format!("cat: {file}: No such file or directory\n"));
            status = 1;
        }
    }
    status
}

/// `ls` of a directory holding shims (`/opt/rcm/bin`), where the container mounts it: the machine's installed
/// shim binaries there.
fn ls(container: &Container<'_>, dir: &str, output: &mut ExecOutput) -> i32 {
    let on_node = container.mounts.on_node(dir);
    let in_dir: Vec<&str> = match &on_node {
        Some(on_node) => container
            .machine
            .shims
            .values()
            .filter_map(|path| {
                let path = Path::new(path);
                (path.parent() == Some(Path::new(on_node))).then(|| path.file_name()?.to_str())?
            })
            .collect(),
        None => Vec::new(),
    };
    let dir = Path::new(dir.trim_end_matches('/'));
    if in_dir.is_empty() {
        output.stderr.push_str(&format!(
            "ls: cannot access '{}': No such file or directory\n",
            dir.display()
        ));
        return 2;
    }
    for name in in_dir {
        output.stdout.push_str(&format!("{name}\n"));
    }
    0
}

/// `crictl [--runtime-endpoint E | -r E | --image-endpoint E | -i E] images`: the node's images, when the endpoint
/// is the node's containerd socket and the container mounts it; without the socket crictl cannot connect.
fn crictl(container: &Container<'_>, args: &[&str], output: &mut ExecOutput) -> i32 {
    let mut endpoint = format!("unix://{CONTAINERD_SOCKET}");
    let mut rest = args;
    let command = loop {
        match rest {
            [flag, value, tail @ ..]
                if matches!(
                    *flag,
                    "-r" | "-i" | "--runtime-endpoint" | "--image-endpoint"
                ) =>
            {
                endpoint = (*value).to_owned();
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
        output.stderr.push_str(&format!(
            "crictl {}: not simulated (a simulated container answers crictl images)\n",
            command.join(" ")
        ));
        return NOT_FOUND;
    }
    let socket = endpoint.strip_prefix("unix://").unwrap_or(&endpoint);
    if container.mounts.on_node(socket).as_deref() != Some(CONTAINERD_SOCKET) {
        output.stderr.push_str(&format!(
            "crictl: cannot connect to the runtime at {endpoint}: dial unix {socket}: connect: no such file or \
             directory\n"
        ));
        return 1;
    }
    output.stdout.push_str(&crictl_images(container.machine));
    0
}

/// `crictl images`: the node's image store, with an image ID derived from the name (images have no digests here).
fn crictl_images(machine: &Machine) -> String {
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
