//! The fleet's kubeconfig: the kubeconfigs of its clusters merged into one. Each cluster names its entries after
//! itself, so none hides another; the first (the hub's) current context stays current.

use kube::config::Kubeconfig;

/// The merge of `configs` (YAML), or None when there are none.
pub(super) fn merge<'a>(configs: impl Iterator<Item = &'a str>) -> anyhow::Result<Option<String>> {
    let mut merged: Option<Kubeconfig> = None;
    for text in configs {
        let config: Kubeconfig = serde_saphyr::from_str(text)?;
        merged = Some(match merged {
            None => config,
            Some(so_far) => so_far.merge(config)?,
        });
    }
    merged
        .map(|config| serde_saphyr::to_string(&config))
        .transpose()
        .map_err(Into::into)
}
