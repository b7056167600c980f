//! A container's environment as the kubelet builds it: the cluster's service variables, the image's `PATH`, the
//! pod's host name, then `envFrom` and `env` in order (a later variable replaces an earlier one), with `valueFrom`
//! read from the downward API, ConfigMaps and Secrets, and `$(NAME)` references to earlier variables expanded — in
//! values, and in the command and args.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

/// The `PATH` of the usual images.
const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What the environment is built from besides the container's spec.
pub(crate) struct PodFacts<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The node it runs on.
    pub node: &'a str,
    /// Its IP, once the sandbox has one.
    pub pod_ip: Option<&'a str>,
    /// Its node's IP, once the sandbox has the pod's.
    pub host_ip: Option<&'a str>,
}

/// Where a variable's value comes from when it is another object's: a key of a ConfigMap or a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    /// A key of a ConfigMap.
    ConfigMap,
    /// A key of a Secret.
    Secret,
}

/// The ConfigMaps' and Secrets' data the environment reads, by (source, name), fetched beforehand.
pub(crate) type Objects = BTreeMap<(Source, String), BTreeMap<String, String>>;

/// The ConfigMaps and Secrets `container` reads its environment from.
pub(crate) fn referenced(container: &Container) -> Vec<(Source, String)> {
    let from = container.env_from.iter().flatten().filter_map(|from| {
        if let Some(map) = &from.config_map_ref {
            return Some((Source::ConfigMap, map.name.clone()));
        }
        from.secret_ref
            .as_ref()
            .map(|secret| (Source::Secret, secret.name.clone()))
    });
    let keys = container
        .env
        .iter()
        .flatten()
        .filter_map(|var| var.value_from.as_ref())
        .filter_map(|from| {
            if let Some(key) = &from.config_map_key_ref {
                return Some((Source::ConfigMap, key.name.clone()));
            }
            from.secret_key_ref
                .as_ref()
                .map(|key| (Source::Secret, key.name.clone()))
        });
    let mut all: Vec<_> = from.chain(keys).collect();
    all.sort();
    all.dedup();
    all
}

/// The environment of `container`, in the order a process sees it.
pub(crate) fn environment(
    facts: &PodFacts<'_>,
    container: &Container,
    objects: &Objects,
) -> Vec<(String, String)> {
    let mut env = Environment::default();
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1".into());
    env.set("KUBERNETES_SERVICE_PORT", "443".into());
    env.set("KUBERNETES_PORT", "tcp://10.96.0.1:443".into());
    env.set("PATH", IMAGE_PATH.into());
    env.set(
        "HOSTNAME",
        facts.pod.metadata.name.clone().unwrap_or_default(),
    );
    env.set("HOME", "/root".into());
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or_default();
        let data = if let Some(map) = &from.config_map_ref {
            objects.get(&(Source::ConfigMap, map.name.clone()))
        } else {
            from.secret_ref
                .as_ref()
                .and_then(|secret| objects.get(&(Source::Secret, secret.name.clone())))
        };
        for (key, value) in data.into_iter().flatten() {
            env.set(&format!("{prefix}{key}"), value.clone());
        }
    }
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (Some(value), _) => Some(expand(value, &env.values)),
            (None, Some(from)) => {
                if let Some(field) = &from.field_ref {
                    pod_field(facts, &field.field_path)
                } else if let Some(key) = &from.config_map_key_ref {
                    objects
                        .get(&(Source::ConfigMap, key.name.clone()))
                        .and_then(|data| data.get(&key.key).cloned())
                } else if let Some(key) = &from.secret_key_ref {
                    objects
                        .get(&(Source::Secret, key.name.clone()))
                        .and_then(|data| data.get(&key.key).cloned())
                } else {
                    None
                }
            }
            (None, None) => Some(String::new()),
        };
        if let Some(value) = value {
            env.set(&var.name, value);
        }
    }
    env.order
        .into_iter()
        .filter_map(|name| env.values.get(&name).map(|v| (name.clone(), v.clone())))
        .collect()
}

/// Variables by name, remembering the order they were first set.
#[derive(Default)]
struct Environment {
    values: BTreeMap<String, String>,
    order: Vec<String>,
}

impl Environment {
    fn set(&mut self, name: &str, value: String) {
        if self.values.insert(name.to_owned(), value).is_none() {
            self.order.push(name.to_owned());
        }
    }
}

