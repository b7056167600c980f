//! The tokens of `serve --state-dir` outlive a restart, as a real cluster's credentials do; `--rotate-tokens`
//! replaces them, and a console whose credentials were refused reads its kubeconfig again and reconnects.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

use crate::screen::{self, header, skip, status_line};
use crate::serve_process::ServeProcess;

/// How long the console may take to notice the new tokens and come back: the watches' backoff after the server
/// was away for its restart, then a read of the kubeconfig.
const RECOVER_LIMIT: Duration = Duration::from_secs(90);

/// A loopback address with a port nothing listens on now, for a server that keeps it across restarts.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").to_string()
}

/// `serve --state-dir state` on `listen`, with `extra` arguments.
fn serve(dir: &Path, listen: &str, extra: &[&str]) -> ServeProcess {
    ServeProcess::start_listening(dir, &dir.join("state"), "serve.log", "empty", listen, extra)
}

/// Whether the kubeconfig at `path` lists namespaces, or the status code it was refused with.
async fn lists(path: &Path) -> Result<(), u16> {
    let client = screen::client_from(path).await;
    match Api::<Namespace>::all(client)
        .list(&Default::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err(status.code),
        Err(other) => panic!("the server is not reachable: {other}"),
    }
}

#[tokio::test]
async fn a_restart_keeps_the_tokens_and_rotate_tokens_replaces_them() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let listen = free_address();
    let first = serve(dir.path(), &listen, &[]);
    let old = dir.path().join("old.kubeconfig");
    std::fs::copy(first.kubeconfig(), &old).expect("keeping the first kubeconfig");
    assert_eq!(lists(&old).await, Ok(()));
    drop(first);

    let again = serve(dir.path(), &listen, &[]);
    assert_eq!(
        lists(&old).await,
        Ok(()),
        "the kubeconfig of the first start still works after a restart:\n{}",
        again.log_text()
    );
    drop(again);

    let rotated = serve(dir.path(), &listen, &["--rotate-tokens"]);
    assert_eq!(
        lists(&old).await,
        Err(401),
        "rotated tokens refuse the old kubeconfig"
    );
    assert_eq!(
        lists(rotated.kubeconfig()).await,
        Ok(()),
        "the new one works"
    );
    // Serve says the tokens changed (waiting fails the test with the log when it does not).
    rotated.wait_for_log("new tokens");
}

#[test]
fn rotate_tokens_needs_a_state_directory() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .args(["serve", "--rotate-tokens"])
        .output()
        .expect("running kmm-tui");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--state-dir"), "{stderr}");
}

#[test]
fn a_console_whose_credentials_are_refused_reads_its_kubeconfig_again() {
    if skip("the console's reconnect test") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let listen = free_address();
    let server = serve(dir.path(), &listen, &[]);
    let home = tempfile::tempdir().expect("the console's home");
    let console = screen::start(
        home.path(),
        ["--kubeconfig".as_ref(), server.kubeconfig().as_os_str()],
    );
    console.wait_for("the console lists the cluster", RECOVER_LIMIT, |screen| {
        screen.contains("No Modules")
    });
    drop(server);

    let server = serve(dir.path(), &listen, &["--rotate-tokens"]);
    let screen = console.wait_for(
        "the console reconnects with the new tokens",
        RECOVER_LIMIT,
        |screen| {
            status_line(screen)
                .contains("Credentials were refused; read the kubeconfig again and reconnected")
        },
    );
    assert!(!screen.contains("Status {"), "{screen}");
    let screen = console.wait_for("the cluster's lists come back", RECOVER_LIMIT, |screen| {
        let header = header(screen);
        screen.contains("No Modules")
            && !header.contains("rejected")
            && !header.contains("cannot reach")
            && !header.contains("failing")
    });
    assert!(
        !screen.contains("Unauthorized"),
        "no raw status on screen:\n{screen}"
    );
    drop(server);
}
