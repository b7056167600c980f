use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use tokio::sync::mpsc;

use super::super::testing::{Ran, container, container_with, run_in, sh};
use super::super::{Limits, Sink, Stdio};

/// Run each script with `sh -c` and compare what it wrote and its status.
async fn table(cases: &[(&str, &str, &str, i32)]) {
    for (script, stdout, stderr, status) in cases {
        let ran = sh(script).await;
        assert_eq!(
            ran,
            Ran {
                stdout: (*stdout).to_owned(),
                stderr: (*stderr).to_owned(),
                status: *status,
            },
            "script: {script}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn words_quotes_and_comments() {
    table(&[
        ("echo a   b", "a b\n", "", 0),
        ("echo 'a   b' \"c  d\"", "a   b c  d\n", "", 0),
        ("echo a\\ b \\$x", "a b $x\n", "", 0),
        ("echo a # a comment", "a\n", "", 0),
        ("echo a#b", "a#b\n", "", 0),
        ("echo \"a\\\"b\" 'it''s'", "a\"b its\n", "", 0),
        ("echo x\\\ny", "xy\n", "", 0),
        ("echo \"\" | cat", "\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn parameters_expand() {
    table(&[
        ("X=1; echo $X ${X} \"$X\"", "1 1 1\n", "", 0),
        (
            "echo ${U:-dflt} ${U-d2}; E=; echo ${E:-e1} ${E-e2}.",
            "dflt d2\ne1 .\n",
            "",
            0,
        ),
        ("echo ${U:=set}; echo $U", "set\nset\n", "", 0),
        ("X=1; echo ${X:+alt} ${U:+alt}.", "alt .\n", "", 0),
        ("X=hello; echo ${#X}", "5\n", "", 0),
        ("false; echo $?; true; echo $?", "1\n0\n", "", 0),
        (
            "set -- a 'b c' d; echo $#; for x in \"$@\"; do echo \"<$x>\"; done",
            "3\n<a>\n<b c>\n<d>\n",
            "",
            0,
        ),
        (
            "set -- a 'b c'; for x in $@; do echo \"<$x>\"; done",
            "<a>\n<b>\n<c>\n",
            "",
            0,
        ),
        ("set -- a b; IFS=,; echo \"$*\"", "a,b\n", "", 0),
        ("set -- a b c; echo $1 $3 ${2}", "a c b\n", "", 0),
        ("echo $0", "sh\n", "", 0),
        (
            "case $$ in *[!0-9]*) echo bad;; *) echo number;; esac",
            "number\n",
            "",
            0,
        ),
        (
            "F=a.tar.gz; echo ${F%.*} ${F%%.*} ${F#*.} ${F##*.}",
            "a.tar a tar.gz gz\n",
            "",
            0,
        ),
        ("echo ${U?is missing}", "", "sh: U: is missing\n", 2),
        ("X='a  b'; echo $X; echo \"$X\"", "a b\na  b\n", "", 0),
        (
            "X=a:b::c; IFS=:; for f in $X; do echo \"<$f>\"; done",
            "<a>\n<b>\n<>\n<c>\n",
            "",
            0,
        ),
        (
            "E=; for f in $E; do echo no; done; for f in \"$E\"; do echo \"<$f>\"; done",
            "<>\n",
            "",
            0,
        ),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn command_and_arithmetic_substitution() {
    table(&[
        ("echo $(echo a; echo b)", "a b\n", "", 0),
        ("X=\"$(echo a; echo; echo)\"; echo \"[$X]\"", "[a]\n", "", 0),
        ("echo `echo back`", "back\n", "", 0),
        ("echo $(echo $(echo nested))", "nested\n", "", 0),
        ("X=$(false); echo $?", "1\n", "", 0),
        (
            "echo $((1+2)) $((7/2)) $((7%3)) $((2*(3+4)))",
            "3 3 1 14\n",
            "",
            0,
        ),
        (
            "i=4; echo $((i*2)) $(($i-1)) $((i>3 && i<5)) $((i==4 || 0))",
            "8 3 1 1\n",
            "",
            0,
        ),
        (
            "echo $((1/0))",
            "",
            "sh: arithmetic expression: division by zero: \"1/0\"\n",
            2,
        ),
        (
            "i=0; until case $i in 3) true;; *) false;; esac; do i=$((i+1)); done; echo $i",
            "3\n",
            "",
            0,
        ),
        ("echo $( (echo sub) )", "sub\n", "", 0),
        ("X=$(exit 4); echo $?", "4\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn lists_and_pipelines() {
    table(&[
        ("echo a; echo b\necho c", "a\nb\nc\n", "", 0),
        (
            "true && echo yes; false && echo no; false || echo or",
            "yes\nor\n",
            "",
            0,
        ),
        ("true || echo no; echo $?", "0\n", "", 0),
        ("echo piped | cat | cat", "piped\n", "", 0),
        ("echo a | true; echo $?", "0\n", "", 0),
        ("echo a | false", "", "", 1),
        ("! true; echo $?; ! false; echo $?", "1\n0\n", "", 0),
        ("X=1; echo 2 | X=2; echo $X", "1\n", "", 0),
        ("echo a |\n cat", "a\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn redirections() {
    table(&[
        (
            "echo out >/tmp/f; echo more >>/tmp/f; cat /tmp/f",
            "out\nmore\n",
            "",
            0,
        ),
        (
            "echo a > /tmp/f; echo b > /tmp/f; cat < /tmp/f",
            "b\n",
            "",
            0,
        ),
        ("nope 2>/dev/null; echo $?", "127\n", "", 0),
        ("nope 2>&1 | cat", "nope: not simulated\n", "", 0),
        ("echo err >&2", "", "err\n", 0),
        ("echo err 1>&2", "", "err\n", 0),
        (
            "{ echo o; nope; } >/tmp/both 2>&1; cat /tmp/both",
            "o\nnope: not simulated\n",
            "",
            0,
        ),
        (
            "{ echo o; nope; } &>/tmp/both; cat /tmp/both",
            "o\nnope: not simulated\n",
            "",
            0,
        ),
        (
            "nope 2>/tmp/e; nope 2>>/tmp/e; cat /tmp/e",
            "nope: not simulated\nnope: not simulated\n",
            "",
            0,
        ),
        ("echo x >/dev/null", "", "", 0),
        (
            "echo x >/missing/f; echo $?",
            "1\n",
            "sh: cannot create /missing/f: No such file or directory\n",
            0,
        ),
        (
            "cat </missing || echo fallback",
            "fallback\n",
            "sh: /missing: No such file or directory\n",
            0,
        ),
        (">/tmp/empty; cat /tmp/empty; echo .", ".\n", "", 0),
        (
            "cat <<EOF\nhello $((1+1))\n  there\nEOF\necho after",
            "hello 2\n  there\nafter\n",
            "",
            0,
        ),
        ("cat <<'EOF'\n$HOME `x`\nEOF", "$HOME `x`\n", "", 0),
        ("cat <<-EOF\n\t\tindented\n\tEOF", "indented\n", "", 0),
        ("cat <<A; cat <<B\na\nA\nb\nB", "a\nb\n", "", 0),
        ("X=$(cat <<EOF\ninside\nEOF\n); echo $X", "inside\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn compound_commands() {
    table(&[
        ("if true; then echo t; else echo f; fi", "t\n", "", 0),
        (
            "if false; then echo t; elif true; then echo e; else echo f; fi",
            "e\n",
            "",
            0,
        ),
        ("if false; then echo t; fi; echo $?", "0\n", "", 0),
        ("for i in 1 2 3; do echo $i; done", "1\n2\n3\n", "", 0),
        ("set -- x y; for a; do echo $a; done", "x\ny\n", "", 0),
        ("for i in 1 2 3; do echo $i; break; done", "1\n", "", 0),
        (
            "for i in 1 2; do for j in a b; do echo $i$j; continue 2; done; done",
            "1a\n2a\n",
            "",
            0,
        ),
        (
            "for i in 1 2; do for j in a b; do break 2; done; echo no; done; echo end",
            "end\n",
            "",
            0,
        ),
        ("while false; do :; done; echo $?", "0\n", "", 0),
        (
            "n=0; while true; do n=$((n+1)); case $n in 3) break;; esac; done; echo $n",
            "3\n",
            "",
            0,
        ),
        (
            "case hello in h*) echo h;; *) echo other;; esac",
            "h\n",
            "",
            0,
        ),
        ("case b in a|b) echo ab;; esac", "ab\n", "", 0),
        ("case x in a) echo a;; esac; echo $?", "0\n", "", 0),
        (
            "X='*'; case a in \"$X\") echo quoted;; $X) echo glob;; esac",
            "glob\n",
            "",
            0,
        ),
        ("case a.txt in (*.txt) echo t;; esac", "t\n", "", 0),
        ("case 5 in [0-9]) echo digit;; esac", "digit\n", "", 0),
        ("{ echo a; echo b; } | cat", "a\nb\n", "", 0),
        ("X=1; (X=2; echo $X); echo $X", "2\n1\n", "", 0),
        ("(exit 3); echo $?", "3\n", "", 0),
        ("cd /tmp; (cd /); pwd", "/tmp\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn functions() {
    table(&[
        ("f() { echo \"f:$1:$#\"; }; f a b", "f:a:2\n", "", 0),
        ("f() { return 3; echo no; }; f; echo $?", "3\n", "", 0),
        ("f()\n{\n echo multi\n}\nf", "multi\n", "", 0),
        ("f() { X=inside; }; f; echo $X", "inside\n", "", 0),
        (
            "set -- outer; f() { echo $1; }; f inner; echo $1",
            "inner\nouter\n",
            "",
            0,
        ),
        (
            "echo() { command echo wrapped \"$@\"; }; echo x",
            "wrapped x\n",
            "",
            0,
        ),
        ("f() ( X=sub ); X=top; f; echo $X", "top\n", "", 0),
        ("f() { echo $1; }; /bin/f x", "x\n", "", 0),
        (
            "X=g; f() { local X=l Y; Y=y; echo $X$Y; }; Y=gy; f; echo $X$Y",
            "ly\nggy\n",
            "",
            0,
        ),
        ("local X=1", "", "sh: local: not in a function\n", 2),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn assignments_and_the_environment() {
    table(&[
        ("X=1 sh -c 'echo $X'; echo \"[$X]\"", "1\n[]\n", "", 0),
        (
            "X=1; sh -c 'echo \"[$X]\"'; export X; sh -c 'echo $X'",
            "[]\n1\n",
            "",
            0,
        ),
        ("export Y=2; sh -c 'echo $Y'", "2\n", "", 0),
        ("echo $HOSTNAME", "test-pod\n", "", 0),
        ("X=1; unset X; echo \"[$X]\"", "[]\n", "", 0),
        ("f() { :; }; unset -f f; f", "", "f: not simulated\n", 127),
        ("env -i A=1 sh -c 'echo [$A$HOSTNAME]'", "[1]\n", "", 0),
        ("env A=2 sh -c 'echo $A$HOSTNAME'", "2test-pod\n", "", 0),
        (
            "export -p | cat",
            "export HOSTNAME='test-pod'\nexport PATH='/usr/local/bin:/usr/bin:/bin'\n",
            "",
            0,
        ),
        (
            "X=\"it's\"; set | cat",
            "HOSTNAME='test-pod'\nPATH='/usr/local/bin:/usr/bin:/bin'\nX='it'\\''s'\n",
            "",
            0,
        ),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn shell_builtins() {
    table(&[
        (":; echo $?", "0\n", "", 0),
        ("exit 5; echo no", "", "", 5),
        ("exit", "", "", 0),
        ("false; exit", "", "", 1),
        ("exit x", "", "sh: exit: Illegal number: x\n", 2),
        (
            "cd /tmp && pwd; cd /nope; echo $?",
            "/tmp\n1\n",
            "sh: cd: /nope: No such file or directory\n",
            0,
        ),
        ("cd /etc; cd ..; pwd; cd; pwd", "/\n/\n", "", 0),
        ("cd /tmp; cd /etc; cd - >/dev/null; pwd", "/tmp\n", "", 0),
        ("echo hi >/tmp/f; cd /tmp; cat f", "hi\n", "", 0),
        (
            "set -- a b c; shift; echo $@; shift 2; echo $#; shift; echo $?",
            "b c\n0\n1\n",
            "sh: shift: can't shift that many\n",
            0,
        ),
        ("eval 'echo one; X=2'; echo $X", "one\n2\n", "", 0),
        ("C='echo hi'; eval \"$C\"", "hi\n", "", 0),
        (
            "exec sh -c 'echo replaced; exit 6'; echo no",
            "replaced\n",
            "",
            6,
        ),
        ("exec nope", "", "nope: not simulated\n", 127),
        (
            "exec >/tmp/log; echo $?",
            "2\n",
            "sh: exec: redirecting the shell's own streams is not simulated\n",
            0,
        ),
        (
            "echo 'echo sourced $1; S=1; return 4; echo no' >/tmp/lib; . /tmp/lib arg; echo $? $S",
            "sourced arg\n4 1\n",
            "",
            0,
        ),
        ("echo 'echo src' >/tmp/lib; source /tmp/lib", "src\n", "", 0),
        ("sh -c 'exit 7'; echo $?", "7\n", "", 0),
        ("sh -c 'echo $0 $1 $2' name a b", "name a b\n", "", 0),
        ("sh -ec 'false; echo no'; echo $?", "1\n", "", 0),
        ("bash -c 'echo from bash'", "from bash\n", "", 0),
        ("/bin/sh -c 'echo path'", "path\n", "", 0),
        (
            "f() { :; }; command -v f cd; command -v nope; echo $?",
            "f\ncd\n1\n",
            "",
            0,
        ),
        ("type cd", "cd is a shell builtin\n", "", 0),
        ("wait; trap 'echo bye' EXIT; echo $?", "0\nbye\n", "", 0),
        (
            "trap 'echo bye $?' EXIT; trap '' INT; exit 3",
            "bye 3\n",
            "",
            3,
        ),
        (
            "sh -c 'trap \"echo inner\" 0; echo run'; echo $?",
            "run\ninner\n0\n",
            "",
            0,
        ),
        (
            "trap 'echo no' EXIT; trap - EXIT; (trap 'echo sub' EXIT; echo in); echo out",
            "in\nsub\nout\n",
            "",
            0,
        ),
        ("/usr/bin/frob a", "", "/usr/bin/frob: not simulated\n", 127),
        (
            "echo 'echo script $1' >/tmp/s.sh; /tmp/s.sh one; sh /tmp/s.sh two",
            "script one\nscript two\n",
            "",
            0,
        ),
        ("cd /tmp; echo 'echo rel' >s; ./s", "rel\n", "", 0),
        (
            "sh /tmp/missing",
            "",
            "sh: cannot open /tmp/missing: No such file\n",
            127,
        ),
        ("timeout 5 sh -c 'exit 3'; echo $?", "3\n", "", 0),
        (
            "timeout x true",
            "",
            "sh: timeout: invalid time interval 'x'\n",
            125,
        ),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn read_takes_lines_of_standard_input() {
    table(&[
        (
            "echo 'a b c' | { read x y; echo \"$x|$y\"; }",
            "a|b c\n",
            "",
            0,
        ),
        (
            "echo '  lead  ' | { read l; echo \"[$l]\"; }",
            "[lead]\n",
            "",
            0,
        ),
        (
            "cat <<'EOF' | { read -r r; case $r in 'x\\y') echo raw;; esac; }\nx\\y\nEOF",
            "raw\n",
            "",
            0,
        ),
        (
            "cat <<'EOF' | { read v; echo \"$v\"; }\na\\ b\\\nc\nEOF",
            "a bc\n",
            "",
            0,
        ),
        ("echo reply | { read; echo $REPLY; }", "reply\n", "", 0),
        ("read x </dev/null; echo $?", "1\n", "", 0),
        ("echo a:b | { IFS=: read p q; echo $q $p; }", "b a\n", "", 0),
        (
            "cat <<EOF | { while read l; do echo \"<$l>\"; done; }\none\ntwo\nEOF",
            "<one>\n<two>\n",
            "",
            0,
        ),
    ])
    .await;
    let ran = run_in(
        &container(),
        &["sh", "-c", "read a; read b; echo $b $a"],
        Some(vec![b"1\n2", b"\n"]),
    )
    .await;
    assert_eq!(ran.stdout, "2 1\n");
}

#[tokio::test(start_paused = true)]
async fn set_options() {
    table(&[
        ("set -e; true; false; echo no", "", "", 1),
        (
            "set -e; false || true; if false; then :; fi; ! true; false && true; echo survived",
            "survived\n",
            "",
            0,
        ),
        ("set -e; f() { false; echo no; }; f", "", "", 1),
        ("set -e; (false); echo no", "", "", 1),
        ("set -u; echo $NOPE", "", "sh: NOPE: parameter not set\n", 2),
        ("set -u; echo ${NOPE:-ok}", "ok\n", "", 0),
        ("set -x; echo traced", "traced\n", "+ echo traced\n", 0),
        ("set -eu; set +e; false; echo $-", "u\n", "", 0),
        (
            "set -o pipefail; false | true; echo $?; set +o pipefail; false | true; echo $?",
            "1\n0\n",
            "",
            0,
        ),
        ("sh -o pipefail -c 'false | true'; echo $?", "1\n", "", 0),
        ("set -C; echo no", "", "sh: set: -C: not simulated\n", 2),
        ("set -o vi", "", "sh: set: -o vi: not simulated\n", 2),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_tilde_is_the_home_directory() {
    table(&[
        (
            "HOME=/root; echo ~ ~/x '~' a~; X=~/y; echo $X",
            "/root /root/x ~ a~\n/root/y\n",
            "",
            0,
        ),
        ("echo ~", "~\n", "", 0),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn writing_past_the_file_limit_fails_the_command() {
    let c = container_with(Limits {
        file_bytes: 64,
        ..Limits::default()
    });
    let script = format!(
        "echo {} >/tmp/big; echo $?; cat /tmp/big; echo small >/tmp/big; cat /tmp/big",
        "x".repeat(100)
    );
    let ran = run_in(&c, &["sh", "-c", &script], None).await;
    assert_eq!(ran.stdout, "1\nsmall\n");
    assert_eq!(
        ran.stderr,
        "sh: write error: /tmp/big: No space left on device\n"
    );
}

#[test]
fn a_busy_script_gives_its_thread_back() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let c = container_with(Limits {
            steps_without_wait: 100_000,
            ..Limits::default()
        });
        let shell =
            tokio::spawn(
                async move { run_in(&c, &["sh", "-c", "while :; do :; done"], None).await },
            );
        // On one thread, this task runs only if the shell yields while it is busy.
        let other = tokio::spawn(async {});
        other.await.unwrap();
        assert!(!shell.is_finished());
        assert_eq!(shell.await.unwrap().status, 124);
    });
}

#[tokio::test(start_paused = true)]
async fn pathname_expansion_uses_the_container_files() {
    let c = container();
    let script = "cd /tmp; for f in a.txt b.txt c.log .hidden; do echo x >$f; done; \
                  echo *.txt; echo /tmp/*.log; echo *.none; echo '*.txt'; echo \\*; echo ?.txt; echo [ab].txt; echo *; set -f; echo *";
    let ran = run_in(&c, &["sh", "-c", script], None).await;
    assert_eq!(
        ran.stdout,
        "a.txt b.txt\n/tmp/c.log\n*.none\n*.txt\n*\na.txt b.txt\na.txt b.txt\na.txt b.txt c.log\n*\n"
    );
}

#[tokio::test(start_paused = true)]
async fn syntax_errors_and_background_jobs_are_refused() {
    table(&[
        (
            "echo a; if true; then echo b",
            "",
            "sh: syntax error: unexpected end of file (expecting 'fi')\n",
            2,
        ),
        ("echo )", "", "sh: syntax error: unexpected ')'\n", 2),
        ("fi", "", "sh: syntax error: unexpected word 'fi'\n", 2),
        (
            "echo 'open",
            "",
            "sh: syntax error: unexpected end of file (expecting \"'\")\n",
            2,
        ),
        (
            "sleep 1 &",
            "",
            "sh: background jobs (&) are not simulated\n",
            2,
        ),
        (
            "echo a & echo b",
            "",
            "sh: background jobs (&) are not simulated\n",
            2,
        ),
        (
            "echo ${x!}",
            "",
            "sh: syntax error: unexpected character in ${}: bad substitution\n",
            2,
        ),
        (
            "eval 'if'; echo no",
            "",
            "sh: syntax error: unexpected end of file (expecting 'then')\n",
            2,
        ),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn exec_form_runs_one_command_without_parsing() {
    let c = container();
    let ran = run_in(&c, &["echo", "$HOME", "a;b"], None).await;
    assert_eq!(ran.stdout, "$HOME a;b\n");
    let ran = run_in(&c, &["/usr/bin/nothing-here"], None).await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("/usr/bin/nothing-here: not simulated\n", 127)
    );
    let ran = run_in(&c, &["/bin/bash", "-c", "exit 9"], None).await;
    assert_eq!(ran.status, 9);
}

#[tokio::test(start_paused = true)]
async fn an_interactive_shell_reads_commands_as_they_come() {
    let c = container();
    let ran = run_in(
        &c,
        &["sh"],
        Some(vec![
            b"echo a\n",
            b"for i in 1 2\n",
            b"do echo $i; done\nexit 3\n",
        ]),
    )
    .await;
    assert_eq!(
        ran,
        Ran {
            stdout: "a\n1\n2\n".into(),
            stderr: String::new(),
            status: 3
        }
    );

    let ran = run_in(
        &c,
        &["sh", "-i"],
        Some(vec![
            b"echo 'multi\n",
            b"line'\nfi\necho still\n",
            b"read x\nfrom stdin\necho $x",
        ]),
    )
    .await;
    assert_eq!(ran.stdout, "multi\nline\nstill\nfrom stdin\n");
    assert_eq!(ran.stderr, "sh: syntax error: unexpected word 'fi'\n");
    assert_eq!(ran.status, 0);

    let ran = run_in(
        &c,
        &["sh"],
        Some(vec![
            b"cat <<EOF\n",
            b"doc\n",
            b"EOF\n",
            b"set -u; echo $NOPE; echo same line\necho next\n",
        ]),
    )
    .await;
    assert_eq!(ran.stdout, "doc\nnext\n");

    let ran = run_in(&c, &["sh"], Some(vec![b"if true; then\n"])).await;
    assert_eq!(ran.status, 2);

    let ran = run_in(
        &c,
        &["sh", "-c", "sh; echo after $?"],
        Some(vec![b"echo inner; exit 4\n"]),
    )
    .await;
    assert_eq!(ran.stdout, "inner\nafter 4\n");
}

#[tokio::test(start_paused = true)]
async fn a_loop_that_never_waits_is_stopped() {
    let c = container_with(Limits {
        steps_without_wait: 1000,
        ..Limits::default()
    });
    let ran = run_in(&c, &["sh", "-c", "while true; do :; done"], None).await;
    assert_eq!(ran.status, 124);
    assert_eq!(
        ran.stderr,
        "sh: stopped after 1000 steps without waiting (a loop that never sleeps)\n"
    );
    let ran = run_in(&c, &["sh", "-c", "for i in 1 2 3; do echo $i; done"], None).await;
    assert_eq!(ran.status, 0);
}

/// What a process wrote, kept as it runs.
type Written = Arc<Mutex<Vec<u8>>>;

/// A process whose standard input stays open while its sender lives.
fn live_process(
    c: &super::super::ContainerEnv,
    script: &str,
) -> (
    mpsc::Sender<Vec<u8>>,
    Written,
    impl Future<Output = i32> + use<>,
) {
    let (tx, rx) = mpsc::channel(4);
    let written: Written = Arc::default();
    let kept = written.clone();
    let sink: Sink = Arc::new(move |_, bytes| kept.lock().unwrap().extend_from_slice(bytes));
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let c = c.clone();
    let process = async move {
        super::super::run(
            &c,
            &argv,
            Stdio {
                stdin: Some(rx),
                sink,
            },
        )
        .await
    };
    (tx, written, process)
}

#[tokio::test(start_paused = true)]
async fn waiting_for_input_costs_no_steps() {
    let c = container_with(Limits {
        steps_without_wait: 50,
        ..Limits::default()
    });
    let (tx, written, process) = live_process(&c, "while read line; do echo got $line; done");
    let process = tokio::spawn(process);
    for n in 0..200 {
        tx.send(format!("{n}\n").into_bytes()).await.unwrap();
        tokio::task::yield_now().await;
    }
    // Input that never ends: the process waits, without ever reaching its step limit.
    let waited = tokio::time::timeout(Duration::from_secs(3600), async {
        loop {
            tokio::task::yield_now().await;
            if written.lock().unwrap().ends_with(b"got 199\n") {
                break;
            }
        }
        std::future::pending::<()>().await
    })
    .await;
    assert!(waited.is_err());
    assert!(!process.is_finished());
    drop(tx);
    assert_eq!(process.await.unwrap(), 0);
    let written = String::from_utf8(written.lock().unwrap().clone()).unwrap();
    assert!(!written.contains("stopped"), "{written}");
    assert_eq!(written.lines().count(), 200);
}

#[tokio::test(start_paused = true)]
async fn timeout_stops_a_command_in_simulated_time() {
    let c = container();
    let (_tx, written, process) =
        live_process(&c, "timeout 30 sh -c 'read x; echo never'; echo status $?");
    let before = c.clock.now();
    assert_eq!(process.await, 0);
    assert_eq!(
        String::from_utf8(written.lock().unwrap().clone()).unwrap(),
        "status 124\n"
    );
    assert!(c.clock.now() - before >= Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn hostile_scripts_are_bounded() {
    let small = container_with(Limits {
        output_bytes: 1000,
        word_bytes: 4096,
        depth: 32,
        ..Limits::default()
    });
    let ran = run_in(&small, &["sh", "-c", "f() { f; }; f"], None).await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("sh: nesting too deep\n", 2)
    );

    let ran = run_in(
        &small,
        &["sh", "-c", "while :; do echo xxxxxxxxxx; done"],
        None,
    )
    .await;
    assert_eq!(ran.status, 1);
    assert!(ran.stdout.len() <= 1000, "{}", ran.stdout.len());
    assert_eq!(ran.stderr, "sh: output limit of 1000 bytes reached\n");

    let ran = run_in(
        &small,
        &["sh", "-c", "while :; do echo xxxxxxxxxx; done | cat"],
        None,
    )
    .await;
    assert_eq!(ran.status, 1);

    let ran = run_in(
        &small,
        &["sh", "-c", "x=aaaa; while :; do x=$x$x; done"],
        None,
    )
    .await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("sh: word longer than 4096 bytes\n", 2)
    );

    let deep_parens = format!("{}echo{}", "(".repeat(50_000), ")".repeat(50_000));
    let ran = run_in(&small, &["sh", "-c", &deep_parens], None).await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("sh: nesting too deep\n", 2)
    );

    let deep_subst = format!("echo {}x{}", "$(".repeat(50_000), ")".repeat(50_000));
    let ran = run_in(&small, &["sh", "-c", &deep_subst], None).await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("sh: nesting too deep\n", 2)
    );

    let deep_arith = format!("echo $(({}1{}))", "(".repeat(50_000), ")".repeat(50_000));
    let ran = run_in(&small, &["sh", "-c", &deep_arith], None).await;
    assert_eq!(ran.status, 2);

    let deep_braces = format!("echo {}x{}", "${a:-".repeat(50_000), "}".repeat(50_000));
    let ran = run_in(&small, &["sh", "-c", &deep_braces], None).await;
    assert_eq!(ran.status, 2);

    let ran = run_in(&small, &["sh", "-c", "f() { eval f; }; f"], None).await;
    assert_eq!(ran.status, 2);
    let ran = run_in(
        &small,
        &["sh", "-c", "echo 'sh /tmp/r' >/tmp/r; sh /tmp/r"],
        None,
    )
    .await;
    assert_eq!(
        (ran.stderr.as_str(), ran.status),
        ("sh: nesting too deep\n", 2)
    );

    // Nesting right up to the limit works, on a test thread's default stack.
    let nested = format!("{}echo deep{}", "{ ".repeat(28), "; }".repeat(28));
    let ran = run_in(&small, &["sh", "-c", &nested], None).await;
    assert_eq!(ran.stdout, "deep\n");
}

/// Tokens shell scripts are made of, to build scripts at random.
const TOKENS: &[&str] = &[
    "if", "then", "elif", "else", "fi", "while", "until", "do", "done", "for", "x", "in", "case",
    "esac", ";;", "(", ")", "{", "}", "|", "||", "&&", ";", "\n", "'", "\"", "$(", "`", "<<",
    "EOF", ">", "2>&1", "$x", "${x:-", "$((", "))", "echo", "true", "false", ":", "!", "f()",
    "break", "continue", "return", "exit", "read", "eval", "shift", "x=1", "$@", "*", "\\", "#",
];

fn script() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|tokens| tokens.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn any_generated_script_ends(script in script()) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let ran = runtime.block_on(async {
            let c = container_with(Limits {
                steps_without_wait: 500,
                output_bytes: 4096,
                file_bytes: 4096,
                depth: 16,
                word_bytes: 1024,
            });
            tokio::time::timeout(Duration::from_secs(3600), run_in(&c, &["sh", "-c", &script], None)).await
        });
        prop_assert!(ran.is_ok(), "script did not end: {script:?}");
    }
}
