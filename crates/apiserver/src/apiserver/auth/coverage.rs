//! Whether the rules a user holds cover the rules it asks to grant, decided without breaking either down into
//! single permissions.
//!
//! A requested rule asks for every verb on every resource of every group (for each of its names): broken down,
//! a 3 KB rule is a million permissions. Instead, each list of the requested rule (verbs, groups, resources,
//! names, paths) is split into classes of values that the same held rules match. A combination of one class from
//! each list is covered when some held rule matches all of them, so it is decided once for all its values, and
//! there are no more classes in a list than distinct values the held rules name there, whatever the request's
//! size. What is not covered is counted by multiplying class sizes, and only the first few permissions are
//! spelled out.
//!
//! Coverage is kube-apiserver's: a wildcard is covered only by a wildcard, `*/<subresource>` covers that
//! subresource of every resource, a rule without names covers every name and only it covers a rule without names,
//! and a path ending in `*` covers every path it prefixes.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::rules::{Rule, has, resource_covers, url_covers};

/// How many permissions not held a refusal spells out; the rest are counted.
const SHOWN: usize = 8;

/// How many characters of one name, resource, group, verb or path a refusal shows.
const SHOWN_CHARS: usize = 64;

/// The permissions of the requested rules that the held rules do not grant.
#[derive(Debug, Default)]
pub struct Uncovered {
    /// The first few, each as kube-apiserver describes a permission.
    shown: Vec<String>,
    /// How many in all: one verb on one resource of one group (and one name, for named rules), or one verb on one
    /// path.
    total: u64,
}

impl Uncovered {
    /// Whether everything asked for is held.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The permissions as a refusal lists them: one a line, then how many more there are.
    pub fn describe(&self) -> String {
        let mut lines = self.shown.join("\n");
        let more = self.total.saturating_sub(self.shown.len() as u64);
        if more > 0 {
            lines.push_str(&format!("\nand {more} more"));
        }
        lines
    }

    fn resources(&mut self, verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) {
        self.total = self.total.saturating_add(
            [
                verbs.len(),
                groups.len(),
                resources.len(),
                names.len().max(1),
            ]
            .iter()
            .fold(1u64, |n, len| n.saturating_mul(*len as u64)),
        );
        let named: &[&str] = if names.is_empty() { &[""] } else { names };
        let room = SHOWN.saturating_sub(self.shown.len());
        let lines = verbs
            .iter()
            .flat_map(|verb| {
                groups.iter().flat_map(move |group| {
                    resources.iter().flat_map(move |resource| {
                        named.iter().map(move |name| {
                            let names = if names.is_empty() {
                                String::new()
                            } else {
                                format!(", ResourceNames:[{:?}]", short(name))
                            };
                            format!(
                                "{{APIGroups:[{:?}], Resources:[{:?}]{names}, Verbs:[{:?}]}}",
                                short(group),
                                short(resource),
                                short(verb)
                            )
                        })
                    })
                })
            })
            .take(room);
        self.shown.extend(lines);
    }

    fn paths(&mut self, verbs: &[&str], urls: &[&str]) {
        self.total = self
            .total
            .saturating_add((verbs.len() as u64).saturating_mul(urls.len() as u64));
        let room = SHOWN.saturating_sub(self.shown.len());
        let lines = verbs
            .iter()
            .flat_map(|verb| {
                urls.iter().map(move |url| {
                    format!(
                        "{{NonResourceURLs:[{:?}], Verbs:[{:?}]}}",
                        short(url),
                        short(verb)
                    )
                })
            })
            .take(room);
        self.shown.extend(lines);
    }
}

