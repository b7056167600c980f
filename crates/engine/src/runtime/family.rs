//! The families of reconcilers, a leaf every part of the engine names: the command line, the settings, the
//! metrics and the hand-over to upstream operators all speak of families without depending on each other.

/// The families of reconcilers the engine can run: one per kind of software that lives on nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Kernel modules: Module, ModuleImagesConfig, ModuleBuildSignConfig, NodeModulesConfig.
    Kmm,
    /// containerd shims: Shim and its RuntimeClass.
    Shims,
    /// Pre-pulled images: ImageCache.
    Caches,
    /// Kernel modules baked into the OS image: ModuleDay0.
    Day0,
    /// Kernel modules for a fleet, on an Open Cluster Management hub: ManagedClusterModule.
    Hub,
}

impl Family {
    /// Every family, in the order the engine starts them.
    pub const ALL: [Family; 5] = [
        Family::Kmm,
        Family::Shims,
        Family::Caches,
        Family::Day0,
        Family::Hub,
    ];

    /// The family's name on the command line and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Kmm => "kmm",
            Family::Shims => "shims",
            Family::Caches => "caches",
            Family::Day0 => "day0",
            Family::Hub => "hub",
        }
    }

    /// What the family runs, in a few words: the command line lists it beside each name.
    pub fn runs(self) -> &'static str {
        match self {
            Family::Kmm => {
                "Kernel modules: Module, ModuleImagesConfig, ModuleBuildSignConfig, NodeModulesConfig"
            }
            Family::Shims => "containerd shims: Shim and its RuntimeClass",
            Family::Caches => "Pre-pulled images: ImageCache",
            Family::Day0 => "Kernel modules baked into the OS image: ModuleDay0",
            Family::Hub => "Kernel modules for a fleet, from its hub: ManagedClusterModule",
        }
    }
}

/// A name that is not a family's.
#[derive(Debug, thiserror::Error)]
#[error("no family is named {0:?}; the families are kmm, shims, caches, day0 and hub")]
pub struct UnknownFamily(String);

impl std::str::FromStr for Family {
    type Err = UnknownFamily;

    /// The family named `name` exactly as [`Family::as_str`] spells it.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Family::ALL
            .into_iter()
            .find(|family| family.as_str() == name)
            .ok_or_else(|| UnknownFamily(name.to_owned()))
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_parses_from_its_own_name_only() {
        for family in Family::ALL {
            assert_eq!(family.as_str().parse::<Family>().ok(), Some(family));
            assert!(family.as_str().to_uppercase().parse::<Family>().is_err());
        }
        assert!("shim".parse::<Family>().is_err());
    }
}
