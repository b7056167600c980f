//! `v1` Endpoints served as kube-apiserver serves them: created, read, listed, watched, updated and deleted, printed
//! with the columns `kubectl get endpoints` shows, and pruned by `kubectl apply --prune`, whose default list of
//! kinds names them. Also the way these tests drive kubectl against the HTTPS listener.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Endpoints;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::common::{cluster, cluster_with};

/// kubectl pointed at a cluster's HTTPS listener through the kubeconfig the cluster wrote.
pub(super) struct Kubectl {
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Kubectl {
    /// A cluster serving HTTPS and kubectl for it; None, saying so, where kubectl is not installed.
    pub(super) async fn with_cluster() -> Option<(EmbeddedCluster, Self)> {
        let installed = Command::new("kubectl")
            .args(["version", "--client"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !installed {
            println!("skipping: kubectl not found on PATH");
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let cluster = cluster_with(EmbeddedOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            kubeconfig_out: Some(kubeconfig.clone()),
            ..Default::default()
        })
        .await;
        Some((cluster, Self { kubeconfig, dir }))
    }

    /// Run kubectl with `args`, `stdin` as its input, on a blocking thread so the in-process server keeps serving.
    pub(super) async fn run(&self, args: &[&str], stdin: &str) -> Output {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let stdin = stdin.to_owned();
        let kubeconfig = self.kubeconfig.clone();
        let cache = self.dir.path().join("cache");
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = Command::new("kubectl")
                .args(&args)
                .env("KUBECONFIG", kubeconfig)
                .env("KUBECACHEDIR", cache)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starting kubectl");
            child
                .stdin
                .take()
                .expect("kubectl's stdin")
                .write_all(stdin.as_bytes())
                .expect("writing kubectl's input");
            child.wait_with_output().expect("waiting for kubectl")
        })
        .await
        .expect("the kubectl thread")
    }
}

/// kubectl's output as text, failing the test with its error output when it failed.
pub(super) fn succeeded(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn endpoints(name: &str, ips: &[&str], port: i32) -> Endpoints {
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({ "ip": ip })).collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "subsets": [{"addresses": addresses, "ports": [{"name": "http", "port": port}]}]
    }))
    .unwrap()
}

#[tokio::test]
async fn endpoints_are_served_and_printed() {
    let cluster = cluster().await;
    let client = cluster.client();
    let api = Api::<Endpoints>::namespaced(client.clone(), "default");
    let mut watch = api
        .watch(&WatchParams::default().labels("app=db"), "0")
        .await
        .expect("Endpoints are watched")
        .boxed();
    let created = api
        .create(
            &PostParams::default(),
            &endpoints("db", &["10.0.0.1", "10.0.0.2"], 5432),
        )
        .await
        .expect("Endpoints are created");
    let port = &created.subsets.as_ref().unwrap()[0].ports.as_ref().unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    match watch.try_next().await.expect("the watch goes on") {
        Some(WatchEvent::Added(added)) => {
            assert_eq!(added.metadata.name.as_deref(), Some("db"));
        }
        other => panic!("expected the Endpoints to be added: {other:?}"),
    }
    api.create(
        &PostParams::default(),
        &endpoints(
            "wide",
            &["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4"],
            80,
        ),
    )
    .await
    .unwrap();
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .expect("Endpoints are listed")
        .items
        .into_iter()
        .filter_map(|e| e.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["db", "kubernetes", "wide"]);

    let mut read = api.get("db").await.expect("Endpoints are read");
    read.subsets.as_mut().unwrap()[0].ports.as_mut().unwrap()[0].port = 5433;
    let replaced = api
        .replace("db", &PostParams::default(), &read)
        .await
        .expect("Endpoints are updated");
    assert_eq!(
        replaced.subsets.unwrap()[0].ports.as_ref().unwrap()[0].port,
        5433
    );

    let request = http::Request::get("/api/v1/namespaces/default/endpoints")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(request).await.expect("a Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Endpoints", "Age"]);
    let cells = |name: &str| {
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["cells"][0] == json!(name))
            .map(|row| row["cells"][1].clone())
    };
    assert_eq!(cells("db"), Some(json!("10.0.0.1:5433,10.0.0.2:5433")));
    assert_eq!(
        cells("wide"),
        Some(json!("10.0.1.1:80,10.0.1.2:80,10.0.1.3:80 + 1 more..."))
    );

    api.delete("db", &DeleteParams::default())
        .await
        .expect("Endpoints are deleted");
    assert!(api.get_opt("db").await.unwrap().is_none());
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_apply_prunes_endpoints() {
    let Some((cluster, kubectl)) = Kubectl::with_cluster().await else {
        return;
    };
    let manifest = |names: &[&str]| -> String {
        names
            .iter()
            .map(|name| {
                format!(
                    "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {name}\n  labels:\n    set: pruned\n\
                     subsets:\n- addresses:\n  - ip: 10.0.0.9\n  ports:\n  - port: 80\n"
                )
            })
            .collect::<Vec<_>>()
            .join("---\n")
    };
    let prune = [
        "apply",
        "-n",
        "default",
        "--prune",
        "-l",
        "set=pruned",
        "--prune-allowlist=core/v1/Endpoints",
        "-f",
        "-",
    ];
    succeeded(
        &kubectl.run(&prune, &manifest(&["kept", "dropped"])).await,
        "the first apply",
    );
    let output = succeeded(
        &kubectl.run(&prune, &manifest(&["kept"])).await,
        "the pruning apply",
    );
    assert!(output.contains("endpoints/dropped pruned"), "{output}");
    let listed = succeeded(
        &kubectl
            .run(
                &["get", "endpoints", "-n", "default", "-l", "set=pruned"],
                "",
            )
            .await,
        "kubectl get endpoints",
    );
    let mut lines = listed.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "ENDPOINTS", "AGE"], "{listed}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(&rows[0][..2], ["kept", "10.0.0.9:80"], "{listed}");
    cluster.shutdown().await;
}
