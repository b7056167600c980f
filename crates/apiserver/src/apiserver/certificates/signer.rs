//! The `kubernetes.io/kube-apiserver-client` signer: once a CertificateSigningRequest for it is approved, the
//! cluster's CA issues the client certificate it asks for (the requested subject, so its common name is the user
//! and its organizations the groups the server authenticates) into `status.certificate`, for the lifetime asked
//! (`spec.expirationSeconds`, ten minutes at least, a year at most). A request asking for usages a client
//! certificate may not have is marked Failed instead, as kube-controller-manager's signer does.
//!
//! It follows requests through an in-process client, so what it writes passes the same admission as any writer.

use std::time::{Duration, SystemTime};

use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use rcgen::KeyUsagePurpose;
use serde_json::json;

use crate::apiserver::ApiServer;
use crate::apiserver::validation::certificates::request_pem;
use crate::tls::issue::Authority;

/// The signer this server implements.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// The longest lifetime issued: kube-controller-manager's default `--cluster-signing-duration`.
pub const MAX_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The shortest lifetime issued, whatever is asked.
pub const MIN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The field manager of the signer's writes.
const MANAGER: &str = "certificate-controller";

/// Start signing approved requests with `authority`; the signer stops with the server.
pub fn spawn(server: ApiServer, authority: Authority) {
    let client = kube::Client::new(server.clone(), "default");
    let shutdown = server.inner().shutdown.clone();
    tokio::spawn(async move {
        let requests: Api<CertificateSigningRequest> = Api::all(client);
        let mut events = watcher(requests.clone(), watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            let request = tokio::select! {
                () = shutdown.cancelled() => return,
                next = events.next() => match next {
                    Some(Ok(request)) => request,
                    Some(Err(_)) => continue,
                    None => return,
                },
            };
            if let Some(status) = decide(&authority, &request, SystemTime::now()) {
                let name = request.metadata.name.clone().unwrap_or_default();
                let params = PatchParams::apply(MANAGER);
                if let Err(e) = requests
                    .patch_status(&name, &params, &Patch::Merge(json!({ "status": status })))
                    .await
                {
                    tracing::warn!(request = %name, "recording a signing decision failed: {e}");
                }
            }
        }
    });
}

/// The status to write for `request`: its certificate, or its conditions with a Failed one; None when it is not
/// this signer's to sign, not approved, or already decided.
fn decide(
    authority: &Authority,
    request: &CertificateSigningRequest,
    now: SystemTime,
) -> Option<serde_json::Value> {
    if request.spec.signer_name != KUBE_APISERVER_CLIENT {
        return None;
    }
    let status = request.status.clone().unwrap_or_default();
    let conditions = status.conditions.clone().unwrap_or_default();
    let has = |kind: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == kind && c.status == "True")
    };
    if status.certificate.is_some() || !has("Approved") || has("Denied") || has("Failed") {
        return None;
    }
    let issued =
        key_usages(request.spec.usages.as_deref().unwrap_or_default()).and_then(|usages| {
            let spec = serde_json::to_value(&request.spec).map_err(|e| e.to_string())?;
            let pem = request_pem(&spec)?;
            authority
                .sign_client_request(&pem, usages, now, lifetime(request.spec.expiration_seconds))
                .map_err(|e| e.to_string())
        });
    Some(match issued {
        Ok(certificate) => json!({
            "certificate": base64::engine::general_purpose::STANDARD.encode(certificate),
        }),
        Err(why) => {
            let mut all = serde_json::to_value(&conditions).unwrap_or_else(|_| json!([]));
            if let Some(list) = all.as_array_mut() {
                list.push(json!({"type": "Failed", "status": "True",
                    "reason": "SignerValidationFailure", "message": why}));
            }
            json!({ "conditions": all })
        }
    })
}

/// The key usages of a client certificate asking for `usages`: client authentication, with at most a digital
/// signature and key encipherment besides.
fn key_usages(usages: &[String]) -> Result<Vec<KeyUsagePurpose>, String> {
    if !usages.iter().any(|u| u == "client auth") {
        return Err("usages must include \"client auth\"".to_owned());
    }
    let mut key_usages = Vec::new();
    for usage in usages {
        match usage.as_str() {
            "client auth" => {}
            "digital signature" => key_usages.push(KeyUsagePurpose::DigitalSignature),
            "key encipherment" => key_usages.push(KeyUsagePurpose::KeyEncipherment),
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    Ok(key_usages)
}

/// The lifetime to issue for a request asking for `seconds`.
fn lifetime(seconds: Option<i32>) -> Duration {
    seconds
        .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
        .unwrap_or(MAX_LIFETIME)
        .clamp(MIN_LIFETIME, MAX_LIFETIME)
}
