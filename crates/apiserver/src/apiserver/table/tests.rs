use super::column::ColumnType;
use super::common::NAME_DESCRIPTION;
use super::*;
use jiff::SignedDuration;

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
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            &["Name", "Validations", "ParamKind", "Age"],
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            &["Name", "PolicyName", "ParamRef", "Age"],
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            &["Name", "Created At"],
        ),
        (
            "",
            "services",
            &[
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "(Selector)",
            ],
        ),
        ("", "endpoints", &["Name", "Endpoints", "Age"]),
        (
            "discovery.k8s.io",
            "endpointslices",
            &["Name", "AddressType", "Ports", "Endpoints", "Age"],
        ),
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
            pod(json!({"phase": "Pending", "initContainerStatuses": [waiting("PodInitializing")]})),
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
            "nodeInfo": {"kubeletVersion": "v1.34.1", "osImage": "Fedora CoreOS", "kernelVersion": "6.14.0", "containerRuntimeVersion": "containerd://2.0.4"}
        }
    });
    assert_eq!(
        cells(&builtin_columns("", "nodes"), &node),
        vec![
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,infra,worker"),
            json!("30d"),
            json!("v1.34.1"),
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
    let single =
        json!({"metadata": {"name": "s"}, "involvedObject": {"kind": "Node"}, "eventTime": ago(5)});
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
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            json!({"metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}, {"expression": "1 == 1"}]}}),
            vec![json!("p"), json!(2), json!("<unset>"), json!("<unknown>")],
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}),
            vec![json!("b"), json!("p"), json!("<unset>"), json!("<unknown>")],
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
