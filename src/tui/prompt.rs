//! The commands of the `:` prompt, in one table: the prompt parses and completes what is typed from it, an unknown
//! word is answered with its names, and help lists it, so no list of commands can fall behind another.

/// What a `:` command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptAction {
    /// Show the Modules pane.
    Modules,
    /// Show the Images pane.
    Images,
    /// Show the Nodes pane.
    Nodes,
    /// Show the Events pane.
    Events,
    /// Show the Shims pane.
    Shims,
    /// Show the ImageCaches pane.
    Caches,
    /// Show the Day-0 pane.
    Day0,
    /// Show every DRA device.
    Devices,
    /// Open the kernel upgrade planning pane, validating against a kernel when one is given.
    Preflight,
    /// Show who holds the engine.
    Engine,
    /// Show every cluster of the kubeconfig.
    Fleet,
    /// Show one namespace, or all.
    Namespace,
    /// Switch to another context, or list them.
    Context,
    /// Show help.
    Help,
    /// Leave the console.
    Quit,
}

/// One `:` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptCommand {
    /// The word typed after `:`.
    pub name: &'static str,
    /// Other words for the same command.
    pub aliases: &'static [&'static str],
    /// The argument it takes, for help (`NAME|all`), or empty.
    pub argument: &'static str,
    /// What it does, for help.
    pub description: &'static str,
    /// What it does, for the console.
    pub action: PromptAction,
}

impl PromptCommand {
    /// `:name ARGUMENT`, as help and messages write it.
    pub fn usage(&self) -> String {
        if self.argument.is_empty() {
            format!(":{}", self.name)
        } else {
            format!(":{} {}", self.name, self.argument)
        }
    }
}

const fn command(
    name: &'static str,
    argument: &'static str,
    description: &'static str,
    action: PromptAction,
) -> PromptCommand {
    PromptCommand {
        name,
        aliases: &[],
        argument,
        description,
        action,
    }
}

/// Every `:` command, in the order help lists them. A command may be typed by any start of its name of two
/// letters or more; the first in this order wins.
pub const PROMPT_COMMANDS: [PromptCommand; 15] = [
    command("modules", "", "Every Module", PromptAction::Modules),
    command(
        "images",
        "",
        "Every image of every Module",
        PromptAction::Images,
    ),
    command("nodes", "", "Every node", PromptAction::Nodes),
    command("events", "", "Recent events", PromptAction::Events),
    command(
        "shims",
        "",
        "Every Shim and its rollout",
        PromptAction::Shims,
    ),
    command(
        "caches",
        "",
        "Every ImageCache and its coverage",
        PromptAction::Caches,
    ),
    command(
        "day0",
        "",
        "Every ModuleDay0 and its pool's OS image",
        PromptAction::Day0,
    ),
    command(
        "devices",
        "",
        "Every DRA device: node, driver, pool, attributes, and the claim and pods holding it",
        PromptAction::Devices,
    ),
    command(
        "preflight",
        "[KERNEL]",
        "Plan a kernel upgrade; with a kernel, validate every Module against it",
        PromptAction::Preflight,
    ),
    command(
        "engine",
        "",
        "Who holds the engine, and handing it off or taking it over",
        PromptAction::Engine,
    ),
    command(
        "fleet",
        "",
        "Every cluster of the kubeconfig",
        PromptAction::Fleet,
    ),
    command(
        "ns",
        "NAME|all",
        "Show one namespace, or all of them",
        PromptAction::Namespace,
    ),
    command(
        "ctx",
        "[NAME]",
        "Switch to another context of the kubeconfig, or list them",
        PromptAction::Context,
    ),
    command("help", "", "Show this help", PromptAction::Help),
    PromptCommand {
        name: "q",
        aliases: &["quit", "q!"],
        argument: "",
        description: "Quit kmm-tui",
        action: PromptAction::Quit,
    },
];

/// The command `word` names: its name or an alias, else the first whose name starts with it (two letters or more).
pub fn find(word: &str) -> Option<&'static PromptCommand> {
    PROMPT_COMMANDS
        .iter()
        .find(|c| c.name == word || c.aliases.contains(&word))
        .or_else(|| {
            (word.len() >= 2)
                .then(|| PROMPT_COMMANDS.iter().find(|c| c.name.starts_with(word)))
                .flatten()
        })
}

/// Every name and alias, for completion.
pub fn words() -> impl Iterator<Item = &'static str> {
    PROMPT_COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
}

/// `:modules, :images, …`: every command, for the answer to a word that is none.
pub fn names() -> String {
    PROMPT_COMMANDS
        .iter()
        .map(|c| format!(":{}", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_prefixes_find_their_command() {
        assert_eq!(find("shims").map(|c| c.action), Some(PromptAction::Shims));
        assert_eq!(find("sh").map(|c| c.action), Some(PromptAction::Shims));
        assert_eq!(find("q!").map(|c| c.action), Some(PromptAction::Quit));
        assert_eq!(find("pre").map(|c| c.action), Some(PromptAction::Preflight));
        assert_eq!(find("s"), None);
        assert_eq!(find("bogus"), None);
    }
}
