//! Server-side `meta.k8s.io/v1` Table responses.
//!
//! `kubectl get` does not format objects itself: it asks the server for a Table
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints the columns it receives. So the
//! embedded API server has to know, per resource, which columns exist and how each cell is computed:
//! custom resources use the printer columns of their CRD version, built-in resources the columns a real
//! cluster shows, and everything else falls back to Name and Age.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::jsonpath::{JsonPath, JsonPathError};
use super::selector::LabelSelector;

/// Why a table could not be described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A printer column's `jsonPath` is not a path the server understands.
    #[error("unrecognized column definition {json_path:?}: {source}")]
    InvalidJsonPath {
        json_path: String,
        #[source]
        source: JsonPathError,
    },
    /// A printer column lacks a required member or has one of the wrong shape.
    #[error("invalid printer column: {0}")]
    InvalidColumn(String),
    /// `includeObject` named something other than `None`, `Metadata` or `Object`.
    #[error(
        "includeObject: Unsupported value: {0:?}: supported values: \"None\", \"Metadata\", \"Object\""
    )]
    UnsupportedIncludeObject(String),
}

/// The type a column declares, which tells clients how to sort and align it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    String,
    Integer,
    Number,
    Boolean,
    /// A timestamp, rendered in cells as a human age (`5m`).
    Date,
}

impl ColumnType {
    /// The name used in `columnDefinitions` and in CRD printer columns.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Date => "date",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Self::String,
            Self::Integer,
            Self::Number,
            Self::Boolean,
            Self::Date,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// One column of a table: what clients are told about it, and how its cell is computed for an object.
#[derive(Debug, Clone)]
pub struct Column {
    /// The header (`kubectl` prints it upper-cased).
    pub name: String,
    pub column_type: ColumnType,
    /// A rendering hint; `name` marks the column holding the object's name.
    pub format: String,
    pub description: String,
    /// 0 for columns always shown, higher for those shown only with `-o wide`.
    pub priority: i32,
    cell: CellSource,
}

/// How a column's cell is computed.
#[derive(Debug, Clone)]
enum CellSource {
    /// The first value a JSONPath reaches, converted according to the column type (printer columns).
    Path(JsonPath),
    /// A printer that reads the whole object (built-in resources).
    Computed(fn(&Value, Timestamp) -> Value),
}

impl Column {
    fn computed(
        name: &str,
        column_type: ColumnType,
        priority: i32,
        description: &str,
        printer: fn(&Value, Timestamp) -> Value,
    ) -> Self {
        Self {
            name: name.to_owned(),
            column_type,
            format: String::new(),
            description: description.to_owned(),
            priority,
            cell: CellSource::Computed(printer),
        }
    }

    /// The entry of `columnDefinitions` describing this column.
    pub fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.column_type.as_str(),
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }

    /// This column's cell for `object`; `null` when the object has no value for it.
    pub fn cell(&self, object: &Value, now: Timestamp) -> Value {
        match &self.cell {
            CellSource::Path(path) => path
                .first(object)
                .map_or(Value::Null, |v| typed_cell(self.column_type, v, now)),
            CellSource::Computed(printer) => printer(object, now),
        }
    }
}

/// Converts a printer-column value to the cell its column type calls for, or `null` when it does not fit.
fn typed_cell(column_type: ColumnType, value: &Value, now: Timestamp) -> Value {
    match (column_type, value) {
        (_, Value::Null) => Value::Null,
        (ColumnType::String, Value::String(_)) => value.clone(),
        (ColumnType::String, Value::Number(n)) => Value::String(number_text(n)),
        (ColumnType::String, other) => Value::String(other.to_string()),
        (ColumnType::Integer, Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        (ColumnType::Number, Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        (ColumnType::Boolean, Value::Bool(_)) => value.clone(),
        (ColumnType::Date, Value::String(s)) => Value::String(match s.parse::<Timestamp>() {
            Ok(timestamp) => age(Some(timestamp), now),
            Err(_) => "<invalid>".to_owned(),
        }),
        _ => Value::Null,
    }
}

/// Numbers as the server prints them in text: whole numbers without a fractional part.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

/// What each row carries besides its cells (the `includeObject` table option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a `PartialObjectMetadata`, which is what `kubectl get` needs.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Reads the query parameter; an empty value means the default, `Metadata`.
    pub fn parse(s: &str) -> Result<Self, TableError> {
        match s {
            "None" => Ok(Self::None),
            "" | "Metadata" => Ok(Self::Metadata),
            "Object" => Ok(Self::Object),
            other => Err(TableError::UnsupportedIncludeObject(other.to_owned())),
        }
    }

    fn row_object(self, object: &Value) -> Value {
        match self {
            Self::None => Value::Null,
            Self::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }),
            Self::Object => object.clone(),
        }
    }
}

/// Builds the Table for `objects`. `include_object` is the `includeObject` option (validate it with
/// [`IncludeObject::parse`] first; anything unknown is treated as the default), `list_metadata` becomes
/// the table's metadata (resourceVersion, continue, ...), and `now` is what ages are measured from.
pub fn to_table(
    columns: &[Column],
    objects: &[&Value],
    include_object: &str,
    list_metadata: Value,
    now: Timestamp,
) -> Value {
    let include_object = IncludeObject::parse(include_object).unwrap_or_default();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(object, now)).collect();
            json!({"cells": cells, "object": include_object.row_object(object)})
        })
        .collect();
    let metadata = if list_metadata.is_null() {
        json!({})
    } else {
        list_metadata
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns.iter().map(Column::definition).collect::<Vec<_>>(),
        "rows": rows,
    })
}

// ---------------------------------------------------------------------------------------------------------
// Custom resources.
// ---------------------------------------------------------------------------------------------------------

const NAME_DESCRIPTION: &str = "The name of the object, unique within its namespace.";
const AGE_DESCRIPTION: &str = "How long ago the object was created.";

fn name_column() -> Column {
    Column {
        name: "Name".to_owned(),
        column_type: ColumnType::String,
        format: "name".to_owned(),
        description: NAME_DESCRIPTION.to_owned(),
        priority: 0,
        cell: CellSource::Computed(|object, _| {
            Value::String(text(object, &["metadata", "name"]).to_owned())
        }),
    }
}

/// Columns for a custom resource: Name, then the CRD version's `additionalPrinterColumns`, or Age when
/// it declares none.
pub fn crd_columns(additional_printer_columns: &[Value]) -> Result<Vec<Column>, TableError> {
    let mut columns = vec![name_column()];
    if additional_printer_columns.is_empty() {
        columns.push(
            path_column("Age", ColumnType::Date, ".metadata.creationTimestamp")?
                .described(AGE_DESCRIPTION),
        );
        return Ok(columns);
    }
    for definition in additional_printer_columns {
        columns.push(printer_column(definition)?);
    }
    Ok(columns)
}

impl Column {
    fn described(mut self, description: &str) -> Self {
        self.description = description.to_owned();
        self
    }
}

