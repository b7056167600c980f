//! The engine killed at random points and restarted, twenty times, still converges to the same end state without
//! ever running two pods for one purpose.

use std::time::Duration;

use kmm_api::kmm::ImageState;
use kmm_api::kmm::labels;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::common::{Harness, PodRecorder, eventually};
use super::kmm::*;

const KERNEL_A: &str = "5.14.0-284.30.1.el9_2.x86_64";
const KERNEL_B: &str = "5.14.0-362.8.1.el9_3.x86_64";
const KILLS: usize = 20;

fn pod_purpose(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    if labels.contains_key(labels::IMAGE_OWNER) {
        let image = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        format!("pull {image}")
    } else if labels.contains_key(labels::WORKER_ACTION) {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        format!("worker {node}")
    } else {
        let kind = labels
            .get(labels::RESOURCE_TYPE)
            .cloned()
            .unwrap_or_default();
        let kernel = labels
            .get(labels::TARGET_KERNEL)
            .cloned()
            .unwrap_or_default();
        format!("{kind} {kernel}")
    }
}

#[tokio::test(start_paused = true)]
async fn killed_and_restarted_twenty_times_the_engine_converges_without_duplicate_pods() {
    let mut harness = Harness::start("two-kernels.yaml").await;
    let client = harness.client();
    let pods = [
        PodRecorder::start(client.clone(), labels::IMAGE_OWNER, pod_purpose),
        PodRecorder::start(client.clone(), labels::WORKER_ACTION, pod_purpose),
        PodRecorder::start(client.clone(), labels::RESOURCE_TYPE, pod_purpose),
    ];
    create_module(
        &harness,
        "kmod",
        json!({
            "selector": {"kmm": "yes"},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": "acme_kmod"},
                "kernelMappings": [
                    {"literal": KERNEL_A, "containerImage": "quay.io/acme/kmod:${KERNEL_FULL_VERSION}"},
                    {"regexp": "^.+\\.el9_3\\..+$", "containerImage": "quay.io/acme/restarts:${KERNEL_FULL_VERSION}",
                     "build": {"dockerfileConfigMap": {"name": "kmod-dockerfile"}},
                     "sign": {"keySecret": {"name": "signing-key"}, "certSecret": {"name": "signing-cert"},
                              "filesToSign": ["/opt/lib/modules/${KERNEL_FULL_VERSION}/acme_kmod.ko"]}}
                ]
            }}
        }),
    )
    .await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..KILLS {
        harness.start_engine();
        let run_for = Duration::from_millis(rng.random_range(50..4000));
        tokio::time::sleep(run_for).await;
        harness.kill_engine().await;
        let down_for = Duration::from_millis(rng.random_range(0..2000));
        tokio::time::sleep(down_for).await;
    }
    harness.start_engine();
    for node in ["kmm-a-0", "kmm-b-0"] {
        eventually(1200, &format!("ready on {node}"), || {
            node_ready(&harness, node, "kmod")
        })
        .await;
    }
    eventually(300, "Available", || async {
        condition(&harness, "kmod", "Available")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let signed = format!("quay.io/acme/restarts:{KERNEL_B}");
    assert_eq!(
        image_state(&harness, "kmod", &signed).await,
        Some(ImageState::Exists)
    );
    assert_eq!(entry_image(&harness, "kmm-b-0", "kmod").await, Some(signed));
    for node in ["kmm-a-0", "kmm-b-0"] {
        assert!(
            loaded_modules(&harness, node).contains(&"acme_kmod".to_owned()),
            "{node}"
        );
    }
    let status = module(&harness, "kmod")
        .await
        .and_then(|m| m.status)
        .expect("status");
    let counts = status.module_loader.expect("counters");
    assert_eq!((counts.desired_number, counts.available_number), (2, 2));
    for recorder in &pods {
        let record = recorder.record();
        for (purpose, most) in &record.most_alive {
            assert_eq!(*most, 1, "two pods at once for {purpose}: {record:?}");
        }
    }
    let work = pods[2].record();
    let builds = work
        .created
        .iter()
        .filter(|n| n.contains("-build-"))
        .count();
    let signs = work.created.iter().filter(|n| n.contains("-sign-")).count();
    assert_eq!(
        (builds, signs),
        (1, 1),
        "one build and one sign: {:?}",
        work.created
    );
    harness.shutdown().await;
}
