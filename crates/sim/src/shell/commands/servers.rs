//! The servers images start: they run until their process is killed, after what they print on starting.

use super::Status;
use crate::shell::io::Cx;

/// `nginx` and `/pause`, with any arguments: serve (nothing the simulation reaches) until killed, writing
/// nothing on their standard streams (nginx logs to its files).
pub async fn serve() -> Status {
    std::future::pending().await
}

/// `postgres`: says it is ready, then serves until killed.
pub async fn postgres(cx: &mut Cx<'_>) -> Status {
    cx.stderr
        .print("LOG:  database system is ready to accept connections\n")?;
    std::future::pending().await
}

/// `redis-server`: says it is ready, then serves until killed.
pub async fn redis_server(cx: &mut Cx<'_>) -> Status {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let stamp = jiff::fmt::strtime::format("%d %b %Y %H:%M:%S%.3f", &now).unwrap_or_default();
    cx.stdout
        .print(&format!("1:M {stamp} * Ready to accept connections tcp\n"))?;
    std::future::pending().await
}

/// `python` (and `perl`) with no arguments reads its program from standard input and, running none of it, exits 0
/// at its end. With arguments it would run a script: not simulated (None).
pub async fn python(cx: &mut Cx<'_>, args: &[String]) -> Option<Status> {
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
