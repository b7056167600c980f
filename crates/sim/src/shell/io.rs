//! What a command reads and writes: its standard input ([`Input`]) and its standard output and error ([`Output`]),
//! each bounded so that a process can never hold more than [`Limits`](super::Limits) allows.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

/// Which of a process's output streams bytes were written on: the container log's own notion, so a line keeps
/// its stream from the process to an attached client.
pub(crate) use kmm_apiserver::apiserver::logs::Stream;

/// Where a process's output goes as it is written: the container's log, or an exec's connection.
pub(crate) type Sink = Arc<dyn Fn(Stream, &[u8]) + Send + Sync>;

/// A command's standard input.
pub(super) struct Input {
    source: Source,
    /// Bytes read from the source and not yet consumed.
    pending: VecDeque<u8>,
    /// Whether a read had to wait for live input since [`Input::take_waited`] last asked.
    waited: bool,
}

enum Source {
    /// Nothing more will come.
    Ended,
    /// The process's live standard input (an exec's or attach's stdin).
    Live(mpsc::Receiver<Vec<u8>>),
}

impl Input {
    /// Input that is at its end at once: `/dev/null`.
    pub(super) fn null() -> Self {
        Self {
            source: Source::Ended,
            pending: VecDeque::new(),
            waited: false,
        }
    }

    /// Input of known bytes: a pipe's, a here-document's, a redirected file's.
    pub(super) fn bytes(bytes: Vec<u8>) -> Self {
        Self {
            source: Source::Ended,
            pending: bytes.into(),
            waited: false,
        }
    }

    /// Input that arrives while the process runs.
    pub(super) fn live(receiver: mpsc::Receiver<Vec<u8>>) -> Self {
        Self {
            source: Source::Live(receiver),
            pending: VecDeque::new(),
            waited: false,
        }
    }

    /// Wait for more bytes; false at the end of input.
    async fn fill(&mut self) -> bool {
        loop {
            let Source::Live(receiver) = &mut self.source else {
                return false;
            };
            self.waited = true;
            match receiver.recv().await {
                Some(chunk) if chunk.is_empty() => continue,
                Some(chunk) => {
                    self.pending.extend(chunk);
                    return true;
                }
                None => {
                    self.source = Source::Ended;
                    return false;
                }
            }
        }
    }

    /// Whether a read waited for live input since the last call: waiting is what keeps a script from counting as
    /// busy (see [`Limits::steps_without_wait`](super::Limits::steps_without_wait)).
    pub(super) fn take_waited(&mut self) -> bool {
        std::mem::take(&mut self.waited)
    }

    /// The next bytes available, waiting for some; None at the end of input.
    pub(super) async fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.pending.is_empty() && !self.fill().await {
            return None;
        }
        Some(self.pending.drain(..).collect())
    }

    /// The next line, with its `\n` (the last line of the input may have none); None at the end of input.
    pub(super) async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                return Some(self.pending.drain(..=end).collect());
            }
            if !self.fill().await {
                return (!self.pending.is_empty()).then(|| self.pending.drain(..).collect());
            }
        }
    }

    /// Everything up to the end of input, or None once it would pass `limit` bytes (what was read is dropped).
    pub(super) async fn read_to_end(&mut self, limit: usize) -> Option<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(chunk) = self.chunk().await {
            if all.len() + chunk.len() > limit {
                return None;
            }
            all.extend(chunk);
        }
        Some(all)
    }
}

/// A write refused because the process has written all it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OutputLimit {
    /// The limit that was reached, in bytes.
    pub bytes: u64,
}

/// The bytes a process has written on its standard output and error, against its limit.
#[derive(Debug)]
pub(super) struct Budget {
    written: AtomicU64,
    limit: u64,
}

impl Budget {
    /// A budget of `limit` bytes, shared by every output of one process.
    pub(super) fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            written: AtomicU64::new(0),
            limit,
        })
    }

    fn spend(&self, bytes: usize) -> Result<(), OutputLimit> {
        let before = self.written.fetch_add(bytes as u64, Ordering::Relaxed);
        if before + bytes as u64 > self.limit {
            return Err(OutputLimit { bytes: self.limit });
        }
        Ok(())
    }

    /// Whether a write was refused: the shell stops a process whose commands reached the limit.
    pub(super) fn exhausted(&self) -> bool {
        self.written.load(Ordering::Relaxed) > self.limit
    }

    /// The limit, in bytes.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }
}

/// A command's standard output or error.
pub(super) struct Output {
    target: Target,
    budget: Arc<Budget>,
}