/// What of `requested` no rule of `held` grants.
pub fn uncovered(held: &[Rule], requested: &[PolicyRule]) -> Uncovered {
    let unnamed = Holders::of(held, |h| h.resource_names.is_empty());
    let mut out = Uncovered::default();
    for rule in requested {
        let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
        let (groups, resources, names, urls) = (
            list(&rule.api_groups),
            list(&rule.resources),
            list(&rule.resource_names),
            list(&rule.non_resource_urls),
        );
        let verbs = classes(held, &rule.verbs, |h, verb| has(&h.verbs, verb));
        let groups = classes(held, &groups, |h, group| has(&h.api_groups, group));
        let resources = classes(held, &resources, |h, resource| {
            resource_covers(&h.resources, resource)
        });
        // A rule without names asks for every name, which only a rule without names grants.
        let names = if names.is_empty() {
            vec![(unnamed.clone(), Vec::new())]
        } else {
            classes(held, &names, |h, name| {
                h.resource_names.is_empty() || h.resource_names.iter().any(|n| n == name)
            })
        };
        let urls = classes(held, &urls, |h, url| {
            h.non_resource_urls.iter().any(|p| url_covers(p, url))
        });
        for (verb_holders, verbs) in &verbs {
            for (group_holders, groups) in &groups {
                let both = verb_holders.and(group_holders);
                for (resource_holders, resources) in &resources {
                    let all_three = both.and(resource_holders);
                    for (name_holders, names) in &names {
                        if all_three.and(name_holders).is_empty() {
                            out.resources(verbs, groups, resources, names);
                        }
                    }
                }
            }
            for (url_holders, urls) in &urls {
                if verb_holders.and(url_holders).is_empty() {
                    out.paths(verbs, urls);
                }
            }
        }
    }
    out
}

/// A set of held rules, by their index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Holders(Vec<u64>);

impl Holders {
    fn of(held: &[Rule], matches: impl Fn(&Rule) -> bool) -> Self {
        let mut words = vec![0u64; held.len().div_ceil(64)];
        for (i, rule) in held.iter().enumerate() {
            if matches(rule) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Self(words)
    }

    fn and(&self, other: &Self) -> Self {
        Self(self.0.iter().zip(&other.0).map(|(a, b)| a & b).collect())
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|word| *word == 0)
    }
}

