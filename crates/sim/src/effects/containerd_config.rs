//! Adding and removing a runtime in a containerd configuration file, as a TOML document edit: the runtime's table
//! changes and every other byte of the file stays as it was (comments, order, spacing, other plugins).

use toml_edit::{DocumentMut, Item, Table, Value};

/// Why a configuration cannot be edited.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ConfigError {
    /// The file is not TOML.
    #[error("failed to parse the containerd config: {0}")]
    Parse(String),
    /// A key on the runtime's path holds something other than a table.
    #[error("failed to add the runtime to the containerd config: `{0}` is not a table")]
    NotATable(String),
    /// `RUNTIME_OPTIONS` is not a JSON object.
    #[error("failed to parse RUNTIME_OPTIONS: {0}")]
    Options(String),
}

/// The CRI plugin that holds runtimes: containerd 2.x's (`version = 3`) or 1.x's.
fn cri_plugin(doc: &DocumentMut) -> &'static str {
    match doc.get("version").and_then(Item::as_integer) {
        Some(version) if version >= 3 => "io.containerd.cri.v1.runtime",
        _ => "io.containerd.grpc.v1.cri",
    }
}

/// The keys from the root to the `runtimes` table of the file's CRI plugin.
fn runtimes_path(doc: &DocumentMut) -> [&'static str; 4] {
    ["plugins", cri_plugin(doc), "containerd", "runtimes"]
}

fn parse(config: &str) -> Result<DocumentMut, ConfigError> {
    config
        .parse::<DocumentMut>()
        .map_err(|e| ConfigError::Parse(e.to_string()))
}

/// Runtime options from the installer's `RUNTIME_OPTIONS` env (a JSON object), in the order written. A string
/// value that spells a TOML value (`true`, `3`, `"quoted"`) becomes that value; any other string stays a string.
pub(super) fn parse_options(json: &str) -> Result<Vec<(String, Value)>, ConfigError> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| ConfigError::Options(e.to_string()))?;
    Ok(object
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                serde_json::Value::String(text) => {
                    text.parse::<Value>().unwrap_or_else(|_| Value::from(text))
                }
                serde_json::Value::Bool(b) => Value::from(b),
                serde_json::Value::Number(n) => n
                    .as_i64()
                    .map(Value::from)
                    .or_else(|| n.as_f64().map(Value::from))
                    .unwrap_or_else(|| Value::from(n.to_string())),
                other => Value::from(other.to_string()),
            };
            (key, value)
        })
        .collect())
}

/// The highest document position of any table, so a new table can be placed at the end of the file.
fn last_position(table: &Table) -> isize {
    table
        .iter()
        .map(|(_, item)| match item {
            Item::Table(t) => t.position().unwrap_or(0).max(last_position(t)),
            Item::ArrayOfTables(array) => array
                .iter()
                .map(|t| t.position().unwrap_or(0).max(last_position(t)))
                .max()
                .unwrap_or(0),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// The table at `path`, creating missing ones as implicit tables (which print nothing of their own).
fn table_at<'t>(root: &'t mut Table, path: &[&str]) -> Result<&'t mut Table, ConfigError> {
    let mut table = root;
    for (depth, key) in path.iter().enumerate() {
        let item = table.entry(key).or_insert_with(|| {
            let mut new = Table::new();
            new.set_implicit(true);
            Item::Table(new)
        });
        table = item
            .as_table_mut()
            .ok_or_else(|| ConfigError::NotATable(path[..=depth].join(".")))?;
    }
    Ok(table)
}

/// Whether an item holds the same value (formatting aside).
fn same_value(item: Option<&Item>, value: &Value) -> bool {
    item.and_then(Item::as_value)
        .is_some_and(|v| v.to_string().trim() == value.to_string().trim())
}

/// Whether a runtime table already says what is wanted.
fn up_to_date(runtime: &Table, runtime_type: &str, options: &[(String, Value)]) -> bool {
    let options_table = runtime.get("options").and_then(Item::as_table);
    let options_match = match options_table {
        None => options.is_empty(),
        Some(table) => {
            table.len() == options.len() && options.iter().all(|(k, v)| same_value(table.get(k), v))
        }
    };
    same_value(runtime.get("runtime_type"), &Value::from(runtime_type)) && options_match
}

/// Make `runtimes.<name>` say `runtime_type` with exactly these options. A new table goes at the end of the file
/// behind a marker comment; an existing one is changed in place and keeps its other keys. Returns the new file, or
/// None when it already said so.
pub(super) fn add_runtime(
    config: &str,
    name: &str,
    runtime_type: &str,
    options: &[(String, Value)],
) -> Result<Option<String>, ConfigError> {
    let mut doc = parse(config)?;
    let path = runtimes_path(&doc);
    let end = last_position(doc.as_table());
    let runtimes = table_at(doc.as_table_mut(), &path)?;
    match runtimes.get_mut(name) {
        Some(Item::Table(runtime)) => {
            if up_to_date(runtime, runtime_type, options) {
                return Ok(None);
            }
            if !same_value(runtime.get("runtime_type"), &Value::from(runtime_type)) {
                runtime.insert("runtime_type", Item::Value(Value::from(runtime_type)));
            }
            set_options(runtime, options, end + 1)?;
        }
        Some(_) => {
            return Err(ConfigError::NotATable(format!("{}.{name}", path.join("."))));
        }
        None => {
            let mut runtime = Table::new();
            runtime.set_position(Some(end + 1));
            runtime
                .decor_mut()
                .set_prefix(format!("\n# RCM runtime config for {name}\n"));
            runtime.insert("runtime_type", Item::Value(Value::from(runtime_type)));
            set_options(&mut runtime, options, end + 2)?;
            runtimes.insert(name, Item::Table(runtime));
        }
    }
    Ok(Some(doc.to_string()))
}

/// Make the runtime's `options` table hold exactly `options` (none: no table).
fn set_options(
    runtime: &mut Table,
    options: &[(String, Value)],
    position: isize,
) -> Result<(), ConfigError> {
    if options.is_empty() {
        runtime.remove("options");
        return Ok(());
    }
    let table = match runtime.entry("options").or_insert_with(|| {
        let mut new = Table::new();
        new.set_position(Some(position));
        Item::Table(new)
    }) {
        Item::Table(table) => table,
        _ => return Err(ConfigError::NotATable("options".into())),
    };
    let stale: Vec<String> = table
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !options.iter().any(|(key, _)| key == k))
        .collect();
    for key in stale {
        table.remove(&key);
    }
    for (key, value) in options {
        if !same_value(table.get(key), value) {
            table.insert(key, Item::Value(value.clone()));
        }
    }
    Ok(())
}

