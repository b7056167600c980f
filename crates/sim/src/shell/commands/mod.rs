//! The commands a simulated container runs: coreutils and busybox as a small image has them, the node's kernel and
//! runtime as seen from inside a container, and the servers images start. Each reads and writes only through its
//! [`Cx`]: the container's own files, the node's files behind `hostPath` mounts, and its bounded standard streams.

mod archive;
mod escapes;
mod files;
mod grep;
mod gzip;
mod http;
mod nc;
mod node;
mod printf;
mod reader;
mod resp;
mod seq;
mod servers;
mod system;
mod test_expr;
mod text;
mod transform;
mod view;

use super::io::{Cx, OutputLimit};

/// What a command ends with: its exit status, or that it stopped because the process wrote all it may (which
/// ends it with status 1, as a write error would).
type Status = Result<i32, OutputLimit>;

/// The commands of the simulation, by the name a path to them ends with.
const NAMES: &[&str] = &[
    "[",
    "basename",
    "cat",
    "cp",
    "crictl",
    "cut",
    "date",
    "dirname",
    "echo",
    "env",
    "false",
    "grep",
    "gunzip",
    "gzip",
    "head",
    "hostname",
    "id",
    "ls",
    "lsmod",
    "mkdir",
    "modinfo",
    "mv",
    "nc",
    "nginx",
    "nproc",
    "pause",
    "perl",
    "postgres",
    "printenv",
    "printf",
    "python",
    "python3",
    "redis-server",
    "rm",
    "rmdir",
    "seq",
    "sleep",
    "sort",
    "tail",
    "tar",
    "tee",
    "test",
    "touch",
    "tr",
    "true",
    "uname",
    "uniq",
    "uptime",
    "wc",
    "whoami",
    "yes",
    "zcat",
];

/// The command a name runs: a path to a command runs it by its last component, wherever the path points.
fn command_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Whether `name` (a name or a path) is a command of the simulation: what `command -v` and `which` answer from.
pub(super) fn known(name: &str) -> bool {
    NAMES.contains(&command_name(name))
}

/// Run the command `name` with `args`; None when `name` is not a command of the simulation (the shell then says
/// it is not simulated).
pub(super) async fn run(cx: &mut Cx<'_>, name: &str, args: &[String]) -> Option<i32> {
    let name = command_name(name);
    let status = match name {
        "true" => Ok(0),
        "false" => Ok(1),
        "echo" => text::echo(cx, args),
        "printf" => printf::printf(cx, args),
        "cat" => text::cat(cx, args).await,
        "head" => text::head(cx, args).await,
        "tail" => text::tail(cx, args).await,
        "wc" => text::wc(cx, args).await,
        "tee" => text::tee(cx, args).await,
        "basename" => text::basename(cx, args),
        "dirname" => text::dirname(cx, args),
        "yes" => text::yes(cx, args).await,
        "printenv" => text::printenv(cx, args),
        "env" => text::env(cx, args)?,
        "grep" => grep::grep(cx, args).await,
        "seq" => seq::seq(cx, args),
        "sort" => transform::sort(cx, args).await,
        "uniq" => transform::uniq(cx, args).await,
        "tr" => transform::tr(cx, args).await,
        "cut" => transform::cut(cx, args).await,
        "ls" => files::ls(cx, args),
        "mkdir" => files::mkdir(cx, args),
        "rm" => files::rm(cx, args),
        "rmdir" => files::rmdir(cx, args),
        "touch" => files::touch(cx, args),
        "cp" => files::cp(cx, args),
        "mv" => files::mv(cx, args),
        "test" | "[" => test_expr::test(cx, name, args),
        "tar" => archive::tar(cx, args).await,
        "gzip" | "gunzip" | "zcat" => gzip::gzip(cx, name, args).await,
        "sleep" => system::sleep(cx, args).await,
        "date" => system::date(cx, args),
        "hostname" => system::hostname(cx, args),
        "uname" => system::uname(cx, args),
        "uptime" => system::uptime(cx, args),
        "whoami" => cx.stdout.print("root\n").map(|()| 0),
        "id" => system::id(cx, args),
        "nproc" => system::nproc(cx, args),
        "lsmod" => node::lsmod(cx),
        "modinfo" => node::modinfo(cx, args),
        "crictl" => node::crictl(cx, args),
        "nginx" => servers::nginx(cx).await,
        "pause" => servers::pause().await,
        "nc" => nc::nc(cx, args).await?,
        "postgres" => servers::postgres(cx).await,
        "redis-server" => servers::redis_server(cx).await,
        "python" | "python3" | "perl" => servers::python(cx, args).await?,
        _ => return None,
    };
    Some(status.unwrap_or(1))
}

/// Say on standard error what went wrong, as `tool: message`; the status is the caller's.
fn complain(cx: &mut Cx<'_>, tool: &str, message: &str) -> Result<(), OutputLimit> {
    cx.stderr.print(&format!("{tool}: {message}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::testing::{container, run_in};

    #[tokio::test]
    async fn commands_run_by_name_or_path_and_others_are_not_simulated() {
        let c = container();
        for argv in [["true"], ["/bin/true"], ["/tmp/bin/true"]] {
            assert_eq!(run_in(&c, &argv, None).await.status, 0, "{argv:?}");
        }
        let missing = run_in(&c, &["apt-get", "install", "vim"], None).await;
        assert_eq!(missing.status, 127);
        assert!(known("/usr/bin/tar") && known("["));
        assert!(!known("apt-get"));
    }
}