/// The distinct `values`, grouped by the held rules that match each, in the order they first appear.
fn classes<'a>(
    held: &[Rule],
    values: &'a [String],
    matches: impl Fn(&Rule, &str) -> bool,
) -> Vec<(Holders, Vec<&'a str>)> {
    let mut out: Vec<(Holders, Vec<&'a str>)> = Vec::new();
    let mut index: HashMap<Holders, usize> = HashMap::new();
    for value in distinct(values) {
        let holders = Holders::of(held, |rule| matches(rule, value));
        match index.get(&holders) {
            Some(&i) => out[i].1.push(value),
            None => {
                index.insert(holders.clone(), out.len());
                out.push((holders, vec![value]));
            }
        }
    }
    out
}

fn distinct(values: &[String]) -> Vec<&str> {
    let mut seen = HashSet::new();
    values
        .iter()
        .map(String::as_str)
        .filter(|v| seen.insert(*v))
        .collect()
}

/// A value cut to what a refusal shows of it.
fn short(value: &str) -> String {
    match value.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(value: serde_json::Value) -> PolicyRule {
        serde_json::from_value(value).unwrap()
    }

    fn held(values: &[serde_json::Value]) -> Vec<Rule> {
        values
            .iter()
            .map(|v| Rule::from(&rule(v.clone())))
            .collect()
    }

    fn missing(held: &[Rule], requested: serde_json::Value) -> Uncovered {
        uncovered(held, &[rule(requested)])
    }

    #[test]
    fn a_wildcard_is_held_only_by_a_wildcard() {
        let star = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        let pods = held(&[json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]})]);
        let gaps = missing(&pods, star.clone());
        assert_eq!(gaps.total, 1);
        assert_eq!(
            gaps.describe(),
            "{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"
        );
        assert!(missing(&held(std::slice::from_ref(&star)), star).is_empty());
    }

    #[test]
    fn a_named_permission_is_held_by_a_rule_for_that_name_or_any() {
        let named = json!({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"], "resourceNames": ["a"]});
        let unnamed = json!({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]});
        let for_a = held(std::slice::from_ref(&named));
        assert!(missing(&for_a, named.clone()).is_empty());
        let any = held(&[json!({"apiGroups": [""], "resources": ["*/log"], "verbs": ["get"]})]);
        assert!(missing(&any, named).is_empty());
        let gaps = missing(&for_a, unnamed);
        assert_eq!(
            gaps.describe(),
            "{APIGroups:[\"\"], Resources:[\"pods/log\"], Verbs:[\"get\"]}",
            "a name-limited rule does not hold every name"
        );
    }

    #[test]
    fn held_rules_cover_together_what_none_covers_alone() {
        let held = held(&[
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}),
            json!({"apiGroups": ["", "apps"], "resources": ["configmaps", "deployments"], "verbs": ["list"]}),
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"], "resourceNames": ["a", "b"]}),
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update"], "resourceNames": ["b"]}),
        ]);
        assert!(
            missing(
                &held,
                json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete"],
                    "resourceNames": ["a", "b"]})
            )
            .is_empty()
        );
        let gaps = missing(
            &held,
            json!({"apiGroups": ["", "apps"], "resources": ["configmaps", "deployments"],
                "verbs": ["list", "update"], "resourceNames": ["a", "b"]}),
        );
        assert_eq!(gaps.total, 7, "update on all but configmaps b: {gaps:?}");
        let held_one = "{APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"b\"], Verbs:[\"update\"]}";
        assert!(!gaps.shown.iter().any(|s| s == held_one), "{gaps:?}");
        assert_eq!(gaps.shown.len(), 7, "{gaps:?}");
    }

    #[test]
    fn subresources_and_paths_are_covered_as_requests_are_allowed() {
        let held = held(&[
            json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}),
            json!({"nonResourceURLs": ["/apis/*", "/healthz"], "verbs": ["get"]}),
        ]);
        assert!(
            missing(
                &held,
                json!({"apiGroups": ["apps"], "resources": ["deployments/status", "*/status"], "verbs": ["get"]})
            )
            .is_empty()
        );
        assert_eq!(
            missing(
                &held,
                json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]})
            )
            .total,
            1
        );
        assert!(
            missing(
                &held,
                json!({"nonResourceURLs": ["/apis/apps", "/apis/*", "/healthz"], "verbs": ["get"]})
            )
            .is_empty()
        );
        assert_eq!(
            missing(
                &held,
                json!({"nonResourceURLs": ["/healthz", "/metrics", "*"], "verbs": ["get", "post"]})
            )
            .total,
            5
        );
    }

    #[test]
    fn more_held_rules_than_a_word_holds_are_all_counted() {
        let held: Vec<Rule> = (0..100)
            .map(|i| {
                Rule::from(&rule(
                    json!({"apiGroups": [""], "resources": [format!("r{i}")], "verbs": ["get"]}),
                ))
            })
            .collect();
        let resources: Vec<String> = (0..=100).map(|i| format!("r{i}")).collect();
        let gaps = missing(
            &held,
            json!({"apiGroups": [""], "resources": resources, "verbs": ["get"]}),
        );
        assert_eq!(
            gaps.describe(),
            "{APIGroups:[\"\"], Resources:[\"r100\"], Verbs:[\"get\"]}"
        );
    }

    #[test]
    fn a_refusal_spells_out_a_few_and_counts_the_rest() {
        let list = |prefix: &str| {
            (0..1000)
                .map(|i| format!("{prefix}{i}"))
                .collect::<Vec<_>>()
        };
        let long = "x".repeat(10_000);
        let gaps = missing(
            &[],
            json!({"apiGroups": [long], "resources": list("r"), "verbs": list("v"), "resourceNames": list("n")}),
        );
        assert_eq!(gaps.total, 1_000_000_000);
        assert_eq!(gaps.shown.len(), SHOWN);
        let described = gaps.describe();
        assert!(described.ends_with("\nand 999999992 more"), "{described}");
        assert!(described.len() < 2048, "{described}");
    }
}