fn path_column(name: &str, column_type: ColumnType, json_path: &str) -> Result<Column, TableError> {
    let path = JsonPath::parse(json_path).map_err(|source| TableError::InvalidJsonPath {
        json_path: json_path.to_owned(),
        source,
    })?;
    Ok(Column {
        name: name.to_owned(),
        column_type,
        format: String::new(),
        description: format!("The value at {json_path}"),
        priority: 0,
        cell: CellSource::Path(path),
    })
}

/// One `additionalPrinterColumns` entry: `{name, type, jsonPath, format?, description?, priority?}`.
fn printer_column(definition: &Value) -> Result<Column, TableError> {
    let member = |key: &str| definition.get(key).and_then(Value::as_str);
    let name = member("name")
        .ok_or_else(|| TableError::InvalidColumn(format!("no name in {definition}")))?;
    let declared_type = member("type").unwrap_or_default();
    let column_type = ColumnType::parse(declared_type).ok_or_else(|| {
        TableError::InvalidColumn(format!(
            "column {name:?} has unsupported type {declared_type:?}"
        ))
    })?;
    let json_path = member("jsonPath")
        .or_else(|| member("JSONPath"))
        .ok_or_else(|| TableError::InvalidColumn(format!("column {name:?} has no jsonPath")))?;
    let mut column = path_column(name, column_type, json_path)?;
    if let Some(description) = member("description").filter(|d| !d.is_empty()) {
        column.description = description.to_owned();
    }
    column.format = member("format").unwrap_or_default().to_owned();
    column.priority = definition
        .get("priority")
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(0);
    Ok(column)
}

// ---------------------------------------------------------------------------------------------------------
// Built-in resources.
// ---------------------------------------------------------------------------------------------------------

/// Columns for a built-in resource as `kubectl get` shows them (priority 1 columns appear with
/// `-o wide`); Name and Age for resources without a dedicated layout.
pub fn builtin_columns(group: &str, resource: &str) -> Vec<Column> {
    let mut columns = vec![name_column()];
    let specific = match (group, resource) {
        ("", "pods") => pod_columns(),
        ("", "nodes") => node_columns(),
        ("", "namespaces") => vec![
            Column::computed(
                "Status",
                ColumnType::String,
                0,
                "The phase of the namespace.",
                |o, _| str_cell(o, &["status", "phase"]),
            ),
            age_column(),
        ],
        ("", "events") | ("events.k8s.io", "events") => return event_columns(),
        ("apps", "deployments") => deployment_columns(),
        ("apps", "replicasets") => replicaset_columns(),
        ("apps", "daemonsets") => daemonset_columns(),
        ("batch", "jobs") => job_columns(),
        ("", "configmaps") => vec![
            Column::computed(
                "Data",
                ColumnType::Integer,
                0,
                "Number of entries in data and binaryData.",
                |o, _| Value::from(member_count(o, "data") + member_count(o, "binaryData")),
            ),
            age_column(),
        ],
        ("", "secrets") => vec![
            Column::computed(
                "Type",
                ColumnType::String,
                0,
                "The type of the secret.",
                |o, _| str_cell(o, &["type"]),
            ),
            Column::computed(
                "Data",
                ColumnType::Integer,
                0,
                "Number of entries in data.",
                |o, _| Value::from(member_count(o, "data")),
            ),
            age_column(),
        ],
        ("", "serviceaccounts") => vec![
            Column::computed(
                "Secrets",
                ColumnType::Integer,
                0,
                "Number of secrets the account references.",
                |o, _| Value::from(array(o, &["secrets"]).len()),
            ),
            age_column(),
        ],
        ("node.k8s.io", "runtimeclasses") => vec![
            Column::computed(
                "Handler",
                ColumnType::String,
                0,
                "The CRI handler that runs pods of this class.",
                |o, _| str_cell(o, &["handler"]),
            ),
            age_column(),
        ],
        ("coordination.k8s.io", "leases") => vec![
            Column::computed(
                "Holder",
                ColumnType::String,
                0,
                "The identity currently holding the lease.",
                |o, _| str_cell(o, &["spec", "holderIdentity"]),
            ),
            age_column(),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => vec![Column::computed(
            "Created At",
            ColumnType::Date,
            0,
            "When the object was created.",
            |o, _| {
                let created =
                    timestamp(o, &["metadata", "creationTimestamp"]).unwrap_or_else(zero_time);
                Value::String(created.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            },
        )],
        _ => vec![age_column()],
    };
    columns.extend(specific);
    columns
}

fn age_column() -> Column {
    Column::computed("Age", ColumnType::String, 0, AGE_DESCRIPTION, |o, now| {
        Value::String(age(timestamp(o, &["metadata", "creationTimestamp"]), now))
    })
}

fn pod_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Ready",
            ColumnType::String,
            0,
            "Ready containers out of all containers.",
            |o, _| {
                let summary = PodSummary::of(o);
                Value::String(format!("{}/{}", summary.ready, summary.total))
            },
        ),
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "The aggregate state of the pod's containers.",
            |o, _| Value::String(PodSummary::of(o).reason),
        ),
        Column::computed(
            "Restarts",
            ColumnType::String,
            0,
            "Container restarts, and how long ago the last one was.",
            |o, now| {
                let summary = PodSummary::of(o);
                Value::String(match summary.last_restart {
                    Some(last) if summary.restarts != 0 => {
                        format!("{} ({} ago)", summary.restarts, age(Some(last), now))
                    }
                    _ => summary.restarts.to_string(),
                })
            },
        ),
        age_column(),
        Column::computed(
            "IP",
            ColumnType::String,
            1,
            "The pod's primary IP address.",
            |o, _| {
                let from_list = array(o, &["status", "podIPs"])
                    .first()
                    .map(|ip| text(ip, &["ip"]))
                    .unwrap_or_default();
                let ip = if from_list.is_empty() {
                    text(o, &["status", "podIP"])
                } else {
                    from_list
                };
                or_none(ip)
            },
        ),
        Column::computed(
            "Node",
            ColumnType::String,
            1,
            "The node the pod is bound to.",
            |o, _| or_none(text(o, &["spec", "nodeName"])),
        ),
        Column::computed(
            "Nominated Node",
            ColumnType::String,
            1,
            "The node the scheduler nominated for preemption.",
            |o, _| or_none(text(o, &["status", "nominatedNodeName"])),
        ),
        Column::computed(
            "Readiness Gates",
            ColumnType::String,
            1,
            "Satisfied readiness gates out of all gates.",
            |o, _| {
                let gates = array(o, &["spec", "readinessGates"]);
                if gates.is_empty() {
                    return or_none("");
                }
                let satisfied = gates
                    .iter()
                    .filter(|gate| {
                        condition_status(o, text(gate, &["conditionType"])) == Some("True")
                    })
                    .count();
                Value::String(format!("{satisfied}/{}", gates.len()))
            },
        ),
    ]
}

