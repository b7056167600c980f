use super::field::escape_field_value;
use super::*;
use proptest::prelude::*;
use serde_json::json;

fn labels(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn error_of(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(selector) => panic!("{s:?} parsed as {selector}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn parses_and_prints_canonically() {
    let cases = [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a==b"),
        (" a != b ", "a!=b"),
        (
            "x in (foo,,baz),y,z notin ()",
            "x in (,baz,foo),y,z notin ()",
        ),
        ("b=1,a=2", "a=2,b=1"),
        ("!a,b", "!a,b"),
        ("a>3,b<4", "a>3,b<4"),
        ("a=", "a="),
        ("in in (in,notin)", "in in (in,notin)"),
        ("example.com/app.kind in (x)", "example.com/app.kind in (x)"),
        ("a in (b,b)", "a in (b)"),
        ("a in (,)", "a in ()"),
        ("a=b\0garbage", "a=b"),
    ];
    for (input, expected) in cases {
        let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(selector.to_string(), expected, "{input:?}");
    }
}

#[test]
fn rejects_like_the_server() {
    let cases = [
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        (
            ",a",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'",
        ),
        (
            "a in b",
            "unable to parse requirement: found 'b' expected: '('",
        ),
        (
            "a in (b c)",
            "unable to parse requirement: found 'c', expected: ',' or ')'",
        ),
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a in (=",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a in (b,,)",
            "unable to parse requirement: found ')', expected: ',', or identifier",
        ),
        (
            "a=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "!=a",
            "found '!=', expected: !, identifier, or 'end of string'",
        ),
        (
            "!(a)",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (
            "a>b",
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(error_of(input), expected, "{input:?}");
    }
}

#[test]
fn validates_keys_and_values() {
    assert_eq!(
        error_of("a=-b"),
        "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty \
         string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
         alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
         '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
    let name_rule = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
         alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    assert_eq!(
        error_of("-a=b"),
        format!("unable to parse requirement: <nil>: Invalid value: \"-a\": name part {name_rule}")
    );
    assert_eq!(
        error_of("a/b/c"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {name_rule} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        )
    );
    let long = "x".repeat(64);
    assert_eq!(
        error_of(&long),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
        )
    );
    assert!(error_of("Example.com/a").contains("prefix part a lowercase RFC 1123 subdomain"));
    assert!(error_of("/a").contains("prefix part must be non-empty"));
    assert!(LabelSelector::parse(&format!("a={}", "v".repeat(63))).is_ok());
    assert_eq!(
        error_of(&format!("a={}", "v".repeat(64))),
        "unable to parse requirement: values[0][a]: Invalid value: \"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\": must be no more than 63 characters"
    );
    assert!(error_of("a=b_").starts_with(
        "unable to parse requirement: values[0][a]: Invalid value: \"b_\": a valid label must be an empty string"
    ));
    assert!(
        error_of("a>1_")
            .starts_with("unable to parse requirement: [values[0]: Invalid value: \"1_\"")
    );
    assert!(error_of("a..b/c=d").contains("prefix part a lowercase RFC 1123 subdomain"));
    assert!(
        error_of("b<-4")
            .starts_with("unable to parse requirement: values[0][b]: Invalid value: \"-4\"")
    );
    assert!(LabelSelector::parse("app.kubernetes.io/name=x_y.z-1").is_ok());
}

#[test]
fn matches_each_operator() {
    let l = labels(json!({"app": "web", "tier": "front", "n": "5", "junk": "x5"}));
    let cases = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("missing!=db", true),
        ("app in (db,web)", true),
        ("app notin (db,web)", false),
        ("missing notin (x)", true),
        ("missing in (x)", false),
        ("app", true),
        ("!app", false),
        ("!missing", true),
        ("n>4", true),
        ("n>5", false),
        ("n<6", true),
        ("junk>1", false),
        ("missing<9", false),
        ("app=web,tier=back", false),
        ("missing=", false),
    ];
    for (selector, expected) in cases {
        let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
        assert_eq!(parsed.matches(Some(&l)), expected, "{selector}");
    }
    assert!(LabelSelector::parse("!app").is_ok_and(|s| s.matches(None)));
    assert!(LabelSelector::parse("app").is_ok_and(|s| !s.matches(None)));
}

#[test]
fn converts_metav1_label_selectors() {
    let selector = LabelSelector::from_label_selector(&json!({
        "matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "legacy", "operator": "DoesNotExist"}
        ]
    }));
    let selector = selector.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.to_string(),
        "app=web,env in (dev,prod),!legacy,tier=front"
    );
    assert!(selector.matches(Some(&labels(
        json!({"app": "web", "tier": "front", "env": "dev"})
    ))));
    assert!(!selector.matches(Some(&labels(
        json!({"app": "web", "tier": "front", "env": "qa"})
    ))));

    let everything = LabelSelector::from_label_selector(&json!({}));
    assert!(
        everything
            .as_ref()
            .is_ok_and(|s| s.is_everything() && s.matches(None))
    );
    let nothing = LabelSelector::from_label_selector(&Value::Null);
    assert!(
        nothing
            .as_ref()
            .is_ok_and(|s| !s.is_everything() && !s.matches(None))
    );

    let errors = [
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "\"Gt\" is not a valid label selector operator",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist",
        ),
        (
            json!({"matchLabels": {"a": "b c"}}),
            "values[0][a]: Invalid value: \"b c\": a valid label must be an empty string",
        ),
        (
            json!({"matchLabels": {"-": "b"}}),
            "key: Invalid value: \"-\": name part",
        ),
    ];
    for (input, expected) in errors {
        match LabelSelector::from_label_selector(&input) {
            Ok(s) => panic!("{input} accepted as {s}"),
            Err(e) => assert!(e.to_string().starts_with(expected), "{input}: {e}"),
        }
    }
}

