//! The console end to end: the real `kmm-tui` binary in a detached tmux session, driven by key presses and read
//! from the screen, with the cluster checked through its own kubeconfig. Skipped, saying why, where tmux is not
//! installed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kmm_api::kmm::ModuleImagesConfig;
use kube::Api;

use kmm_testing::tmux::TmuxConsole;

use crate::screen::{self, cells, client_from, header, row, skip, status_line};

/// The scenario of the rebuild test: three workers and one Module whose image is already in the registry.
const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/console.yaml");
/// The scenario's Module (and its ModuleImagesConfig).
const NAMESPACE: &str = "acme";
const MODULE: &str = "e2e-kmod";
const IMAGE: &str = "quay.io/acme/e2e-kmod:5.14.0-284.30.1.el9_2.x86_64";

/// Start-up of the binary with its embedded cluster, and convergence of the Module, on a busy two-core machine.
const CONVERGE_LIMIT: Duration = Duration::from_secs(180);
/// A reaction to one key press, or a write reaching the cluster and coming back through the watches.
const REACT_LIMIT: Duration = Duration::from_secs(30);

/// The table row that shows `needle`, split into its cells (table borders dropped).
fn cells_of<'a>(screen: &'a str, needle: &str) -> Option<Vec<&'a str>> {
    screen.lines().find(|line| line.contains(needle)).map(cells)
}

/// The GEN cell (`generation/observed`) of the image row: the cell after the image and its state.
fn image_generation(screen: &str) -> Option<String> {
    let cells = cells_of(screen, IMAGE)?;
    let position = cells.iter().position(|cell| *cell == IMAGE)?;
    cells.get(position + 2).map(|cell| (*cell).to_owned())
}

/// The `generation` the MIC's spec asks of the scenario's image (`None` when unset, which means 1).
async fn spec_generation(mics: &Api<ModuleImagesConfig>) -> Result<Option<i64>, String> {
    let mic = mics.get(MODULE).await.map_err(|error| error.to_string())?;
    mic.spec
        .images
        .iter()
        .find(|entry| entry.spec.image == IMAGE)
        .map(|entry| entry.generation)
        .ok_or_else(|| format!("the MIC has no image {IMAGE}"))
}

/// Quit with `keys`, then check the process ended well and left the terminal as it found it: off the alternate
/// screen, with nothing of the console left on it.
fn quit_and_check_restored(console: &TmuxConsole, keys: &[&str]) {
    console.press(keys);
    let pane = console.wait_for_exit(REACT_LIMIT);
    if pane.exit_status != Some(0) {
        console.fail(&format!(
            "kmm-tui exited with {:?} after {keys:?}",
            pane.exit_status
        ));
    }
    if pane.alternate_screen {
        console.fail("the terminal was left on the alternate screen");
    }
    let screen = console.screen();
    if screen.contains("kmm-tui ") || screen.contains("┌") {
        console.fail("the console's screen is still on the terminal after exit");
    }
}

