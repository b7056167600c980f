//! What an image runs when a container does not say: the ENTRYPOINT and CMD of its image config, as a scenario
//! declares them or as the well-known images ship them, and how Kubernetes combines them with a container's
//! `command` and `args`.

use kmm_api::image_ref::ImageRef;

/// The part of an image's config the kubelet's runtime uses to start a container: ENTRYPOINT and CMD. Empty when
/// nothing is known about the image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageConfig {
    /// The image's ENTRYPOINT.
    pub entrypoint: Vec<String>,
    /// The image's CMD: the entrypoint's arguments, or the program itself when there is no entrypoint.
    pub cmd: Vec<String>,
}

/// CMD of Docker Hub's official images that kmm-tui's scenarios and the Kubernetes documentation use, by
/// repository (every tag alike).
const OFFICIAL_CMDS: &[(&str, &[&str])] = &[
    ("docker.io/library/busybox", &["sh"]),
    ("docker.io/library/alpine", &["sh"]),
    ("docker.io/library/nginx", &["nginx", "-g", "daemon off;"]),
    ("docker.io/library/redis", &["redis-server"]),
    ("docker.io/library/python", &["python3"]),
    ("docker.io/library/perl", &["perl"]),
    ("docker.io/library/postgres", &["postgres"]),
];

/// The last path component of the pause image, whichever registry serves it.
const PAUSE: &str = "pause";

/// The config a well-known image ships with: the official images of [`OFFICIAL_CMDS`], and the pause image of
/// any registry (entrypoint `/pause`). Empty for any other image, and for a reference that does not parse.
pub(super) fn built_in(image: &str) -> ImageConfig {
    let Ok(reference) = ImageRef::parse(image) else {
        return ImageConfig::default();
    };
    if reference.path().rsplit('/').next() == Some(PAUSE) {
        return ImageConfig {
            entrypoint: vec!["/pause".to_owned()],
            cmd: Vec::new(),
        };
    }
    let repository = reference.repository();
    let cmd = OFFICIAL_CMDS
        .iter()
        .find(|(known, _)| *known == repository)
        .map(|(_, cmd)| cmd.iter().map(|word| (*word).to_owned()).collect())
        .unwrap_or_default();
    ImageConfig {
        entrypoint: Vec::new(),
        cmd,
    }
}

/// The argv a container runs, by Kubernetes' rule: a `command` replaces the image's ENTRYPOINT and drops its CMD
/// (the container's `args`, even none, are the arguments); `args` alone replace the CMD after the image's
/// ENTRYPOINT; neither runs the image's ENTRYPOINT with its CMD.
pub(crate) fn container_argv(
    command: &[String],
    args: &[String],
    config: &ImageConfig,
) -> Vec<String> {
    let (program, arguments) = match (command.is_empty(), args.is_empty()) {
        (false, _) => (command, args),
        (true, false) => (config.entrypoint.as_slice(), args),
        (true, true) => (config.entrypoint.as_slice(), config.cmd.as_slice()),
    };
    program.iter().chain(arguments).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn command_and_args_combine_with_the_image_config_as_kubernetes_says() {
        let config = ImageConfig {
            entrypoint: words("/entry --flag"),
            cmd: words("default arg"),
        };
        let cases = [
            ("", "", "/entry --flag default arg"),
            ("", "given", "/entry --flag given"),
            ("run", "", "run"),
            ("run", "given", "run given"),
            ("run x", "a b", "run x a b"),
        ];
        for (command, args, argv) in cases {
            assert_eq!(
                container_argv(&words(command), &words(args), &config),
                words(argv),
                "command {command:?} args {args:?}"
            );
        }
        let cmd_only = ImageConfig {
            entrypoint: Vec::new(),
            cmd: words("sh"),
        };
        assert_eq!(container_argv(&[], &[], &cmd_only), words("sh"));
        assert_eq!(
            container_argv(&[], &words("-c true"), &cmd_only),
            words("-c true")
        );
        assert_eq!(
            container_argv(&[], &[], &ImageConfig::default()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn well_known_images_have_their_defaults_under_any_name_and_tag() {
        assert_eq!(built_in("busybox").cmd, words("sh"));
        assert_eq!(built_in("docker.io/library/busybox:1.36").cmd, words("sh"));
        assert_eq!(built_in("alpine:3.20").cmd, words("sh"));
        assert_eq!(built_in("nginx:1.27").cmd, ["nginx", "-g", "daemon off;"]);
        assert_eq!(built_in("redis").cmd, words("redis-server"));
        assert_eq!(built_in("python:3.12").cmd, words("python3"));
        assert_eq!(built_in("perl:5.34.0").cmd, words("perl"));
        assert_eq!(built_in("postgres").cmd, words("postgres"));
        for pause in ["registry.k8s.io/pause:3.10", "k8s.gcr.io/pause:2.0"] {
            assert_eq!(built_in(pause).entrypoint, words("/pause"), "{pause}");
        }
        assert_eq!(built_in("quay.io/acme/busybox:1"), ImageConfig::default());
        assert_eq!(built_in("not an image!!"), ImageConfig::default());
    }
}