#[test]
fn field_selectors_parse_match_and_print() {
    let selector = FieldSelector::parse("status.phase!=Failed,metadata.name==a\\,b\\=c\\\\")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.fields().collect::<Vec<_>>(),
        ["metadata.name", "status.phase"]
    );
    assert_eq!(
        selector.to_string(),
        "metadata.name=a\\,b\\=c\\\\,status.phase!=Failed"
    );
    let object = |name: &'static str, phase: &'static str| {
        move |field: &str| match field {
            "metadata.name" => Some(name.to_owned()),
            "status.phase" => Some(phase.to_owned()),
            _ => None,
        }
    };
    assert!(selector.matches(object("a,b=c\\", "Running")));
    assert!(!selector.matches(object("a,b=c\\", "Failed")));
    assert!(!selector.matches(object("a", "Running")));

    let missing = FieldSelector::parse("spec.nodeName=").unwrap_or_else(|e| panic!("{e}"));
    assert!(missing.matches(|_| None));
    assert!(FieldSelector::parse("").is_ok_and(|s| s.is_everything()));
    assert!(FieldSelector::parse(",,").is_ok_and(|s| s.is_everything()));

    let errors = [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        (
            "a=b=c",
            "invalid field selector: unescaped character in value: =",
        ),
        (
            "a=b\\x",
            "invalid field selector: invalid escape sequence: \\x",
        ),
        (
            "a=b\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
    ];
    for (input, expected) in errors {
        match FieldSelector::parse(input) {
            Ok(s) => panic!("{input:?} accepted as {s}"),
            Err(e) => assert_eq!(e.to_string(), expected, "{input:?}"),
        }
    }
}

// ----- properties -----

fn key_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-e]".prop_map(String::from),
        "[a-z][a-z0-9._-]{0,5}[a-z0-9]",
        ("[a-z]{1,4}(\\.[a-z]{1,3})?", "[A-Za-z0-9]{1,4}").prop_map(|(p, n)| format!("{p}/{n}")),
        Just("in".to_owned()),
    ]
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-c]",
        "[A-Za-z0-9][A-Za-z0-9._-]{0,4}[A-Za-z0-9]",
        Just("notin".to_owned())
    ]
}