enum Target {
    /// Written out as it comes, on one of the process's streams.
    Stdio(Stream, Sink),
    /// Kept, for a pipe, a substitution or a file redirection to take when the command is done; shared by the
    /// outputs [`Output::share`] made, so that `>file 2>&1` keeps both streams in the order they were written.
    Capture(Arc<Mutex<Vec<u8>>>),
    /// Thrown away: `/dev/null`.
    Null,
}

impl Output {
    /// One of the process's own streams.
    pub(super) fn stdio(stream: Stream, sink: Sink, budget: Arc<Budget>) -> Self {
        Self {
            target: Target::Stdio(stream, sink),
            budget,
        }
    }

    /// Output kept for [`Output::into_captured`].
    pub(super) fn capture(budget: Arc<Budget>) -> Self {
        Self {
            target: Target::Capture(Arc::default()),
            budget,
        }
    }

    /// Output thrown away.
    pub(super) fn null(budget: Arc<Budget>) -> Self {
        Self {
            target: Target::Null,
            budget,
        }
    }

    /// Write `bytes`; refused once the process's budget is spent.
    pub(super) fn write(&mut self, bytes: &[u8]) -> Result<(), OutputLimit> {
        if bytes.is_empty() {
            return Ok(());
        }
        if !matches!(self.target, Target::Null) {
            self.budget.spend(bytes.len())?;
        }
        match &mut self.target {
            Target::Stdio(stream, sink) => sink(*stream, bytes),
            Target::Capture(kept) => kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(bytes),
            Target::Null => {}
        }
        Ok(())
    }

    /// Write `text`; see [`Output::write`].
    pub(super) fn print(&mut self, text: &str) -> Result<(), OutputLimit> {
        self.write(text.as_bytes())
    }

    /// What a captured output kept (nothing for the other kinds), taken from every output sharing it.
    pub(super) fn into_captured(self) -> Vec<u8> {
        match self.target {
            Target::Capture(kept) => {
                std::mem::take(&mut *kept.lock().unwrap_or_else(|p| p.into_inner()))
            }
            _ => Vec::new(),
        }
    }

    /// Another output writing where this one does: what `2>&1` makes of standard error.
    pub(super) fn share(&self) -> Output {
        let target = match &self.target {
            Target::Stdio(stream, sink) => Target::Stdio(*stream, sink.clone()),
            Target::Capture(kept) => Target::Capture(kept.clone()),
            Target::Null => Target::Null,
        };
        Output {
            target,
            budget: self.budget.clone(),
        }
    }
}

/// What a command sees of the process running it.
pub(super) struct Cx<'a> {
    /// The container.
    pub container: &'a super::ContainerEnv,
    pub stdin: &'a mut Input,
    pub stdout: &'a mut Output,
    pub stderr: &'a mut Output,
    /// The working directory, absolute.
    pub cwd: &'a str,
    /// The exported variables, as `env` prints them, in order.
    pub env: &'a [(String, String)],
    /// Set when the command sleeps: see [`Cx::sleep`].
    pub slept: &'a AtomicBool,
}

impl Cx<'_> {
    /// Wait `time` of simulated time. The only way a command waits on the clock: the shell counts a process that
    /// slept as idle, not busy (see [`Limits::steps_without_wait`](super::Limits::steps_without_wait)).
    pub(super) async fn sleep(&mut self, time: std::time::Duration) {
        self.slept.store(true, Ordering::Relaxed);
        self.container.clock.sleep(time).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn live_input_reads_by_line_and_ends_when_closed() {
        let (tx, rx) = mpsc::channel(4);
        let mut input = Input::live(rx);
        tx.send(b"echo a\nech".to_vec()).await.unwrap();
        tx.send(b"o b".to_vec()).await.unwrap();
        drop(tx);
        assert_eq!(input.line().await.unwrap(), b"echo a\n");
        assert_eq!(input.line().await.unwrap(), b"echo b");
        assert_eq!(input.line().await, None);
    }

    #[test]
    fn output_beyond_the_budget_is_refused() {
        let budget = Budget::new(4);
        let mut out = Output::capture(budget.clone());
        out.write(b"abc").unwrap();
        assert_eq!(out.write(b"de"), Err(OutputLimit { bytes: 4 }));
        let mut null = Output::null(budget.clone());
        null.write(b"anything").unwrap();
        assert!(budget.exhausted());
    }

    #[test]
    fn a_shared_capture_keeps_both_writers_in_order() {
        let budget = Budget::new(64);
        let mut out = Output::capture(budget.clone());
        let mut err = out.share();
        out.write(b"a").unwrap();
        err.write(b"b").unwrap();
        out.write(b"c").unwrap();
        assert_eq!(err.into_captured(), b"abc");
        assert!(!budget.exhausted());
    }
}