/// Remove `runtimes.<name>` (with its options). Returns the new file, or None when there was no such runtime.
pub(super) fn remove_runtime(config: &str, name: &str) -> Result<Option<String>, ConfigError> {
    let mut doc = parse(config)?;
    let path = runtimes_path(&doc);
    let mut table = doc.as_table_mut();
    for key in path {
        match table.get_mut(key).and_then(Item::as_table_mut) {
            Some(next) => table = next,
            None => return Ok(None),
        }
    }
    Ok(table.remove(name).map(|_| doc.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A containerd 1.7 configuration in the shape `containerd config default` writes (shortened), with comments.
    const V2: &str = r#"disabled_plugins = []
imports = []
oom_score = 0
root = "/var/lib/containerd"
state = "/run/containerd"
version = 2

[grpc]
  address = "/run/containerd/containerd.sock"
  max_recv_message_size = 16777216

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]
    enable_selinux = false
    sandbox_image = "registry.k8s.io/pause:3.8"  # pinned by the runtime

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      snapshotter = "overlayfs"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "/etc/containerd/certs.d"

  [plugins."io.containerd.gc.v1.scheduler"]
    pause_threshold = 0.02
    startup_delay = "100ms"

[timeouts]
  "io.containerd.timeout.shim.cleanup" = "5s"
"#;

    /// A containerd 2.x configuration.
    const V3: &str = r#"version = 3
root = '/var/lib/containerd'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
"#;

    const SHIM: &str = "/opt/rcm/bin/containerd-shim-spin-v2";

    fn options(json: &str) -> Vec<(String, Value)> {
        parse_options(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn added(config: &str, name: &str, options: &[(String, Value)]) -> String {
        match add_runtime(config, name, SHIM, options) {
            Ok(Some(text)) => text,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn a_new_runtime_is_appended_and_everything_else_is_kept_byte_for_byte() {
        let text = added(V2, "spin-v2", &[]);
        let appended = text.strip_prefix(V2).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            appended,
            "\n# RCM runtime config for spin-v2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin-v2]\n\
             runtime_type = \"/opt/rcm/bin/containerd-shim-spin-v2\"\n"
        );
        let doc: DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            doc["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["spin-v2"]
                ["runtime_type"]
                .as_str(),
            Some(SHIM)
        );
    }

    #[test]
    fn version_3_files_get_the_containerd_2_domain() {
        let text = added(V3, "spin-v2", &options(r#"{"SystemdCgroup": "true"}"#));
        assert!(text.starts_with(V3), "{text}");
        let doc: DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}"));
        let runtime =
            &doc["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["spin-v2"];
        assert_eq!(runtime["runtime_type"].as_str(), Some(SHIM));
        assert_eq!(runtime["options"]["SystemdCgroup"].as_bool(), Some(true));
        assert!(doc["plugins"].get("io.containerd.grpc.v1.cri").is_none());
    }

    #[test]
    fn a_minimal_file_gets_the_whole_path() {
        let text = added("version = 2\n", "lunatic-v1", &[]);
        let doc: DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            doc["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["lunatic-v1"]
                ["runtime_type"]
                .as_str(),
            Some(SHIM)
        );
        assert!(text.starts_with("version = 2\n"), "{text}");
        let unversioned = added("", "lunatic-v1", &[]);
        assert!(
            unversioned.contains("io.containerd.grpc.v1.cri"),
            "{unversioned}"
        );
    }

    #[test]
    fn adding_again_changes_nothing_and_changed_options_are_rewritten_in_place() {
        let opts = options(r#"{"SystemdCgroup": "true", "BinaryName": "/usr/bin/spin"}"#);
        let first = added(V2, "spin-v2", &opts);
        assert_eq!(add_runtime(&first, "spin-v2", SHIM, &opts), Ok(None));

        let changed = added(&first, "spin-v2", &options(r#"{"SystemdCgroup": false}"#));
        assert!(changed.starts_with(V2), "{changed}");
        let doc: DocumentMut = changed.parse().unwrap_or_else(|e| panic!("{e}"));
        let opts_table = &doc["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["spin-v2"]
            ["options"];
        assert_eq!(opts_table["SystemdCgroup"].as_bool(), Some(false));
        assert!(opts_table.get("BinaryName").is_none());
    }

    #[test]
    fn an_existing_runtime_table_keeps_its_other_keys() {
        let config = format!(
            "{V2}\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin-v2]\n  runtime_type = \"/old/path\"\n  privileged_without_host_devices = true\n"
        );
        let text = added(&config, "spin-v2", &[]);
        assert!(text.starts_with(V2));
        assert!(
            text.contains("privileged_without_host_devices = true"),
            "{text}"
        );
        assert!(text.contains(SHIM) && !text.contains("/old/path"), "{text}");
    }

    #[test]
    fn remove_undoes_add() {
        for (base, opts) in [(V2, "{}"), (V3, r#"{"a": "1"}"#), ("version = 2\n", "{}")] {
            let with = added(base, "spin-v2", &options(opts));
            assert_eq!(remove_runtime(&with, "spin-v2"), Ok(Some(base.to_string())));
        }
        assert_eq!(remove_runtime(V2, "spin-v2"), Ok(None));
        assert_eq!(remove_runtime("version = 3\n", "runc"), Ok(None));
        let without_runc = remove_runtime(V2, "runc")
            .ok()
            .flatten()
            .unwrap_or_default();
        assert!(!without_runc.contains("runtimes.runc"), "{without_runc}");
        assert!(without_runc.contains("[plugins.\"io.containerd.grpc.v1.cri\".registry]"));
    }

    #[test]
    fn dotted_keys_on_the_path_are_followed() {
        let config = "version = 3\n[plugins]\n  'io.containerd.cri.v1.runtime'.containerd.default_runtime_name = 'runc'\n";
        let text = added(config, "spin-v2", &[]);
        assert!(text.starts_with(config), "{text}");
        let doc: DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}"));
        let containerd = &doc["plugins"]["io.containerd.cri.v1.runtime"]["containerd"];
        assert_eq!(containerd["default_runtime_name"].as_str(), Some("runc"));
        assert_eq!(
            containerd["runtimes"]["spin-v2"]["runtime_type"].as_str(),
            Some(SHIM)
        );
        assert_eq!(
            remove_runtime(&text, "spin-v2"),
            Ok(Some(config.to_string()))
        );
    }

    #[test]
    fn malformed_files_and_options_are_errors() {
        assert!(matches!(
            add_runtime("version = = 2", "x", SHIM, &[]),
            Err(ConfigError::Parse(_))
        ));
        assert_eq!(
            add_runtime("plugins = 3\n", "x", SHIM, &[]),
            Err(ConfigError::NotATable("plugins".into()))
        );
        assert!(matches!(parse_options("[1]"), Err(ConfigError::Options(_))));
        let parsed = options(r#"{"flag": "true", "path": "/bin/x", "quoted": "\"q\"", "n": 3}"#);
        let rendered: Vec<String> = parsed
            .iter()
            .map(|(k, v)| format!("{k}={}", v.to_string().trim()))
            .collect();
        assert_eq!(
            rendered,
            ["flag=true", "path=\"/bin/x\"", "quoted=\"q\"", "n=3"]
        );
    }
}
