//! Replacing an object with the text the user edited: checked here first (YAML syntax, identity, the shared
//! validation), then by the API server in a dry-run, and only then written. The text's resourceVersion goes with
//! it, so an object that changed since it was opened is refused rather than overwritten.

use kube::Client;
use kube::api::{DynamicObject, PostParams};
use serde_json::Value;

use super::errors::from_kube;
use super::resources::{api_resource, dynamic_api};
use super::{FIELD_MANAGER, FieldError, WriteError};
use crate::tui::target::Target;
use kmm_api::validation::validate_object;

/// A YAML syntax error and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line, when the parser knows it.
    pub line: Option<usize>,
    /// 1-based column, when the parser knows it.
    pub column: Option<usize>,
    /// What the parser says.
    pub message: String,
}

impl SyntaxError {
    /// The error as a problem of the editor's list, placed by line and column.
    pub fn to_field_error(&self) -> FieldError {
        let path = match (self.line, self.column) {
            (Some(line), Some(column)) => format!("line {line}, column {column}"),
            (Some(line), None) => format!("line {line}"),
            _ => "YAML".to_owned(),
        };
        FieldError::new(path, self.message.clone())
    }
}

/// Parse edited text into JSON.
pub fn parse_yaml(text: &str) -> Result<Value, SyntaxError> {
    serde_saphyr::from_str::<Value>(text).map_err(|error| {
        let location = error.location();
        let line = location.and_then(|l| usize::try_from(l.line()).ok());
        let column = location.and_then(|l| usize::try_from(l.column()).ok());
        let message = error.without_snippet().to_string();
        // The place is shown apart; the parser's own "at line L, column C" would say it twice.
        let message = match (line, column) {
            (Some(line), Some(column)) => message
                .strip_suffix(&format!(" at line {line}, column {column}"))
                .map(str::to_owned)
                .unwrap_or(message),
            _ => message,
        };
        SyntaxError {
            line,
            column,
            message,
        }
    })
}

/// What is wrong with `object` as the new version of `target`: it must still be the same object (apiVersion,
/// kind, name, namespace), keep the resourceVersion it was opened at, and pass the shared validation.
pub fn check_object(target: &Target, object: &Value) -> Vec<FieldError> {
    if !object.is_object() {
        return vec![FieldError::new(
            "",
            "the text must be one YAML mapping: the whole object",
        )];
    }
    let resource = api_resource(target.kind);
    let text_at = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let mut problems = Vec::new();
    let mut must_stay = |path: &str, found: Option<&str>, wanted: &str| {
        if found != Some(wanted) {
            problems.push(FieldError::new(
                path,
                format!("must stay {wanted}: the editor replaces the object it opened"),
            ));
        }
    };
    must_stay("apiVersion", text_at("/apiVersion"), &resource.api_version);
    must_stay("kind", text_at("/kind"), &resource.kind);
    must_stay("metadata.name", text_at("/metadata/name"), &target.name);
    let namespace = text_at("/metadata/namespace").filter(|ns| !ns.is_empty());
    match (&target.namespace, namespace) {
        (_, None) => {}
        (Some(wanted), found) => must_stay("metadata.namespace", found, wanted),
        (None, Some(_)) => problems.push(FieldError::new(
            "metadata.namespace",
            format!("{} is not namespaced: remove it", resource.kind),
        )),
    }
    if text_at("/metadata/resourceVersion").is_none_or(str::is_empty) {
        problems.push(FieldError::new(
            "metadata.resourceVersion",
            "keep it: it is how a change made on the server since you opened the object is caught",
        ));
    }
    if !problems.is_empty() {
        return problems;
    }
    problems.extend(
        validate_object(&resource.api_version, &resource.kind, object)
            .into_iter()
            .map(|violation| FieldError::new(violation.field, violation.message)),
    );
    problems
}

/// Everything checked before anything is sent: the text as JSON, or every problem found.
pub fn prepare(target: &Target, text: &str) -> Result<Value, Vec<FieldError>> {
    let object = parse_yaml(text).map_err(|error| vec![error.to_field_error()])?;
    let problems = check_object(target, &object);
    if problems.is_empty() {
        Ok(object)
    } else {
        Err(problems)
    }
}

