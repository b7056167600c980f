//! Admission of the hub's kinds: a ManagedClusterModule's Module is judged as the Module every spoke will get, and
//! a ManagedClusterSetBinding must be named after the set it binds, as OCM's webhook requires.

use kube_core::ObjectMeta;

use super::FieldViolation;
use super::module::validate_module;
use super::names::{dns1123_label_errors, label_value_errors, qualified_name_errors};
use crate::hub::ManagedClusterModule;
use crate::kmm::Module;
use crate::ocm::clusterset::ManagedClusterSetBinding;

/// The rules for a ManagedClusterModule: a spoke namespace that can exist, a selector of valid labels, and a
/// `moduleSpec` that passes the Module rules in that namespace (reported under `spec.moduleSpec`).
pub fn validate_managed_cluster_module(mcm: &ManagedClusterModule) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let namespace = &mcm.spec.spoke_namespace;
    for error in dns1123_label_errors(namespace) {
        violations.push(FieldViolation::new(
            "spec.spokeNamespace",
            format!("{namespace:?} cannot name a namespace: {error}"),
        ));
    }
    for (key, value) in &mcm.spec.selector {
        for error in qualified_name_errors(key)
            .into_iter()
            .chain(label_value_errors(value))
        {
            violations.push(FieldViolation::new(
                format!("spec.selector[{key}]"),
                format!("not a label a ManagedCluster can carry: {error}"),
            ));
        }
    }
    let module = Module {
        metadata: ObjectMeta {
            name: mcm.metadata.name.clone(),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        spec: mcm.spec.module_spec.clone(),
        status: None,
    };
    violations.extend(validate_module(&module).into_iter().map(|violation| {
        let field = match violation.field.strip_prefix("spec") {
            Some(rest) => format!("spec.moduleSpec{rest}"),
            None => violation.field,
        };
        FieldViolation::new(field, violation.message)
    }));
    violations
}

/// The rule for a ManagedClusterSetBinding: its name is the set's.
pub fn validate_managed_cluster_set_binding(
    binding: &ManagedClusterSetBinding,
) -> Vec<FieldViolation> {
    let name = binding.metadata.name.as_deref().unwrap_or_default();
    if name == binding.spec.cluster_set {
        Vec::new()
    } else {
        vec![FieldViolation::new(
            "metadata.name",
            format!(
                "a binding is named after the set it binds: name it {:?}, or bind the set {name:?}",
                binding.spec.cluster_set
            ),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ocm::clusterset::ManagedClusterSetBindingSpec;
    use serde_json::json;

    fn mcm(spec: serde_json::Value) -> ManagedClusterModule {
        serde_json::from_value(json!({
            "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1",
            "kind": "ManagedClusterModule",
            "metadata": {"name": "sample"},
            "spec": spec
        }))
        .unwrap()
    }

    fn module_spec(regexp: &str) -> serde_json::Value {
        json!({
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "sample"},
                "kernelMappings": [{"regexp": regexp, "containerImage": "quay.io/acme/sample:${KERNEL_FULL_VERSION}"}]
            }},
            "selector": {"node-role.kubernetes.io/worker": ""}
        })
    }

    #[test]
    fn a_valid_module_for_a_valid_namespace_is_admitted() {
        let violations = validate_managed_cluster_module(&mcm(json!({
            "moduleSpec": module_spec("^.+$"),
            "spokeNamespace": "default",
            "selector": {"cluster.open-cluster-management.io/clusterset": "default"}
        })));
        assert!(violations.is_empty(), "{violations:?}");
    }

    #[test]
    fn the_module_rules_apply_under_module_spec_and_the_namespace_must_be_a_label() {
        let violations = validate_managed_cluster_module(&mcm(json!({
            "moduleSpec": module_spec("(["),
            "spokeNamespace": "Not_A_Namespace",
            "selector": {"bad key!": "x"}
        })));
        let fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
        assert!(fields.contains(&"spec.spokeNamespace"), "{fields:?}");
        assert!(fields.contains(&"spec.selector[bad key!]"), "{fields:?}");
        assert!(
            fields
                .iter()
                .any(|field| field.starts_with("spec.moduleSpec.moduleLoader")
                    && field.ends_with("regexp")),
            "{fields:?}"
        );
    }

    #[test]
    fn a_binding_is_named_after_its_set() {
        let mut binding = ManagedClusterSetBinding::new(
            "default",
            ManagedClusterSetBindingSpec {
                cluster_set: "default".to_owned(),
            },
        );
        assert!(validate_managed_cluster_set_binding(&binding).is_empty());
        binding.spec.cluster_set = "other".to_owned();
        let violations = validate_managed_cluster_set_binding(&binding);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].field, "metadata.name");
    }
}
