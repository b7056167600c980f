//! Files no one else can plant or read: everything kmm-tui writes (the state directory, its store, credentials and
//! PKI, the kubeconfig, the console's log) goes through here.
//!
//! A directory someone else owns or may write to lets them put a symbolic link or a file of their own where kmm-tui
//! is about to write (so it overwrites their victim's file, or writes a token into a file they hold open), or leave
//! a CA and key of their own for it to serve as the cluster's identity. So directories are used only when the user
//! running kmm-tui owns them, no one else may write to them and they are not symbolic links; they are made 0700
//! when missing. Files are created only where nothing is (`O_CREAT|O_EXCL|O_NOFOLLOW`), replaced by renaming a
//! freshly created file of an unguessable name over them, and opened without following a symbolic link
//! (`O_NOFOLLOW`); a file read back must belong to the user and be writable by no one else.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Who may read a file kmm-tui writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Its owner only (mode 0600): keys, tokens, kubeconfigs, logs.
    Owner,
    /// Anyone (mode 0644): certificates, which are public.
    Anyone,
}

impl Readers {
    /// The permission bits a file for these readers is created with.
    #[cfg(unix)]
    fn mode(self) -> u32 {
        match self {
            Readers::Owner => 0o600,
            Readers::Anyone => 0o644,
        }
    }
}

/// Make sure `dir` is a directory only this user controls, creating it (and its missing parents) when absent: the
/// directory itself is created 0700. An existing one is refused when it is a symbolic link, belongs to someone else
/// or others may write to it; the error names the path and the owner.
pub fn owned_dir(dir: &Path) -> anyhow::Result<()> {
    checked_dir(dir).map(drop)
}

/// [`owned_dir`], then take away every permission group and others have on it: for the state directory and its
/// PKI, which hold Secrets and keys.
pub fn private_dir(dir: &Path) -> anyhow::Result<()> {
    let opened = checked_dir(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = opened.metadata()?.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            opened
                .set_permissions(fs::Permissions::from_mode(mode & 0o700))
                .with_context(|| format!("making {} private to its owner", dir.display()))?;
        }
    }
    #[cfg(not(unix))]
    drop(opened);
    Ok(())
}

/// The directory `dir`, created if absent, opened without following a symbolic link and checked.
fn checked_dir(dir: &Path) -> anyhow::Result<File> {
    if fs::symlink_metadata(dir).is_err() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        match builder.create(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("creating {}", dir.display()));
            }
            _ => {}
        }
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let opened = match options.open(dir) {
        Ok(opened) => opened,
        Err(e) => {
            if is_symlink(dir) {
                bail!("refusing {}: it is a symbolic link", dir.display());
            }
            return Err(e).with_context(|| format!("opening the directory {}", dir.display()));
        }
    };
    let metadata = opened.metadata()?;
    if !metadata.is_dir() {
        bail!("refusing {}: it is not a directory", dir.display());
    }
    check_owner(dir, &metadata, "directory")?;
    Ok(opened)
}

/// Create `path` where nothing is (not even a symbolic link or a dangling one), readable by `readers`.
pub fn create(path: &Path, readers: Readers) -> anyhow::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(readers.mode())
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    #[cfg(not(unix))]
    let _ = readers;
    options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// Replace (or create) `path` with `contents`, atomically: they go to a new file of an unguessable name beside it,
/// which is renamed over it once written and synced, so a reader never sees half of it and nothing planted at a
/// predictable name is written through. The directory must be one [`owned_dir`] accepts.
pub fn replace(path: &Path, contents: &[u8], readers: Readers) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    owned_dir(dir)?;
    let temporary = temporary_beside(path);
    let written = create(&temporary, readers).and_then(|mut file| {
        file.write_all(contents)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", temporary.display()))?;
        fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))
    });
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// A name beside `path` no one can guess: `.NAME.RANDOM.tmp`.
fn temporary_beside(path: &Path) -> PathBuf {
    use rand::Rng;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let random: u64 = rand::rng().random();
    path.with_file_name(format!(".{name}.{random:016x}.tmp"))
}

/// What [`read`] found: a file of the user's that no one else may write to.
#[derive(Debug)]
pub struct Owned {
    /// Its content.
    pub text: String,
    /// Whether group or others may read it: a secret in it may have leaked, which its reader judges (a key is
    /// replaced, tokens are refused).
    pub others_may_read: bool,
}