/// Check `text`, dry-run it on the server, then replace `target` with it.
pub async fn apply(client: &Client, target: &Target, text: &str) -> Result<String, WriteError> {
    let object = prepare(target, text).map_err(WriteError::invalid)?;
    let object: DynamicObject = serde_json::from_value(object)
        .map_err(|error| WriteError::local(format!("cannot send {target}: {error}")))?;
    let sent = object.metadata.resource_version.clone();
    let api = dynamic_api(client, target);
    api.replace(&target.name, &post_params(true), &object)
        .await
        .map_err(|error| {
            let mut failed = apply_error(&error, target);
            failed.message.push_str(" (dry-run: nothing was changed)");
            failed
        })?;
    let stored = api
        .replace(&target.name, &post_params(false), &object)
        .await
        .map_err(|error| apply_error(&error, target))?;
    Ok(if stored.metadata.resource_version == sent {
        format!("{target} unchanged: the edit changed nothing")
    } else {
        format!("Applied {target}")
    })
}

fn post_params(dry_run: bool) -> PostParams {
    PostParams {
        dry_run,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

/// A failed replace; a 409 means the text is older than the object.
fn apply_error(error: &kube::Error, target: &Target) -> WriteError {
    let mut failed = from_kube(error, target);
    if failed.code == Some(409) {
        failed.message =
            format!("{target} changed on the server since you opened it; reopen to merge");
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::data::Kind;

    fn module() -> Target {
        Target::namespaced(Kind::Module, "acme", "acme-accel")
    }

    const MODULE: &str = "\
apiVersion: kmm.sigs.x-k8s.io/v1beta1
kind: Module
metadata:
  name: acme-accel
  namespace: acme
  resourceVersion: \"12\"
spec:
  selector: {accelerator: acme}
  moduleLoader:
    container:
      modprobe: {moduleName: acme_accel}
      kernelMappings:
        - regexp: '^.+$'
          containerImage: quay.io/acme/accel-kmod:${KERNEL_FULL_VERSION}
";

    #[test]
    fn a_valid_edit_passes() {
        let object = prepare(&module(), MODULE).expect("valid");
        assert_eq!(object["spec"]["selector"]["accelerator"], "acme");
    }

    #[test]
    fn a_syntax_error_says_where() {
        let broken = MODULE.replace(
            "  selector: {accelerator: acme}",
            "  selector: {accelerator: acme",
        );
        let problems = prepare(&module(), &broken).expect_err("unbalanced braces");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].path.starts_with("line "), "{problems:?}");
        let error = parse_yaml(&broken).expect_err("unbalanced braces");
        assert!(error.line.is_some_and(|line| line >= 8), "{error:?}");
        assert!(
            !error.message.is_empty() && !error.message.contains(" at line "),
            "{error:?}"
        );
    }

    #[test]
    fn the_object_must_stay_the_one_opened() {
        let renamed = MODULE
            .replace("name: acme-accel", "name: other")
            .replace("namespace: acme", "namespace: elsewhere")
            .replace("kind: Module", "kind: Pod");
        let problems = prepare(&module(), &renamed).expect_err("another object");
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["kind", "metadata.name", "metadata.namespace"]);
        let node = Target::cluster(Kind::Node, "worker-0");
        let problems = prepare(
            &node,
            "apiVersion: v1\nkind: Node\nmetadata: {name: worker-0, namespace: acme, resourceVersion: '3'}\n",
        )
        .expect_err("nodes have no namespace");
        assert_eq!(problems[0].path, "metadata.namespace");
    }

    #[test]
    fn the_resource_version_must_stay() {
        let problems = prepare(
            &module(),
            &MODULE.replace("  resourceVersion: \"12\"\n", ""),
        )
        .expect_err("no resourceVersion");
        assert_eq!(problems[0].path, "metadata.resourceVersion");
    }

    #[test]
    fn the_shared_validation_names_the_field() {
        let problems =
            prepare(&module(), &MODULE.replace("'^.+$'", "'(['")).expect_err("a broken regexp");
        assert!(
            problems
                .iter()
                .any(|p| p.path == "spec.moduleLoader.container.kernelMappings[0].regexp"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_scalar_is_not_an_object() {
        let problems = prepare(&module(), "just words").expect_err("not a mapping");
        assert!(problems[0].message.contains("mapping"));
    }
}
