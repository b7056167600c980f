//! `gzip`, `gunzip` and `zcat`: standard input to standard output, or files replaced by their `.gz` (and back).

use super::archive::{gzipped, maybe_gunzip};
use super::{Status, complain};
use crate::shell::fs::{FsError, Node, resolve};
use crate::shell::io::Cx;

/// What one operand turned into, or why it could not.
enum Outcome {
    Done,
    /// An error: status 1.
    Failed(String),
    /// A warning: status 2 unless an error went before.
    Warned(String),
}

/// `bytes` compressed or decompressed, no bigger than `limit`; the message why not.
fn convert(bytes: Vec<u8>, decompress: bool, limit: usize) -> Result<Vec<u8>, &'static str> {
    if !decompress {
        return Ok(gzipped(&bytes));
    }
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Err("not in gzip format");
    }
    match maybe_gunzip(bytes, limit) {
        Ok(Some(plain)) => Ok(plain),
        Ok(None) => Err("No space left on device"),
        Err(_) => Err("invalid compressed data--format violated"),
    }
}

/// `gzip [-cdfk] [FILE]...`, `gunzip` (`gzip -d`) and `zcat` (`gzip -dc`), as `name` says.
pub(super) async fn gzip(cx: &mut Cx<'_>, name: &str, args: &[String]) -> Status {
    let mut decompress = name != "gzip";
    let mut to_stdout = name == "zcat";
    let mut force = false;
    let mut keep = false;
    let mut operands = Vec::new();
    for arg in args {
        match arg.strip_prefix('-').filter(|l| !l.is_empty()) {
            Some(letters) => {
                for letter in letters.chars() {
                    match letter {
                        'c' => to_stdout = true,
                        'd' => decompress = true,
                        'f' => force = true,
                        'k' => keep = true,
                        'n' | 'N' | 'q' | 'v' | '1'..='9' => {}
                        other => {
                            complain(cx, name, &format!("invalid option -- '{other}'"))?;
                            return Ok(1);
                        }
                    }
                }
            }
            None => operands.push(arg.clone()),
        }
    }
    let limit = usize::try_from(
        cx.container
            .limits
            .file_bytes
            .max(cx.container.limits.output_bytes),
    )
    .unwrap_or(usize::MAX);
    if operands.is_empty() {
        operands.push("-".into());
    }
    let mut status = 0;
    for operand in &operands {
        let outcome = if operand == "-" {
            match cx.stdin.read_to_end(limit).await {
                None => Outcome::Failed("stdin: No space left on device".into()),
                Some(bytes) => match convert(bytes, decompress, limit) {
                    Ok(out) => {
                        cx.stdout.write(&out)?;
                        Outcome::Done
                    }
                    Err(why) => Outcome::Failed(format!("stdin: {why}")),
                },
            }
        } else {
            file(
                cx,
                operand,
                decompress,
                to_stdout,
                force || keep,
                force,
                limit,
            )?
        };
        match outcome {
            Outcome::Done => {}
            Outcome::Failed(why) => {
                complain(cx, name, &why)?;
                status = 1;
            }
            Outcome::Warned(why) => {
                complain(cx, name, &why)?;
                if status == 0 {
                    status = 2;
                }
            }
        }
    }
    Ok(status)
}

