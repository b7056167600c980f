//! Splitting a `sh -c` script into commands and their words: quotes, and the `;`, `&&`, `||` that join commands.
//! Pipes, redirections and substitutions are refused by name rather than misread.

/// When a command of a script runs, from the operator before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// First, or after `;`.
    Always,
    /// After `&&`: when the previous command succeeded.
    Succeeded,
    /// After `||`: when the previous command failed.
    Failed,
}

/// The commands of `script`, each with when it runs, or why the script is beyond the simulated shell.
pub fn parse(script: &str) -> Result<Vec<(When, Vec<String>)>, String> {
    let mut commands = Vec::new();
    let mut when = When::Always;
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(close) if close == c => break,
                        Some('\\') if c == '"' => text.extend(chars.next()),
                        Some(ch) => text.push(ch),
                        None => return Err(format!("unterminated quoted string: {c}")),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            ';' | '&' | '|' | '\n' => {
                words.extend(word.take());
                let next = match (c, chars.peek()) {
                    ('&', Some('&')) => When::Succeeded,
                    ('|', Some('|')) => When::Failed,
                    (';' | '\n', _) => When::Always,
                    ('|', _) => return Err("pipes are not simulated".into()),
                    _ => return Err("background jobs are not simulated".into()),
                };
                if next != When::Always {
                    chars.next();
                }
                if words.is_empty() {
                    if next == When::Always {
                        continue;
                    }
                    return Err(format!("syntax error near unexpected token `{c}{c}'"));
                }
                commands.push((when, std::mem::take(&mut words)));
                when = next;
            }
            '<' | '>' | '`' | '$' | '(' | ')' => {
                return Err(format!(
                    "`{c}` (redirection, substitution or subshell) is not simulated"
                ));
            }
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word.take());
    if !words.is_empty() {
        commands.push((when, words));
    } else if when != When::Always {
        return Err("syntax error: unexpected end of file".into());
    }
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn commands_split_on_operators_and_keep_quoted_words() {
        assert_eq!(
            parse("uname -r; echo 'a b' \"c\\\"d\" && false || exit 3").unwrap(),
            vec![
                (When::Always, argv(&["uname", "-r"])),
                (When::Always, argv(&["echo", "a b", "c\"d"])),
                (When::Succeeded, argv(&["false"])),
                (When::Failed, argv(&["exit", "3"])),
            ]
        );
        assert_eq!(
            parse("echo ''").unwrap(),
            vec![(When::Always, argv(&["echo", ""]))]
        );
    }

    #[test]
    fn what_is_not_simulated_is_refused() {
        assert!(parse("lsmod | grep kvm").unwrap_err().contains("pipes"));
        assert!(parse("cat > /etc/x").is_err());
        assert!(parse("echo $HOME").is_err());
        assert!(parse("echo 'open").is_err());
        assert!(parse("true &&").is_err());
    }
}
