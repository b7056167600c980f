//! The User-Agent the console and the controller send. kube's client sends none, so an API server's metrics and
//! audit log could only call them `unknown`; kube-apiserver's own components name themselves and their version
//! the same way (`kube-controller-manager/v1.34.1`), and the embedded API server counts requests by that first
//! word.

use http::HeaderValue;
use http::header::USER_AGENT;

/// Which of the binary's programs a client belongs to.
#[derive(Debug, Clone, Copy)]
pub enum Program {
    /// The interactive console.
    Console,
    /// `kmm-tui controller`, the engine running apart from the console.
    Controller,
    /// `kmm-tui install` and `uninstall`.
    Install,
}

impl Program {
    /// The User-Agent of the program's clients, such as `kmm-tui-console/0.1.0`.
    pub fn user_agent(self) -> HeaderValue {
        let name = match self {
            Program::Console => "kmm-tui-console",
            Program::Controller => "kmm-tui-controller",
            Program::Install => "kmm-tui-install",
        };
        HeaderValue::from_str(&format!("{name}/{}", env!("CARGO_PKG_VERSION")))
            .unwrap_or_else(|_| HeaderValue::from_static("kmm-tui"))
    }

    /// Have every request made with `config` name this program.
    pub fn name_in(self, config: &mut kube::Config) {
        config.headers.retain(|(name, _)| name != USER_AGENT);
        config.headers.push((USER_AGENT, self.user_agent()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_program_names_itself_and_its_version_once() {
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a URL"));
        Program::Console.name_in(&mut config);
        Program::Controller.name_in(&mut config);
        let agents: Vec<_> = config
            .headers
            .iter()
            .filter(|(name, _)| name == USER_AGENT)
            .map(|(_, value)| value.to_str().expect("ASCII"))
            .collect();
        assert_eq!(
            agents,
            [format!("kmm-tui-controller/{}", env!("CARGO_PKG_VERSION"))]
        );
    }
}