#[test]
fn rebuild_from_the_module_detail_bumps_the_image_generation() {
    if skip("the console end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = screen::start(
        dir.path(),
        [
            "--embedded".as_ref(),
            "--scenario".as_ref(),
            SCENARIO.as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );

    // The Modules pane shows the Module once its image is found and it is loaded on every worker.
    console.wait_for(
        "the Module, available on 3 nodes",
        CONVERGE_LIMIT,
        |screen| {
            cells_of(screen, MODULE).is_some_and(|cells| {
                cells.contains(&NAMESPACE)
                    && cells.contains(&"3/3/3")
                    && cells.contains(&"Available")
            })
        },
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mics: Api<ModuleImagesConfig> =
        Api::namespaced(runtime.block_on(client_from(&kubeconfig)), NAMESPACE);
    let before = runtime
        .block_on(spec_generation(&mics))
        .unwrap_or_else(|error| console.fail(&format!("reading the MIC: {error}")));
    if before.unwrap_or(1) != 1 {
        console.fail(&format!(
            "the image's generation is {before:?} before any rebuild"
        ));
    }

    console.press(&["Enter"]);
    console.wait_for("the Module detail with its image", REACT_LIMIT, |screen| {
        screen.contains(&format!("{NAMESPACE}/{MODULE}"))
            && image_generation(screen).as_deref() == Some("1/1")
    });

    console.press(&["R"]);
    console.wait_for(
        "a confirmation naming the rebuild of the image",
        REACT_LIMIT,
        |screen| {
            screen.contains("Confirm")
                && screen.contains(&format!("Rebuild image {IMAGE}"))
                && screen.contains(&format!("{NAMESPACE}/{MODULE}?"))
        },
    );

    console.press(&["y"]);
    console.wait_for("the confirmation to close", REACT_LIMIT, |screen| {
        !screen.contains("Confirm")
    });

    // The write reaches the cluster: the image's generation in the MIC moves from 1 to 2.
    let deadline = Instant::now() + REACT_LIMIT;
    loop {
        match runtime.block_on(spec_generation(&mics)) {
            Ok(Some(2)) => break,
            Ok(other) if Instant::now() >= deadline => console.fail(&format!(
                "the MIC's generation of {IMAGE} is {other:?} {REACT_LIMIT:?} after confirming the rebuild, not 2"
            )),
            Err(error) if Instant::now() >= deadline => {
                console.fail(&format!("reading the MIC: {error}"))
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }

    // And comes back to the screen: the image row asks for generation 2, and the footer says what the write did.
    let moved = regex::Regex::new(r"1\s*(→|->|to)\s*2|generation 2").expect("regex");
    console.wait_for(
        "GEN 2/… on the image row and the rebuild's result in the footer",
        REACT_LIMIT,
        |screen| {
            image_generation(screen).is_some_and(|cell| cell.starts_with("2/"))
                && status_line(screen).contains(MODULE)
                && moved.is_match(status_line(screen))
        },
    );

    quit_and_check_restored(&console, &[":", "q", "Enter"]);
}

/// The cache test's scenario: two workers and the ImageCache `acme/warm` of one image.
const CACHE_SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/console-caches.yaml"
);
/// The cache's one image, as it lists it.
const CACHED_IMAGE: &str = "docker.io/library/nginx:1.27";

/// The coverage matrix row of `node`, without its border.
fn matrix_row<'a>(screen: &'a str, node: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|line| line.starts_with(&format!("│{node} ")))
}

/// The nodes holding the cache's image, by their `status.images`.
async fn nodes_holding(client: &kube::Client) -> Result<Vec<String>, String> {
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let list = nodes
        .list(&Default::default())
        .await
        .map_err(|error| error.to_string())?;
    Ok(list
        .items
        .into_iter()
        .filter(|node| {
            node.status
                .as_ref()
                .and_then(|s| s.images.as_ref())
                .is_some_and(|images| {
                    images
                        .iter()
                        .flat_map(|i| i.names.iter().flatten())
                        .any(|name| name == CACHED_IMAGE)
                })
        })
        .filter_map(|node| node.metadata.name)
        .collect())
}

#[test]
fn repull_from_the_coverage_matrix_fills_a_missing_cell() {
    use kmm_api::imagecache::names::{NODE_LABEL, OPERATION_LABEL};
    use kmm_api::imagecache::{ImageCache, PURGE_ANNOTATION};

    if skip("the console end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let console = screen::start(
        dir.path(),
        [
            "--embedded".as_ref(),
            "--scenario".as_ref(),
            CACHE_SCENARIO.as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
    );
    console.wait_for("the console, up", CONVERGE_LIMIT, |screen| {
        screen.contains("Modules [")
    });
    console.press(&[":", "caches", "Enter"]);
    console.wait_for(
        "the cache, complete on both workers",
        CONVERGE_LIMIT,
        |screen| {
            cells_of(screen, "warm")
                .is_some_and(|cells| cells.contains(&"2/2") && cells.contains(&"Complete"))
        },
    );

    // A purge empties the cache, and the engine then leaves it empty: every cell is missing.
    console.press(&["X"]);
    console.wait_for("a confirmation naming the purge", REACT_LIMIT, |screen| {
        screen.contains("Confirm") && screen.contains("Purge ImageCache acme/warm")
    });
    console.press(&["y"]);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let client = runtime.block_on(client_from(&kubeconfig));
    let caches: Api<ImageCache> = Api::namespaced(client.clone(), NAMESPACE);
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        let purged = runtime.block_on(async {
            let cache = caches.get("warm").await.map_err(|e| e.to_string())?;
            let asked = cache
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key(PURGE_ANNOTATION);
            Ok::<_, String>(!asked && nodes_holding(&client).await?.is_empty())
        });
        match purged {
            Ok(true) => break,
            other if Instant::now() >= deadline => {
                console.fail(&format!("the purge did not empty the nodes: {other:?}"))
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }

    console.press(&["Enter"]);
    console.press(&["j"]);
    console.wait_for(
        "worker-1's cell missing in the matrix",
        REACT_LIMIT,
        |screen| {
            matrix_row(screen, "worker-1").is_some_and(|row| row.contains('·'))
                && screen.contains("worker-1 × docker.io/library/nginx:1.27")
        },
    );

    // Every puller pod for worker-1 from now on.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let recorder = {
        use futures::StreamExt;
        let seen = seen.clone();
        let config = kube::runtime::watcher::Config::default().labels("imagecache=warm");
        runtime.spawn(async move {
            let mut stream = kube::runtime::watcher(pods, config)
                .default_backoff()
                .boxed();
            use kube::runtime::WatchStreamExt;
            while let Some(event) = stream.next().await {
                let Ok(
                    kube::runtime::watcher::Event::Apply(pod)
                    | kube::runtime::watcher::Event::InitApply(pod),
                ) = event
                else {
                    continue;
                };
                let labels = pod.metadata.labels.unwrap_or_default();
                let pulls = matches!(
                    labels.get(OPERATION_LABEL).map(String::as_str),
                    Some("pull" | "refresh")
                );
                if pulls && labels.get(NODE_LABEL).map(String::as_str) == Some("worker-1") {
                    seen.lock().expect("the record").extend(pod.metadata.name);
                }
            }
        })
    };

    console.press(&["P"]);
    console.wait_for(
        "a confirmation naming the image and the node",
        REACT_LIMIT,
        |screen| {
            screen.contains("Confirm")
                && screen.contains(&format!("Pull {CACHED_IMAGE} again on node worker-1"))
        },
    );
    console.press(&["y"]);
    console.wait_for(
        "worker-1's cell cached in the matrix",
        CONVERGE_LIMIT,
        |screen| {
            matrix_row(screen, "worker-1")
                .is_some_and(|row| row.contains('●') && !row.contains('·'))
        },
    );
    let holding = runtime
        .block_on(nodes_holding(&client))
        .unwrap_or_else(|error| console.fail(&format!("reading the nodes: {error}")));
    if !holding.iter().any(|node| node == "worker-1") {
        console.fail(&format!(
            "worker-1 does not report {CACHED_IMAGE}: {holding:?}"
        ));
    }
    let pullers = seen.lock().expect("the record").clone();
    if pullers.is_empty() {
        console.fail("no puller pod was seen for worker-1 after the re-pull");
    }
    recorder.abort();

    quit_and_check_restored(&console, &[":", "q", "Enter"]);
}

/// A kubeconfig for `https://127.0.0.1:1`, where nothing listens.
fn unreachable_kubeconfig(dir: &Path) -> PathBuf {
    let path = dir.join("unreachable.kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}
users:
- name: nobody
  user: {token: not-a-token}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
",
    )
    .expect("writing the kubeconfig");
    path
}

#[test]
fn a_kubeconfig_pointing_nowhere_shows_the_failure_and_stays_usable() {
    if skip("the console end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = unreachable_kubeconfig(dir.path());
    let console = screen::start(
        dir.path(),
        ["--kubeconfig".as_ref(), kubeconfig.as_os_str()],
    );

    let screen = console.wait_for(
        "the header to say the cluster cannot be reached, and why",
        CONVERGE_LIMIT,
        |screen| {
            header(screen).contains("nowhere")
                && header(screen)
                    .contains("cannot reach the cluster: connection refused at 127.0.0.1:1")
                && screen.contains("Cannot reach the cluster: connection refused at 127.0.0.1:1")
        },
    );
    assert!(
        !screen.contains("EMBEDDED"),
        "the console opened the embedded cluster instead of the kubeconfig's:\n{screen}"
    );
    if console.pane().dead {
        console.fail("kmm-tui exited on an unreachable cluster");
    }

    console.press(&["?"]);
    console.wait_for("the help view", REACT_LIMIT, |screen| {
        row(screen, 1).contains("Help") && screen.contains("ctrl-c")
    });

    quit_and_check_restored(&console, &["C-c"]);
}

#[test]
fn a_theme_file_with_unknown_keys_is_a_warning_in_the_footer() {
    if skip("the console end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let theme = dir.path().join("odd-theme.toml");
    std::fs::write(&theme, "ok = \"green\"\nsparkle = \"pink\"\n").expect("writing the theme");
    let console = screen::start(
        dir.path(),
        [
            "--embedded".as_ref(),
            "--scenario".as_ref(),
            "empty".as_ref(),
            "--theme".as_ref(),
            theme.as_os_str(),
        ],
    );

    console.wait_for(
        "the footer to warn about the unknown theme key",
        CONVERGE_LIMIT,
        |screen| {
            let status = status_line(screen);
            header(screen).contains("EMBEDDED")
                && status.contains("odd-theme.toml")
                && status.contains("sparkle")
        },
    );
    if console.pane().dead {
        console.fail("kmm-tui exited on a theme file with an unknown key");
    }

    quit_and_check_restored(&console, &["C-c"]);
}

#[test]
fn the_day0_pane_opens_the_demo_moduleday0_on_its_pool_nodes() {
    if skip("the console end-to-end test") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let console = screen::start(dir.path(), [std::ffi::OsStr::new("--embedded")]);
    // The header is in its long form (with the title) only while it fits: the badge is in every form.
    console.wait_for("the console to draw", CONVERGE_LIMIT, |screen| {
        header(screen).contains("EMBEDDED")
    });
    console.press(&[":", "d", "a", "y", "0", "Enter"]);
    // The engine creates the ModuleDay0 from the demo's kmm-managed MachineConfig of pool zone-b. Until it does,
    // the MachineConfig has a row of its own on the same pool and under the same name, `Pending` with a reason
    // that says it awaits hand-over (`enter` on it opens its events). The header counts that row as well, so only
    // the row tells the two apart: one row of that name, and not the awaiting one.
    console.wait_for(
        "the demo's ModuleDay0 on pool zone-b",
        CONVERGE_LIMIT,
        |screen| {
            let rows = screen
                .lines()
                .filter(|line| line.contains("99-zone-b-os-image"));
            header(screen).contains("D0 1")
                && rows.count() == 1
                && cells_of(screen, "99-zone-b-os-image").is_some_and(|cells| {
                    cells.contains(&"zone-b")
                        && cells.contains(&"openshift-kmm")
                        && !cells.contains(&"Pending:")
                })
        },
    );
    console.press(&["/", "z", "o", "n", "e", "Enter", "Enter"]);
    console.wait_for(
        "the detail listing the pool's nodes with their OS image",
        REACT_LIMIT,
        |screen| {
            screen.contains("openshift-kmm/99-zone-b-os-image")
                && screen.contains("worker-b-0")
                && screen.contains("worker-b-1")
                && !screen.contains("worker-a-0")
                && screen.contains("OS IMAGE")
        },
    );
    quit_and_check_restored(&console, &[":", "q", "Enter"]);
}
