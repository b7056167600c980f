//! Who is asking: the user a request is made as, after authentication and impersonation.

/// The group every authenticated request belongs to; discovery and self-reviews are granted to it.
pub const AUTHENTICATED: &str = "system:authenticated";

/// The group that passes every authorization check, as on a real cluster.
pub const MASTERS: &str = "system:masters";

/// The group of every ServiceAccount.
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// The prefix of ServiceAccount user names (`system:serviceaccount:<namespace>:<name>`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The administrator: the in-process client and the admin token of `--kubeconfig-out`.
pub const ADMIN_USER: &str = "kmm-tui-admin";

/// The read-only user of the `viewer` context, bound to the `view` ClusterRole.
pub const VIEWER_USER: &str = "kmm-tui-viewer";

/// An authenticated user: a name and the groups RBAC subjects can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name RBAC `User` subjects match.
    pub name: String,
    /// The groups RBAC `Group` subjects match.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The administrator, who may do everything through membership of `system:masters`.
    pub fn admin() -> Self {
        Self {
            name: ADMIN_USER.to_owned(),
            groups: vec![MASTERS.to_owned(), AUTHENTICATED.to_owned()],
        }
    }

    /// The viewer, whose rights come from RBAC alone.
    pub fn viewer() -> Self {
        Self::named(VIEWER_USER, Vec::new())
    }

    /// A user with `groups`, plus `system:authenticated` (as kube-apiserver adds it to every authenticated user).
    pub fn named(name: &str, groups: Vec<String>) -> Self {
        let mut groups = groups;
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_owned());
        }
        Self {
            name: name.to_owned(),
            groups,
        }
    }

    /// The user a ServiceAccount authenticates as, with the groups kube-apiserver gives it.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            name: service_account_user(namespace, name),
            groups: vec![
                SERVICE_ACCOUNTS.to_owned(),
                format!("{SERVICE_ACCOUNTS}:{namespace}"),
                AUTHENTICATED.to_owned(),
            ],
        }
    }

    /// Whether the user bypasses authorization.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// What a connection's client certificate says about its holder, judged once when the connection is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PresentedCertificate {
    /// Signed by the cluster's CA, valid, for client authentication: the holder is this user.
    Trusted(UserInfo),
    /// Signed by someone else, expired, or naming no user (why): it authenticates no one.
    Untrusted(String),
}

/// The user name of a ServiceAccount.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The namespace and name of a ServiceAccount user name, if it is one.
pub fn parse_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_round_trip() {
        let user = UserInfo::service_account("kmm", "engine");
        assert_eq!(user.name, "system:serviceaccount:kmm:engine");
        assert_eq!(parse_service_account(&user.name), Some(("kmm", "engine")));
        assert!(
            user.groups
                .contains(&"system:serviceaccounts:kmm".to_owned())
        );
        assert_eq!(parse_service_account("alice"), None);
        assert_eq!(parse_service_account("system:serviceaccount:kmm"), None);
    }

    #[test]
    fn only_masters_bypass() {
        assert!(UserInfo::admin().is_master());
        assert!(!UserInfo::viewer().is_master());
        assert_eq!(UserInfo::viewer().groups, vec![AUTHENTICATED.to_owned()]);
    }
}
