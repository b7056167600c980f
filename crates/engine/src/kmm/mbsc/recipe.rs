//! The pod an MBSC entry needs now, read from the objects it is made of (the Dockerfile ConfigMap, the key and
//! certificate secrets), with the hash of all of it: pod spec, Dockerfile, key and certificate, and the image
//! generation. A pod carrying another hash is out of date and is replaced.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::{Api, ResourceExt};
use serde_json::{Map, Value};

use super::build_pod::{self, DOCKERFILE_KEY};
use super::entry_generation;
use super::sign_pod::{self, Signing};
use crate::runtime::context::{Context, Error};
use crate::runtime::digest::sha256_hex;
use kmm_api::errors::is_not_found;
use kmm_api::kmm::labels;
use kmm_api::kmm::labels::IMAGE_GENERATION;
use kmm_api::kmm::{BuildSignAction, ModuleBuildSignConfig, ModuleBuildSignImage, ModuleImageSpec};

/// A pod ready to create, with the hash it carries.
pub struct Template {
    /// The pod.
    pub pod: Pod,
    /// Its `last-hash` annotation.
    pub hash: String,
}

/// Why an entry has no template: an input is missing or unusable (the user must fix it), or the API failed.
pub enum Blocked {
    /// An input object is missing or holds something unusable; the message says which and what to do.
    Input(String),
    /// Reading an input failed.
    Api(Error),
}

impl From<Error> for Blocked {
    fn from(error: Error) -> Self {
        match error {
            Error::Invalid(message) => Blocked::Input(message),
            api => Blocked::Api(api),
        }
    }
}

/// The pod `entry` needs now.
pub async fn template(
    context: &Context,
    mbsc: &ModuleBuildSignConfig,
    entry: &ModuleBuildSignImage,
) -> Result<Template, Blocked> {
    let namespace = mbsc.namespace().unwrap_or_default();
    let image = &entry.spec.image;
    let (mut pod, dockerfile, secrets) = match entry.action {
        BuildSignAction::BuildImage => {
            let build = entry.spec.build.as_ref().ok_or_else(|| {
                Blocked::Input(format!(
                    "image {image} is to be built but has no build section"
                ))
            })?;
            let config_map = &build.dockerfile_config_map.name;
            let dockerfile = read_dockerfile(context, &namespace, config_map, image).await?;
            let pod = build_pod::build_pod(mbsc, entry, build, &context.images.build)?;
            (pod, dockerfile, Value::Null)
        }
        BuildSignAction::SignImage => {
            let sign = entry.spec.sign.as_ref().ok_or_else(|| {
                Blocked::Input(format!(
                    "image {image} is to be signed but has no sign section"
                ))
            })?;
            let key = read_secret(context, &namespace, &sign.key_secret.name, image).await?;
            let cert = read_secret(context, &namespace, &sign.cert_secret.name, image).await?;
            let signing = Signing {
                signer_image: &context.images.sign,
                key_file: file_in(&key, ["key", "key.pem"], image)?,
                cert_file: file_in(&cert, ["cert", "cert.pem"], image)?,
            };
            let dockerfile = sign_pod::dockerfile(entry, sign, &signing)?;
            let pod =
                sign_pod::sign_pod(mbsc, entry, sign, &context.images.build, dockerfile.clone())?;
            let mut secrets = Map::new();
            secrets.insert("key".to_owned(), secret_data(&key)?);
            secrets.insert("cert".to_owned(), secret_data(&cert)?);
            (pod, dockerfile, Value::Object(secrets))
        }
    };
    let generation = entry_generation(entry);
    let hash = hash(&pod, &dockerfile, secrets, generation)?;
    let annotations = pod.annotations_mut();
    annotations.insert(labels::LAST_HASH.to_owned(), hash.clone());
    annotations.insert(IMAGE_GENERATION.to_owned(), generation.to_string());
    Ok(Template { pod, hash })
}

