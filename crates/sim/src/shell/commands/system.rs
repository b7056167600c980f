//! The system as a container sees it: `sleep` on the simulation's clock, `date` from the host's, `hostname`,
//! `uname` of the node's kernel, `uptime` of the container, `id` and `nproc`.

use std::time::Duration;

use super::view::machine;
use super::{Status, complain};
use crate::shell::io::Cx;

/// The kernel a node without a machine reports.
const DEFAULT_KERNEL: &str = "6.6.87";

/// The architecture a node without a machine reports.
const DEFAULT_ARCH: &str = "x86_64";

/// The processors a container sees: the simulation does not model them, so a small node's count.
const PROCESSORS: u32 = 4;

/// The longest `sleep` that is waited out; anything longer is the same as `sleep infinity`.
const LONGEST_SLEEP: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// One `sleep` operand in seconds (`1.5`, `2m`, `1h`, `1d`, `inf`); None when it is not one.
fn seconds(text: &str) -> Option<f64> {
    let (number, unit) = match text.char_indices().last() {
        Some((at, c)) if matches!(c, 's' | 'm' | 'h' | 'd') && !text.ends_with("inf") => {
            (&text[..at], c)
        }
        _ => (text, 's'),
    };
    let value: f64 = match number {
        "inf" | "infinity" => f64::INFINITY,
        _ if number.starts_with(|c: char| c.is_ascii_digit() || c == '.') => number.parse().ok()?,
        _ => return None,
    };
    let scale = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 1.0,
    };
    Some(value * scale)
}

/// `sleep NUMBER[smhd]...`: wait the sum of the operands, on the simulation's clock; `infinity` never ends.
pub(super) async fn sleep(cx: &mut Cx<'_>, args: &[String]) -> Status {
    if args.is_empty() {
        complain(cx, "sleep", "missing operand")?;
        return Ok(1);
    }
    let mut total = 0.0;
    for arg in args {
        match seconds(arg) {
            Some(s) => total += s,
            None => {
                complain(cx, "sleep", &format!("invalid time interval '{arg}'"))?;
                return Ok(1);
            }
        }
    }
    match Duration::try_from_secs_f64(total) {
        Ok(wait) if wait <= LONGEST_SLEEP => {
            cx.sleep(wait).await;
            Ok(0)
        }
        _ => std::future::pending().await,
    }
}

/// The host's clock now, in UTC: a container's `TZ` is UTC unless its image says otherwise.
fn now() -> jiff::Zoned {
    jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC)
}

/// `date [-u] [-R | -I[SPEC] | +FORMAT] [-d @SECONDS]`: the host's clock, as the container reads it.
pub(super) fn date(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let mut format = "%a %b %e %H:%M:%S %Z %Y".to_owned();
    let mut when = now();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let arg = arg.as_str();
        let date_value = match arg {
            "-d" | "--date" => Some(rest.next().map(String::as_str).unwrap_or("")),
            _ => arg
                .strip_prefix("--date=")
                .or(arg.strip_prefix("-d").filter(|v| !v.is_empty())),
        };
        if let Some(value) = date_value {
            let parsed = value
                .strip_prefix('@')
                .and_then(|s| s.trim().parse::<i64>().ok())
                .and_then(|s| jiff::Timestamp::from_second(s).ok());
            match parsed {
                Some(at) => when = at.to_zoned(jiff::tz::TimeZone::UTC),
                None => {
                    complain(cx, "date", &format!("invalid date '{value}'"))?;
                    return Ok(1);
                }
            }
            continue;
        }
        match arg {
            "-u" | "--utc" | "--universal" => {}
            "-R" | "--rfc-email" => format = "%a, %d %b %Y %H:%M:%S %z".into(),
            "-I" | "-Idate" | "--iso-8601" | "--iso-8601=date" => format = "%Y-%m-%d".into(),
            "-Ihours" | "--iso-8601=hours" => format = "%Y-%m-%dT%H%:z".into(),
            "-Iminutes" | "--iso-8601=minutes" => format = "%Y-%m-%dT%H:%M%:z".into(),
            "-Iseconds" | "--iso-8601=seconds" => format = "%Y-%m-%dT%H:%M:%S%:z".into(),
            _ if arg.starts_with('+') => format = arg[1..].to_owned(),
            _ if arg.starts_with('-') => {
                let letter = arg.chars().nth(1).unwrap_or('-');
                complain(cx, "date", &format!("invalid option -- '{letter}'"))?;
                return Ok(1);
            }
            _ => {
                complain(cx, "date", &format!("invalid date '{arg}'"))?;
                return Ok(1);
            }
        }
    }
    match jiff::fmt::strtime::format(&format, &when) {
        Ok(text) => cx.stdout.print(&format!("{text}\n")).map(|()| 0),
        Err(_) => {
            complain(cx, "date", &format!("invalid format '{format}'"))?;
            Ok(1)
        }
    }
}

