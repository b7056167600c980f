//! When a pass asked to be run again. kube's `Action` keeps its delay to itself, yet the engine's queue metrics need
//! it: a look-again that has come due and not yet started is an object waiting. Every place the engine asks for one
//! goes through [`requeue`], which notes the delay for the pass it runs in; the meter reads the note when the pass
//! (or its error policy) returns.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use kube::runtime::controller::Action;

tokio::task_local! {
    static ASKED: Cell<Option<Duration>>;
}

/// Run the object's pass again after `after`, noting the delay for the metrics of the pass this runs in.
pub fn requeue(after: Duration) -> Action {
    let _ = ASKED.try_with(|asked| asked.set(Some(after)));
    Action::requeue(after)
}

/// Run `pass`, and return what it returned with the last delay it asked for.
pub(super) async fn noted<F: Future>(pass: F) -> (F::Output, Option<Duration>) {
    ASKED
        .scope(Cell::new(None), async move {
            let output = pass.await;
            (output, ASKED.with(Cell::get))
        })
        .await
}

/// [`noted`] for an error policy, which runs synchronously.
pub(super) fn noted_sync<R>(policy: impl FnOnce() -> R) -> (R, Option<Duration>) {
    ASKED.sync_scope(Cell::new(None), || (policy(), ASKED.with(Cell::get)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_delay_asked_for_is_noted_and_nothing_outside_a_pass() {
        let (_, asked) = noted(async {
            requeue(Duration::from_secs(5));
            requeue(Duration::from_secs(2))
        })
        .await;
        assert_eq!(asked, Some(Duration::from_secs(2)));
        let (_, asked) = noted(async { Action::await_change() }).await;
        assert_eq!(asked, None);
        let (_, asked) = noted_sync(|| requeue(Duration::from_millis(300)));
        assert_eq!(asked, Some(Duration::from_millis(300)));
        assert_eq!(
            requeue(Duration::from_secs(1)),
            Action::requeue(Duration::from_secs(1))
        );
    }
}