/// Why the build (`action` BuildImage) or sign of `image` in `namespace` cannot start: an input it names is missing
/// or unusable. `None` when every input is there. Read by the Module reconciler, so the Module a person looks at
/// says what to create instead of waiting on a build that never starts.
pub async fn missing_input(
    context: &Context,
    namespace: &str,
    image: &ModuleImageSpec,
    action: BuildSignAction,
) -> Result<Option<String>, Error> {
    let name = &image.image;
    let checked = match (action, &image.build, &image.sign) {
        (BuildSignAction::BuildImage, Some(build), _) => {
            let config_map = &build.dockerfile_config_map.name;
            read_dockerfile(context, namespace, config_map, name)
                .await
                .map(drop)
        }
        (BuildSignAction::SignImage, _, Some(sign)) => {
            let mut checked = Ok(());
            for secret in [&sign.key_secret.name, &sign.cert_secret.name] {
                checked = read_secret(context, namespace, secret, name)
                    .await
                    .map(drop);
                if checked.is_err() {
                    break;
                }
            }
            checked
        }
        _ => Ok(()),
    };
    match checked {
        Ok(()) => Ok(None),
        Err(Blocked::Input(why)) => Ok(Some(why)),
        Err(Blocked::Api(error)) => Err(error),
    }
}

/// The Dockerfile text of a build.
async fn read_dockerfile(
    context: &Context,
    namespace: &str,
    name: &str,
    image: &str,
) -> Result<String, Blocked> {
    let api = Api::<ConfigMap>::namespaced(context.client.clone(), namespace);
    let config_map = match api.get(name).await {
        Ok(config_map) => config_map,
        Err(error) if is_not_found(&error) => {
            return Err(Blocked::Input(format!(
                "ConfigMap {namespace}/{name} holding the Dockerfile of image {image} does not exist"
            )));
        }
        Err(source) => {
            return Err(Blocked::Api(Error::Kube {
                action: format!(
                    "reading ConfigMap {namespace}/{name} (the Dockerfile of image {image})"
                ),
                source,
            }));
        }
    };
    config_map
        .data
        .and_then(|mut data| data.remove(DOCKERFILE_KEY))
        .ok_or_else(|| {
            Blocked::Input(format!(
                "ConfigMap {namespace}/{name} has no '{DOCKERFILE_KEY}' key holding the Dockerfile of image {image}"
            ))
        })
}

/// A signing secret.
async fn read_secret(
    context: &Context,
    namespace: &str,
    name: &str,
    image: &str,
) -> Result<Secret, Blocked> {
    let api = Api::<Secret>::namespaced(context.client.clone(), namespace);
    match api.get(name).await {
        Ok(secret) => Ok(secret),
        Err(error) if is_not_found(&error) => Err(Blocked::Input(format!(
            "Secret {namespace}/{name} used to sign image {image} does not exist"
        ))),
        Err(source) => Err(Blocked::Api(Error::Kube {
            action: format!("reading Secret {namespace}/{name} (to sign image {image})"),
            source,
        })),
    }
}

/// The first of `names` the secret holds.
fn file_in<'n>(secret: &Secret, names: [&'n str; 2], image: &str) -> Result<&'n str, Blocked> {
    let data = secret.data.as_ref();
    names
        .into_iter()
        .find(|name| data.is_some_and(|d| d.contains_key(*name)))
        .ok_or_else(|| {
            Blocked::Input(format!(
                "Secret {}/{} used to sign image {image} holds neither '{}' nor '{}'",
                secret.namespace().unwrap_or_default(),
                secret.name_any(),
                names[0],
                names[1]
            ))
        })
}

/// A secret's data as it enters the hash.
fn secret_data(secret: &Secret) -> Result<Value, Error> {
    serde_json::to_value(&secret.data).map_err(|error| {
        Error::Invalid(format!(
            "Secret {} cannot be serialised for the sign pod's hash: {error}",
            secret.name_any()
        ))
    })
}

/// The hash of everything the pod is made of.
fn hash(pod: &Pod, dockerfile: &str, secrets: Value, generation: i64) -> Result<String, Error> {
    let spec = serde_json::to_value(&pod.spec).map_err(|error| {
        Error::Invalid(format!(
            "pod {} cannot be serialised for its hash: {error}",
            pod.name_any()
        ))
    })?;
    let mut document = Map::new();
    document.insert("spec".to_owned(), spec);
    document.insert("dockerfile".to_owned(), Value::from(dockerfile));
    document.insert("secrets".to_owned(), secrets);
    document.insert("generation".to_owned(), Value::from(generation));
    Ok(sha256_hex(Value::Object(document).to_string().as_bytes()))
}
