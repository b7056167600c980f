//! The library table: every function Kubernetes' rules use, the errors, and the cost limits.

use serde_json::{Value as Json, json};

use crate::{Activation, Budget, PER_CALL_LIMIT, Program, to_json};

fn object() -> Json {
    json!({
        "spec": {"replicas": 3, "name": "Acme-Accel ", "tags": ["b", "a", "c"], "sizes": [1, 2, 3, 4],
                 "floats": [1.5, 2.5], "csv": "x,y,z", "memory": "1536Mi"},
        "empty": [],
    })
}

fn eval(source: &str) -> Result<Json, String> {
    let program =
        Program::compile(source, &["self", "oldSelf"]).map_err(|e| format!("compile: {e}"))?;
    let mut activation = Activation::new();
    activation.bind_json("self", &object());
    activation.bind_json("oldSelf", &json!({"spec": {"replicas": 2}}));
    let value = program
        .evaluate(&activation, &mut Budget::default())
        .map_err(|e| e.to_string())?;
    to_json(&value).ok_or_else(|| format!("no JSON form: {value:?}"))
}

#[test]
fn functions_evaluate_as_kubernetes_does() {
    let cases: &[(&str, Json)] = &[
        // Field selection, presence, size.
        ("self.spec.replicas", json!(3)),
        ("has(self.spec)", json!(true)),
        ("has(self.spec.nope)", json!(false)),
        ("size(self.spec.tags)", json!(3)),
        ("self.spec.tags.size()", json!(3)),
        ("size('héllo')", json!(5)),
        ("size({'a': 1, 'b': 2})", json!(2)),
        ("self.spec.replicas > oldSelf.spec.replicas", json!(true)),
        ("'b' in self.spec.tags", json!(true)),
        // Strings.
        ("self.spec.name.startsWith('Acme')", json!(true)),
        ("self.spec.name.endsWith(' ')", json!(true)),
        ("self.spec.name.contains('-')", json!(true)),
        ("self.spec.name.matches('^[A-Z][a-z]+-')", json!(true)),
        ("self.spec.name.lowerAscii()", json!("acme-accel ")),
        ("self.spec.name.upperAscii()", json!("ACME-ACCEL ")),
        ("self.spec.name.trim()", json!("Acme-Accel")),
        ("self.spec.csv.split(',')", json!(["x", "y", "z"])),
        ("self.spec.tags.join('-')", json!("b-a-c")),
        ("self.spec.name.indexOf('-')", json!(4)),
        ("self.spec.name.replace('Accel', 'X')", json!("Acme-X ")),
        ("self.spec.name.substring(0, 4)", json!("Acme")),
        // List macros.
        ("self.spec.sizes.all(x, x > 0)", json!(true)),
        ("self.spec.sizes.exists(x, x > 3)", json!(true)),
        ("self.spec.sizes.exists_one(x, x > 3)", json!(true)),
        ("self.spec.sizes.map(x, x * 2)", json!([2, 4, 6, 8])),
        ("self.spec.sizes.filter(x, x % 2 == 0)", json!([2, 4])),
        ("self.empty.all(x, false)", json!(true)),
        // Kubernetes' list library.
        ("self.spec.sizes.isSorted()", json!(true)),
        ("self.spec.tags.isSorted()", json!(false)),
        ("self.spec.sizes.sum()", json!(10)),
        ("self.spec.floats.sum()", json!(4.0)),
        ("self.empty.sum()", json!(0)),
        ("self.spec.sizes.min()", json!(1)),
        ("self.spec.tags.max()", json!("c")),
        ("self.spec.tags.indexOf('a')", json!(1)),
        ("[1, 2, 1].lastIndexOf(1)", json!(2)),
        ("self.spec.tags.indexOf('z')", json!(-1)),
        // Quantities.
        (
            "quantity(self.spec.memory).isGreaterThan(quantity('1Gi'))",
            json!(true),
        ),
        ("quantity('1Gi').isGreaterThan(quantity('1G'))", json!(true)),
        ("quantity('500m').compareTo(quantity('0.5'))", json!(0)),
        ("quantity('1k').isLessThan(quantity('1001'))", json!(true)),
        ("quantity('2k').asInteger()", json!(2000)),
        ("quantity('1.5').isInteger()", json!(false)),
        ("quantity('1e3').asInteger()", json!(1000)),
        ("quantity('1m') == quantity('0.001')", json!(true)),
        (
            "quantity('1Ki').add(quantity('24')).asInteger()",
            json!(1048),
        ),
        ("quantity('1').sub(2).sign()", json!(-1)),
        ("quantity('250m').asApproximateFloat()", json!(0.25)),
        ("isQuantity('1.5Gi')", json!(true)),
        ("isQuantity('1.5 Gi')", json!(false)),
        // Versions.
        ("semver('1.2.3').isLessThan(semver('1.10.0'))", json!(true)),
        (
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
            json!(true),
        ),
        (
            "semver('1.0.0-alpha.2').isGreaterThan(semver('1.0.0-alpha.10'))",
            json!(false),
        ),
        ("semver('2.0.0').compareTo(semver('2.0.0+build'))", json!(0)),
        (
            "semver('3.4.5').major() + semver('3.4.5').minor() + semver('3.4.5').patch()",
            json!(12),
        ),
        ("semver('v1.2', true).minor()", json!(2)),
        ("isSemver('1.2.3')", json!(true)),
        ("isSemver('v1.2')", json!(false)),
        ("isSemver('v1.2', true)", json!(true)),
        ("isSemver('01.2.3')", json!(false)),
    ];
    let mut failures = Vec::new();
    for (source, expected) in cases {
        match eval(source) {
            Ok(value) if value == *expected => {}
            other => failures.push(format!("{source}: want {expected}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn runtime_errors_are_worded_for_the_user() {
    let cases = [
        ("self.spec.nope == 1", "no such key: nope"),
        (
            "quantity('12 apples').isInteger()",
            "quantities must match the regular expression",
        ),
        (
            "semver('1.2').major()",
            "No Major.Minor.Patch elements found",
        ),
        (
            "quantity('1.5').asInteger()",
            "cannot convert value to integer",
        ),
        ("self.empty.min()", "min called on empty list"),
        ("[1, 'a'].isSorted()", "can not be compared"),
    ];
    for (source, wanted) in cases {
        let err = eval(source).expect_err(source);
        assert!(err.contains(wanted), "{source}: {err:?} lacks {wanted:?}");
    }
}

#[test]
fn compile_errors_name_what_is_wrong() {
    let cases = [
        ("self.spec ==", "Syntax error"),
        ("frobnicate(self)", "undeclared reference to 'frobnicate'"),
        (
            "self.spec.tags.frobnicate()",
            "undeclared reference to 'frobnicate'",
        ),
        ("other.spec", "undeclared reference to 'other'"),
        (
            "self.spec.tags.all(t, u == t)",
            "undeclared reference to 'u'",
        ),
    ];
    for (source, wanted) in cases {
        let err = Program::compile(source, &["self"])
            .expect_err(source)
            .to_string();
        assert!(err.contains(wanted), "{source}: {err:?} lacks {wanted:?}");
    }
}

#[test]
fn references_tell_transition_rules_apart() {
    let transition =
        Program::compile("self.a == oldSelf.a", &["self", "oldSelf"]).expect("compiles");
    assert!(transition.references("oldSelf"));
    let plain = Program::compile("self.all(x, x.oldSelf)", &["self", "oldSelf"]).expect("compiles");
    assert!(!plain.references("oldSelf"));
}

fn big_list(n: usize) -> Activation {
    let mut activation = Activation::new();
    activation.bind_json("self", &json!({"l": (0..n).collect::<Vec<_>>()}));
    activation
}

#[test]
fn hostile_rules_hit_the_per_call_limit() {
    let hostile = [
        "self.l.all(x, self.l.all(y, x != y || x == y))",
        "self.l.map(x, self.l.map(y, y)).size() > 0",
        "self.l.filter(x, self.l.exists(y, y < 0)).size() == 0",
        "self.l.exists_one(x, self.l.all(y, true) && x < 0)",
    ];
    for source in hostile {
        let program = Program::compile(source, &["self"]).expect(source);
        let started = std::time::Instant::now();
        let err = program
            .evaluate(&big_list(3_000), &mut Budget::default())
            .expect_err(source);
        assert!(err.is_cost_limit(), "{source}: {err:?}");
        assert_eq!(
            err.to_string(),
            "operation cancelled: actual cost limit exceeded"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{source} ran long"
        );
        // The same rule over a small list is cheap.
        assert!(
            program
                .evaluate(&big_list(20), &mut Budget::default())
                .is_ok(),
            "{source}"
        );
    }
}

#[test]
fn the_request_budget_is_shared_by_its_evaluations() {
    let program = Program::compile("self.l.all(x, x >= 0)", &["self"]).expect("compiles");
    let activation = big_list(1_000);
    let mut budget = Budget::with_limits(25_000, PER_CALL_LIMIT);
    let mut passed = 0;
    let err = loop {
        match program.evaluate(&activation, &mut budget) {
            Ok(_) => passed += 1,
            Err(err) => break err,
        }
        assert!(passed < 100, "the budget never ran out");
    };
    assert!(passed >= 1, "one evaluation fits in the budget");
    assert!(err.is_budget_exhausted(), "{err:?}");
    assert!(err.to_string().contains("running out of cost budget"));
}

fn gpu() -> k8s_openapi::api::resource::v1::Device {
    serde_json::from_value(json!({
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "gpu.example.com/memoryGB": {"int": 40},
            "driverVersion": {"version": "1.2.3"},
            "vendor.example.org/mig": {"bool": true},
        },
        "capacity": {"memory": {"value": "40Gi"}},
    }))
    .expect("a device")
}

#[test]
fn device_selectors_read_attributes_and_capacity_as_kubernetes_does() {
    use crate::device::DeviceSelector;
    let cases = [
        ("device.driver == 'gpu.example.com'", Ok(true)),
        (
            "device.attributes['gpu.example.com'].model == 'a100'",
            Ok(true),
        ),
        (
            "device.attributes['gpu.example.com'].memoryGB >= 40",
            Ok(true),
        ),
        ("device.attributes['vendor.example.org'].mig", Ok(true)),
        (
            "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.2.0'))",
            Ok(true),
        ),
        (
            "device.attributes['gpu.example.com'].driverVersion == semver('1.2.3')",
            Ok(true),
        ),
        (
            "device.capacity['gpu.example.com'].memory.compareTo(quantity('32Gi')) > 0",
            Ok(true),
        ),
        (
            "has(device.attributes['other.example.com'].model)",
            Ok(false),
        ),
        ("has(device.attributes['gpu.example.com'].model)", Ok(true)),
        (
            "device.attributes['gpu.example.com'].model",
            Err("expected a bool, got string"),
        ),
        (
            "device.attributes['gpu.example.com'].nope == 1",
            Err("no such key: nope"),
        ),
    ];
    for (expression, wanted) in cases {
        let selector = DeviceSelector::compile(expression).expect(expression);
        let got = selector
            .matches("gpu.example.com", &gpu())
            .map_err(|e| e.to_string());
        match (&got, wanted) {
            (Ok(got), Ok(want)) => assert_eq!(*got, want, "{expression}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{expression}: {got}"),
            _ => panic!("{expression}: got {got:?}, want {wanted:?}"),
        }
    }
    let err = DeviceSelector::compile("device.frobnicate()").expect_err("an unknown function");
    assert!(
        err.to_string()
            .contains("undeclared reference to 'frobnicate'"),
        "{err}"
    );
    let err = DeviceSelector::compile("self.driver == 'x'").expect_err("an unknown variable");
    assert!(
        err.to_string().contains("undeclared reference to 'self'"),
        "{err}"
    );
}