/// `hostname`: the pod's name. Setting it is not permitted.
pub(super) fn hostname(cx: &mut Cx<'_>, args: &[String]) -> Status {
    match args.iter().find(|a| !a.starts_with('-')) {
        Some(_) => {
            complain(cx, "hostname", "sethostname: Operation not permitted")?;
            Ok(1)
        }
        None => cx
            .stdout
            .print(&format!("{}\n", cx.container.hostname))
            .map(|()| 0),
    }
}

/// `uname [-asnrvmo]`: the node's kernel, as every container on it sees it; its host name is the pod's.
pub(super) fn uname(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let node = machine(cx);
    let sysname = match node.as_ref().map(|m| m.operating_system.as_str()) {
        Some("linux" | "") | None => "Linux".to_owned(),
        Some(other) => other.to_owned(),
    };
    let release = node
        .as_ref()
        .map_or(DEFAULT_KERNEL.to_owned(), |m| m.kernel_version.clone());
    let arch = match node.as_ref().map(|m| m.architecture.as_str()) {
        Some("amd64") | None => "x86_64".to_owned(),
        Some("arm64") => "aarch64".to_owned(),
        Some(other) => other.to_owned(),
    };
    let arch = if arch.is_empty() {
        DEFAULT_ARCH.to_owned()
    } else {
        arch
    };
    let mut wanted = String::new();
    for arg in args {
        let letters = arg.strip_prefix('-').unwrap_or("");
        let letters = match letters {
            "-all" => "a",
            "-kernel-name" => "s",
            "-nodename" => "n",
            "-kernel-release" => "r",
            "-machine" => "m",
            _ => letters,
        };
        if letters.is_empty() {
            complain(cx, "uname", &format!("extra operand '{arg}'"))?;
            return Ok(1);
        }
        for letter in letters.chars() {
            if !"asnrvmpio".contains(letter) {
                complain(cx, "uname", &format!("invalid option -- '{letter}'"))?;
                return Ok(1);
            }
            wanted.push(letter);
        }
    }
    if wanted.is_empty() {
        wanted.push('s');
    }
    let all = wanted.contains('a');
    let fields = [
        ('s', sysname),
        ('n', cx.container.hostname.clone()),
        ('r', release),
        ('v', "#1 SMP".to_owned()),
        ('m', arch),
        ('o', "GNU/Linux".to_owned()),
    ];
    let line: Vec<&str> = fields
        .iter()
        .filter(|(letter, _)| all || wanted.contains(*letter))
        .map(|(_, value)| value.as_str())
        .collect();
    cx.stdout
        .print(&format!("{}\n", line.join(" ")))
        .map(|()| 0)
}

/// `uptime`: the host's clock, how long the container has run (in simulated time), no users, no load.
pub(super) fn uptime(cx: &mut Cx<'_>, _args: &[String]) -> Status {
    let up = cx
        .container
        .clock
        .now()
        .saturating_sub(cx.container.started)
        .as_secs();
    let (days, hours, minutes) = (up / 86400, up / 3600 % 24, up / 60 % 60);
    let mut since = String::new();
    if days > 0 {
        let plural = if days == 1 { "" } else { "s" };
        since.push_str(&format!("{days} day{plural}, "));
    }
    if hours > 0 {
        since.push_str(&format!("{hours:2}:{minutes:02}"));
    } else {
        since.push_str(&format!("{minutes} min"));
    }
    let clock = jiff::fmt::strtime::format("%H:%M:%S", &now()).unwrap_or_default();
    cx.stdout
        .print(&format!(
            " {clock} up {since},  0 users,  load average: 0.00, 0.00, 0.00\n"
        ))
        .map(|()| 0)
}

