//! Files planted where the embedded cluster writes: a symbolic link or a file at a name it uses, a state directory
//! or PKI that belongs to someone else. None of them may be written through, leak a token, or be trusted.

#![cfg(unix)]

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};

/// The uid files of "another user" are given (nobody's).
const OTHER_UID: u32 = 65534;

/// A file of someone else's that planted links point at.
fn victim(dir: &Path) -> PathBuf {
    let victim = dir.join("victim");
    fs::write(&victim, "the victim's own text").expect("a victim file");
    victim
}

/// Give `path` to another user; false (with the reason printed) where that is not allowed (not root).
fn give_away(path: &Path) -> bool {
    match std::os::unix::fs::lchown(path, Some(OTHER_UID), Some(OTHER_UID)) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipped: cannot give {} away: {e}", path.display());
            false
        }
    }
}

/// Start a cluster keeping its state in `state`, serving HTTPS and writing its kubeconfig to `kubeconfig` if given.
async fn start(state: &Path, kubeconfig: Option<&Path>) -> anyhow::Result<EmbeddedCluster> {
    EmbeddedCluster::start(EmbeddedOptions {
        state_dir: Some(state.to_owned()),
        listen: kubeconfig.map(|_| "127.0.0.1:0".parse().expect("an address")),
        kubeconfig_out: kubeconfig.map(Path::to_owned),
        ..EmbeddedOptions::default()
    })
    .await
}

#[tokio::test]
async fn a_planted_room_check_link_leaves_its_target_alone() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let victim = victim(dir.path());
    let state = dir.path().join("state");
    fs::create_dir(&state).expect("the state directory");
    symlink(&victim, state.join(".room-check")).expect("a planted link");
    if let Ok(cluster) = start(&state, None).await {
        cluster.shutdown().await;
    }
    assert_eq!(
        fs::read_to_string(&victim).unwrap_or_else(|_| "<not text>".into()),
        "the victim's own text",
        "the room check wrote through the link ({} bytes now)",
        fs::metadata(&victim).map(|m| m.len()).unwrap_or(0)
    );
}

#[tokio::test]
async fn a_planted_kubeconfig_temporary_neither_leaks_the_token_nor_replaces_a_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let victim = victim(dir.path());
    let out = dir.path().join("out");
    fs::create_dir(&out).expect("the kubeconfig's directory");
    // A link at the name the kubeconfig used to be written to first, and a file held open at it.
    for planted in ["open", "link"] {
        let state = dir.path().join(format!("state-{planted}"));
        let kubeconfig = out.join(format!("{planted}.kubeconfig"));
        let temporary = out.join(format!("{planted}.kubeconfig.tmp"));
        let mut held = None;
        if planted == "link" {
            symlink(&victim, &temporary).expect("a planted link");
        } else {
            fs::write(&temporary, "").expect("a planted file");
            fs::set_permissions(&temporary, fs::Permissions::from_mode(0o666)).unwrap();
            held = Some(fs::File::open(&temporary).expect("holding it open"));
        }
        let cluster = start(&state, Some(&kubeconfig))
            .await
            .expect("the cluster starts");
        let written = cluster.kubeconfig().expect("a kubeconfig").to_owned();
        cluster.shutdown().await;
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            "the victim's own text",
            "{planted}: the kubeconfig was written through the planted link"
        );
        if let Some(mut held) = held {
            let mut leaked = String::new();
            held.read_to_string(&mut leaked).unwrap();
            assert!(
                leaked.is_empty(),
                "{planted}: the held file got the kubeconfig: {leaked}"
            );
        }
        let metadata = fs::symlink_metadata(&kubeconfig).expect("the kubeconfig");
        assert!(
            metadata.is_file(),
            "{planted}: the kubeconfig is a regular file"
        );
        assert_eq!(metadata.mode() & 0o777, 0o600, "{planted}");
        assert_eq!(fs::read_to_string(&kubeconfig).unwrap(), written);
    }
}

#[tokio::test]
async fn a_pki_of_someone_else_is_refused_not_served() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    let pki = state.join("pki");
    fs::create_dir_all(&pki).expect("a planted PKI");
    let attacker = kmm_cluster::tls::issue::Authority::create(SystemTime::now()).expect("a CA");
    fs::write(pki.join("ca.crt"), &attacker.cert_pem).unwrap();
    fs::write(pki.join("ca.key"), &attacker.key_pem).unwrap();
    fs::set_permissions(pki.join("ca.key"), fs::Permissions::from_mode(0o600)).unwrap();
    for path in [pki.join("ca.crt"), pki.join("ca.key"), pki.clone()] {
        if !give_away(&path) {
            return;
        }
    }
    let started = start(&state, Some(&dir.path().join("kubeconfig"))).await;
    let error = match started {
        Ok(cluster) => {
            let served = cluster.kubeconfig().unwrap_or_default().to_owned();
            cluster.shutdown().await;
            let theirs = base64_of(&attacker.cert_pem);
            panic!(
                "a PKI of uid {OTHER_UID} was used; its CA is {}the one served",
                if served.contains(&theirs) { "" } else { "not " }
            );
        }
        Err(error) => format!("{error:#}"),
    };
    assert!(
        error.contains(&pki.display().to_string()),
        "names the PKI: {error}"
    );
    assert!(
        error.contains(&OTHER_UID.to_string()),
        "names its owner: {error}"
    );
}

#[tokio::test]
async fn a_pki_file_of_someone_else_is_refused_and_the_ca_kept() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    let kubeconfig = dir.path().join("kubeconfig");
    start(&state, Some(&kubeconfig))
        .await
        .expect("a first start")
        .shutdown()
        .await;
    let pki = state.join("pki");
    let ca = fs::read_to_string(pki.join("ca.crt")).expect("the CA");
    if !give_away(&pki.join("server.key")) {
        return;
    }
    let error = match start(&state, Some(&kubeconfig)).await {
        Ok(cluster) => {
            cluster.shutdown().await;
            panic!("a serving key of uid {OTHER_UID} was used");
        }
        Err(error) => format!("{error:#}"),
    };
    let key = pki.join("server.key").display().to_string();
    assert!(error.contains(&key) && error.contains("65534"), "{error}");
    assert_eq!(
        fs::read_to_string(pki.join("ca.crt")).unwrap(),
        ca,
        "the CA is kept"
    );
}

#[tokio::test]
async fn a_state_directory_of_someone_else_or_open_to_others_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let open = dir.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let linked = dir.path().join("linked");
    let target = dir.path().join("target");
    fs::create_dir(&target).unwrap();
    symlink(&target, &linked).unwrap();
    let mut cases = vec![(open, "others may write"), (linked, "symbolic link")];
    let theirs = dir.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    if give_away(&theirs) {
        cases.push((theirs, "65534"));
    }
    for (state, why) in cases {
        match start(&state, None).await {
            Ok(cluster) => {
                cluster.shutdown().await;
                panic!("{} was used as the state directory", state.display());
            }
            Err(error) => {
                let error = format!("{error:#}");
                assert!(error.contains(&state.display().to_string()), "{error}");
                assert!(error.contains(why), "says {why:?}: {error}");
            }
        }
    }
}

/// `text` in standard base64, as a kubeconfig carries its CA.
fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