fn operator_strategy() -> impl Strategy<Value = Operator> {
    prop_oneof![
        Just(Operator::Equals),
        Just(Operator::DoubleEquals),
        Just(Operator::NotEquals),
        Just(Operator::In),
        Just(Operator::NotIn),
        Just(Operator::Exists),
        Just(Operator::DoesNotExist),
        Just(Operator::GreaterThan),
        Just(Operator::LessThan),
    ]
}

/// Random requirements together with the data needed to evaluate them directly.
fn requirement_strategy() -> impl Strategy<Value = (String, Operator, Vec<String>)> {
    (
        key_strategy(),
        operator_strategy(),
        prop::collection::vec(value_strategy(), 1..4),
        0i64..20,
    )
        .prop_map(|(key, operator, values, number)| {
            let values = match operator {
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::GreaterThan | Operator::LessThan => vec![number.to_string()],
                Operator::In | Operator::NotIn => values,
                _ => values.into_iter().take(1).collect(),
            };
            (key, operator, values)
        })
}

fn label_map_strategy() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        key_strategy(),
        prop_oneof![value_strategy(), (-25i64..25).prop_map(|n| n.to_string())],
        0..6,
    )
    .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

/// The meaning of one requirement, written independently of `Requirement::matches`.
fn holds(key: &str, operator: Operator, values: &[String], labels: &Map<String, Value>) -> bool {
    let actual = labels.get(key).and_then(Value::as_str);
    let listed = |a: &str| values.iter().any(|v| v == a);
    let number = |s: &str| s.parse::<i64>().ok();
    match operator {
        Operator::Equals | Operator::DoubleEquals | Operator::In => actual.is_some_and(listed),
        Operator::NotEquals | Operator::NotIn => actual.is_none_or(|a| !listed(a)),
        Operator::Exists => actual.is_some(),
        Operator::DoesNotExist => actual.is_none(),
        Operator::GreaterThan => {
            matches!((actual.and_then(number), number(&values[0])), (Some(a), Some(b)) if a > b)
        }
        Operator::LessThan => {
            matches!((actual.and_then(number), number(&values[0])), (Some(a), Some(b)) if a < b)
        }
    }
}

proptest! {
    #[test]
    fn label_parsing_never_panics(s in "\\PC{0,40}") {
        let _ = LabelSelector::parse(&s);
    }

    #[test]
    fn label_parsing_never_panics_on_selector_alphabet(s in "[a-c!=(), <>/.in\\-_0-9]{0,30}") {
        if let Ok(selector) = LabelSelector::parse(&s) {
            let reparsed = LabelSelector::parse(&selector.to_string());
            prop_assert_eq!(reparsed, Ok(selector));
        }
    }

    #[test]
    fn field_parsing_never_panics(s in "\\PC{0,40}") {
        if let Ok(selector) = FieldSelector::parse(&s) {
            let reparsed = FieldSelector::parse(&selector.to_string());
            prop_assert_eq!(reparsed, Ok(selector));
        }
    }

    #[test]
    fn display_round_trips_and_matching_agrees(
        specs in prop::collection::vec(requirement_strategy(), 0..5),
        maps in prop::collection::vec(label_map_strategy(), 1..6),
    ) {
        let mut requirements = Vec::new();
        for (key, operator, values) in &specs {
            let requirement = Requirement::new(key, *operator, values.clone());
            prop_assert!(requirement.is_ok(), "{:?}", requirement);
            requirements.extend(requirement);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        let selector = LabelSelector { requirements, selects_nothing: false };
        let printed = selector.to_string();
        prop_assert_eq!(LabelSelector::parse(&printed), Ok(selector.clone()), "{}", printed);
        for map in &maps {
            let expected = specs.iter().all(|(k, op, vs)| holds(k, *op, vs, map));
            prop_assert_eq!(selector.matches(Some(map)), expected, "{} on {:?}", printed, map);
        }
    }

    #[test]
    fn field_values_round_trip_through_escaping(value in "[a-z,=\\\\]{0,10}", field in "[a-z.]{1,8}") {
        let selector = FieldSelector::parse(&format!("{field}={}", escape_field_value(&value)));
        prop_assert!(selector.is_ok());
        let selector = selector.unwrap_or_default();
        prop_assert!(selector.matches(|f| (f == field).then(|| value.clone())));
    }
}