fn node_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "Whether the node is ready and schedulable.",
            |o, _| {
                let mut status = vec![match condition_status(o, "Ready") {
                    Some("True") => "Ready",
                    Some(_) => "NotReady",
                    None => "Unknown",
                }];
                if get(o, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
                    status.push("SchedulingDisabled");
                }
                Value::String(status.join(","))
            },
        ),
        Column::computed(
            "Roles",
            ColumnType::String,
            0,
            "The roles named by the node's role labels.",
            |o, _| or_none(&node_roles(o).join(",")),
        ),
        age_column(),
        Column::computed(
            "Version",
            ColumnType::String,
            0,
            "The kubelet version the node reports.",
            |o, _| str_cell(o, &["status", "nodeInfo", "kubeletVersion"]),
        ),
        Column::computed(
            "Internal-IP",
            ColumnType::String,
            1,
            "The node's first internal address.",
            |o, _| or_none(node_address(o, "InternalIP")),
        ),
        Column::computed(
            "External-IP",
            ColumnType::String,
            1,
            "The node's first external address.",
            |o, _| or_none(node_address(o, "ExternalIP")),
        ),
        Column::computed(
            "OS-Image",
            ColumnType::String,
            1,
            "The operating system image the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "osImage"])),
        ),
        Column::computed(
            "Kernel-Version",
            ColumnType::String,
            1,
            "The kernel version the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "kernelVersion"])),
        ),
        Column::computed(
            "Container-Runtime",
            ColumnType::String,
            1,
            "The container runtime and version the node reports.",
            |o, _| or_unknown(text(o, &["status", "nodeInfo", "containerRuntimeVersion"])),
        ),
    ]
}

/// Events are shown newest-information first, with Name as a wide column rather than the first one.
fn event_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Last Seen",
            ColumnType::String,
            0,
            "How long ago the event was last observed.",
            |o, now| Value::String(age(EventView(o).last_seen(), now)),
        ),
        Column::computed(
            "Type",
            ColumnType::String,
            0,
            "Normal or Warning.",
            |o, _| str_cell(o, &["type"]),
        ),
        Column::computed(
            "Reason",
            ColumnType::String,
            0,
            "Why the event was emitted, in CamelCase.",
            |o, _| str_cell(o, &["reason"]),
        ),
        Column::computed(
            "Object",
            ColumnType::String,
            0,
            "The object the event is about.",
            |o, _| {
                let involved = EventView(o).involved_object();
                let kind = text(involved, &["kind"]).to_lowercase();
                let name = text(involved, &["name"]);
                Value::String(if name.is_empty() {
                    kind
                } else {
                    format!("{kind}/{name}")
                })
            },
        ),
        Column::computed(
            "Subobject",
            ColumnType::String,
            1,
            "The part of the object the event is about.",
            |o, _| str_cell(EventView(o).involved_object(), &["fieldPath"]),
        ),
        Column::computed(
            "Source",
            ColumnType::String,
            1,
            "The component, and instance, that emitted the event.",
            |o, _| Value::String(EventView(o).source()),
        ),
        Column::computed(
            "Message",
            ColumnType::String,
            0,
            "A human-readable description of the event.",
            |o, _| Value::String(EventView(o).message().trim().to_owned()),
        ),
        Column::computed(
            "First Seen",
            ColumnType::String,
            1,
            "How long ago the event was first observed.",
            |o, now| Value::String(age(EventView(o).first_seen(), now)),
        ),
        Column::computed(
            "Count",
            ColumnType::Integer,
            1,
            "How many times the event was observed.",
            |o, _| Value::from(EventView(o).count()),
        ),
        Column {
            priority: 1,
            ..name_column()
        },
    ]
}

