//! Reading what a pod shows: labels, annotations, env, command lines and privileges. Absent fields read as absent,
//! never as errors, because pods come from any client.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};

/// A pod label.
pub(super) fn label<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// A pod annotation.
pub(super) fn annotation<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// A literal env value of a container (values from references are not resolved: the simulation has no secrets).
pub(super) fn env<'c>(container: &'c Container, name: &str) -> Option<&'c str> {
    container
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)?
        .value
        .as_deref()
}

/// The container's args.
pub(super) fn args(container: &Container) -> &[String] {
    container.args.as_deref().unwrap_or_default()
}

/// Command and args as one command line.
pub(super) fn command_line(container: &Container) -> Vec<&str> {
    container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .map(String::as_str)
        .collect()
}

/// The value of a flag, written `--flag value` or `--flag=value`, under any of its names.
pub(super) fn flag_value<'a>(args: &[&'a str], names: &[&str]) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        names.iter().find_map(|name| {
            if arg == name {
                args.get(i + 1).copied()
            } else {
                arg.strip_prefix(name)?.strip_prefix('=')
            }
        })
    })
}

/// Whether the container runs privileged.
pub(super) fn privileged(container: &Container) -> bool {
    container
        .security_context
        .as_ref()
        .and_then(|s| s.privileged)
        .unwrap_or(false)
}

/// Whether the container has a Linux capability (by its name with or without `CAP_`, or through `ALL`), or runs
/// privileged.
pub(super) fn has_capability(container: &Container, capability: &str) -> bool {
    let added = container
        .security_context
        .as_ref()
        .and_then(|s| s.capabilities.as_ref())
        .and_then(|c| c.add.as_ref());
    privileged(container)
        || added.into_iter().flatten().any(|c| {
            let c = c.strip_prefix("CAP_").unwrap_or(c);
            c == "ALL" || c == capability
        })
}

/// Init containers of the pod.
pub(super) fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
}

/// A duration written as seconds (`90`, `1.5`) or with units (`90s`, `2m`, `1h30m`).
pub(super) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds >= 0.0 && seconds.is_finite()).then(|| Duration::from_secs_f64(seconds));
    }
    text.parse::<jiff::SignedDuration>()
        .ok()
        .filter(|d| !d.is_negative())
        .map(|d| d.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_read_in_both_spellings() {
        let args = ["--destination", "a:1", "--x=y", "--no-push"];
        assert_eq!(flag_value(&args, &["--destination"]), Some("a:1"));
        assert_eq!(flag_value(&args, &["--x"]), Some("y"));
        assert_eq!(flag_value(&args, &["--no"]), None);
        assert_eq!(flag_value(&["--destination"], &["--destination"]), None);
    }

    #[test]
    fn durations_accept_seconds_and_units() {
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("-3"), None);
        assert_eq!(parse_duration("soon"), None);
    }
}
