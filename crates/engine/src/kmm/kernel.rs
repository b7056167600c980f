//! Which image a node's kernel gets: the kernel a node reports, the first kernel mapping that matches it, and the
//! template variables expanded in image names.

use k8s_openapi::api::core::v1::Node;

use kmm_api::kmm::{Build, KernelMapping, ModuleLoaderContainerSpec, Sign, TlsOptions};

mod merge;

/// The kernel a node runs, as KMM keys images by it (`status.nodeInfo.kernelVersion` without a trailing `+`).
pub fn node_kernel(node: &Node) -> Option<&str> {
    let kernel = node
        .status
        .as_ref()?
        .node_info
        .as_ref()?
        .kernel_version
        .as_str();
    let kernel = kernel.strip_suffix('+').unwrap_or(kernel);
    (!kernel.is_empty()).then_some(kernel)
}

/// The node's boot ID; a new one means the node rebooted and its loaded modules are gone.
pub fn node_boot_id(node: &Node) -> Option<&str> {
    let id = node.status.as_ref()?.node_info.as_ref()?.boot_id.as_str();
    (!id.is_empty()).then_some(id)
}

/// The kernel version with every character outside `[A-Za-z0-9._-]` replaced by `_`, as templates see it.
pub fn normalize(kernel: &str) -> String {
    kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The kernel version in a form valid in pod names and label values: normalized, lower case, `_` and `.` as `-`,
/// no leading or trailing `-`.
pub fn dns_safe(kernel: &str) -> String {
    let safe: String = normalize(kernel)
        .to_ascii_lowercase()
        .chars()
        .map(|c| if matches!(c, '_' | '.') { '-' } else { c })
        .collect();
    safe.trim_matches('-').to_owned()
}

/// Where a Module's kernel mappings live, for error messages that name the field to fix.
const CONTAINER_PATH: &str = "spec.moduleLoader.container";

/// Why a Module's mappings could not be applied to a kernel. Each error names the field to fix (its JSON path in
/// the Module) and the value found there, so a person can find the typo from the Module's condition alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// A mapping's regexp does not compile.
    #[error("{field} {pattern:?} is not a valid regular expression: {message}")]
    BadRegexp {
        /// JSON path of the regexp.
        field: String,
        /// The regexp as written.
        pattern: String,
        /// What the regexp engine said.
        message: String,
    },
    /// The matching mapping and the container both leave the image empty.
    #[error(
        "{field} is empty and so is {CONTAINER_PATH}.containerImage: kernel {kernel} gets no image"
    )]
    NoImage {
        /// JSON path of the matching mapping's image.
        field: String,
        /// The kernel.
        kernel: String,
    },
    /// A template opens `${` and never closes it: the mapping says something the engine cannot read, so it is
    /// not pulled as written.
    #[error("{field} {text:?} opens a template with `${{` and never closes it with `}}`")]
    UnterminatedTemplate {
        /// JSON path of the text holding it.
        field: String,
        /// The text as written.
        text: String,
    },
    /// The kernel has fewer than three version parts, so `${KERNEL_X}` and friends cannot be expanded.
    #[error("kernel {0} does not split into at least three parts on '.', ',' or '-'")]
    ShortKernel(String),
}

/// Everything the engine needs about one (Module, kernel) pair once the first matching mapping is chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMapping {
    /// The kernel, as the node reports it.
    pub kernel: String,
    /// Image with its templates expanded.
    pub image: String,
    /// Build recipe: the mapping's refining the container's (see [`merge`]).
    pub build: Option<Build>,
    /// Sign recipe, the mapping's refining the container's, with `unsignedImage` and `filesToSign` expanded.
    pub sign: Option<Sign>,
    /// Registry TLS options (the mapping's, else the container's).
    pub registry_tls: Option<TlsOptions>,
    /// In-tree modules to unload first: the mapping's, else the container's; the deprecated single
    /// `inTreeModuleToRemove` (the mapping's, else the container's) becomes a list of that one module, as
    /// upstream turns it into one.
    pub in_tree_modules_to_remove: Vec<String>,
}

