//! Upstream KMM's Module samples: each one upstream's CRD accepts reconciles to an available module on a scenario
//! that matches it (a node named like upstream CI's, with the Dockerfile and secrets the sample names); each one it
//! rejects is rejected here too.

use std::path::PathBuf;

use kmm_api::kmm::Module;
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use kube::discovery::ApiResource;

use super::common::{Harness, eventually};
use super::kmm::condition;

fn reference() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/kmm");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: {} is absent (upstream reference data)",
            dir.display()
        );
        None
    }
}

/// Every document of the YAML files under `dir` whose name starts with `prefix`.
fn documents(dir: &PathBuf, prefix: &str) -> Vec<(String, serde_json::Value)> {
    let mut found = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("reading the reference directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".yaml"))
        })
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("reading a sample");
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&text).expect("a sample parses as YAML");
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            found.push((path.display().to_string(), doc));
        }
    }
    found
}

#[tokio::test(start_paused = true)]
async fn upstream_module_samples_reconcile_or_are_rejected_as_upstream_rejects_them() {
    let Some(dir) = reference() else { return };
    let mut samples = documents(&dir.join("ci"), "module-");
    samples.extend(documents(
        &dir.join("config/samples"),
        "kmm.sigs.x-k8s.io_modules",
    ));
    assert!(
        samples.len() >= 3,
        "the reference holds Module samples: {}",
        samples.len()
    );
    let dockerfiles = documents(&dir.join("ci"), "kmm-kmod-dockerfile");

    let mut harness = Harness::start("samples.yaml").await;
    harness.start_engine();
    let config_maps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    for (_, doc) in &dockerfiles {
        let object: DynamicObject = serde_json::from_value(doc.clone()).expect("a ConfigMap");
        Api::<DynamicObject>::namespaced_with(harness.client(), "acme", &config_maps)
            .create(&PostParams::default(), &object)
            .await
            .expect("the sample Dockerfile ConfigMap is created");
    }
    let modules: Api<Module> = Api::namespaced(harness.client(), "acme");
    let mut accepted = Vec::new();
    for (file, doc) in samples {
        let name = doc["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mappings = doc["spec"]["moduleLoader"]["container"]["kernelMappings"]
            .as_array()
            .map_or(0, Vec::len);
        let module: Module = serde_json::from_value(doc).expect("the sample decodes as a Module");
        let created = modules.create(&PostParams::default(), &module).await;
        if mappings == 0 {
            // Upstream's CRD requires at least one kernel mapping.
            let error = created.expect_err("a Module without kernel mappings is rejected");
            println!("{file}: {name} rejected as upstream rejects it: {error}");
            continue;
        }
        created.unwrap_or_else(|e| panic!("{file}: {name} is accepted: {e}"));
        accepted.push(name);
    }
    assert!(accepted.len() >= 2, "accepted samples: {accepted:?}");
    for name in &accepted {
        eventually(1800, &format!("sample {name} is Available"), || async {
            condition(&harness, name, "Available")
                .await
                .is_some_and(|(status, _, _)| status == "True")
        })
        .await;
        println!("sample {name}: Available");
    }
    harness.shutdown().await;
}
