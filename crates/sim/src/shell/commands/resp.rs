//! redis-server's answers on port 6379, in RESP: `PING` (and `PING message`), `ECHO` and `QUIT`, sent inline
//! (`PING\r\n`, what `nc` and telnet send) or as an array of bulk strings (what client libraries send). The
//! simulated server keeps no data, so every other command is an error.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The longest command read; longer input closes the connection, as redis does with its query buffer limit.
const MAX_COMMAND: usize = 64 * 1024;

/// The arguments of a command as the client sent them.
type Command = Vec<Vec<u8>>;

/// What the bytes received so far hold.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    /// A whole command, and how many bytes it took.
    Command(Command, usize),
    /// Not a whole command yet.
    Incomplete,
    /// Not RESP: the error to answer before closing.
    Invalid(&'static str),
}

/// Answer the commands read from `connection` until the client leaves or quits.
pub(super) async fn answer(mut connection: DuplexStream) {
    let mut received = Vec::new();
    let mut chunk = vec![0u8; 4 * 1024];
    loop {
        loop {
            match parse(&received) {
                Parsed::Command(command, used) => {
                    received.drain(..used);
                    if command.is_empty() {
                        continue;
                    }
                    let (reply, quit) = reply(&command);
                    if connection.write_all(&reply).await.is_err() || quit {
                        return;
                    }
                }
                Parsed::Incomplete if received.len() <= MAX_COMMAND => break,
                Parsed::Incomplete => return,
                Parsed::Invalid(error) => {
                    let _ = connection
                        .write_all(format!("-ERR Protocol error: {error}\r\n").as_bytes())
                        .await;
                    return;
                }
            }
        }
        match connection.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The reply to `command` (not empty), and whether the connection closes after it.
fn reply(command: &[Vec<u8>]) -> (Vec<u8>, bool) {
    let name = String::from_utf8_lossy(&command[0]).to_ascii_lowercase();
    let args = &command[1..];
    match (name.as_str(), args) {
        ("ping", []) => (b"+PONG\r\n".to_vec(), false),
        ("ping" | "echo", [message]) => (bulk(message), false),
        ("quit", _) => (b"+OK\r\n".to_vec(), true),
        ("ping" | "echo", _) => (
            format!("-ERR wrong number of arguments for '{name}' command\r\n").into_bytes(),
            false,
        ),
        _ => {
            let shown: String = String::from_utf8_lossy(&command[0])
                .chars()
                .take(128)
                .collect();
            (
                format!("-ERR unknown command '{shown}', with args beginning with: \r\n")
                    .into_bytes(),
                false,
            )
        }
    }
}

fn bulk(bytes: &[u8]) -> Vec<u8> {
    let mut reply = format!("${}\r\n", bytes.len()).into_bytes();
    reply.extend_from_slice(bytes);
    reply.extend_from_slice(b"\r\n");
    reply
}

/// The first command in `received`.
fn parse(received: &[u8]) -> Parsed {
    match received.first() {
        None => Parsed::Incomplete,
        Some(b'*') => parse_array(received),
        Some(_) => match line(received, 0) {
            // Inline: words separated by blanks, ending with a newline (`\r\n` or `\n`).
            Some((text, next)) => Parsed::Command(
                text.split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(<[u8]>::to_vec)
                    .collect(),
                next,
            ),
            None => Parsed::Incomplete,
        },
    }
}

/// `*N\r\n` then N bulk strings `$LEN\r\nBYTES\r\n`.
fn parse_array(received: &[u8]) -> Parsed {
    let Some((count, mut at)) = line(received, 1) else {
        return Parsed::Incomplete;
    };
    let Some(count) = number(count) else {
        return Parsed::Invalid("invalid multibulk length");
    };
    let mut command = Vec::new();
    for _ in 0..count {
        if at >= received.len() {
            return Parsed::Incomplete;
        }
        if received[at] != b'$' {
            return Parsed::Invalid("expected '$'");
        }
        let Some((length, start)) = line(received, at + 1) else {
            return Parsed::Incomplete;
        };
        let Some(length) = number(length).filter(|&l| l <= MAX_COMMAND) else {
            return Parsed::Invalid("invalid bulk length");
        };
        let end = start + length;
        if received.len() < end + 2 {
            return Parsed::Incomplete;
        }
        command.push(received[start..end].to_vec());
        at = end + 2;
    }
    Parsed::Command(command, at)
}

/// The line starting at `from` without its newline, and where the next one starts.
fn line(received: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let end = from + received.get(from..)?.iter().position(|&b| b == b'\n')?;
    let text = &received[from..end];
    Some((text.strip_suffix(b"\r").unwrap_or(text), end + 1))
}

fn number(text: &[u8]) -> Option<usize> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(words: &[&str]) -> Command {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn ping_comes_inline_or_as_an_array() {
        assert_eq!(parse(b"PING\r\n"), Parsed::Command(command(&["PING"]), 6));
        assert_eq!(parse(b"ping\n"), Parsed::Command(command(&["ping"]), 5));
        let array = b"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n";
        assert_eq!(
            parse(array),
            Parsed::Command(command(&["PING", "hi"]), array.len())
        );
        assert_eq!(parse(&array[..array.len() - 3]), Parsed::Incomplete);
        assert_eq!(parse(b"PI"), Parsed::Incomplete);
        assert!(matches!(parse(b"*x\r\n"), Parsed::Invalid(_)));
    }

    #[test]
    fn replies_are_resp() {
        assert_eq!(reply(&command(&["PING"])), (b"+PONG\r\n".to_vec(), false));
        assert_eq!(
            reply(&command(&["ping", "hi"])),
            (b"$2\r\nhi\r\n".to_vec(), false)
        );
        assert_eq!(reply(&command(&["QUIT"])), (b"+OK\r\n".to_vec(), true));
        let (unknown, close) = reply(&command(&["GET", "k"]));
        assert!(unknown.starts_with(b"-ERR unknown command 'GET'") && !close);
    }
}