/// The first mapping (in list order) that matches `kernel`: a literal by equality, a regexp by an unanchored search.
pub fn first_match<'m>(
    mappings: &'m [KernelMapping],
    kernel: &str,
) -> Result<Option<(usize, &'m KernelMapping)>, MappingError> {
    for (index, mapping) in mappings.iter().enumerate() {
        if let Some(literal) = &mapping.literal {
            if literal == kernel {
                return Ok(Some((index, mapping)));
            }
        } else if let Some(pattern) = &mapping.regexp {
            let regex = regex::Regex::new(pattern).map_err(|e| MappingError::BadRegexp {
                field: format!("{}.regexp", mapping_path(index)),
                pattern: pattern.clone(),
                message: e.to_string(),
            })?;
            if regex.is_match(kernel) {
                return Ok(Some((index, mapping)));
            }
        }
    }
    Ok(None)
}

/// The JSON path of the mapping at `index`.
fn mapping_path(index: usize) -> String {
    format!("{CONTAINER_PATH}.kernelMappings[{index}]")
}

/// Resolve the container's mappings for `kernel`, or `None` when no mapping matches.
pub fn resolve(
    container: &ModuleLoaderContainerSpec,
    kernel: &str,
    module_name: &str,
    module_namespace: &str,
) -> Result<Option<ResolvedMapping>, MappingError> {
    let Some((index, mapping)) = first_match(&container.kernel_mappings, kernel)? else {
        return Ok(None);
    };
    let at = mapping_path(index);
    let (template, template_field) = match (
        Some(mapping.container_image.as_str()).filter(|image| !image.is_empty()),
        container
            .container_image
            .as_deref()
            .filter(|i| !i.is_empty()),
    ) {
        (Some(image), _) => (image, format!("{at}.containerImage")),
        (None, Some(image)) => (image, format!("{CONTAINER_PATH}.containerImage")),
        (None, None) => {
            return Err(MappingError::NoImage {
                field: format!("{at}.containerImage"),
                kernel: kernel.to_owned(),
            });
        }
    };
    let vars = TemplateVars::new(kernel, module_name, module_namespace)?;
    // Each sign section is expanded before they merge, so an error names the section it is in.
    let module_sign =
        vars.expand_sign(container.sign.as_ref(), &format!("{CONTAINER_PATH}.sign"))?;
    let mapping_sign = vars.expand_sign(mapping.sign.as_ref(), &format!("{at}.sign"))?;
    let single = mapping
        .in_tree_module_to_remove
        .as_ref()
        .or(container.in_tree_module_to_remove.as_ref())
        .filter(|m| !m.is_empty());
    let in_tree_modules_to_remove = match single {
        Some(module) => vec![module.clone()],
        None if mapping.in_tree_modules_to_remove.is_empty() => {
            container.in_tree_modules_to_remove.clone()
        }
        None => mapping.in_tree_modules_to_remove.clone(),
    };
    Ok(Some(ResolvedMapping {
        kernel: kernel.to_owned(),
        image: vars.expand_field(template, &template_field)?,
        build: merge::build(container.build.as_ref(), mapping.build.as_ref()),
        sign: merge::sign(module_sign.as_ref(), mapping_sign.as_ref()),
        registry_tls: mapping
            .registry_tls
            .clone()
            .or_else(|| container.registry_tls.clone()),
        in_tree_modules_to_remove,
    }))
}