fn deployment_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::computed(
            "Ready",
            ColumnType::String,
            0,
            "Ready replicas out of desired replicas.",
            |o, _| {
                let desired = get(o, &["spec", "replicas"])
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                Value::String(format!(
                    "{}/{desired}",
                    int(o, &["status", "readyReplicas"])
                ))
            },
        ),
        Column::computed(
            "Up-to-date",
            ColumnType::Integer,
            0,
            "Replicas running the current template.",
            |o, _| Value::from(int(o, &["status", "updatedReplicas"])),
        ),
        Column::computed(
            "Available",
            ColumnType::Integer,
            0,
            "Replicas available to serve.",
            |o, _| Value::from(int(o, &["status", "availableReplicas"])),
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

fn replicaset_columns() -> Vec<Column> {
    let count = |name: &str, description: &str, printer: fn(&Value, Timestamp) -> Value| {
        Column::computed(name, ColumnType::Integer, 0, description, printer)
    };
    let mut columns = vec![
        count("Desired", "Pods the ReplicaSet should run.", |o, _| {
            Value::from(
                get(o, &["spec", "replicas"])
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            )
        }),
        count("Current", "Pods the ReplicaSet runs.", |o, _| {
            Value::from(int(o, &["status", "replicas"]))
        }),
        count("Ready", "Pods of the ReplicaSet that are ready.", |o, _| {
            Value::from(int(o, &["status", "readyReplicas"]))
        }),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

fn daemonset_columns() -> Vec<Column> {
    let count = |name: &str, description: &str, printer: fn(&Value, Timestamp) -> Value| {
        Column::computed(name, ColumnType::Integer, 0, description, printer)
    };
    let mut columns = vec![
        count(
            "Desired",
            "Nodes that should run the daemon pod.",
            |o, _| Value::from(int(o, &["status", "desiredNumberScheduled"])),
        ),
        count("Current", "Nodes running the daemon pod.", |o, _| {
            Value::from(int(o, &["status", "currentNumberScheduled"]))
        }),
        count("Ready", "Nodes whose daemon pod is ready.", |o, _| {
            Value::from(int(o, &["status", "numberReady"]))
        }),
        count(
            "Up-to-date",
            "Nodes running the current template.",
            |o, _| Value::from(int(o, &["status", "updatedNumberScheduled"])),
        ),
        count(
            "Available",
            "Nodes whose daemon pod is available.",
            |o, _| Value::from(int(o, &["status", "numberAvailable"])),
        ),
        Column::computed(
            "Node Selector",
            ColumnType::String,
            0,
            "The node selector of the pod template.",
            |o, _| {
                let selector = get(o, &["spec", "template", "spec", "nodeSelector"])
                    .and_then(Value::as_object);
                or_none(&format_labels(selector))
            },
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

fn job_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::computed(
            "Status",
            ColumnType::String,
            0,
            "The state of the job.",
            |o, _| Value::String(job_status(o).to_owned()),
        ),
        Column::computed(
            "Completions",
            ColumnType::String,
            0,
            "Succeeded pods out of the completions wanted.",
            |o, _| {
                let succeeded = int(o, &["status", "succeeded"]);
                let parallelism = int(o, &["spec", "parallelism"]);
                Value::String(
                    match get(o, &["spec", "completions"]).and_then(Value::as_i64) {
                        Some(completions) => format!("{succeeded}/{completions}"),
                        None if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
                        None => format!("{succeeded}/1"),
                    },
                )
            },
        ),
        Column::computed(
            "Duration",
            ColumnType::String,
            0,
            "How long the job ran, or has been running.",
            |o, now| {
                let Some(start) = timestamp(o, &["status", "startTime"]) else {
                    return Value::String(String::new());
                };
                let end = timestamp(o, &["status", "completionTime"]).unwrap_or(now);
                Value::String(human_duration(end.duration_since(start)))
            },
        ),
        age_column(),
    ];
    columns.extend(workload_wide_columns());
    columns
}

/// The wide columns shared by workloads: their containers, images and selector.
fn workload_wide_columns() -> Vec<Column> {
    vec![
        Column::computed(
            "Containers",
            ColumnType::String,
            1,
            "Names of the containers in the pod template.",
            |o, _| {
                Value::String(
                    template_containers(o)
                        .map(|c| text(c, &["name"]))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        ),
        Column::computed(
            "Images",
            ColumnType::String,
            1,
            "Images of the containers in the pod template.",
            |o, _| {
                Value::String(
                    template_containers(o)
                        .map(|c| text(c, &["image"]))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            },
        ),
        Column::computed(
            "Selector",
            ColumnType::String,
            1,
            "The label selector of the pods managed.",
            |o, _| {
                let selector = get(o, &["spec", "selector"]).unwrap_or(&Value::Null);
                Value::String(match LabelSelector::from_label_selector(selector) {
                    Ok(selector) => selector.to_string(),
                    Err(_) => "<invalid>".to_owned(),
                })
            },
        ),
    ]
}

// ---------------------------------------------------------------------------------------------------------
// Reading objects.
// ---------------------------------------------------------------------------------------------------------

fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A string member, or `""` when absent or not a string.
fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    get(value, path).and_then(Value::as_str).unwrap_or_default()
}

fn str_cell(value: &Value, path: &[&str]) -> Value {
    Value::String(text(value, path).to_owned())
}

/// An integer member, or 0 when absent.
fn int(value: &Value, path: &[&str]) -> i64 {
    get(value, path).and_then(Value::as_i64).unwrap_or(0)
}

fn array<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    get(value, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn member_count(value: &Value, key: &str) -> usize {
    value
        .get(key)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

fn timestamp(value: &Value, path: &[&str]) -> Option<Timestamp> {
    text(value, path).parse().ok()
}

fn or_none(s: &str) -> Value {
    Value::String(if s.is_empty() { "<none>" } else { s }.to_owned())
}

fn or_unknown(s: &str) -> Value {
    Value::String(if s.is_empty() { "<unknown>" } else { s }.to_owned())
}

/// The status (`True`, `False`, `Unknown`) of the condition of type `kind` in `status.conditions`.
fn condition_status<'a>(object: &'a Value, kind: &str) -> Option<&'a str> {
    array(object, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == kind)
        .map(|c| text(c, &["status"]))
}

fn condition_true(object: &Value, kind: &str) -> bool {
    condition_status(object, kind) == Some("True")
}

/// `k=v` pairs sorted by key, comma-separated.
fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn template_containers(object: &Value) -> impl Iterator<Item = &Value> {
    array(object, &["spec", "template", "spec", "containers"]).iter()
}

/// How long ago `then` was, as a human age; `<unknown>` when there is no time (or the zero time).
fn age(then: Option<Timestamp>, now: Timestamp) -> String {
    match then {
        Some(then) if then.as_second() > ZERO_TIME_SECONDS => {
            human_duration(now.duration_since(then))
        }
        _ => "<unknown>".to_owned(),
    }
}

/// Seconds since the Unix epoch of `0001-01-01T00:00:00Z`, the zero time Go clients write for unset times.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// The zero time, which stands for "never" in Kubernetes objects.
fn zero_time() -> Timestamp {
    Timestamp::from_second(ZERO_TIME_SECONDS).unwrap_or(Timestamp::MIN)
}

/// A duration with two or three significant figures (`45s`, `3m20s`, `25m`, `5h10m`, `3d4h`, `400d`,
/// `2y30d`), rounding down as kube-apiserver does for ages. Times up to a second in the future count as
/// now; further in the future, as `<invalid>`.
pub fn human_duration(duration: SignedDuration) -> String {
    let seconds = duration.as_secs();
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return with_remainder(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(days / 365, "y", days % 365, "d");
    }
    format!("{}y", days / 365)
}

fn with_remainder(whole: i64, unit: &str, remainder: i64, remainder_unit: &str) -> String {
    if remainder == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}{unit}{remainder}{remainder_unit}")
    }
}

// ---------------------------------------------------------------------------------------------------------
// Pods.
// ---------------------------------------------------------------------------------------------------------

/// What `kubectl get pods` condenses a pod into: ready containers, a one-word status and restarts.
#[derive(Debug, PartialEq)]
struct PodSummary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

/// Why the pod status shows `Unknown` for pods being deleted from an unreachable node.
const NODE_LOST_REASON: &str = "NodeLost";

impl PodSummary {
    /// Derives the summary from the pod's status the way `kubectl` does: init containers first (a failing
    /// or waiting one names the status `Init:...`), then the app containers from last to first, so the
    /// first container's state wins, and finally deletion.
    fn of(pod: &Value) -> Self {
        let init_specs = array(pod, &["spec", "initContainers"]);
        let is_sidecar = |name: &str| {
            init_specs
                .iter()
                .any(|c| text(c, &["name"]) == name && text(c, &["restartPolicy"]) == "Always")
        };
        let sidecars = init_specs
            .iter()
            .filter(|c| text(c, &["restartPolicy"]) == "Always")
            .count();
        let phase = text(pod, &["status", "phase"]);
        let status_reason = text(pod, &["status", "reason"]);
        let mut summary = Self {
            ready: 0,
            total: array(pod, &["spec", "containers"]).len() + sidecars,
            reason: if status_reason.is_empty() {
                phase
            } else {
                status_reason
            }
            .to_owned(),
            restarts: 0,
            last_restart: None,
        };
        let scheduling_gated = array(pod, &["status", "conditions"]).iter().any(|c| {
            text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated"
        });
        if scheduling_gated {
            summary.reason = "SchedulingGated".to_owned();
        }

        let mut sidecar_restarts = 0;
        let mut last_sidecar_restart = None;
        let mut initializing = false;
        for (index, container) in array(pod, &["status", "initContainerStatuses"])
            .iter()
            .enumerate()
        {
            let restarts = int(container, &["restartCount"]);
            let finished = timestamp(container, &["lastState", "terminated", "finishedAt"]);
            summary.restarts += restarts;
            summary.last_restart = later(summary.last_restart, finished);
            let sidecar = is_sidecar(text(container, &["name"]));
            if sidecar {
                sidecar_restarts += restarts;
                last_sidecar_restart = later(last_sidecar_restart, finished);
            }
            let terminated = get(container, &["state", "terminated"]).filter(|t| t.is_object());
            let waiting_reason = text(container, &["state", "waiting", "reason"]);
            if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
                continue;
            }
            if sidecar && get(container, &["started"]).and_then(Value::as_bool) == Some(true) {
                if is_ready(container) {
                    summary.ready += 1;
                }
                continue;
            }
            summary.reason = match terminated {
                Some(terminated) => format!("Init:{}", termination_reason(terminated)),
                None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                    format!("Init:{waiting_reason}")
                }
                None => format!("Init:{index}/{}", init_specs.len()),
            };
            initializing = true;
            break;
        }

        if !initializing || condition_true(pod, "Initialized") {
            summary.restarts = sidecar_restarts;
            summary.last_restart = last_sidecar_restart;
            let mut has_running = false;
            for container in array(pod, &["status", "containerStatuses"]).iter().rev() {
                summary.restarts += int(container, &["restartCount"]);
                summary.last_restart = later(
                    summary.last_restart,
                    timestamp(container, &["lastState", "terminated", "finishedAt"]),
                );
                let waiting_reason = text(container, &["state", "waiting", "reason"]);
                let terminated = get(container, &["state", "terminated"]).filter(|t| t.is_object());
                if !waiting_reason.is_empty() {
                    summary.reason = waiting_reason.to_owned();
                } else if let Some(terminated) = terminated {
                    summary.reason = termination_reason(terminated);
                } else if is_ready(container)
                    && get(container, &["state", "running"]).is_some_and(Value::is_object)
                {
                    has_running = true;
                    summary.ready += 1;
                }
            }
            if summary.reason == "Completed" && has_running {
                summary.reason = if condition_true(pod, "Ready") {
                    "Running"
                } else {
                    "NotReady"
                }
                .to_owned();
            }
        }

        let deleting = get(pod, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null());
        if deleting && status_reason == NODE_LOST_REASON {
            summary.reason = "Unknown".to_owned();
        } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
            summary.reason = "Terminating".to_owned();
        }
        summary
    }
}

fn is_ready(container_status: &Value) -> bool {
    get(container_status, &["ready"]).and_then(Value::as_bool) == Some(true)
}

/// The reason a terminated container gives, or its signal or exit code when it gives none.
fn termination_reason(terminated: &Value) -> String {
    let reason = text(terminated, &["reason"]);
    let signal = int(terminated, &["signal"]);
    if !reason.is_empty() {
        reason.to_owned()
    } else if signal != 0 {
        format!("Signal:{signal}")
    } else {
        format!("ExitCode:{}", int(terminated, &["exitCode"]))
    }
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    a.max(b)
}

// ---------------------------------------------------------------------------------------------------------
// Nodes, events, jobs.
// ---------------------------------------------------------------------------------------------------------

const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const LEGACY_NODE_ROLE_LABEL: &str = "kubernetes.io/role";

/// Roles from `node-role.kubernetes.io/<role>` label keys and the legacy `kubernetes.io/role` value,
/// sorted and without duplicates.
fn node_roles(node: &Value) -> Vec<String> {
    let labels = get(node, &["metadata", "labels"]).and_then(Value::as_object);
    let mut roles: Vec<String> = labels
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| match key.strip_prefix(NODE_ROLE_PREFIX) {
            Some(role) => Some(role.to_owned()),
            None if key == LEGACY_NODE_ROLE_LABEL => value.as_str().map(str::to_owned),
            None => None,
        })
        .filter(|role| !role.is_empty())
        .collect();
    roles.sort();
    roles.dedup();
    roles
}

