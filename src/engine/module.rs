//! Placeholder until the module reconciler lands.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Context;

/// Run the reconciler until `stop` is cancelled.
pub async fn run(_context: Arc<Context>, stop: CancellationToken) {
    stop.cancelled().await;
}
