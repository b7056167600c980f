//! Polling on tokio time, for tests that wait for the cluster to converge (with paused time, the waits cost nothing).

use std::time::Duration;

/// Poll `check` until it returns true, or fail after `secs` seconds (tokio time) with `what`.
pub async fn eventually<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for(secs, what, || {
        let fut = check();
        async move { fut.await.then_some(()) }
    })
    .await
}

/// Poll `probe` until it yields a value, or fail after `secs` seconds (tokio time) with `what`.
pub async fn wait_for<T, F, Fut>(secs: u64, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {secs} s waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