fn node_address<'a>(node: &'a Value, kind: &str) -> &'a str {
    array(node, &["status", "addresses"])
        .iter()
        .find(|a| text(a, &["type"]) == kind)
        .map(|a| text(a, &["address"]))
        .unwrap_or_default()
}

/// Reads a `v1` or `events.k8s.io/v1` Event through the same accessors, as both are listed as events.
struct EventView<'a>(&'a Value);

impl<'a> EventView<'a> {
    fn first_of(&self, paths: &[&[&str]]) -> Option<&'a Value> {
        paths
            .iter()
            .find_map(|path| get(self.0, path).filter(|v| !v.is_null()))
    }

    fn time_of(&self, paths: &[&[&str]]) -> Option<Timestamp> {
        self.first_of(paths)
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok())
    }

    fn involved_object(&self) -> &'a Value {
        self.first_of(&[&["involvedObject"], &["regarding"]])
            .unwrap_or(&Value::Null)
    }

    fn message(&self) -> &'a str {
        self.first_of(&[&["message"], &["note"]])
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn first_seen(&self) -> Option<Timestamp> {
        self.time_of(&[&["firstTimestamp"], &["deprecatedFirstTimestamp"]])
            .or_else(|| self.time_of(&[&["eventTime"]]))
    }

    fn last_seen(&self) -> Option<Timestamp> {
        if self.first_of(&[&["series"]]).is_some() {
            return self.time_of(&[&["series", "lastObservedTime"]]);
        }
        self.time_of(&[&["lastTimestamp"], &["deprecatedLastTimestamp"]])
            .or_else(|| self.first_seen())
    }

    fn count(&self) -> i64 {
        if self.first_of(&[&["series"]]).is_some() {
            return int(self.0, &["series", "count"]);
        }
        match self
            .first_of(&[&["count"], &["deprecatedCount"]])
            .and_then(Value::as_i64)
        {
            Some(count) if count != 0 => count,
            _ => 1,
        }
    }

    /// `component, host`, from the legacy source or the reporting controller and instance.
    fn source(&self) -> String {
        let pick = |paths: &[&[&str]]| {
            paths
                .iter()
                .map(|path| text(self.0, path))
                .find(|s| !s.is_empty())
                .unwrap_or_default()
        };
        let component = pick(&[
            &["source", "component"],
            &["deprecatedSource", "component"],
            &["reportingComponent"],
            &["reportingController"],
        ]);
        let instance = pick(&[
            &["source", "host"],
            &["deprecatedSource", "host"],
            &["reportingInstance"],
        ]);
        if instance.is_empty() {
            component.to_owned()
        } else {
            format!("{component}, {instance}")
        }
    }
}

