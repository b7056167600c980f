use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::shell::testing::{container, container_with, expect_with_input, run_in};
use crate::shell::{Limits, Sink, Stdio, run};

#[tokio::test]
async fn echo_and_cat_write_what_they_are_given() {
    let c = container();
    expect_with_input(
        &c,
        &[
            (&["echo", "a", "b"], "", "a b\n", "", 0),
            (&["echo"], "", "\n", "", 0),
            (&["echo", "-n", "x"], "", "x", "", 0),
            (&["echo", "-e", "a\\tb\\0101"], "", "a\tbA\n", "", 0),
            (&["echo", "-ne", "a\\cb"], "", "a", "", 0),
            (&["echo", "a\\tb"], "", "a\\tb\n", "", 0),
            (&["echo", "-x", "-n"], "", "-x -n\n", "", 0),
            (&["cat"], "hi\n", "hi\n", "", 0),
            (
                &["cat", "/etc/hostname", "-"],
                "in\n",
                "test-pod\nin\n",
                "",
                0,
            ),
            (&["cat", "/dev/null"], "", "", "", 0),
            (
                &["cat", "/nope", "/etc/hostname"],
                "",
                "test-pod\n",
                "cat: /nope: No such file or directory\n",
                1,
            ),
            (&["cat", "/tmp"], "", "", "cat: /tmp: Is a directory\n", 1),
            (&["cat", "-A"], "", "", "cat: invalid option -- 'A'\n", 1),
        ],
    )
    .await;
}

#[tokio::test]
async fn head_and_tail_keep_the_start_and_the_end() {
    let c = container();
    c.files.write("/tmp/n", b"1\n2\n3\n", false).unwrap();
    expect_with_input(
        &c,
        &[
            (&["head", "-n", "2"], "1\n2\n3\n", "1\n2\n", "", 0),
            (&["head", "-2"], "1\n2\n3\n", "1\n2\n", "", 0),
            (&["head", "-n1"], "1\n2\n3\n", "1\n", "", 0),
            (&["head", "-c", "3"], "1\n2\n3\n", "1\n2", "", 0),
            (
                &["head", "-c", "99999999999"],
                "1\n2\n3\n",
                "1\n2\n3\n",
                "",
                0,
            ),
            (
                &["head", "/tmp/n", "/tmp/n"],
                "",
                "==> /tmp/n <==\n1\n2\n3\n\n==> /tmp/n <==\n1\n2\n3\n",
                "",
                0,
            ),
            (
                &["head", "-n", "x"],
                "",
                "",
                "head: invalid number of lines: 'x'\n",
                1,
            ),
            (
                &["head", "/nope"],
                "",
                "",
                "head: cannot open '/nope' for reading: No such file or directory\n",
                1,
            ),
            (&["tail", "-n", "2"], "1\n2\n3\n", "2\n3\n", "", 0),
            (&["tail", "-1", "/tmp/n"], "", "3\n", "", 0),
            (&["tail", "-n", "+2"], "1\n2\n3\n", "2\n3\n", "", 0),
            (&["tail", "+3", "/tmp/n"], "", "3\n", "", 0),
            (&["tail", "-c", "2"], "1\n2\n3\n", "3\n", "", 0),
            (&["tail", "-c", "+5"], "1\n2\n3\n", "3\n", "", 0),
            (&["tail"], "a\n", "a\n", "", 0),
            (&["tail", "-n", "99999999999"], "1\n2\n", "1\n2\n", "", 0),
        ],
    )
    .await;
}

