//! Attach sessions against the connection cap: a session switches its connection to WebSocket and keeps it for as
//! long as it runs, so it must keep counting against the cap, or sessions alone could take every descriptor.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kmm_cluster::https::ConnectionLimits;
use kube::api::{Api, AttachParams, ListParams};

/// The cap in this test, and the sessions that fill it.
const SESSIONS: usize = 4;

/// How long a request at the cap is watched for not being answered: any answer in this time means the sessions
/// did not count.
const HELD_BACK: Duration = Duration::from_secs(3);

/// How long the held-back request may take once a session ends: generous for a loaded machine.
const ANSWER_BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_sessions_count_against_the_connection_cap() {
    let limits = ConnectionLimits {
        max_connections: SESSIONS,
        ..crate::LIMITS
    };
    let (cluster, _turn) = crate::serving_within(limits).await;
    crate::sessions::running_pod(&cluster).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let client = crate::https_client(&cluster, kmm_cluster::kubeconfig::DEFAULT_NAME).await;
        let pods = Api::<Pod>::namespaced(client, "default");
        let attached = pods
            .attach("app", &AttachParams::default().stdin(false).stderr(false))
            .await
            .expect("attach is served below the cap");
        sessions.push(attached);
    }
    // Longer than the idle deadline: the connections that carried the attach requests are gone by now.
    tokio::time::sleep(limits.idle * 2).await;
    let census = cluster.https_census();
    let client = crate::https_client(&cluster, kmm_cluster::kubeconfig::DEFAULT_NAME).await;
    let request = tokio::spawn(async move {
        Api::<Namespace>::all(client)
            .list(&ListParams::default())
            .await
            .map(|_| ())
    });
    tokio::time::sleep(HELD_BACK).await;
    let answered_at_the_cap = request.is_finished();
    sessions.pop().expect("a session").abort();
    let after_one_ended = tokio::time::timeout(ANSWER_BOUND, request).await;
    eprintln!(
        "{SESSIONS} attach sessions at a cap of {SESSIONS}: census {census:?}; a new request answered within \
         {HELD_BACK:?}: {answered_at_the_cap}"
    );
    assert!(
        !answered_at_the_cap,
        "a request was answered while {SESSIONS} sessions held a cap of {SESSIONS}"
    );
    assert!(
        matches!(after_one_ended, Ok(Ok(Ok(())))),
        "once a session ended, the request was served: {after_one_ended:?}"
    );
    for session in sessions {
        session.abort();
    }
    cluster.shutdown().await;
}