/// The first true condition among the terminal and paused ones decides; a job with none is Running.
fn job_status(job: &Value) -> &'static str {
    let has = |kind: &str| condition_true(job, kind);
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if get(job, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2025-06-01T12:00:00Z"
            .parse()
            .unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// A timestamp `seconds` before [`now`], as the API writes it.
    fn ago(seconds: i64) -> String {
        (now() - SignedDuration::from_secs(seconds))
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    fn cells(columns: &[Column], object: &Value) -> Vec<Value> {
        columns.iter().map(|c| c.cell(object, now())).collect()
    }

    fn names(columns: &[Column]) -> Vec<(String, i32)> {
        columns
            .iter()
            .map(|c| (c.name.clone(), c.priority))
            .collect()
    }

    #[test]
    fn human_durations_round_like_the_server() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 10 * 60 + 30, "5h10m"),
            (8 * 3600 + 59 * 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (8 * 86400 + 5 * 3600, "8d"),
            (400 * 86400, "400d"),
            (2 * 365 * 86400 + 30 * 86400, "2y30d"),
            (3 * 365 * 86400, "3y"),
            (9 * 365 * 86400 + 100 * 86400, "9y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(
                human_duration(SignedDuration::from_secs(seconds)),
                expected,
                "{seconds}s"
            );
        }
        assert_eq!(human_duration(SignedDuration::from_millis(-1500)), "0s");
        assert_eq!(
            human_duration(SignedDuration::from_millis(-2500)),
            "<invalid>"
        );
    }

    #[test]
    fn crd_columns_follow_printer_columns() {
        let columns = crd_columns(&[
            json!({"name": "Kernel", "type": "string", "jsonPath": ".spec.kernel", "description": "Kernel version"}),
            json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "Nodes", "type": "integer", "jsonPath": ".status.nodes", "priority": 1}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".status.ratio"}),
            json!({"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"}),
            json!({"name": "Seen", "type": "date", "jsonPath": ".status.seen", "format": "date-time"}),
            json!({"name": "Label", "type": "string", "jsonPath": ".metadata.labels.app\\.kubernetes\\.io/name"}),
            json!({"name": "Spec", "type": "string", "jsonPath": ".spec.selector"}),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let definitions: Vec<Value> = columns.iter().map(Column::definition).collect();
        assert_eq!(
            definitions[0],
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0})
        );
        assert_eq!(
            definitions[1],
            json!({"name": "Kernel", "type": "string", "format": "", "description": "Kernel version", "priority": 0})
        );
        assert_eq!(definitions[3]["priority"], json!(1));
        assert_eq!(definitions[6]["format"], json!("date-time"));

        let full = json!({
            "metadata": {"name": "m1", "labels": {"app.kubernetes.io/name": "kmod"}},
            "spec": {"kernel": "6.1.0", "paused": false, "selector": {"a": "b"}},
            "status": {
                "nodes": 3.0,
                "ratio": 2,
                "seen": ago(300),
                "conditions": [{"type": "Progressing", "status": "True"}, {"type": "Ready", "status": "False"}]
            }
        });
        assert_eq!(
            cells(&columns, &full),
            vec![
                json!("m1"),
                json!("6.1.0"),
                json!("False"),
                json!(3),
                json!(2.0),
                json!(false),
                json!("5m"),
                json!("kmod"),
                json!("{\"a\":\"b\"}")
            ]
        );
        let sparse = json!({"metadata": {"name": "m2"}, "spec": {"kernel": 5, "paused": "yes"}, "status": {"seen": "yesterday"}});
        assert_eq!(
            cells(&columns, &sparse),
            vec![
                json!("m2"),
                json!("5"),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                json!("<invalid>"),
                Value::Null,
                Value::Null
            ]
        );
    }

    #[test]
    fn crd_without_printer_columns_gets_age() {
        let columns = crd_columns(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            names(&columns),
            [("Name".to_owned(), 0), ("Age".to_owned(), 0)]
        );
        assert_eq!(columns[1].column_type, ColumnType::Date);
        let object = json!({"metadata": {"name": "x", "creationTimestamp": ago(3 * 86400)}});
        assert_eq!(cells(&columns, &object), [json!("x"), json!("3d")]);
    }

    #[test]
    fn bad_printer_columns_are_rejected() {
        let cases = [
            json!({"name": "A", "type": "string", "jsonPath": "spec.a"}),
            json!({"name": "A", "type": "string", "jsonPath": ".a[?(@.b==)]"}),
            json!({"name": "A", "type": "text", "jsonPath": ".a"}),
            json!({"name": "A", "type": "string"}),
            json!({"type": "string", "jsonPath": ".a"}),
        ];
        for definition in cases {
            assert!(
                crd_columns(std::slice::from_ref(&definition)).is_err(),
                "{definition}"
            );
        }
    }

    #[test]
    fn builtin_column_layouts() {
        let layout = |group: &str, resource: &str| -> Vec<String> {
            builtin_columns(group, resource)
                .iter()
                .map(|c| {
                    if c.priority == 0 {
                        c.name.clone()
                    } else {
                        format!("({})", c.name)
                    }
                })
                .collect()
        };
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "",
                "pods",
                &[
                    "Name",
                    "Ready",
                    "Status",
                    "Restarts",
                    "Age",
                    "(IP)",
                    "(Node)",
                    "(Nominated Node)",
                    "(Readiness Gates)",
                ],
            ),
            (
                "",
                "nodes",
                &[
                    "Name",
                    "Status",
                    "Roles",
                    "Age",
                    "Version",
                    "(Internal-IP)",
                    "(External-IP)",
                    "(OS-Image)",
                    "(Kernel-Version)",
                    "(Container-Runtime)",
                ],
            ),
            ("", "namespaces", &["Name", "Status", "Age"]),
            (
                "",
                "events",
                &[
                    "Last Seen",
                    "Type",
                    "Reason",
                    "Object",
                    "(Subobject)",
                    "(Source)",
                    "Message",
                    "(First Seen)",
                    "(Count)",
                    "(Name)",
                ],
            ),
            (
                "events.k8s.io",
                "events",
                &[
                    "Last Seen",
                    "Type",
                    "Reason",
                    "Object",
                    "(Subobject)",
                    "(Source)",
                    "Message",
                    "(First Seen)",
                    "(Count)",
                    "(Name)",
                ],
            ),
            (
                "apps",
                "deployments",
                &[
                    "Name",
                    "Ready",
                    "Up-to-date",
                    "Available",
                    "Age",
                    "(Containers)",
                    "(Images)",
                    "(Selector)",
                ],
            ),
            (
                "apps",
                "daemonsets",
                &[
                    "Name",
                    "Desired",
                    "Current",
                    "Ready",
                    "Up-to-date",
                    "Available",
                    "Node Selector",
                    "Age",
                    "(Containers)",
                    "(Images)",
                    "(Selector)",
                ],
            ),
            (
                "batch",
                "jobs",
                &[
                    "Name",
                    "Status",
                    "Completions",
                    "Duration",
                    "Age",
                    "(Containers)",
                    "(Images)",
                    "(Selector)",
                ],
            ),
            ("", "configmaps", &["Name", "Data", "Age"]),
            ("", "secrets", &["Name", "Type", "Data", "Age"]),
            ("", "serviceaccounts", &["Name", "Secrets", "Age"]),
            ("node.k8s.io", "runtimeclasses", &["Name", "Handler", "Age"]),
            ("coordination.k8s.io", "leases", &["Name", "Holder", "Age"]),
            (
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                &["Name", "Created At"],
            ),
            ("", "services", &["Name", "Age"]),
            ("kmm.sigs.x-k8s.io", "modules", &["Name", "Age"]),
        ];
        for (group, resource, expected) in cases {
            assert_eq!(layout(group, resource), *expected, "{group}/{resource}");
        }
    }

    fn pod(status: Value) -> Value {
        json!({
            "metadata": {"name": "p", "creationTimestamp": ago(60)},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "init"}]},
            "status": status,
        })
    }

    fn running(ready: bool) -> Value {
        json!({"ready": ready, "restartCount": 0, "state": {"running": {"startedAt": ago(50)}}})
    }

    fn waiting(reason: &str) -> Value {
        json!({"ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason}}})
    }

    fn terminated(reason: &str, exit_code: i64) -> Value {
        json!({"ready": false, "restartCount": 0, "state": {"terminated": {"reason": reason, "exitCode": exit_code}}})
    }

    #[test]
    fn pod_status_follows_kubectl() {
        let init_done = json!([terminated("Completed", 0)]);
        let cases = [
            (pod(json!({"phase": "Pending"})), "Pending", "0/2"),
            (
                pod(
                    json!({"phase": "Pending", "initContainerStatuses": init_done, "containerStatuses": [waiting("ContainerCreating"), waiting("ContainerCreating")]}),
                ),
                "ContainerCreating",
                "0/2",
            ),
            (
                pod(
                    json!({"phase": "Running", "initContainerStatuses": init_done, "containerStatuses": [running(true), running(true)]}),
                ),
                "Running",
                "2/2",
            ),
            (
                pod(
                    json!({"phase": "Running", "initContainerStatuses": init_done, "containerStatuses": [running(true), running(false)]}),
                ),
                "Running",
                "1/2",
            ),
            (
                pod(
                    json!({"phase": "Pending", "initContainerStatuses": init_done, "containerStatuses": [waiting("ErrImagePull"), running(true)]}),
                ),
                "ErrImagePull",
                "1/2",
            ),
            (
                pod(
                    json!({"phase": "Pending", "initContainerStatuses": init_done, "containerStatuses": [running(true), waiting("ImagePullBackOff")]}),
                ),
                "ImagePullBackOff",
                "1/2",
            ),
            (
                pod(
                    json!({"phase": "Running", "initContainerStatuses": init_done, "containerStatuses": [waiting("CrashLoopBackOff"), running(true)]}),
                ),
                "CrashLoopBackOff",
                "1/2",
            ),
            (
                pod(
                    json!({"phase": "Succeeded", "initContainerStatuses": init_done, "containerStatuses": [terminated("Completed", 0), terminated("Completed", 0)]}),
                ),
                "Completed",
                "0/2",
            ),
            (
                pod(
                    json!({"phase": "Failed", "initContainerStatuses": init_done, "containerStatuses": [terminated("", 3), terminated("Error", 1)]}),
                ),
                "ExitCode:3",
                "0/2",
            ),
            (
                pod(
                    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}], "initContainerStatuses": init_done, "containerStatuses": [terminated("Completed", 0), running(true)]}),
                ),
                "NotReady",
                "1/2",
            ),
            (
                pod(
                    json!({"phase": "Pending", "initContainerStatuses": [waiting("PodInitializing")]}),
                ),
                "Init:0/1",
                "0/2",
            ),
            (
                pod(
                    json!({"phase": "Pending", "initContainerStatuses": [waiting("CrashLoopBackOff")]}),
                ),
                "Init:CrashLoopBackOff",
                "0/2",
            ),
            (
                pod(json!({"phase": "Pending", "initContainerStatuses": [terminated("", 2)]})),
                "Init:ExitCode:2",
                "0/2",
            ),
            (
                pod(
                    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ),
                "SchedulingGated",
                "0/2",
            ),
            (
                pod(json!({"phase": "Failed", "reason": "Evicted"})),
                "Evicted",
                "0/2",
            ),
        ];
        let columns = builtin_columns("", "pods");
        for (object, status, ready) in &cases {
            let row = cells(&columns, object);
            assert_eq!(
                (row[2].as_str(), row[1].as_str()),
                (Some(*status), Some(*ready)),
                "{object}"
            );
        }

        let mut deleting = cases[2].0.clone();
        deleting["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(cells(&columns, &deleting)[2], json!("Terminating"));
        deleting["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(&columns, &deleting)[2], json!("Unknown"));
        let mut finished = cases[7].0.clone();
        finished["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(cells(&columns, &finished)[2], json!("Completed"));
    }

    #[test]
    fn pod_restarts_and_sidecars() {
        let object = json!({
            "metadata": {"name": "p", "creationTimestamp": ago(4 * 3600 + 600)},
            "spec": {
                "containers": [{"name": "app"}],
                "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}],
                "nodeName": "n1",
                "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]
            },
            "status": {
                "phase": "Running",
                "podIPs": [{"ip": "10.0.0.7"}],
                "conditions": [{"type": "Initialized", "status": "True"}, {"type": "example.com/lb", "status": "True"}],
                "initContainerStatuses": [
                    terminated("Completed", 0),
                    {"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                     "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(3600)}},
                     "state": {"running": {}}}
                ],
                "containerStatuses": [{
                    "name": "app", "ready": true, "restartCount": 4,
                    "lastState": {"terminated": {"exitCode": 137, "finishedAt": ago(300)}},
                    "state": {"running": {}}
                }]
            }
        });
        let row = cells(&builtin_columns("", "pods"), &object);
        assert_eq!(
            row,
            vec![
                json!("p"),
                json!("2/2"),
                json!("Running"),
                json!("5 (5m ago)"),
                json!("4h10m"),
                json!("10.0.0.7"),
                json!("n1"),
                json!("<none>"),
                json!("1/2")
            ]
        );
    }

    #[test]
    fn node_rows() {
        let node = json!({
            "metadata": {"name": "n1", "creationTimestamp": ago(86400 * 30), "labels": {
                "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
                "kubernetes.io/role": "infra", "kubernetes.io/hostname": "n1"
            }},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "192.168.1.10"}],
                "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Fedora CoreOS", "kernelVersion": "6.14.0", "containerRuntimeVersion": "containerd://2.0.4"}
            }
        });
        assert_eq!(
            cells(&builtin_columns("", "nodes"), &node),
            vec![
                json!("n1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,infra,worker"),
                json!("30d"),
                json!("v1.33.1"),
                json!("192.168.1.10"),
                json!("<none>"),
                json!("Fedora CoreOS"),
                json!("6.14.0"),
                json!("containerd://2.0.4")
            ]
        );
        let bare = json!({"metadata": {"name": "n2"}});
        assert_eq!(
            cells(&builtin_columns("", "nodes"), &bare),
            vec![
                json!("n2"),
                json!("Unknown"),
                json!("<none>"),
                json!("<unknown>"),
                json!(""),
                json!("<none>"),
                json!("<none>"),
                json!("<unknown>"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
    }

    #[test]
    fn event_rows_for_both_event_apis() {
        let core = json!({
            "metadata": {"name": "p.17a"},
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "type": "Normal", "message": " Image pulled \n", "count": 3,
            "firstTimestamp": ago(600), "lastTimestamp": ago(30),
            "source": {"component": "kubelet", "host": "n1"}
        });
        let modern = json!({
            "metadata": {"name": "m.1"},
            "regarding": {"kind": "Module", "name": "kmod"},
            "reason": "Built", "type": "Warning", "note": "build failed",
            "eventTime": ago(200), "reportingController": "kmm", "reportingInstance": "kmm-0",
            "series": {"count": 7, "lastObservedTime": ago(10)}
        });
        let single = json!({"metadata": {"name": "s"}, "involvedObject": {"kind": "Node"}, "eventTime": ago(5)});
        assert_eq!(
            cells(&builtin_columns("", "events"), &core),
            vec![
                json!("30s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/p"),
                json!("spec.containers{app}"),
                json!("kubelet, n1"),
                json!("Image pulled"),
                json!("10m"),
                json!(3),
                json!("p.17a")
            ]
        );
        assert_eq!(
            cells(&builtin_columns("events.k8s.io", "events"), &modern),
            vec![
                json!("10s"),
                json!("Warning"),
                json!("Built"),
                json!("module/kmod"),
                json!(""),
                json!("kmm, kmm-0"),
                json!("build failed"),
                json!("3m20s"),
                json!(7),
                json!("m.1")
            ]
        );
        assert_eq!(
            cells(&builtin_columns("", "events"), &single),
            vec![
                json!("5s"),
                json!(""),
                json!(""),
                json!("node"),
                json!(""),
                json!(""),
                json!(""),
                json!("5s"),
                json!(1),
                json!("s")
            ]
        );
    }

    #[test]
    fn workload_rows() {
        let template = json!({"spec": {"nodeSelector": {"zone": "b", "arch": "amd64"}, "containers": [
            {"name": "worker", "image": "quay.io/kmm/worker:v2"}, {"name": "pull", "image": "busybox"}
        ]}});
        let selector = json!({"matchLabels": {"app": "kmm"}});
        let deployment = json!({
            "metadata": {"name": "d", "creationTimestamp": ago(90)},
            "spec": {"replicas": 3, "selector": selector, "template": template},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        });
        assert_eq!(
            cells(&builtin_columns("apps", "deployments"), &deployment),
            vec![
                json!("d"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("90s"),
                json!("worker,pull"),
                json!("quay.io/kmm/worker:v2,busybox"),
                json!("app=kmm")
            ]
        );
        let daemonset = json!({
            "metadata": {"name": "ds", "creationTimestamp": ago(90)},
            "spec": {"selector": selector, "template": template},
            "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3, "updatedNumberScheduled": 4, "numberAvailable": 3}
        });
        assert_eq!(
            cells(&builtin_columns("apps", "daemonsets"), &daemonset)[1..8],
            [
                json!(4),
                json!(4),
                json!(3),
                json!(4),
                json!(3),
                json!("arch=amd64,zone=b"),
                json!("90s")
            ]
        );
        let job = |spec: Value, status: Value| json!({"metadata": {"name": "j", "creationTimestamp": ago(4000)}, "spec": spec, "status": status});
        let job_cells =
            |object: &Value| cells(&builtin_columns("batch", "jobs"), object)[1..4].to_vec();
        assert_eq!(
            job_cells(&job(
                json!({"completions": 3}),
                json!({"succeeded": 3, "startTime": ago(3900), "completionTime": ago(3800),
                "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]})
            )),
            [json!("Complete"), json!("3/3"), json!("100s")]
        );
        assert_eq!(
            job_cells(&job(
                json!({"parallelism": 2}),
                json!({"startTime": ago(600)})
            )),
            [json!("Running"), json!("0/1 of 2"), json!("10m")]
        );
        assert_eq!(
            job_cells(&job(
                json!({}),
                json!({"conditions": [{"type": "Suspended", "status": "True"}]})
            )),
            [json!("Suspended"), json!("0/1"), json!("")]
        );
    }

    #[test]
    fn simple_resource_rows() {
        let cases = [
            (
                "",
                "configmaps",
                json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}}),
                vec![json!("c"), json!(3), json!("<unknown>")],
            ),
            (
                "",
                "secrets",
                json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": ""}}),
                vec![json!("s"), json!("Opaque"), json!(1), json!("<unknown>")],
            ),
            (
                "",
                "serviceaccounts",
                json!({"metadata": {"name": "sa"}, "secrets": [{"name": "t"}]}),
                vec![json!("sa"), json!(1), json!("<unknown>")],
            ),
            (
                "",
                "namespaces",
                json!({"metadata": {"name": "ns"}, "status": {"phase": "Active"}}),
                vec![json!("ns"), json!("Active"), json!("<unknown>")],
            ),
            (
                "node.k8s.io",
                "runtimeclasses",
                json!({"metadata": {"name": "kata"}, "handler": "kata-qemu"}),
                vec![json!("kata"), json!("kata-qemu"), json!("<unknown>")],
            ),
            (
                "coordination.k8s.io",
                "leases",
                json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "kmm-0"}}),
                vec![json!("l"), json!("kmm-0"), json!("<unknown>")],
            ),
            (
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                json!({"metadata": {"name": "modules.kmm", "creationTimestamp": "2024-03-05T06:07:08Z"}}),
                vec![json!("modules.kmm"), json!("2024-03-05T06:07:08Z")],
            ),
        ];
        for (group, resource, object, expected) in cases {
            assert_eq!(
                cells(&builtin_columns(group, resource), &object),
                expected,
                "{resource}"
            );
        }
    }

    #[test]
    fn include_object_options() {
        assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse("None"), Ok(IncludeObject::None));
        assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
        assert!(IncludeObject::parse("metadata").is_err());
        let object = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}});
        let columns = builtin_columns("", "configmaps");
        let row_object = |include: &str| {
            to_table(&columns, &[&object], include, Value::Null, now())["rows"][0]["object"].clone()
        };
        assert_eq!(row_object("None"), Value::Null);
        assert_eq!(row_object("Object"), object);
        assert_eq!(row_object("bogus")["kind"], json!("PartialObjectMetadata"));
    }

    #[test]
    fn golden_pod_table() {
        let web = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "creationTimestamp": ago(125)},
            "spec": {"nodeName": "node-a", "containers": [{"name": "nginx", "image": "nginx"}]},
            "status": {"phase": "Running", "podIP": "10.1.0.4", "podIPs": [{"ip": "10.1.0.4"}],
                       "containerStatuses": [{"name": "nginx", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
        });
        let pending = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "pending", "namespace": "default", "uid": "u2", "creationTimestamp": ago(3)},
            "spec": {"containers": [{"name": "a", "image": "a"}]},
            "status": {"phase": "Pending"}
        });
        let table = to_table(
            &builtin_columns("", "pods"),
            &[&web, &pending],
            "Metadata",
            json!({"resourceVersion": "42"}),
            now(),
        );
        let expected = json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "42"},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "description": "The name of the object, unique within its namespace.", "priority": 0},
                {"name": "Ready", "type": "string", "format": "", "description": "Ready containers out of all containers.", "priority": 0},
                {"name": "Status", "type": "string", "format": "", "description": "The aggregate state of the pod's containers.", "priority": 0},
                {"name": "Restarts", "type": "string", "format": "", "description": "Container restarts, and how long ago the last one was.", "priority": 0},
                {"name": "Age", "type": "string", "format": "", "description": "How long ago the object was created.", "priority": 0},
                {"name": "IP", "type": "string", "format": "", "description": "The pod's primary IP address.", "priority": 1},
                {"name": "Node", "type": "string", "format": "", "description": "The node the pod is bound to.", "priority": 1},
                {"name": "Nominated Node", "type": "string", "format": "", "description": "The node the scheduler nominated for preemption.", "priority": 1},
                {"name": "Readiness Gates", "type": "string", "format": "", "description": "Satisfied readiness gates out of all gates.", "priority": 1}
            ],
            "rows": [
                {
                    "cells": ["web", "1/1", "Running", "0", "2m5s", "10.1.0.4", "node-a", "<none>", "<none>"],
                    "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": {"name": "web", "namespace": "default", "uid": "u1", "creationTimestamp": "2025-06-01T11:57:55Z"}}
                },
                {
                    "cells": ["pending", "0/1", "Pending", "0", "3s", "<none>", "<none>", "<none>", "<none>"],
                    "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": {"name": "pending", "namespace": "default", "uid": "u2", "creationTimestamp": "2025-06-01T11:59:57Z"}}
                }
            ]
        });
        assert_eq!(table, expected);
        assert_eq!(
            serde_json::to_string(&table["columnDefinitions"][0]).unwrap_or_default(),
            r#"{"name":"Name","type":"string","format":"name","description":"The name of the object, unique within its namespace.","priority":0}"#
        );
    }
}
