//! kubectl against an embedded cluster served over HTTPS on loopback: the real client's view of the wire. Tests
//! that use it skip, saying so, where kubectl is not installed.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};

/// An embedded cluster served on a free loopback port, with the kubeconfig kubectl uses.
pub(crate) struct Served {
    /// The cluster.
    pub cluster: EmbeddedCluster,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// Whether kubectl is on the PATH and runs.
pub(crate) fn kubectl_installed() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Start a cluster kubectl can reach, with `options` (a scenario, say) otherwise.
pub(crate) async fn serve(options: EmbeddedOptions) -> Served {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        listen: Some(([127, 0, 0, 1], 0).into()),
        kubeconfig_out: Some(kubeconfig.clone()),
        ..options
    })
    .await
    .expect("the embedded cluster starts");
    Served {
        cluster,
        kubeconfig,
        _dir: dir,
    }
}

impl Served {
    /// Run kubectl with `args` (and `stdin`, if any); its exit success, stdout and stderr.
    pub(crate) async fn kubectl(
        &self,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String, String) {
        let kubeconfig = self.kubeconfig.clone();
        let cache = self._dir.path().join("kube-cache");
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let stdin = stdin.map(str::to_owned);
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = Command::new("kubectl")
                .args(&args)
                .env("KUBECONFIG", &kubeconfig)
                .env("KUBECACHEDIR", &cache)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starting kubectl");
            let mut input = child.stdin.take().expect("kubectl's stdin");
            if let Some(text) = stdin {
                input
                    .write_all(text.as_bytes())
                    .expect("writing to kubectl");
            }
            drop(input);
            let output = child.wait_with_output().expect("kubectl runs");
            (
                output.status.success(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        })
        .await
        .expect("kubectl's thread")
    }
}
