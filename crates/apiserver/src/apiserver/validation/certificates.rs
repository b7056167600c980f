//! CertificateSigningRequests: a request that is a signed PKCS#10 request in PEM, a signer named as
//! `domain/path`, usages a signer knows, a lifetime of at least ten minutes; and conditions an approver or signer
//! may set (Approved and Denied exclusive and only ever true, none of the three removed once set).

use base64::Engine;
use serde_json::{Value, json};
use x509_parser::prelude::FromDer;

use super::field::{Errors, child, index, items, text};
use super::meta;

/// The key usages and extended key usages a request may ask for, as kube-apiserver spells them.
pub(crate) const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The conditions that decide a request, each set at most once.
const DECIDING: &[&str] = &["Approved", "Denied", "Failed"];

const CONDITION_STATUSES: &[&str] = &["False", "True", "Unknown"];

/// The shortest lifetime a request may ask for.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// A CertificateSigningRequest's metadata and spec.
pub(crate) fn certificate_signing_request(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if let Err(why) = request_pem(spec).and_then(|pem| check_request(&pem)) {
        errors.invalid_shown("spec.request", "[]byte{...}", &why);
    }
    let signer = text(spec, "signerName");
    if signer.is_empty() {
        errors.required("spec.signerName", "");
    } else if !well_formed_signer(signer) {
        errors.invalid(
            "spec.signerName",
            &json!(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        );
    }
    let usages = items(spec, "usages");
    if usages.is_empty() {
        errors.required("spec.usages", "");
    }
    for (i, usage) in usages.iter().enumerate() {
        let at = index("spec.usages", i);
        if !usage.as_str().is_some_and(|u| USAGES.contains(&u)) {
            errors.not_supported(&at, usage, USAGES);
        } else if usages[..i].contains(usage) {
            errors.duplicate(&at, usage);
        }
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < MIN_EXPIRATION_SECONDS
    {
        errors.invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        );
    }
    errors
}

/// The conditions of a request's status as an approver or signer writes them; `old` is the stored request.
pub(crate) fn conditions(obj: &Value, old: &Value) -> Errors {
    let mut errors = Errors::default();
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut seen: Vec<&str> = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = index("status.conditions", i);
        let kind = text(condition, "type");
        let status = text(condition, "status");
        if kind.is_empty() {
            errors.required(&child(&at, "type"), "");
        }
        if status.is_empty() {
            errors.required(&child(&at, "status"), "");
        } else if DECIDING[..2].contains(&kind) && status != "True" {
            errors.not_supported(&child(&at, "status"), &json!(status), &["True"]);
        } else if !CONDITION_STATUSES.contains(&status) {
            errors.not_supported(&child(&at, "status"), &json!(status), CONDITION_STATUSES);
        }
        if DECIDING.contains(&kind) {
            if seen.contains(&kind) {
                errors.duplicate(&child(&at, "type"), &json!(kind));
            }
            seen.push(kind);
        }
        let exclusive = match kind {
            "Approved" => "Denied",
            "Denied" => "Approved",
            _ => "",
        };
        if !exclusive.is_empty() && seen.contains(&exclusive) {
            errors.invalid(
                &child(&at, "type"),
                &json!(kind),
                "Approved and Denied conditions are mutually exclusive",
            );
        }
    }
    let before = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for kind in DECIDING {
        let had = before.iter().any(|c| text(c, "type") == *kind);
        if had && !seen.contains(kind) {
            errors.forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            );
        }
    }
    errors
}

/// The PEM text of `spec.request` (base64 on the wire).
pub(crate) fn request_pem(spec: &Value) -> Result<String, String> {
    let encoded = text(spec, "request");
    if encoded.is_empty() {
        return Err("PEM block type must be CERTIFICATE REQUEST".to_owned());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_owned())
}

/// Whether `pem` holds a PKCS#10 request signed by the key it names.
fn check_request(pem: &str) -> Result<(), String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_owned())?;
    if block.label != "CERTIFICATE REQUEST" && block.label != "NEW CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".to_owned());
    }
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|e| format!("x509: {e}"))?;
    request
        .verify_signature()
        .map_err(|e| format!("x509: the request's signature does not verify: {e}"))
}

/// `domain/path`: a DNS subdomain, a slash, and a non-empty path.
fn well_formed_signer(signer: &str) -> bool {
    let Some((domain, path)) = signer.split_once('/') else {
        return false;
    };
    let domain_ok = !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
        && domain.contains('.');
    domain_ok && !path.is_empty() && !path.contains("//")
}
