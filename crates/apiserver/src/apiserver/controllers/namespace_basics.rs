//! What every namespace of a cluster holds from the moment it appears: the `default` ServiceAccount, which pods
//! run as unless they name another, and the `kube-root-ca.crt` ConfigMap, whose `ca.crt` lets a pod verify the API
//! server. On a real cluster kube-controller-manager's service-account controller and root CA publisher create them;
//! manifests and client libraries take both for granted. They come back when deleted, and the ConfigMap's
//! certificate is put back when changed, as there.
//!
//! The certificate published is the CA of the served kubeconfig, so what a pod would read verifies what kubectl
//! connects to. Everything is decided from the API on every pass through an in-process client, so the objects are
//! defaulted and validated like any other.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::apiserver::ApiServer;

/// The ServiceAccount every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The ConfigMap that carries the cluster's CA in every namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// The ConfigMap's key holding the PEM certificate.
pub const ROOT_CA_KEY: &str = "ca.crt";

/// The field manager of the objects created here.
const MANAGER: &str = "kube-controller-manager";

/// What the ConfigMap says of itself, so a reader knows what the certificate is for.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal \
     endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across \
     distributions of Kubernetes clusters.";

/// How long a pass whose writes failed waits before it is tried again even without a new event.
const RETRY: Duration = Duration::from_secs(1);

/// Start the controller; it stops with the server.
pub fn spawn(server: ApiServer, root_ca: String) {
    let client = kube::Client::new(server.clone(), "default");
    let shutdown = server.inner().shutdown.clone();
    tokio::spawn(async move {
        let (namespaces, namespace_writer) = reflector::store::<Namespace>();
        let (accounts, account_writer) = reflector::store::<ServiceAccount>();
        let (config_maps, config_map_writer) = reflector::store::<ConfigMap>();
        let named =
            |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
        let streams = [
            reflector::reflector(
                namespace_writer,
                watcher(Api::<Namespace>::all(client.clone()), Default::default()),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                account_writer,
                watcher(
                    Api::<ServiceAccount>::all(client.clone()),
                    named(DEFAULT_SERVICE_ACCOUNT),
                ),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                config_map_writer,
                watcher(
                    Api::<ConfigMap>::all(client.clone()),
                    named(ROOT_CA_CONFIG_MAP),
                ),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
        ];
        let mut events = futures::stream::select_all(streams);
        let stores = Stores {
            namespaces,
            accounts,
            config_maps,
        };
        let mut due = true;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                next = events.next() => match next {
                    Some(()) => due = true,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(())) = events.next().now_or_never() {}
            if due && stores.ready() {
                due = !pass(&client, &stores, &root_ca).await;
            }
        }
    });
}

/// Wait until each of `namespaces` has its ServiceAccount and ConfigMap, so a cluster that has just started shows
/// them as a running cluster does, whoever looks first. Gives up after `limit` (the controller keeps trying).
pub async fn provisioned(client: &kube::Client, namespaces: &[&str], limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    for namespace in namespaces {
        let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
        while !(matches!(accounts.get_opt(DEFAULT_SERVICE_ACCOUNT).await, Ok(Some(_)))
            && matches!(config_maps.get_opt(ROOT_CA_CONFIG_MAP).await, Ok(Some(_))))
        {
            if tokio::time::Instant::now() > deadline {
                tracing::warn!(
                    namespace,
                    "the namespace's default ServiceAccount and root CA are late"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// What a pass decides from.
struct Stores {
    namespaces: Store<Namespace>,
    accounts: Store<ServiceAccount>,
    config_maps: Store<ConfigMap>,
}

impl Stores {
    fn ready(&self) -> bool {
        self.namespaces.wait_until_ready().now_or_never().is_some()
            && self.accounts.wait_until_ready().now_or_never().is_some()
            && self.config_maps.wait_until_ready().now_or_never().is_some()
    }
}

/// Give every active namespace what it lacks; returns whether every write succeeded.
async fn pass(client: &kube::Client, stores: &Stores, root_ca: &str) -> bool {
    let mut succeeded = true;
    for namespace in stores.namespaces.state() {
        if is_terminating(&namespace) {
            continue;
        }
        let name = namespace.name_any();
        let account = ObjectRef::new(DEFAULT_SERVICE_ACCOUNT).within(&name);
        if stores.accounts.get(&account).is_none()
            && let Err(error) = create_account(client, &name).await
        {
            succeeded = false;
            tracing::debug!(namespace = %name, %error, "creating the default ServiceAccount");
        }
        let config_map = stores
            .config_maps
            .get(&ObjectRef::new(ROOT_CA_CONFIG_MAP).within(&name));
        if let Err(error) = publish_root_ca(client, &name, config_map.as_deref(), root_ca).await {
            succeeded = false;
            tracing::debug!(namespace = %name, %error, "publishing the root CA");
        }
    }
    succeeded
}

/// A namespace being deleted gets nothing new: its content is on its way out.
fn is_terminating(namespace: &Namespace) -> bool {
    namespace.meta().deletion_timestamp.is_some()
        || namespace.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
}

/// Whether a failed create needs no retry: the object exists already, or the namespace is going.
fn settled(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409 || status.code == 403 || status.code == 404)
}

async fn create_account(client: &kube::Client, namespace: &str) -> kube::Result<()> {
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(DEFAULT_SERVICE_ACCOUNT.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create(&params(), &account)
        .await
    {
        Err(error) if !settled(&error) => Err(error),
        _ => Ok(()),
    }
}

/// Create the ConfigMap when it is missing, or put the certificate back when it differs.
async fn publish_root_ca(
    client: &kube::Client,
    namespace: &str,
    current: Option<&ConfigMap>,
    root_ca: &str,
) -> kube::Result<()> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let Some(current) = current else {
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP.to_owned()),
                annotations: Some(BTreeMap::from([(
                    "kubernetes.io/description".to_owned(),
                    DESCRIPTION.to_owned(),
                )])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                ROOT_CA_KEY.to_owned(),
                root_ca.to_owned(),
            )])),
            ..Default::default()
        };
        return match api.create(&params(), &config_map).await {
            Err(error) if !settled(&error) => Err(error),
            _ => Ok(()),
        };
    };
    let published = current.data.as_ref().and_then(|d| d.get(ROOT_CA_KEY));
    if published.map(String::as_str) == Some(root_ca) {
        return Ok(());
    }
    let patch = PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PatchParams::default()
    };
    match api
        .patch(
            ROOT_CA_CONFIG_MAP,
            &patch,
            &Patch::Merge(json!({"data": {ROOT_CA_KEY: root_ca}})),
        )
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        result => result.map(drop),
    }
}

fn params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}
