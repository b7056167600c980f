//! The servers images start: they listen on their usual ports in the pod's network and run until their process is
//! killed, after what they print on starting.

use tokio::io::{AsyncReadExt, DuplexStream};

use super::{Status, http, resp};
use crate::network::Listener;
use crate::shell::io::Cx;

/// `/pause`, with any arguments: holds the pod's namespaces until killed, writing nothing.
pub(super) async fn pause() -> Status {
    std::future::pending().await
}

/// `nginx`, with any arguments: serves its default site on port 80 until killed, writing nothing on its standard
/// streams (nginx logs to its files); exits 1 when another process of the pod holds the port.
pub(super) async fn nginx(cx: &mut Cx<'_>) -> Status {
    let Some(listener) = listen(
        cx,
        80,
        "nginx: [emerg] bind() to 0.0.0.0:80 failed (98: Address already in use)",
    )?
    else {
        return Ok(1);
    };
    match listener.serve(http::answer).await {}
}

/// `postgres`: says it is ready, then accepts connections on 5432 until killed. It speaks no protocol: what a
/// client sends is read and dropped until it leaves.
pub(super) async fn postgres(cx: &mut Cx<'_>) -> Status {
    let Some(listener) = listen(
        cx,
        5432,
        "LOG:  could not bind IPv4 address \"0.0.0.0\": Address already in use",
    )?
    else {
        return Ok(1);
    };
    cx.stderr
        .print("LOG:  database system is ready to accept connections\n")?;
    match listener.serve(drain).await {}
}

/// `redis-server`: says it is ready, then answers on 6379 until killed.
pub(super) async fn redis_server(cx: &mut Cx<'_>) -> Status {
    let Some(listener) = listen(
        cx,
        6379,
        "Warning: Could not create server TCP listening socket *:6379: bind: Address already in use",
    )?
    else {
        return Ok(1);
    };
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let stamp = jiff::fmt::strtime::format("%d %b %Y %H:%M:%S%.3f", &now).unwrap_or_default();
    cx.stdout
        .print(&format!("1:M {stamp} * Ready to accept connections tcp\n"))?;
    match listener.serve(resp::answer).await {}
}

/// Listen on `port` of the pod, or say `in_use` on standard error (None) when another process holds it.
fn listen(
    cx: &mut Cx<'_>,
    port: u16,
    in_use: &str,
) -> Result<Option<Listener>, super::OutputLimit> {
    match cx.container.ports.listen(port) {
        Ok(listener) => Ok(Some(listener)),
        Err(_) => cx.stderr.print(&format!("{in_use}\n")).map(|()| None),
    }
}

/// Read and drop what a client sends until it leaves.
async fn drain(mut connection: DuplexStream) {
    let mut chunk = vec![0u8; 4 * 1024];
    while matches!(connection.read(&mut chunk).await, Ok(n) if n > 0) {}
}

/// `python` (and `perl`) with no arguments reads its program from standard input and, running none of it, exits 0
/// at its end. With arguments it would run a script: not simulated (None).
pub(super) async fn python(cx: &mut Cx<'_>, args: &[String]) -> Option<Status> {
    if !args.is_empty() {
        return None;
    }
    while cx.stdin.chunk().await.is_some() {}
    Some(Ok(0))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::shell::testing::{container, run_in};
    use crate::shell::{Sink, Stdio, run};

    #[tokio::test(start_paused = true)]
    async fn servers_run_until_killed_after_their_banner() {
        let c = container();
        let hour = Duration::from_secs(3600);
        for argv in [
            &["nginx", "-g", "daemon off;"][..],
            &["redis-server"],
            &["/pause"],
            &["postgres"],
            &["tail", "-f", "/dev/null"],
        ] {
            let written: Arc<Mutex<Vec<u8>>> = Arc::default();
            let kept = written.clone();
            let sink: Sink =
                Arc::new(move |_, bytes| kept.lock().unwrap().extend_from_slice(bytes));
            let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
            let running = run(&c, &argv, Stdio { stdin: None, sink });
            assert!(
                tokio::time::timeout(hour, running).await.is_err(),
                "{argv:?} exited"
            );
            let banner = String::from_utf8(written.lock().unwrap().clone()).unwrap();
            if argv[0] == "redis-server" {
                assert!(
                    banner.ends_with(" * Ready to accept connections tcp\n"),
                    "{banner}"
                );
                assert_eq!(banner.lines().count(), 1);
            } else if argv[0] == "postgres" {
                assert!(
                    banner.ends_with("ready to accept connections\n"),
                    "{banner}"
                );
            } else {
                assert_eq!(banner, "", "{argv:?}");
            }
        }
        let python = run_in(&c, &["python3"], Some(vec![b"print(1)\n"])).await;
        assert_eq!((python.stdout.as_str(), python.status), ("", 0));
        assert_eq!(run_in(&c, &["python3", "app.py"], None).await.status, 127);
        let perl = run_in(&c, &["perl"], Some(vec![b"print 1;\n"])).await;
        assert_eq!(perl.status, 0);
    }
}
