//! A pod spec's defaults, wherever it sits (a Pod, or a workload's template): restart and DNS policy, scheduler,
//! grace period, and for each container its pull policy, termination message, ports' protocol and probes'
//! timings; volumes' file modes. A Pod itself also gets what admission gives it on a real cluster.

use serde_json::{Value, json};

use super::{each_item, set_default};

/// kube-apiserver's default file mode for projected files (0644).
const DEFAULT_MODE: i64 = 0o644;

/// A Pod: its spec's defaults, requests taken from limits where only limits are given, and the service account,
/// priority and preemption policy admission fills in.
pub(super) fn pod(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec") else {
        return;
    };
    pod_spec(spec);
    set_default(spec, &["serviceAccountName"], json!("default"));
    let account = spec["serviceAccountName"].clone();
    set_default(spec, &["serviceAccount"], account);
    set_default(spec, &["priority"], json!(0));
    set_default(spec, &["preemptionPolicy"], json!("PreemptLowerPriority"));
    for list in ["/containers", "/initContainers"] {
        for container in each_item(spec, list) {
            let Some(resources) = container.get_mut("resources") else {
                continue;
            };
            let limits = resources.get("limits").cloned().unwrap_or(Value::Null);
            for (name, limit) in limits.as_object().into_iter().flatten() {
                set_default(resources, &["requests", name], limit.clone());
            }
        }
    }
}

/// The defaults of a pod spec.
pub(crate) fn pod_spec(spec: &mut Value) {
    set_default(spec, &["restartPolicy"], json!("Always"));
    set_default(spec, &["dnsPolicy"], json!("ClusterFirst"));
    set_default(spec, &["schedulerName"], json!("default-scheduler"));
    set_default(spec, &["terminationGracePeriodSeconds"], json!(30));
    set_default(spec, &["securityContext"], json!({}));
    set_default(spec, &["enableServiceLinks"], json!(true));
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["/containers", "/initContainers", "/ephemeralContainers"] {
        for c in each_item(spec, list) {
            container(c, host_network);
        }
    }
    for volume in each_item(spec, "/volumes") {
        volume_source(volume);
    }
}

fn container(c: &mut Value, host_network: bool) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = if image_tag_is_latest(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_default(c, &["imagePullPolicy"], json!(policy));
    set_default(
        c,
        &["terminationMessagePath"],
        json!("/dev/termination-log"),
    );
    set_default(c, &["terminationMessagePolicy"], json!("File"));
    for port in each_item(c, "/ports") {
        set_default(port, &["protocol"], json!("TCP"));
        if host_network && let Some(number) = port.get("containerPort").cloned() {
            set_default(port, &["hostPort"], number);
        }
    }
    for var in each_item(c, "/env") {
        if let Some(field_ref) = var.pointer_mut("/valueFrom/fieldRef") {
            set_default(field_ref, &["apiVersion"], json!("v1"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(probe).filter(|p| p.is_object()) {
            set_default(probe, &["timeoutSeconds"], json!(1));
            set_default(probe, &["periodSeconds"], json!(10));
            set_default(probe, &["successThreshold"], json!(1));
            set_default(probe, &["failureThreshold"], json!(3));
            http_get(probe);
        }
    }
    for hook in ["/lifecycle/postStart", "/lifecycle/preStop"] {
        if let Some(handler) = c.pointer_mut(hook) {
            http_get(handler);
        }
    }
}

/// An HTTP probe or hook asks for `/` over plain HTTP unless told otherwise.
fn http_get(handler: &mut Value) {
    if let Some(get) = handler.get_mut("httpGet").filter(|g| g.is_object()) {
        set_default(get, &["path"], json!("/"));
        set_default(get, &["scheme"], json!("HTTP"));
    }
}

fn volume_source(volume: &mut Value) {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = volume.get_mut(source).filter(|s| s.is_object()) {
            set_default(source, &["defaultMode"], json!(DEFAULT_MODE));
            for item in each_item(source, "/items") {
                if let Some(field_ref) = item.get_mut("fieldRef") {
                    set_default(field_ref, &["apiVersion"], json!("v1"));
                }
            }
        }
    }
    if let Some(host_path) = volume.get_mut("hostPath").filter(|h| h.is_object()) {
        set_default(host_path, &["type"], json!(""));
    }
}

/// An image without a tag or digest, or tagged `latest`, is pulled `Always` by default.
fn image_tag_is_latest(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_defaults_follow_the_image_tag_and_fill_ports_and_probes() {
        let mut pod_obj = json!({"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
             "readinessProbe": {"httpGet": {"port": 80}}},
            {"name": "b", "image": "quay.io/x/y:1.2", "resources": {"limits": {"cpu": "1"}}}]}});
        pod(&mut pod_obj);
        let spec = &pod_obj["spec"];
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
        let probe = &spec["containers"][0]["readinessProbe"];
        assert_eq!(
            (
                probe["timeoutSeconds"].clone(),
                probe["periodSeconds"].clone(),
                probe["failureThreshold"].clone()
            ),
            (json!(1), json!(10), json!(3))
        );
        assert_eq!(probe["httpGet"]["path"], "/");
        assert_eq!(spec["containers"][1]["resources"]["requests"]["cpu"], "1");
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["serviceAccountName"], "default");
    }
}
