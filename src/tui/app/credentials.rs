//! When the API server refuses the console's credentials (401): a server restarted with new tokens, a token
//! rotated or expired. The console then reads its kubeconfig again (a new token, a new CA) and reconnects, which
//! the event loop does on [`Request::Reconnect`]; this is what the UI task keeps of it and what the header and
//! footer say meanwhile.

use super::{App, Request, Severity};
use crate::tui::worded::Why;

/// What the footer says once the kubeconfig was read again and the watches restarted on its credentials.
const RECONNECTED: &str = "Credentials were refused; read the kubeconfig again and reconnected";

/// The console's word on its credentials.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// A reconnect was asked of the event loop and is not done yet: the failures that keep arriving meanwhile do
    /// not ask again.
    pub asked: bool,
    /// How many times the kubeconfig was read again since the server last accepted the credentials.
    pub rereads: u32,
    /// Why the kubeconfig could not be read again, while it cannot (the event loop retries with backoff).
    pub unreadable: Option<String>,
}

impl App {
    /// A watch failed with `why`: when the server refused the credentials of a kubeconfig's cluster, ask the event
    /// loop to read the kubeconfig again and reconnect (once; it retries with backoff itself).
    pub(super) fn on_feed_failure(&mut self, why: &Why) {
        if why.unauthorized() && !self.session.embedded && self.watching && !self.credentials.asked
        {
            self.credentials.asked = true;
            self.requests.push(Request::Reconnect);
        }
    }

    /// A watch delivered: once none fails any more, the credentials are accepted again.
    pub(super) fn on_feed_delivered(&mut self) {
        if self.credentials.rereads > 0 && self.data.failure().is_none() {
            self.credentials.rereads = 0;
        }
    }

    /// The time for another attempt has come (the event loop waited out its backoff).
    pub(super) fn reconnect_due(&mut self) {
        // A timer of a cluster since left (or of credentials since accepted) asks for nothing.
        if self.credentials.asked {
            self.requests.push(Request::Reconnect);
        }
    }

    /// The kubeconfig was read again and the watches restarted on its credentials; the YAML view's object, whose
    /// watch stopped with them, is followed again.
    pub fn reconnected(&mut self) {
        if let Some(target) = self.followed.clone() {
            self.requests.push(Request::Follow(Some(target)));
        }
        self.credentials.asked = false;
        self.credentials.rereads += 1;
        self.credentials.unreadable = None;
        self.set_status(Severity::Info, RECONNECTED);
    }

    /// The kubeconfig could not be read again, for `why`; the event loop tries again after its backoff.
    pub fn reconnect_failed(&mut self, why: String) {
        self.set_status(
            Severity::Error,
            format!("Credentials were refused and the kubeconfig cannot be read again: {why}"),
        );
        self.credentials.unreadable = Some(why);
    }

    /// What the header says about the credentials, when it has something to say: why the kubeconfig cannot be
    /// read again, or that the server still refuses the credentials read again.
    pub fn credentials_trouble(&self) -> Option<String> {
        if let Some(why) = &self.credentials.unreadable {
            return Some(format!(
                "credentials refused; the kubeconfig cannot be read again: {why}; retrying"
            ));
        }
        let (_, why) = self.data.failure().filter(|(_, why)| why.unauthorized())?;
        Some(if self.credentials.rereads > 0 {
            format!("{why}, even as read again from the kubeconfig; retrying with backoff")
        } else {
            format!("{why}; reading the kubeconfig again")
        })
    }
}
