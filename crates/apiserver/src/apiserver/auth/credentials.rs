//! The server's secrets: the administrator's and the viewer's bearer tokens and the key that signs ServiceAccount
//! tokens. Without a state directory they are random per start. With one they are kept in
//! `<state-dir>/credentials` (JSON, mode 0600) and reused, so a restarted `serve` accepts the kubeconfigs and
//! ServiceAccount tokens it handed out before, as a real cluster does; they change only when asked
//! ([`Credentials::rotate`], `serve --rotate-tokens`).
//!
//! The file holds the keys to the cluster, so it is created as an SSH key is ([`private_files`]): readable by its
//! owner only, never through a symbolic link, and never over a file someone else put there first (`O_EXCL`); a file
//! others may read is refused rather than trusted.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::private_files::{self, Readers};

/// The file's name in the state directory.
pub const FILE: &str = "credentials";

/// The length of the signing key, in bytes (HMAC-SHA256's block-sized key is more than enough).
const KEY_BYTES: usize = 32;

/// The tokens and the signing key one server start uses.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// The administrator's bearer token (group `system:masters`).
    pub admin_token: String,
    /// The viewer's bearer token (bound to `view`).
    pub viewer_token: String,
    /// The ServiceAccount token signing key, base64url.
    signing_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets stay out of logs and panics.
        f.write_str("Credentials { .. }")
    }
}

impl Credentials {
    /// New random tokens and key.
    pub fn random() -> Self {
        use rand::RngCore;
        let mut key = [0u8; KEY_BYTES];
        rand::rng().fill_bytes(&mut key);
        Credentials {
            admin_token: super::random_token(),
            viewer_token: super::random_token(),
            signing_key: URL_SAFE_NO_PAD.encode(key),
        }
    }

    /// The signing key's bytes.
    pub fn signing_key(&self) -> anyhow::Result<Vec<u8>> {
        let key = URL_SAFE_NO_PAD
            .decode(&self.signing_key)
            .context("the signing key is not base64url")?;
        anyhow::ensure!(key.len() >= KEY_BYTES, "the signing key is too short");
        Ok(key)
    }

    /// The credentials kept in `dir`, created there on the first start.
    pub fn load_or_create(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(FILE);
        match read_private(&path) {
            Ok(Some(credentials)) => Ok(credentials),
            Ok(None) => {
                let credentials = Credentials::random();
                create_private(&path, &credentials)?;
                Ok(credentials)
            }
            Err(error) => Err(error.context(format!(
                "{} cannot be used; pass --rotate-tokens to replace it with new tokens (kubeconfigs and \
                 ServiceAccount tokens issued before stop working)",
                path.display()
            ))),
        }
    }

    /// New credentials, replacing those kept in `dir`: every token issued before stops working.
    pub fn rotate(dir: &Path) -> anyhow::Result<Self> {
        let credentials = Credentials::random();
        let json = serde_json::to_vec_pretty(&credentials)?;
        private_files::replace(&dir.join(FILE), &json, Readers::Owner)?;
        Ok(credentials)
    }
}

/// Write `credentials` to a new file at `path`: mode 0600, failing if anything (a file, a symbolic link) is there.
fn create_private(path: &Path, credentials: &Credentials) -> anyhow::Result<()> {
    let mut file = private_files::create(path, Readers::Owner)?;
    let json = serde_json::to_vec_pretty(credentials)?;
    file.write_all(&json)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The credentials at `path`, `None` when there is no file. A symbolic link, a file that is not a regular one, or
/// one someone else owns, may write to or may read is refused.
fn read_private(path: &Path) -> anyhow::Result<Option<Credentials>> {
    let Some(owned) = private_files::read(path)? else {
        return Ok(None);
    };
    anyhow::ensure!(
        !owned.others_may_read,
        "others may read it: its tokens may have leaked"
    );
    let credentials: Credentials = serde_json::from_str(&owned.text).context("it is not valid")?;
    credentials.signing_key()?;
    anyhow::ensure!(
        !credentials.admin_token.is_empty() && !credentials.viewer_token.is_empty(),
        "it has an empty token"
    );
    Ok(Some(credentials))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn the_credentials_are_created_once_then_kept_until_rotated() {
        let dir = tempfile::tempdir().unwrap();
        let first = Credentials::load_or_create(dir.path()).unwrap();
        let again = Credentials::load_or_create(dir.path()).unwrap();
        assert_eq!(first, again, "a restart keeps the tokens");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join(FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let rotated = Credentials::rotate(dir.path()).unwrap();
        assert_ne!(rotated.admin_token, first.admin_token);
        assert_ne!(rotated.signing_key, first.signing_key);
        assert_eq!(Credentials::load_or_create(dir.path()).unwrap(), rotated);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_or_a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(FILE)).unwrap();
        let error = Credentials::load_or_create(dir.path()).unwrap_err();
        assert!(format!("{error:#}").contains("symbolic link"), "{error:#}");
        assert_eq!(
            fs::read_to_string(&elsewhere).unwrap(),
            "{}",
            "nothing is written through the link"
        );

        let dir = tempfile::tempdir().unwrap();
        Credentials::load_or_create(dir.path()).unwrap();
        fs::set_permissions(dir.path().join(FILE), fs::Permissions::from_mode(0o644)).unwrap();
        let error = Credentials::load_or_create(dir.path()).unwrap_err();
        assert!(
            format!("{error:#}").contains("--rotate-tokens"),
            "{error:#}"
        );
        Credentials::rotate(dir.path()).unwrap();
        Credentials::load_or_create(dir.path()).unwrap();
    }
}
