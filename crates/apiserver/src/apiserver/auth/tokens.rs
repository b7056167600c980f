//! ServiceAccount tokens: compact JWTs (HS256) the server signs on a TokenRequest and checks on every request.
//!
//! Only the server that issued a token ever validates it, so a symmetric key is enough. A server with a state
//! directory keeps its key there ([`super::credentials`]), so the tokens it issued outlive a restart until the key
//! is rotated; without one the key is random per start.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde::{Deserialize, Serialize};

/// The issuer and default audience of the tokens.
pub const ISSUER: &str = "https://kmm-tui.embedded";

/// The lifetime of a token when the request does not ask for one (kube-apiserver's default).
pub const DEFAULT_LIFETIME_SECONDS: i64 = 3600;

/// The shortest lifetime a TokenRequest may ask for, as kube-apiserver enforces.
pub const MIN_LIFETIME_SECONDS: i64 = 600;

/// The longest lifetime handed out, whatever is asked (kube-apiserver's default maximum is far longer; a day is
/// plenty for a local cluster).
pub const MAX_LIFETIME_SECONDS: i64 = 24 * 3600;

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// What a token says about its bearer, with the claim names kube-apiserver's tokens use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Subject: `system:serviceaccount:<namespace>:<name>`.
    pub sub: String,
    /// Audiences.
    pub aud: Vec<String>,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// Expiry.
    pub exp: i64,
    /// The ServiceAccount the token is bound to.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: Binding,
}

/// The `kubernetes.io` claim: which ServiceAccount, by name and uid, so a recreated account does not inherit it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Namespace of the ServiceAccount.
    pub namespace: String,
    /// The ServiceAccount.
    pub serviceaccount: Reference,
}

/// A name and uid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Object name.
    pub name: String,
    /// Object uid.
    pub uid: String,
}

/// Why a presented token is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts of JSON.
    #[error("malformed token")]
    Malformed,
    /// Not signed by this server.
    #[error("invalid signature")]
    Signature,
    /// Past its expiry (or before its start).
    #[error("token has expired")]
    Expired,
}

/// Signs and verifies tokens with one key.
pub struct TokenSigner {
    key: hmac::Key,
}

impl TokenSigner {
    /// A signer with a fresh random key.
    pub fn random() -> Self {
        use rand::RngCore;
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
        }
    }

    /// A signer with `key` (kept across restarts).
    pub fn from_key(key: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, key),
        }
    }

    /// Sign `claims` into a compact JWT.
    pub fn sign(&self, claims: &Claims) -> String {
        let payload = serde_json::to_vec(claims).unwrap_or_default();
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(HEADER),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let signature = hmac::sign(&self.key, signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }

    /// The claims of `token` if this signer signed it and it is valid at `now` (seconds since the epoch).
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let (signing_input, signature) = token.rsplit_once('.').ok_or(TokenError::Malformed)?;
        let (header, payload) = signing_input.split_once('.').ok_or(TokenError::Malformed)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TokenError::Malformed)?;
        hmac::verify(&self.key, signing_input.as_bytes(), &signature)
            .map_err(|_| TokenError::Signature)?;
        let header = URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|_| TokenError::Malformed)?;
        let header: serde_json::Value =
            serde_json::from_slice(&header).map_err(|_| TokenError::Malformed)?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
            return Err(TokenError::Malformed);
        }
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| TokenError::Malformed)?;
        if now >= claims.exp || now < claims.nbf {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

/// The lifetime a TokenRequest gets: its ask, clamped to what the server allows.
pub fn lifetime(requested: Option<i64>) -> Result<i64, String> {
    match requested {
        None => Ok(DEFAULT_LIFETIME_SECONDS),
        Some(seconds) if seconds < MIN_LIFETIME_SECONDS => Err(format!(
            "spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration less than {MIN_LIFETIME_SECONDS} seconds"
        )),
        Some(seconds) => Ok(seconds.min(MAX_LIFETIME_SECONDS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> Claims {
        Claims {
            iss: ISSUER.into(),
            sub: "system:serviceaccount:ns:sa".into(),
            aud: vec![ISSUER.into()],
            iat: 100,
            nbf: 100,
            exp,
            kubernetes: Binding {
                namespace: "ns".into(),
                serviceaccount: Reference {
                    name: "sa".into(),
                    uid: "u-1".into(),
                },
            },
        }
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let signer = TokenSigner::random();
        let token = signer.sign(&claims(200));
        assert_eq!(signer.verify(&token, 150), Ok(claims(200)));
        assert_eq!(signer.verify(&token, 200), Err(TokenError::Expired));
        assert_eq!(signer.verify(&token, 99), Err(TokenError::Expired));
    }

    #[test]
    fn another_key_or_a_changed_payload_is_refused() {
        let signer = TokenSigner::random();
        let token = signer.sign(&claims(200));
        assert_eq!(
            TokenSigner::random().verify(&token, 150),
            Err(TokenError::Signature)
        );
        let forged = signer.sign(&claims(10_000));
        let (_, forged_payload) = forged.split_once('.').unwrap();
        let (header, rest) = token.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let (forged_payload, _) = forged_payload.split_once('.').unwrap();
        let tampered = format!("{header}.{forged_payload}.{signature}");
        assert_eq!(signer.verify(&tampered, 150), Err(TokenError::Signature));
        assert_eq!(signer.verify("abc", 150), Err(TokenError::Malformed));
    }

    #[test]
    fn lifetimes_are_clamped() {
        assert_eq!(lifetime(None), Ok(DEFAULT_LIFETIME_SECONDS));
        assert!(lifetime(Some(60)).is_err());
        assert_eq!(lifetime(Some(10 * 24 * 3600)), Ok(MAX_LIFETIME_SECONDS));
    }
}