/// `id [-u | -g | -G] [-n]`: root.
pub(super) fn id(cx: &mut Cx<'_>, args: &[String]) -> Status {
    let letters: String = args.iter().filter_map(|a| a.strip_prefix('-')).collect();
    if let Some(bad) = letters.chars().find(|c| !"ugGnr".contains(*c)) {
        complain(cx, "id", &format!("invalid option -- '{bad}'"))?;
        return Ok(1);
    }
    let name = letters.contains('n');
    let text = if letters.contains(['u', 'g', 'G']) {
        if name { "root" } else { "0" }
    } else {
        "uid=0(root) gid=0(root) groups=0(root)"
    };
    cx.stdout.print(&format!("{text}\n")).map(|()| 0)
}

/// `nproc`: the processors the container may use.
pub(super) fn nproc(cx: &mut Cx<'_>, _args: &[String]) -> Status {
    cx.stdout.print(&format!("{PROCESSORS}\n")).map(|()| 0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::shell::testing::{container, run_in};

    #[tokio::test(start_paused = true)]
    async fn sleep_waits_on_the_simulated_clock() {
        let c = container();
        let before = c.clock.now();
        let ran = run_in(&c, &["sleep", "1.5", "1m", "1h"], None).await;
        assert_eq!(ran.status, 0);
        assert_eq!(c.clock.now() - before, Duration::from_millis(3_661_500));
        let bad = run_in(&c, &["sleep", "soon"], None).await;
        assert_eq!(
            (bad.stderr.as_str(), bad.status),
            ("sleep: invalid time interval 'soon'\n", 1)
        );
        let missing = run_in(&c, &["sleep"], None).await;
        assert_eq!(
            (missing.stderr.as_str(), missing.status),
            ("sleep: missing operand\n", 1)
        );
        let forever = run_in(&c, &["sleep", "infinity"], None);
        assert!(
            tokio::time::timeout(Duration::from_secs(3600 * 24 * 365), forever)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn date_prints_the_host_clock_as_asked() {
        let c = container();
        let default = run_in(&c, &["date"], None).await.stdout;
        let pattern = regex::Regex::new(
            r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 1-3][0-9] \d\d:\d\d:\d\d UTC \d{4}\n$",
        )
        .unwrap();
        assert!(pattern.is_match(&default), "{default}");
        let cases: &[(&[&str], &str, i32)] = &[
            (
                &["date", "-u", "-d", "@0"],
                "Thu Jan  1 00:00:00 UTC 1970\n",
                0,
            ),
            (
                &["date", "-d", "@86399", "+%Y-%m-%d %H:%M:%S %s %j"],
                "1970-01-01 23:59:59 86399 001\n",
                0,
            ),
            (&["date", "-d", "@0", "-I"], "1970-01-01\n", 0),
            (
                &["date", "-d", "@0", "-Iseconds"],
                "1970-01-01T00:00:00+00:00\n",
                0,
            ),
            (
                &["date", "-d", "@0", "-R"],
                "Thu, 01 Jan 1970 00:00:00 +0000\n",
                0,
            ),
            (&["date", "-x"], "", 1),
        ];
        for (argv, stdout, status) in cases {
            let ran = run_in(&c, argv, None).await;
            assert_eq!(
                (ran.stdout.as_str(), ran.status),
                (*stdout, *status),
                "{argv:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn identity_and_uptime_of_the_container() {
        let c = container();
        let cases: &[(&[&str], &str, i32)] = &[
            (&["hostname"], "test-pod\n", 0),
            (&["whoami"], "root\n", 0),
            (&["id"], "uid=0(root) gid=0(root) groups=0(root)\n", 0),
            (&["id", "-u"], "0\n", 0),
            (&["id", "-un"], "root\n", 0),
            (&["nproc"], "4\n", 0),
            (&["uname"], "Linux\n", 0),
            (&["uname", "-sr"], "Linux 6.6.87\n", 0),
            (
                &["uname", "-a"],
                "Linux test-pod 6.6.87 #1 SMP x86_64 GNU/Linux\n",
                0,
            ),
            (&["uname", "-q"], "", 1),
        ];
        for (argv, stdout, status) in cases {
            let ran = run_in(&c, argv, None).await;
            assert_eq!(
                (ran.stdout.as_str(), ran.status),
                (*stdout, *status),
                "{argv:?}"
            );
        }
        c.clock
            .sleep(Duration::from_secs(2 * 86400 + 3 * 3600 + 4 * 60))
            .await;
        let up = run_in(&c, &["uptime"], None).await.stdout;
        assert!(
            up.contains(" up 2 days,  3:04,  0 users,  load average: 0.00, 0.00, 0.00\n"),
            "{up}"
        );
    }
}
