//! nginx's answers on port 80: HTTP/1.1 with its default site, one page at `/`. Requests are read a whole head at
//! a time (and a body by its `Content-Length`), answered in order, and the connection is kept or closed as the
//! request asks; what is not HTTP gets 400 and the connection closed, as nginx does.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The longest request head read (nginx's default large header buffers hold 4 × 8 KiB).
const MAX_HEAD: usize = 32 * 1024;

/// The largest request body read and thrown away (nginx's `client_max_body_size` default, 1 MiB).
const MAX_BODY: usize = 1 << 20;

/// The page at `/`.
const WELCOME: &str = "<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>nginx is up in this simulated container and answers on port 80. Its default site has this one page.</p>
</body>
</html>
";

/// An answer to one request, and whether the connection closes after it.
#[derive(Debug, PartialEq, Eq)]
struct Reply {
    bytes: Vec<u8>,
    close: bool,
}

/// Answer the requests read from `connection` until the client or a request closes it.
pub(super) async fn answer(mut connection: DuplexStream) {
    let mut received = Vec::new();
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        while let Some(reply) = next_reply(&mut received) {
            if connection.write_all(&reply.bytes).await.is_err() || reply.close {
                let _ = connection.shutdown().await;
                return;
            }
        }
        match connection.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The reply to the first whole request in `received`, which is taken from it; None until one has arrived.
fn next_reply(received: &mut Vec<u8>) -> Option<Reply> {
    let Some(head_end) = find(received, b"\r\n\r\n") else {
        return (received.len() > MAX_HEAD).then(|| status(400, false, true));
    };
    let head = String::from_utf8_lossy(&received[..head_end]).into_owned();
    let Some(request) = Request::parse(&head) else {
        received.clear();
        return Some(status(400, false, true));
    };
    if request.body > MAX_BODY {
        received.clear();
        return Some(status(413, false, true));
    }
    let whole = head_end + 4 + request.body;
    if received.len() < whole {
        return None;
    }
    received.drain(..whole);
    let head_only = request.method == "HEAD";
    Some(match (request.method.as_str(), request.path()) {
        ("GET" | "HEAD", "/" | "/index.html") => page(200, WELCOME, head_only, request.close),
        ("GET" | "HEAD", _) => status(404, head_only, request.close),
        _ => status(405, false, request.close),
    })
}

/// What a request head says that matters to the answer.
struct Request {
    method: String,
    target: String,
    /// The length of its body.
    body: usize,
    /// Whether the connection closes after the answer.
    close: bool,
}

impl Request {
    /// Read a head (without its blank line); None when it is not HTTP/1.x.
    fn parse(head: &str) -> Option<Self> {
        let mut lines = head.split("\r\n");
        let mut words = lines.next()?.split(' ');
        let (method, target, version) = (words.next()?, words.next()?, words.next()?);
        if words.next().is_some()
            || method.is_empty()
            || !method.bytes().all(|b| b.is_ascii_uppercase())
            || !target.starts_with('/')
        {
            return None;
        }
        let mut close = match version {
            "HTTP/1.1" => false,
            "HTTP/1.0" => true,
            _ => return None,
        };
        let mut body = 0;
        for line in lines {
            let (name, value) = line.split_once(':')?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                body = value.parse().ok()?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // Chunked bodies are not read here: asking for one is answered as a bad request.
                return None;
            } else if name.eq_ignore_ascii_case("connection") {
                if value.eq_ignore_ascii_case("close") {
                    close = true;
                } else if value.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
        Some(Self {
            method: method.to_owned(),
            target: target.to_owned(),
            body,
            close,
        })
    }

    /// The path the target names, without its query.
    fn path(&self) -> &str {
        self.target.split(['?', '#']).next().unwrap_or("/")
    }
}

/// nginx's page for an error `code`.
fn status(code: u16, head_only: bool, close: bool) -> Reply {
    let page_text = format!(
        "<html>\n<head><title>{code} {reason}</title></head>\n<body>\n<center><h1>{code} {reason}</h1></center>\n\
         <hr><center>nginx</center>\n</body>\n</html>\n",
        reason = reason(code)
    );
    page(code, &page_text, head_only, close)
}

/// A `text/html` answer with `body`; a HEAD request gets the headers only.
fn page(code: u16, body: &str, head_only: bool, close: bool) -> Reply {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let date = jiff::fmt::strtime::format("%a, %d %b %Y %H:%M:%S GMT", &now).unwrap_or_default();
    let connection = if close { "close" } else { "keep-alive" };
    let mut bytes = format!(
        "HTTP/1.1 {code} {}\r\nServer: nginx\r\nDate: {date}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
         Connection: {connection}\r\n\r\n",
        reason(code),
        body.len()
    )
    .into_bytes();
    if !head_only {
        bytes.extend_from_slice(body.as_bytes());
    }
    Reply { bytes, close }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Not Allowed",
        413 => "Request Entity Too Large",
        _ => "Bad Request",
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status line, the headers by lowercase name, and the body of an answer.
    fn read(reply: &Reply) -> (String, Vec<(String, String)>, String) {
        let text = String::from_utf8(reply.bytes.clone()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().to_owned();
        let headers = lines
            .map(|l| {
                let (n, v) = l.split_once(": ").unwrap();
                (n.to_ascii_lowercase(), v.to_owned())
            })
            .collect();
        (status, headers, body.to_owned())
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
        &headers.iter().find(|(n, _)| n == name).unwrap().1
    }

    #[test]
    fn the_root_is_the_welcome_page_and_other_paths_are_not_found() {
        let mut received =
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                .to_vec();
        let first = next_reply(&mut received).unwrap();
        let (status, headers, body) = read(&first);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("<h1>Welcome to nginx!</h1>"), "{body}");
        assert_eq!(header(&headers, "content-type"), "text/html");
        assert_eq!(header(&headers, "content-length"), body.len().to_string());
        assert_eq!(header(&headers, "connection"), "keep-alive");
        assert!(!first.close);
        let second = next_reply(&mut received).unwrap();
        let (status, headers, _) = read(&second);
        assert_eq!(status, "HTTP/1.1 404 Not Found");
        assert_eq!(header(&headers, "connection"), "close");
        assert!(second.close);
        assert!(received.is_empty() && next_reply(&mut received).is_none());
    }

    #[test]
    fn a_request_is_answered_only_once_whole_and_a_body_is_read_past() {
        let mut received = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab".to_vec();
        assert_eq!(next_reply(&mut received), None);
        received.extend_from_slice(b"cdeHEAD / HTTP/1.0\r\n\r\n");
        assert_eq!(
            read(&next_reply(&mut received).unwrap()).0,
            "HTTP/1.1 405 Not Allowed"
        );
        let head = next_reply(&mut received).unwrap();
        let (status, headers, body) = read(&head);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(body, "");
        assert_eq!(
            header(&headers, "content-length"),
            WELCOME.len().to_string()
        );
        assert!(head.close, "HTTP/1.0 closes unless asked to keep alive");
    }

    #[test]
    fn what_is_not_http_is_a_bad_request_that_closes() {
        for garbage in [
            &b"HELLO\r\n\r\n"[..],
            b"GET / SMTP/1.0\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
        ] {
            let mut received = garbage.to_vec();
            let reply = next_reply(&mut received).unwrap();
            assert_eq!(read(&reply).0, "HTTP/1.1 400 Bad Request", "{garbage:?}");
            assert!(reply.close);
        }
        let mut endless = vec![b'a'; MAX_HEAD + 1];
        assert!(next_reply(&mut endless).unwrap().close);
    }
}