/// The text of `path`, `None` when there is none. A symbolic link, something that is not a regular file, a file of
/// someone else's or one others may write to is refused: someone else may have put it there.
pub fn read(path: &Path) -> anyhow::Result<Option<Owned>> {
    let Some(mut file) = open_nofollow(path, OpenOptions::new().read(true))? else {
        return Ok(None);
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        bail!("refusing {}: it is not a regular file", path.display());
    }
    check_owner(path, &metadata, "file")?;
    #[cfg(unix)]
    let others_may_read = {
        use std::os::unix::fs::PermissionsExt;
        metadata.permissions().mode() & 0o077 != 0
    };
    #[cfg(not(unix))]
    let others_may_read = false;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(Owned {
        text,
        others_may_read,
    }))
}

/// `path` opened to append to, created 0600 when absent, never through a symbolic link: for a log. An existing one
/// must belong to the user and is made readable by them only.
pub fn append(path: &Path) -> anyhow::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = open_nofollow(path, &mut options)?
        .with_context(|| format!("opening {}: its directory is gone", path.display()))?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        bail!("refusing {}: it is not a regular file", path.display());
    }
    check_owner(path, &metadata, "file")?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .with_context(|| format!("making {} private to its owner", path.display()))?;
        }
    }
    Ok(file)
}

/// Open `path` with `options`, `None` when there is nothing to open, failing (and saying so) when it is a symbolic
/// link.
fn open_nofollow(path: &Path, options: &mut OpenOptions) -> anyhow::Result<Option<File>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    match options.open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(_) if is_symlink(path) => bail!("refusing {}: it is a symbolic link", path.display()),
        Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
    }
}

/// Whether `path` itself is a symbolic link.
fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuse `path` (a `what`) unless this user owns it and no one else may write to it.
#[cfg(unix)]
fn check_owner(path: &Path, metadata: &fs::Metadata, what: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = effective_uid();
    if metadata.uid() != me {
        bail!(
            "refusing the {what} {}: it belongs to {}, not to {} who runs kmm-tui; someone else may have put it \
             there",
            path.display(),
            user_name(metadata.uid()),
            user_name(me)
        );
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        bail!(
            "refusing the {what} {}: others may write to it (mode {mode:o}); make it writable by its owner only \
             (chmod go-w)",
            path.display()
        );
    }
    Ok(())
}

/// Elsewhere the platform's own access control applies.
#[cfg(not(unix))]
fn check_owner(_path: &Path, _metadata: &fs::Metadata, _what: &str) -> anyhow::Result<()> {
    Ok(())
}

/// The user this process acts as.
#[cfg(unix)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid takes nothing, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// `uid` as people read it: `user NAME (uid N)` when the password database names it, else `uid N`.
#[cfg(unix)]
fn user_name(uid: u32) -> String {
    let named = fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
        })
    });
    match named {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_missing_directory_is_made_private_and_an_open_one_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        owned_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o757)).unwrap();
        let error = format!("{:#}", owned_dir(&dir).unwrap_err());
        assert!(
            error.contains("others may write") && error.contains("a/b"),
            "{error}"
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        owned_dir(&dir).unwrap();
        assert_eq!(
            mode(&dir),
            0o755,
            "owned_dir leaves a directory's readers be"
        );
        private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let error = format!("{:#}", owned_dir(&link).unwrap_err());
        assert!(error.contains("symbolic link"), "{error}");
    }

    #[test]
    fn files_are_never_written_or_read_through_what_was_there() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        fs::write(&victim, "victim").unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(create(&link, Readers::Owner).is_err());
        assert!(append(&link).is_err());
        let error = format!("{:#}", read(&link).unwrap_err());
        assert!(error.contains("symbolic link"), "{error}");
        replace(&link, b"new", Readers::Owner).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "victim");
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(mode(&link), 0o600);
        let owned = read(&link).unwrap().unwrap();
        assert_eq!((owned.text.as_str(), owned.others_may_read), ("new", false));
        fs::set_permissions(&link, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read(&link).unwrap().unwrap().others_may_read);
        fs::set_permissions(&link, fs::Permissions::from_mode(0o646)).unwrap();
        let error = format!("{:#}", read(&link).unwrap_err());
        assert!(error.contains("others may write"), "{error}");
        assert!(read(&root.path().join("none")).unwrap().is_none());
        let leftovers: Vec<_> = fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
