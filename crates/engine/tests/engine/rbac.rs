//! The engine under real RBAC: the objects `kmm-tui controller --print-rbac` prints are installed, the engine's
//! ServiceAccount is issued a token, and the engine runs with a client presenting it. Its grants must be enough
//! to converge a Module without a single refusal, and a missing grant must show as a Forbidden Event naming what is
//! missing.

use std::io::Write;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kmm_api::lease::DEFAULT_LEASE_NAMESPACE;
use kmm_engine::runtime::rbac::EngineRbac;
use kmm_engine::{EngineConfig, LeaseConfig, PodImages, Settings};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::fmt::MakeWriter;

use super::common::{Harness, eventually};
use super::kmm::{condition, create_module, module_events};

const KERNEL_A: &str = "5.14.0-284.30.1.el9_2.x86_64";

/// Everything the engine logs, for assertions on what it says.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("the log")).into_owned()
    }
}

impl Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("the log").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Log {
    type Writer = Log;

    fn make_writer(&'a self) -> Log {
        self.clone()
    }
}

async fn apply<K>(api: Api<K>, object: &K)
where
    K: kube::Resource + Serialize + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let name = object.meta().name.clone().expect("a name");
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(object),
    )
    .await
    .expect("the RBAC object is applied");
}

/// Install `rbac` as an administrator would and return a token of its ServiceAccount.
pub(super) async fn install(harness: &Harness, rbac: &EngineRbac) -> String {
    let admin = harness.client();
    let namespace = DEFAULT_LEASE_NAMESPACE;
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("a namespace");
    apply(Api::<Namespace>::all(admin.clone()), &ns).await;
    apply(
        Api::<ServiceAccount>::namespaced(admin.clone(), namespace),
        &rbac.service_account,
    )
    .await;
    apply(Api::<ClusterRole>::all(admin.clone()), &rbac.cluster_role).await;
    apply(
        Api::<ClusterRoleBinding>::all(admin.clone()),
        &rbac.cluster_role_binding,
    )
    .await;
    apply(
        Api::<Role>::namespaced(admin.clone(), namespace),
        &rbac.role,
    )
    .await;
    apply(
        Api::<RoleBinding>::namespaced(admin.clone(), namespace),
        &rbac.role_binding,
    )
    .await;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let name = rbac
        .service_account
        .metadata
        .name
        .as_deref()
        .expect("a name");
    let issued = Api::<ServiceAccount>::namespaced(admin, namespace)
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token is issued");
    issued.status.expect("a token status").token
}

pub(super) fn lease() -> LeaseConfig {
    LeaseConfig::with_defaults("rbac-test")
}

/// Run the whole engine (leader election and every family included) as the identity of `token`.
fn run_engine(harness: &Harness, token: &str) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let client = harness
        .cluster
        .client_with_token(token)
        .expect("a client presenting the token");
    let config = EngineConfig {
        images: PodImages::default(),
        lease: lease(),
        settings: Settings::default(),
    };
    let stop = CancellationToken::new();
    let running = stop.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = kmm_engine::run(client, config, running).await {
            tracing::error!("the engine stopped: {e:#}");
        }
    });
    (stop, task)
}

pub(super) fn module_spec() -> serde_json::Value {
    json!({
        "selector": {"kmm": "yes"},
        "moduleLoader": {"container": {
            "modprobe": {"moduleName": "acme_kmod"},
            "kernelMappings": [
                {"literal": KERNEL_A, "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"},
                {"regexp": "^.+\\.el9_3\\..+$", "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"}
            ]
        }}
    })
}

async fn available(harness: &Harness, name: &str) -> bool {
    condition(harness, name, "Available")
        .await
        .is_some_and(|(status, _, _)| status == "True")
}

#[tokio::test(start_paused = true)]
async fn the_printed_rbac_is_enough_and_a_missing_rule_is_a_clear_403() {
    let log = Log::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _capture = tracing::subscriber::set_default(subscriber);
    // With a single dispatcher registered, tracing decides whether a log statement is enabled by the dispatcher of
    // the thread that meets it first, and remembers that for every thread: another test's thread (no subscriber)
    // would turn the engine's statements off for this one. A second registered dispatcher makes tracing ask them
    // all.
    let _every_dispatcher_asked =
        tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());

    let harness = Harness::start("two-kernels.yaml").await;
    let rbac = EngineRbac::new(&lease());
    let token = install(&harness, &rbac).await;
    let (stop, task) = run_engine(&harness, &token);

    create_module(&harness, "acme-kmod", module_spec()).await;
    eventually(120, "the Module converges under its ServiceAccount", || {
        available(&harness, "acme-kmod")
    })
    .await;
    let converged = log.text();
    assert!(
        converged.contains("engine acting"),
        "the engine ran as its ServiceAccount:\n{converged}"
    );
    // A refusal reads "… is forbidden: …" or carries `reason: "Forbidden", code: 403`; a bare "403" would also
    // match timestamps and identifiers.
    let refused = converged.to_lowercase().contains("forbidden") || converged.contains("code: 403");
    assert!(!refused, "the printed RBAC is short:\n{converged}");

    // Take away the grant on Module status: the next Module cannot be reported on, and the log says exactly why.
    let mut short = rbac.cluster_role.clone();
    short
        .rules
        .as_mut()
        .expect("rules")
        .iter_mut()
        .for_each(|rule| {
            if let Some(resources) = rule.resources.as_mut() {
                resources.retain(|r| r != "modules/status");
            }
        });
    Api::<ClusterRole>::all(harness.client())
        .replace(
            short.metadata.name.as_deref().expect("a name"),
            &PostParams::default(),
            &short,
        )
        .await
        .expect("the ClusterRole is replaced");
    create_module(&harness, "acme-kmod-2", module_spec()).await;
    let refusal = format!(
        "is forbidden: User \"system:serviceaccount:{DEFAULT_LEASE_NAMESPACE}:{}\" cannot patch resource \"modules/status\" in API group \"kmm.sigs.x-k8s.io\" in the namespace \"acme\"",
        kmm_engine::runtime::rbac::ENGINE_ACCOUNT
    );
    // Where a person looks: an Event on the Module (its status is what the engine may not write).
    eventually(60, "the engine reports the 403 on the Module", || async {
        module_events(&harness, "acme-kmod-2", "Forbidden")
            .await
            .iter()
            .any(|note| note.contains(&refusal))
    })
    .await;
    assert!(!available(&harness, "acme-kmod-2").await);

    stop.cancel();
    let _ = task.await;
    harness.shutdown().await;
}