/// The template variables of one (kernel, Module) pair.
struct TemplateVars {
    pairs: [(&'static str, String); 8],
}

impl TemplateVars {
    fn new(kernel: &str, module_name: &str, module_namespace: &str) -> Result<Self, MappingError> {
        let normalized = normalize(kernel);
        let parts: Vec<&str> = normalized.split(['.', ',', '-']).collect();
        let [x, y, z, ..] = parts.as_slice() else {
            return Err(MappingError::ShortKernel(kernel.to_owned()));
        };
        Ok(Self {
            pairs: [
                ("KERNEL_FULL_VERSION", normalized.clone()),
                ("KERNEL_VERSION", normalized.clone()),
                ("KERNEL_XYZ", format!("{x}.{y}.{z}")),
                ("KERNEL_X", (*x).to_owned()),
                ("KERNEL_Y", (*y).to_owned()),
                ("KERNEL_Z", (*z).to_owned()),
                ("MOD_NAME", module_name.to_owned()),
                ("MOD_NAMESPACE", module_namespace.to_owned()),
            ],
        })
    }

    /// [`Self::expand`] of the text of `field`, an unterminated template an error naming the field.
    fn expand_field(&self, text: &str, field: &str) -> Result<String, MappingError> {
        self.expand(text)
            .ok_or_else(|| MappingError::UnterminatedTemplate {
                field: field.to_owned(),
                text: text.to_owned(),
            })
    }

    /// A sign section (at `path`) with its unsigned image and files to sign expanded.
    fn expand_sign(&self, sign: Option<&Sign>, path: &str) -> Result<Option<Sign>, MappingError> {
        let Some(sign) = sign else { return Ok(None) };
        let mut sign = sign.clone();
        sign.unsigned_image = sign
            .unsigned_image
            .as_deref()
            .map(|image| self.expand_field(image, &format!("{path}.unsignedImage")))
            .transpose()?;
        sign.files_to_sign = sign
            .files_to_sign
            .iter()
            .enumerate()
            .map(|(i, file)| self.expand_field(file, &format!("{path}.filesToSign[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Some(sign))
    }

    /// Expand `${VAR}` and `$VAR` for the known variables; anything else stays as written. `None` when a `${`
    /// is never closed.
    fn expand(&self, text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, consumed) = match after.strip_prefix('{') {
                Some(braced) => {
                    let end = braced.find('}')?;
                    (&braced[..end], end + 2)
                }
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            match self.pairs.iter().find(|(key, _)| *key == name) {
                Some((_, value)) if consumed > 0 => {
                    out.push_str(value);
                    rest = &after[consumed..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(mappings: Vec<KernelMapping>) -> ModuleLoaderContainerSpec {
        serde_json::from_value(serde_json::json!({
            "modprobe": {"moduleName": "m"},
            "kernelMappings": mappings,
        }))
        .expect("container spec")
    }

    fn literal(kernel: &str, image: &str) -> KernelMapping {
        KernelMapping {
            literal: Some(kernel.into()),
            container_image: image.into(),
            ..Default::default()
        }
    }

    fn regexp(pattern: &str, image: &str) -> KernelMapping {
        KernelMapping {
            regexp: Some(pattern.into()),
            container_image: image.into(),
            ..Default::default()
        }
    }

    #[test]
    fn first_matching_mapping_wins_in_list_order() {
        let c = container(vec![
            regexp("el9", "first:${KERNEL_X}"),
            literal("5.14.0-284.el9.x86_64", "second:1"),
        ]);
        let resolved = resolve(&c, "5.14.0-284.el9.x86_64", "m", "ns")
            .unwrap()
            .unwrap();
        assert_eq!(resolved.image, "first:5");
    }

    #[test]
    fn templates_expand_every_variable() {
        let c = container(vec![regexp(
            "^.+$",
            "r/${MOD_NAMESPACE}/${MOD_NAME}:${KERNEL_FULL_VERSION}-$KERNEL_XYZ-${KERNEL_Y}.${KERNEL_Z}-${UNKNOWN}",
        )]);
        let resolved = resolve(&c, "5.14.0-284.el9.x86_64+", "kmod", "acme")
            .unwrap()
            .unwrap();
        assert_eq!(
            resolved.image,
            "r/acme/kmod:5.14.0-284.el9.x86_64_-5.14.0-14.0-${UNKNOWN}"
        );
    }

    #[test]
    fn an_unterminated_template_makes_the_mapping_invalid() {
        let c = container(vec![regexp("^.+$", "r/kmod:${KERNEL_XYZ")]);
        assert_eq!(
            resolve(&c, "5.14.0-284.el9.x86_64", "kmod", "acme"),
            Err(MappingError::UnterminatedTemplate {
                field: "spec.moduleLoader.container.kernelMappings[0].containerImage".to_owned(),
                text: "r/kmod:${KERNEL_XYZ".to_owned()
            })
        );
    }

    #[test]
    fn every_mapping_error_names_its_field_and_value() {
        let c = container(vec![regexp("^.+$", "quay.io/t/first:${KERNEL_XYZ")]);
        let error = resolve(&c, "5.14.0-284.el9.x86_64", "m", "ns").expect_err("a typo");
        assert_eq!(
            error.to_string(),
            "spec.moduleLoader.container.kernelMappings[0].containerImage \"quay.io/t/first:${KERNEL_XYZ\" \
             opens a template with `${` and never closes it with `}`"
        );
        let mut signed = container(vec![regexp("^.+$", "r/kmod:1")]);
        signed.kernel_mappings[0].sign = Some(
            serde_json::from_value(serde_json::json!({
                "keySecret": {"name": "key"}, "certSecret": {"name": "cert"},
                "filesToSign": ["/a.ko", "/lib/${KERNEL_X.ko"],
            }))
            .expect("a sign section"),
        );
        assert!(matches!(
            resolve(&signed, "5.14.0", "m", "ns"),
            Err(MappingError::UnterminatedTemplate { field, .. })
                if field == "spec.moduleLoader.container.kernelMappings[0].sign.filesToSign[1]"
        ));
        let bad = container(vec![regexp("(", "a:1")]);
        let message = resolve(&bad, "5.14.0", "m", "n")
            .expect_err("a bad regexp")
            .to_string();
        assert!(
            message.starts_with(
                "spec.moduleLoader.container.kernelMappings[0].regexp \"(\" is not a valid"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_mapping_build_and_sign_refine_the_module_level_ones() {
        let mut c: ModuleLoaderContainerSpec = serde_json::from_value(serde_json::json!({
            "modprobe": {"moduleName": "m"},
            "build": {"dockerfileConfigMap": {"name": "shared"}, "secrets": [{"name": "token"}],
                "buildArgs": [{"name": "VENDOR", "value": "acme"}]},
            "sign": {"keySecret": {"name": "key"}, "certSecret": {"name": "cert"},
                "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/common.ko"]},
            "kernelMappings": [{"regexp": "^.+$", "containerImage": "r/kmod:${KERNEL_FULL_VERSION}",
                "build": {"dockerfileConfigMap": {"name": "el9"}},
                "sign": {"keySecret": {"name": "key"}, "certSecret": {"name": "cert"},
                    "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/el9.ko"]}}],
        }))
        .expect("container spec");
        c.container_image = None;
        let resolved = resolve(&c, "5.14.0-284.el9.x86_64", "kmod", "acme")
            .unwrap()
            .unwrap();
        let build = resolved.build.expect("a build");
        assert_eq!(build.dockerfile_config_map.name, "el9");
        assert_eq!(build.secrets[0].name, "token");
        assert_eq!(build.build_args[0].name, "VENDOR");
        assert_eq!(
            resolved.sign.expect("a sign").files_to_sign,
            [
                "/opt/lib/modules/5.14.0-284.el9.x86_64/common.ko",
                "/opt/lib/modules/5.14.0-284.el9.x86_64/el9.ko"
            ]
        );
    }

    #[test]
    fn a_single_in_tree_module_to_remove_becomes_the_list() {
        let mut mapping = regexp("^.+$", "r/kmod:1.0");
        mapping.in_tree_module_to_remove = Some("old_kmod".to_owned());
        let mut c = container(vec![mapping]);
        c.in_tree_modules_to_remove = vec!["module_level".to_owned()];
        let resolved = resolve(&c, "5.14.0-284.el9.x86_64", "kmod", "acme")
            .unwrap()
            .unwrap();
        assert_eq!(resolved.in_tree_modules_to_remove, ["old_kmod"]);
    }

    #[test]
    fn no_match_is_none_and_bad_regexp_is_an_error() {
        let c = container(vec![literal("6.0.0", "a:1")]);
        assert_eq!(resolve(&c, "5.14.0", "m", "n").unwrap(), None);
        let bad = container(vec![regexp("(", "a:1")]);
        assert!(matches!(
            resolve(&bad, "5.14.0", "m", "n"),
            Err(MappingError::BadRegexp { field, pattern, .. })
                if field == "spec.moduleLoader.container.kernelMappings[0].regexp" && pattern == "("
        ));
    }

    #[test]
    fn empty_mapping_image_falls_back_to_the_container_image() {
        let mut c = container(vec![literal("5.14.0", "")]);
        assert!(matches!(
            resolve(&c, "5.14.0", "m", "n"),
            Err(MappingError::NoImage { .. })
        ));
        c.container_image = Some("q/m:${KERNEL_X}".into());
        assert_eq!(
            resolve(&c, "5.14.0", "m", "n").unwrap().unwrap().image,
            "q/m:5"
        );
    }

    #[test]
    fn dns_safe_kernel_is_a_valid_label_value() {
        assert_eq!(
            dns_safe("5.14.0-284.30.1.el9_2.x86_64"),
            "5-14-0-284-30-1-el9-2-x86-64"
        );
        assert_eq!(dns_safe("-6.1+rt_"), "6-1-rt");
    }
}
