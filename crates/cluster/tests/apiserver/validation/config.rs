//! ConfigMaps, Secrets and ServiceAccounts: keys, the keys each Secret type needs, immutability.

use serde_json::{Value, json};

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data})
}

fn secret(name: &str, kind: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "type": kind, "data": data})
}

#[tokio::test]
async fn config_maps_secrets_and_service_accounts_are_validated() {
    let cluster = cluster().await;
    let client = cluster.client();
    let cases = vec![
        admitted(
            "a config map",
            config_map("ok", json!({"config.toml": "x", "KEY_1": "y"})),
        ),
        admitted(
            "a TLS secret",
            secret(
                "tls",
                "kubernetes.io/tls",
                json!({"tls.crt": "Y3J0", "tls.key": "a2V5"}),
            ),
        ),
        admitted(
            "a service account",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": "default"}}),
        ),
        refused(
            "a key 'bad key!'",
            config_map("bad-key", json!({"bad key!": "x"})),
            &[(
                "data[bad key!]",
                "Invalid value: \"bad key!\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            )],
        ),
        refused(
            "a TLS secret without tls.crt",
            secret("half-tls", "kubernetes.io/tls", json!({"tls.key": "a2V5"})),
            &[("data[tls.crt]", "Required value")],
        ),
        refused(
            "a docker config that is not JSON",
            secret(
                "docker",
                "kubernetes.io/dockerconfigjson",
                json!({".dockerconfigjson": "bm90IGpzb24="}),
            ),
            &[(
                "data[.dockerconfigjson]",
                "Invalid value: \"<secret contents redacted>\"",
            )],
        ),
        refused(
            "a service account with a label key of two slashes",
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "slashes", "namespace": "default", "labels": {"a/b/c": "x"}}}),
            &[("metadata.labels", "Invalid value: \"a/b/c\"")],
        ),
    ];
    check(&client, cases).await;
    let mut frozen = config_map("frozen", json!({"a": "1"}));
    frozen["immutable"] = json!(true);
    check_update(
        &client,
        "the data of an immutable config map",
        frozen,
        json!({"data": {"a": "2"}}),
        &[(
            "data",
            "Forbidden: field is immutable when `immutable` is set",
        )],
    )
    .await;
    check_update(
        &client,
        "a secret's type",
        secret("typed", "Opaque", json!({"a": "MQ=="})),
        json!({"type": "kubernetes.io/basic-auth", "data": {"username": "dQ=="}}),
        &[(
            "type",
            "Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
        )],
    )
    .await;
    cluster.shutdown().await;
}
