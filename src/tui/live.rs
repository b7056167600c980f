//! The one object the YAML view shows or the editor opens, read whole from the API server. The console's lists
//! keep only what the panes draw ([`super::kept`]), and an edit has to start from the object as the server has it
//! now, so neither reads them: the YAML view follows its object with a watch of that one name, and the editor reads
//! it once.

use futures::StreamExt;
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::target::Target;
use super::worded::Why;
use super::writes::resources::dynamic_api;

/// `target` as the API server has it now, as JSON; or why it cannot be read.
pub async fn read(client: &Client, target: &Target) -> Result<Value, String> {
    let object = dynamic_api(client, target)
        .get(&target.name)
        .await
        .map_err(|error| format!("cannot read {target}: {}", Why::of(&error, None)))?;
    serde_json::to_value(object).map_err(|error| format!("cannot read {target}: {error}"))
}

/// Send [`Action::Object`] with `target` as the API server has it, now and on every change, until `cancel`:
/// `Ok(None)` once it is gone, `Err` while it cannot be read (the watch retries with backoff meanwhile).
pub fn follow(
    client: &Client,
    target: Target,
    sender: &UnboundedSender<Action>,
    cancel: CancellationToken,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={}", target.name));
    let events = watcher(dynamic_api(client, &target), config).default_backoff();
    let sender = sender.clone();
    tokio::spawn(async move {
        let mut events = events.boxed();
        // A relist's object, until the relist is whole.
        let mut listing: Option<DynamicObject> = None;
        loop {
            let event = tokio::select! {
                () = cancel.cancelled() => return,
                event = events.next() => event,
            };
            let object = match event {
                None => return,
                Some(Ok(watcher::Event::Init)) => {
                    listing = None;
                    continue;
                }
                Some(Ok(watcher::Event::InitApply(object))) => {
                    listing = Some(object);
                    continue;
                }
                Some(Ok(watcher::Event::InitDone)) => listing.take().map(json).transpose(),
                Some(Ok(watcher::Event::Apply(object))) => json(object).map(Some),
                Some(Ok(watcher::Event::Delete(_))) => Ok(None),
                Some(Err(error)) => Err(format!(
                    "cannot read {target}: {}",
                    Why::of_watch(&error, None)
                )),
            };
            if sender.send(Action::Object(target.clone(), object)).is_err() {
                return;
            }
        }
    });
}

/// An object as JSON.
fn json(object: DynamicObject) -> Result<Value, String> {
    serde_json::to_value(object).map_err(|error| error.to_string())
}
