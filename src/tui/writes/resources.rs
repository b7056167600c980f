//! Where each kind the console shows lives in the API, so writes, access reviews and the YAML view address the same
//! resource.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};

use crate::tui::data::Kind;
use crate::tui::target::Target;
use kmm_api::day0::{MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::hub::ManagedClusterModule;
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::{Module, ModuleImagesConfig, NodeModulesConfig, PreflightValidation};
use kmm_api::shim::Shim;

/// Group, version and plural of `kind`.
pub fn api_resource(kind: Kind) -> ApiResource {
    match kind {
        Kind::Module => ApiResource::erase::<Module>(&()),
        Kind::ModuleImagesConfig => ApiResource::erase::<ModuleImagesConfig>(&()),
        Kind::NodeModulesConfig => ApiResource::erase::<NodeModulesConfig>(&()),
        Kind::Node => ApiResource::erase::<Node>(&()),
        Kind::Pod => ApiResource::erase::<Pod>(&()),
        Kind::Event => ApiResource::erase::<Event>(&()),
        Kind::Shim => ApiResource::erase::<Shim>(&()),
        Kind::ImageCache => ApiResource::erase::<ImageCache>(&()),
        Kind::ModuleDay0 => ApiResource::erase::<ModuleDay0>(&()),
        Kind::MachineConfigPool => ApiResource::erase::<MachineConfigPool>(&()),
        Kind::MachineConfig => ApiResource::erase::<MachineConfig>(&()),
        Kind::PreflightValidation => ApiResource::erase::<PreflightValidation>(&()),
        Kind::ResourceSlice => ApiResource::erase::<ResourceSlice>(&()),
        Kind::ResourceClaim => ApiResource::erase::<ResourceClaim>(&()),
        Kind::ManagedClusterModule => ApiResource::erase::<ManagedClusterModule>(&()),
    }
}

/// An untyped API for the target's kind in its namespace: writes carry the object as the user sees it, fields
/// this build does not know included.
pub fn dynamic_api(client: &Client, target: &Target) -> Api<DynamicObject> {
    let resource = api_resource(target.kind);
    match &target.namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_names_its_group_version_and_plural() {
        let module = api_resource(Kind::Module);
        assert_eq!(
            (module.api_version.as_str(), module.plural.as_str()),
            ("kmm.sigs.x-k8s.io/v1beta1", "modules")
        );
        let mic = api_resource(Kind::ModuleImagesConfig);
        assert_eq!(mic.plural, "moduleimagesconfigs");
        let node = api_resource(Kind::Node);
        assert_eq!((node.group.as_str(), node.api_version.as_str()), ("", "v1"));
        assert_eq!(api_resource(Kind::Event).api_version, "events.k8s.io/v1");
        let slices = api_resource(Kind::ResourceSlice);
        assert_eq!(
            (slices.api_version.as_str(), slices.plural.as_str()),
            ("resource.k8s.io/v1", "resourceslices")
        );
        for kind in Kind::ALL.into_iter().chain(Kind::DRA) {
            assert_eq!(api_resource(kind).kind, kind.as_str());
        }
    }
}
