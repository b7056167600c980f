//! `/metrics`: request counters that move with requests, durations, open watches and what the store holds.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;

use super::common::{cluster, eventually, scrape};

/// The sum of the samples of `metric` whose labels contain every one of `labels`.
fn sum(text: &str, metric: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (name, rest) = series.split_once('{').unwrap_or((series, ""));
            (name == metric && labels.iter().all(|l| rest.contains(l)))
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

#[tokio::test]
async fn counters_move_between_scrapes() {
    let cluster = cluster().await;
    let client = cluster.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let lists = |text: &str| {
        sum(
            text,
            "apiserver_request_total",
            &[
                r#"verb="LIST""#,
                r#"resource="configmaps""#,
                r#"code="200""#,
            ],
        )
    };
    let before = scrape(&client).await;
    for _ in 0..3 {
        cms.list(&Default::default()).await.unwrap();
    }
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("counted".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let err = cms.get("missing").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404));
    let after = scrape(&client).await;
    assert_eq!(lists(&after) - lists(&before), 3.0, "{after}");
    let creates = |text: &str| {
        sum(
            text,
            "apiserver_request_total",
            &[
                r#"verb="POST""#,
                r#"resource="configmaps""#,
                r#"code="201""#,
            ],
        )
    };
    assert_eq!(creates(&after) - creates(&before), 1.0, "{after}");
    let not_found = |text: &str| {
        sum(
            text,
            "apiserver_request_total",
            &[r#"verb="GET""#, r#"resource="configmaps""#, r#"code="404""#],
        )
    };
    assert_eq!(not_found(&after) - not_found(&before), 1.0, "{after}");
    let durations = |text: &str| {
        sum(
            text,
            "apiserver_request_duration_seconds_count",
            &[r#"verb="LIST""#, r#"resource="configmaps""#],
        )
    };
    assert_eq!(durations(&after) - durations(&before), 3.0, "{after}");
    assert!(
        sum(
            &after,
            "apiserver_storage_objects",
            &[r#"resource="/configmaps""#]
        ) >= 1.0,
        "{after}"
    );
    assert!(
        sum(
            &after,
            "apiserver_storage_size_bytes",
            &[r#"resource="/configmaps""#]
        ) > 0.0,
        "{after}"
    );
    assert!(
        sum(&after, "apiserver_watch_history_events", &[]) > 0.0,
        "{after}"
    );
    assert!(
        after.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF"
    );
}

#[tokio::test]
async fn open_watches_are_counted_while_open() {
    let cluster = cluster().await;
    let client = cluster.client();
    let open = |text: &str| {
        sum(
            text,
            "apiserver_registered_watchers",
            &[r#"resource="configmaps""#],
        )
    };
    let baseline = open(&scrape(&client).await);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let task = tokio::spawn(async move {
        let stream = watcher(cms, watcher::Config::default());
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    eventually(10, "the watch is counted", || {
        let client = client.clone();
        async move { open(&scrape(&client).await) == baseline + 1.0 }
    })
    .await;
    task.abort();
    eventually(10, "the ended watch is no longer counted", || {
        let client = client.clone();
        async move { open(&scrape(&client).await) == baseline }
    })
    .await;
}