/// One file operand: to standard output, or replaced by its compressed (decompressed) self.
fn file(
    cx: &mut Cx<'_>,
    operand: &str,
    decompress: bool,
    to_stdout: bool,
    keep: bool,
    force: bool,
    limit: usize,
) -> Result<Outcome, super::OutputLimit> {
    let path = resolve(cx.cwd, operand);
    let bytes = match cx.container.files.get(&path) {
        None => return Ok(Outcome::Failed(format!("{operand}: {}", FsError::NotFound))),
        Some(Node::Dir) => {
            return Ok(Outcome::Warned(format!(
                "{operand} is a directory -- ignored"
            )));
        }
        Some(Node::File(bytes)) => bytes,
    };
    let target = if decompress {
        match path.strip_suffix(".gz").filter(|p| !p.ends_with('/')) {
            Some(plain) => plain.to_owned(),
            None if to_stdout => String::new(),
            None => {
                return Ok(Outcome::Warned(format!(
                    "{operand}: unknown suffix -- ignored"
                )));
            }
        }
    } else if path.ends_with(".gz") && !to_stdout {
        return Ok(Outcome::Warned(format!(
            "{operand} already has .gz suffix -- unchanged"
        )));
    } else {
        format!("{path}.gz")
    };
    let converted = match convert(bytes, decompress, limit) {
        Ok(converted) => converted,
        Err(why) => return Ok(Outcome::Failed(format!("{operand}: {why}"))),
    };
    if to_stdout {
        cx.stdout.write(&converted)?;
        return Ok(Outcome::Done);
    }
    if cx.container.files.get(&target).is_some() && !force {
        return Ok(Outcome::Failed(format!(
            "{target} already exists; not overwritten"
        )));
    }
    if let Err(why) = cx.container.files.write(&target, &converted, false) {
        return Ok(Outcome::Failed(format!("{target}: {why}")));
    }
    if !keep {
        let _ = cx.container.files.remove(&path, false);
    }
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{container, run_in};

    #[tokio::test]
    async fn gzip_round_trips_through_stdin_and_files() {
        let c = container();
        let text = b"compress me, compress me, compress me\n".repeat(20);
        c.files.write("/tmp/f", &text, false).unwrap();
        let packed = run_in(&c, &["gzip", "-c", "/tmp/f"], None).await;
        assert_eq!(packed.status, 0);
        assert!(c.files.get("/tmp/f").is_some());
        let ran = run_in(&c, &["gzip", "/tmp/f"], None).await;
        assert_eq!((ran.stderr.as_str(), ran.status), ("", 0));
        assert!(c.files.get("/tmp/f").is_none());
        let gz = c.files.read("/tmp/f.gz").unwrap();
        assert!(gz.starts_with(&[0x1f, 0x8b]) && gz.len() < text.len());
        let zcat = run_in(&c, &["zcat", "/tmp/f.gz"], None).await;
        assert_eq!(zcat.stdout.as_bytes(), &text[..]);
        let ran = run_in(&c, &["gunzip", "/tmp/f.gz"], None).await;
        assert_eq!(ran.status, 0);
        assert_eq!(c.files.read("/tmp/f").unwrap(), text);
        assert!(c.files.get("/tmp/f.gz").is_none());
        c.files.write("/tmp/g.gz", &gz, false).unwrap();
        let from_stdin = run_in(&c, &["gzip", "-d"], Some(vec![&gz[..10], &gz[10..]])).await;
        assert_eq!(from_stdin.stdout.as_bytes(), &text[..]);
    }

    #[tokio::test]
    async fn gzip_errors_are_worded_as_gzip() {
        let c = container();
        c.files.write("/tmp/plain", b"x", false).unwrap();
        let cases: &[(&[&str], &str, &str, i32)] = &[
            (
                &["gzip", "-d"],
                "not gzip",
                "gzip: stdin: not in gzip format\n",
                1,
            ),
            (
                &["gunzip", "/tmp/plain"],
                "",
                "gunzip: /tmp/plain: unknown suffix -- ignored\n",
                2,
            ),
            (
                &["gzip", "/nope"],
                "",
                "gzip: /nope: No such file or directory\n",
                1,
            ),
            (
                &["gzip", "/tmp"],
                "",
                "gzip: /tmp is a directory -- ignored\n",
                2,
            ),
            (
                &["zcat", "/tmp/plain"],
                "",
                "zcat: /tmp/plain: not in gzip format\n",
                1,
            ),
        ];
        for (argv, stdin, stderr, status) in cases {
            let ran = run_in(&c, argv, Some(vec![stdin.as_bytes()])).await;
            assert_eq!(
                (ran.stderr.as_str(), ran.status),
                (*stderr, *status),
                "{argv:?}"
            );
        }
    }
}