/// A downward API field of the pod.
pub(crate) fn pod_field(facts: &PodFacts<'_>, path: &str) -> Option<String> {
    let pod = facts.pod;
    let spec = pod.spec.as_ref();
    let in_map = |map: Option<&BTreeMap<String, String>>, prefix: &str| {
        let key = path
            .strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")?;
        map?.get(key).cloned()
    };
    match path {
        "metadata.name" => pod.metadata.name.clone(),
        "metadata.namespace" => pod.metadata.namespace.clone(),
        "metadata.uid" => pod.metadata.uid.clone(),
        "spec.nodeName" => Some(facts.node.to_owned()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" | "status.podIPs" => facts.pod_ip.map(str::to_owned),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.map(str::to_owned),
        _ if path.starts_with("metadata.labels") => {
            in_map(pod.metadata.labels.as_ref(), "metadata.labels")
        }
        _ if path.starts_with("metadata.annotations") => {
            in_map(pod.metadata.annotations.as_ref(), "metadata.annotations")
        }
        _ => None,
    }
}

/// Expand `$(NAME)` from `env` as the kubelet does; `$$` is a literal `$` and unknown references stay as written.
pub(crate) fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = tail
            .strip_prefix("$(")
            .and_then(|t| t.split_once(')'))
            .filter(|(name, _)| env.contains_key(*name))
        {
            out.push_str(&env[name]);
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// `argv` with `$(NAME)` references to `env` expanded, as the kubelet expands a container's command and args.
pub(crate) fn expand_argv(argv: &[String], env: &[(String, String)]) -> Vec<String> {
    let env: BTreeMap<String, String> = env.iter().cloned().collect();
    argv.iter().map(|arg| expand(arg, &env)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn references_expand_as_the_kubelet_expands_them() {
        let env = BTreeMap::from([("POD_NAME".to_owned(), "kmm-tui-abc".to_owned())]);
        assert_eq!(
            expand("--identity=$(POD_NAME)", &env),
            "--identity=kmm-tui-abc"
        );
        assert_eq!(expand("$(UNKNOWN) $$x $", &env), "$(UNKNOWN) $x $");
    }

    #[test]
    fn the_environment_reads_the_downward_api_objects_and_earlier_variables() {
        let pod = pod(r#"
metadata: {name: web-1, namespace: shop, uid: u-1, labels: {app: web}}
spec:
  serviceAccountName: web
  containers:
    - name: app
      envFrom: [{configMapRef: {name: settings}, prefix: CFG_}]
      env:
        - {name: GREETING, value: hello}
        - {name: MESSAGE, value: "$(GREETING) world, $$(GREETING) stays, $(MISSING) too"}
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
        - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: TOKEN, valueFrom: {secretKeyRef: {name: creds, key: token}}}
        - {name: HOSTNAME, value: custom}
"#);
        let container = &pod.spec.as_ref().unwrap().containers[0];
        assert_eq!(
            referenced(container),
            [
                (Source::ConfigMap, "settings".to_owned()),
                (Source::Secret, "creds".to_owned())
            ]
        );
        let objects = Objects::from([
            (
                (Source::ConfigMap, "settings".to_owned()),
                BTreeMap::from([("LEVEL".to_owned(), "debug".to_owned())]),
            ),
            (
                (Source::Secret, "creds".to_owned()),
                BTreeMap::from([("token".to_owned(), "s3cret".to_owned())]),
            ),
        ]);
        let facts = PodFacts {
            pod: &pod,
            node: "worker-0",
            pod_ip: Some("10.244.0.7"),
            host_ip: Some("192.168.0.10"),
        };
        let env: BTreeMap<_, _> = environment(&facts, container, &objects)
            .into_iter()
            .collect();
        assert_eq!(env["CFG_LEVEL"], "debug");
        assert_eq!(
            env["MESSAGE"],
            "hello world, $(GREETING) stays, $(MISSING) too"
        );
        assert_eq!(env["POD"], "web-1");
        assert_eq!(env["APP"], "web");
        assert_eq!(env["IP"], "10.244.0.7");
        assert_eq!(env["TOKEN"], "s3cret");
        assert_eq!(env["HOSTNAME"], "custom");
        assert_eq!(env["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
        assert!(env["PATH"].contains("/bin"));
    }
}
