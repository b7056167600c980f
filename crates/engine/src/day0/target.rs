//! What a pool must run: the image `osMapping` names and the OS it carries, or, when the cluster moved to another
//! y-stream and the ModuleDay0 opted in with `clusterUpgradeTriggerNodeUpgrade`, the same modules rebuilt on the
//! new release's OS.

use k8s_openapi::api::core::v1::Node;

use super::pools::os_image;
use super::release::{self, DTK_AUTO, OS_AUTO, Release, YStream};
use kmm_api::day0::OsMapping;
use kmm_api::kmm::{Build, BuildArg, Sign};

/// Which OS the nodes must end up on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Exactly `osMapping.literal`.
    Mapping(String),
    /// Any OS of the release's y-stream: the OS of the rebuilt image is the release's, which only the payload knows.
    Upgrade {
        /// The release version.
        release: String,
        /// Its y-stream.
        stream: YStream,
    },
}

/// The image the pool must run and how to produce it.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The image the MachineConfig must name.
    pub image: String,
    /// The OS the nodes report once they run it.
    pub goal: Goal,
    /// How to build it when it is missing, with `OS_AUTO` and `DTK_AUTO` resolved.
    pub build: Option<Build>,
    /// How to sign it.
    pub sign: Option<Sign>,
    /// Why the cluster's upgrade does not move the pool, when it does not.
    pub upgrade_not_followed: Option<String>,
}

impl Target {
    /// Whether `node` runs the OS of this target.
    pub fn reached_by(&self, node: &Node) -> bool {
        let os = os_image(node);
        match &self.goal {
            Goal::Mapping(literal) => os == Some(literal.as_str()),
            Goal::Upgrade { stream, .. } => os.and_then(YStream::of_os_image) == Some(*stream),
        }
    }

    /// The OS the nodes must run, for messages.
    pub fn describe_goal(&self) -> String {
        match &self.goal {
            Goal::Mapping(literal) => literal.clone(),
            Goal::Upgrade { release, .. } => format!("the OS of release {release}"),
        }
    }
}

/// Why no target can be decided yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Undecided {
    /// Condition reason.
    pub reason: &'static str,
    /// What is missing.
    pub message: String,
}

/// Reason: the cluster moves to a release whose OS image is not published yet.
pub(super) const WAITING_FOR_RELEASE: &str = "WaitingForRelease";

/// The target of `mapping` for a pool whose nodes run `nodes_os` while the cluster moves to `release`.
pub(super) fn decide(
    mapping: &OsMapping,
    release: &Release,
    nodes_os: Option<&str>,
) -> Result<Target, Undecided> {
    let release_stream = release.y_stream();
    let mapped_stream =
        YStream::of_os_image(&mapping.literal).or(nodes_os.and_then(YStream::of_os_image));
    let nodes_stream = nodes_os.and_then(YStream::of_os_image);
    let upgraded =
        release_stream.is_some() && mapped_stream.is_some() && release_stream != mapped_stream;
    let (Some(version), Some(stream)) = (release.version.clone(), release_stream) else {
        return Ok(mapped(mapping, release, None));
    };
    if !upgraded {
        return Ok(mapped(mapping, release, None));
    }
    if !mapping.cluster_upgrade_trigger_node_upgrade {
        let note = (nodes_stream != Some(stream)).then(|| {
            format!(
                "the cluster is at release {version} ({stream}) but the pool stays on the layered image {} \
                 ({}); set osMapping.clusterUpgradeTriggerNodeUpgrade to rebuild it on the release's OS",
                mapping.container_image, mapping.literal
            )
        });
        return Ok(mapped(mapping, release, note));
    }
    if release.os_auto().is_none() {
        return Err(Undecided {
            reason: WAITING_FOR_RELEASE,
            message: format!(
                "the cluster moves to {version}, whose OS image is not published yet (ConfigMap {}/{})",
                release::OS_IMAGE_CONFIG_MAP_NAMESPACE,
                release::OS_IMAGE_CONFIG_MAP
            ),
        });
    }
    let image = release::image_for_release(&mapping.container_image, &version);
    let sign = mapping.sign.clone().map(|mut sign| {
        if sign.unsigned_image.is_some() {
            sign.unsigned_image = Some(format!("{image}-unsigned"));
        }
        sign
    });
    Ok(Target {
        build: with_release_args(mapping.build.as_ref(), release),
        sign,
        image,
        goal: Goal::Upgrade {
            release: version,
            stream,
        },
        upgrade_not_followed: None,
    })
}

