//! Redirections: the streams a command runs with instead of its shell's. Output to a file is captured while the
//! command runs and written to the file when it is done; the file is created (or emptied) when it is opened, as a
//! real shell does, so that a missing directory is reported before the command runs.

use super::super::fs::resolve;
use super::super::io::{Input, Output};
use super::super::syntax::{Redirect, RedirectOp};
use super::{Flow, Io, Run, Shell};

/// The streams a command's redirections opened, in place of its shell's.
#[derive(Default)]
pub(super) struct Opened {
    stdin: Option<Input>,
    stdout: Option<Output>,
    stderr: Option<Output>,
    /// The files to write when the command is done, and the capture of what goes to each.
    files: Vec<(String, Output)>,
}

impl Opened {
    /// The streams the command runs with: those opened, else `outer`'s.
    pub(super) fn io<'s>(&'s mut self, outer: &'s mut Io<'_>) -> Io<'s> {
        Io {
            stdin: self.stdin.as_mut().unwrap_or(&mut *outer.stdin),
            stdout: self.stdout.as_mut().unwrap_or(&mut *outer.stdout),
            stderr: self.stderr.as_mut().unwrap_or(&mut *outer.stderr),
        }
    }

    fn output(&self, fd: u32, outer: &Io<'_>) -> Output {
        match fd {
            2 => self.stderr.as_ref().unwrap_or(&*outer.stderr).share(),
            _ => self.stdout.as_ref().unwrap_or(&*outer.stdout).share(),
        }
    }

    fn set_output(&mut self, fd: u32, output: Output) {
        match fd {
            1 => self.stdout = Some(output),
            2 => self.stderr = Some(output),
            _ => {}
        }
    }
}

impl Shell<'_> {
    /// Open `redirects` in order; Err(status) when one cannot be (the command then does not run).
    pub(super) async fn open_redirects(
        &mut self,
        redirects: &[Redirect],
        io: &mut Io<'_>,
    ) -> Result<Result<Opened, i32>, Flow> {
        let mut opened = Opened::default();
        for redirect in redirects {
            let target = self.expand_string(&redirect.target, io).await?;
            let fd = redirect.fd;
            match redirect.op {
                RedirectOp::Write
                | RedirectOp::Append
                | RedirectOp::WriteBoth
                | RedirectOp::AppendBoth => {
                    let append = matches!(redirect.op, RedirectOp::Append | RedirectOp::AppendBoth);
                    let output = match self.open_output(&target, append, &mut opened, io)? {
                        Ok(output) => output,
                        Err(status) => return Ok(Err(status)),
                    };
                    if matches!(redirect.op, RedirectOp::WriteBoth | RedirectOp::AppendBoth) {
                        opened.set_output(2, output.share());
                        opened.set_output(1, output);
                    } else {
                        opened.set_output(fd, output);
                    }
                }
                RedirectOp::Read if fd == 0 => {
                    if target == "/dev/null" {
                        opened.stdin = Some(Input::null());
                        continue;
                    }
                    match self.container.files.read(&resolve(&self.cwd, &target)) {
                        Ok(bytes) => opened.stdin = Some(Input::bytes(bytes)),
                        Err(error) => {
                            self.complain(io, &format!("{target}: {error}"))?;
                            return Ok(Err(1));
                        }
                    }
                }
                RedirectOp::Read => {}
                RedirectOp::HereDoc => {
                    if fd == 0 {
                        opened.stdin = Some(Input::bytes(target.into_bytes()));
                    }
                }
                RedirectOp::DupOutput => match target.as_str() {
                    "1" | "2" => {
                        let output = opened.output(target.parse().unwrap_or(1), io);
                        opened.set_output(fd, output);
                    }
                    "-" => opened.set_output(fd, Output::null(self.budget.clone())),
                    _ => {
                        self.complain(io, &format!("{target}: bad file descriptor"))?;
                        return Ok(Err(1));
                    }
                },
                RedirectOp::DupInput => match target.as_str() {
                    "0" => {}
                    "-" => opened.stdin = Some(Input::null()),
                    _ => {
                        self.complain(io, &format!("{target}: bad file descriptor"))?;
                        return Ok(Err(1));
                    }
                },
            }
        }
        Ok(Ok(opened))
    }

    /// The output a redirection to `target` writes into; the file is created or emptied now.
    fn open_output(
        &mut self,
        target: &str,
        append: bool,
        opened: &mut Opened,
        io: &mut Io<'_>,
    ) -> Result<Result<Output, i32>, Flow> {
        match target {
            "/dev/null" => return Ok(Ok(Output::null(self.budget.clone()))),
            "/dev/stdout" => return Ok(Ok(opened.output(1, io))),
            "/dev/stderr" => return Ok(Ok(opened.output(2, io))),
            _ => {}
        }
        let path = resolve(&self.cwd, target);
        if let Err(error) = self.container.files.write(&path, b"", append) {
            self.complain(io, &format!("cannot create {target}: {error}"))?;
            return Ok(Err(1));
        }
        let output = Output::capture(self.budget.clone());
        opened.files.push((path, output.share()));
        Ok(Ok(output))
    }

    /// Write what went to each redirected file, after the command that wrote it ran as `run`; a write that fails
    /// (the container's files are full) fails the command.
    pub(super) fn close_redirects(&mut self, opened: Opened, run: Run, io: &mut Io<'_>) -> Run {
        let Opened { files, .. } = opened;
        let mut failed = false;
        for (path, output) in files {
            let bytes = output.into_captured();
            if let Err(error) = self.container.files.write(&path, &bytes, true) {
                self.complain(io, &format!("write error: {path}: {error}"))?;
                failed = true;
            }
        }
        if failed { run.map(|_| 1) } else { run }
    }
}