#[tokio::test]
async fn wc_counts_as_coreutils() {
    let c = container();
    c.files.write("/tmp/t", b"a b\nc\n", false).unwrap();
    expect_with_input(
        &c,
        &[
            (&["wc", "-l"], "a b\nc\n", "2\n", "", 0),
            (&["wc", "-w"], "a  b\n\tc", "3\n", "", 0),
            (&["wc", "-c"], "abc", "3\n", "", 0),
            (&["wc"], "a b\nc\n", "      2       3       6\n", "", 0),
            (&["wc", "-l", "/tmp/t"], "", "2 /tmp/t\n", "", 0),
            (
                &["wc", "/etc/hostname", "/tmp/t"],
                "",
                " 1  1  9 /etc/hostname\n 2  3  6 /tmp/t\n 3  4 15 total\n",
                "",
                0,
            ),
            (
                &["wc", "-l", "/nope"],
                "",
                "",
                "wc: /nope: No such file or directory\n",
                1,
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn tee_paths_and_the_environment() {
    let c = container();
    expect_with_input(
        &c,
        &[
            (&["tee", "/tmp/tee"], "x\n", "x\n", "", 0),
            (&["tee", "-a", "/tmp/tee"], "y\n", "y\n", "", 0),
            (&["cat", "/tmp/tee"], "", "x\ny\n", "", 0),
            (
                &["tee", "/nope/f"],
                "z\n",
                "z\n",
                "tee: /nope/f: No such file or directory\n",
                1,
            ),
            (&["basename", "/a/b/c.txt", ".txt"], "", "c\n", "", 0),
            (&["basename", "/a/b/"], "", "b\n", "", 0),
            (&["basename", "/"], "", "/\n", "", 0),
            (&["basename", ".txt", ".txt"], "", ".txt\n", "", 0),
            (&["basename"], "", "", "basename: missing operand\n", 1),
            (&["dirname", "/a/b/c"], "", "/a/b\n", "", 0),
            (&["dirname", "a/b/"], "", "a\n", "", 0),
            (&["dirname", "c"], "", ".\n", "", 0),
            (&["dirname", "/c"], "", "/\n", "", 0),
            (&["printenv", "HOSTNAME"], "", "test-pod\n", "", 0),
            (&["printenv", "NOPE"], "", "", "", 1),
            (
                &["printenv"],
                "",
                "PATH=/usr/local/bin:/usr/bin:/bin\nHOSTNAME=test-pod\n",
                "",
                0,
            ),
            (
                &["env"],
                "",
                "PATH=/usr/local/bin:/usr/bin:/bin\nHOSTNAME=test-pod\n",
                "",
                0,
            ),
            (&["env", "-i", "A=1", "B=2"], "", "A=1\nB=2\n", "", 0),
            (
                &["env", "-u", "PATH", "HOSTNAME=x"],
                "",
                "HOSTNAME=x\n",
                "",
                0,
            ),
        ],
    )
    .await;
    // With a command, the shell runs it in the changed environment.
    let ran = run_in(&c, &["env", "A=1", "printenv", "A"], None).await;
    assert_eq!((ran.stdout.as_str(), ran.status), ("1\n", 0));
}

#[tokio::test]
async fn yes_stops_at_the_output_limit() {
    let c = container_with(Limits {
        output_bytes: 10_000,
        ..Limits::default()
    });
    let ran = run_in(&c, &["yes"], None).await;
    assert_eq!(ran.status, 1);
    assert!(!ran.stdout.is_empty() && ran.stdout.len() <= 10_000);
    assert!(ran.stdout.lines().all(|l| l == "y"));
    let words = run_in(&c, &["yes", "a", "b"], None).await;
    assert!(words.stdout.starts_with("a b\na b\n"));
}

#[tokio::test(start_paused = true)]
async fn tail_f_prints_what_is_appended_and_never_exits() {
    let c = container();
    c.files.write("/tmp/log", b"one\n", false).unwrap();
    let written: Arc<Mutex<Vec<u8>>> = Arc::default();
    let kept = written.clone();
    let sink: Sink = Arc::new(move |_, bytes| kept.lock().unwrap().extend_from_slice(bytes));
    let argv: Vec<String> = ["tail", "-f", "/tmp/log"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let following = run(&c, &argv, Stdio { stdin: None, sink });
    let appending = async {
        c.clock.sleep(Duration::from_secs(5)).await;
        c.files.write("/tmp/log", b"two\n", true).unwrap();
        c.clock.sleep(Duration::from_secs(5)).await;
    };
    tokio::select! {
        _ = following => panic!("tail -f exited"),
        () = appending => {}
    }
    assert_eq!(written.lock().unwrap().as_slice(), b"one\ntwo\n");
}