fn mapped(mapping: &OsMapping, release: &Release, upgrade_not_followed: Option<String>) -> Target {
    Target {
        image: mapping.container_image.clone(),
        goal: Goal::Mapping(mapping.literal.clone()),
        build: with_release_args(mapping.build.as_ref(), release),
        sign: mapping.sign.clone(),
        upgrade_not_followed,
    }
}

/// The build with `OS_AUTO` and `DTK_AUTO` added from the release, unless the user set them.
fn with_release_args(build: Option<&Build>, release: &Release) -> Option<Build> {
    let mut build = build?.clone();
    let resolved = [
        (OS_AUTO, release.os_auto().map(str::to_owned)),
        (DTK_AUTO, release.dtk_auto()),
    ];
    for (name, value) in resolved {
        if let Some(value) = value
            && !build.build_args.iter().any(|a| a.name == name)
        {
            build.build_args.push(BuildArg {
                name: name.to_owned(),
                value,
            });
        }
    }
    Some(build)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OS_414: &str = "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)";

    fn mapping(trigger: bool) -> OsMapping {
        serde_json::from_value(json!({
            "literal": OS_414,
            "containerImage": "registry.local/acme/rhcos-kmod:414.92",
            "build": {"dockerfileConfigMap": {"name": "d"}, "buildArgs": [{"name": "DTK_AUTO", "value": "mine"}]},
            "clusterUpgradeTriggerNodeUpgrade": trigger,
        }))
        .expect("mapping")
    }

    fn release(version: &str, os: Option<&str>) -> Release {
        Release {
            version: Some(version.to_owned()),
            os_image: os.map(str::to_owned),
        }
    }

    #[test]
    fn the_mapping_is_the_target_on_its_own_y_stream_with_release_args() {
        let target = decide(
            &mapping(true),
            &release("4.14.12", Some("quay.io/ocp/os@sha256:414")),
            Some(OS_414),
        )
        .expect("target");
        assert_eq!(target.image, "registry.local/acme/rhcos-kmod:414.92");
        assert_eq!(target.goal, Goal::Mapping(OS_414.to_owned()));
        let args: Vec<(&str, &str)> = target
            .build
            .as_ref()
            .expect("build")
            .build_args
            .iter()
            .map(|a| (a.name.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(
            args,
            [
                ("DTK_AUTO", "mine"),
                ("OS_AUTO", "quay.io/ocp/os@sha256:414")
            ]
        );
    }

    #[test]
    fn a_new_y_stream_rebuilds_only_when_opted_in() {
        let upgrade = release("4.15.3", Some("quay.io/ocp/os@sha256:415"));
        let followed = decide(&mapping(true), &upgrade, Some(OS_414)).expect("target");
        assert_eq!(followed.image, "registry.local/acme/rhcos-kmod:4.15.3");
        assert!(matches!(
            followed.goal,
            Goal::Upgrade {
                stream: YStream {
                    major: 4,
                    minor: 15
                },
                ..
            }
        ));
        assert!(followed.upgrade_not_followed.is_none());
        let kept = decide(&mapping(false), &upgrade, Some(OS_414)).expect("target");
        assert_eq!(kept.image, "registry.local/acme/rhcos-kmod:414.92");
        assert!(
            kept.upgrade_not_followed
                .expect("note")
                .contains("stays on the layered image")
        );
        let unpublished = decide(&mapping(true), &release("4.15.3", None), Some(OS_414));
        assert_eq!(
            unpublished.expect_err("undecided").reason,
            WAITING_FOR_RELEASE
        );
    }
}
