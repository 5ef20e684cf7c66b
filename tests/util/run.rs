//! Running the real `rgrade` binary: a scratch directory per test, the
//! binary run in it (or elsewhere), and one finished run with everything
//! needed to explain a failure, its stdout table read back into cells.

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Table;

/// The binary under test, built by cargo for this test run.
pub const RGRADE: &str = env!("CARGO_BIN_EXE_rgrade");

/// A scratch directory of its own for one test, removed when the test
/// passes and kept (its path printed) when it fails, for a look inside.
pub struct Workdir {
    root: PathBuf,
}

impl Workdir {
    /// A fresh, empty directory named after the test, the process and a
    /// counter, so tests running in parallel never share one.
    pub fn new(test: &str) -> Workdir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root =
            std::env::temp_dir().join(format!("rgrade-test-{test}-{}-{n}", std::process::id()));
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .unwrap_or_else(|e| panic!("cannot clear {}: {e}", root.display()));
        }
        std::fs::create_dir_all(&root)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
        Workdir { root }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `rel` inside the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Write `contents` to `rel`, creating parent directories.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }

    /// Write `contents` gzip-compressed to `rel`, whatever its name.
    pub fn write_gz(&self, rel: &str, contents: impl AsRef<[u8]>) {
        self.write(rel, gzip(contents.as_ref()));
    }

    /// Write `contents` zstd-compressed to `rel`, whatever its name.
    pub fn write_zst(&self, rel: &str, contents: impl AsRef<[u8]>) {
        self.write(rel, zstd_compress(contents.as_ref()));
    }

    /// The bytes of `rel`.
    pub fn read(&self, rel: &str) -> Vec<u8> {
        let path = self.path(rel);
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// The text of `rel`, which must be UTF-8.
    pub fn read_text(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap_or_else(|e| panic!("{rel}: not UTF-8: {e}"))
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// `rgrade` with `args`, run in this directory (so relative paths in
    /// arguments and outputs are relative to it), stdin closed.
    pub fn command(&self, args: &[&str]) -> Command {
        command_in(&self.root, args)
    }

    /// Run `rgrade args` to the end.
    pub fn rgrade(&self, args: &[&str]) -> Run {
        run_in(&self.root, args, None)
    }

    /// Run `rgrade args` with `stdin` as its standard input.
    pub fn rgrade_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        run_in(&self.root, args, Some(stdin))
    }

    /// Run `rgrade args`, told to pause where it is about to read again
    /// inputs it read (or checked) once; run `meanwhile` there, then let
    /// it go on to the end. Fails the test if it ends without pausing.
    pub fn rgrade_paused(&self, args: &[&str], meanwhile: impl FnOnce()) -> Run {
        let go = self.path("go");
        let paused = self.path("go.paused");
        for told in [&go, &paused] {
            let _ = std::fs::remove_file(told);
        }
        let mut cmd = self.command(args);
        cmd.env("RGRADE_TEST_PAUSE_BETWEEN_READINGS", &go);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {RGRADE}: {e}"));
        let deadline = Instant::now() + RUN_TIMEOUT;
        while !paused.exists() {
            let ended = child.try_wait().expect("cannot wait for rgrade");
            if ended.is_some() || Instant::now() > deadline {
                let run = Run::wait(&cmd, child, RUN_TIMEOUT);
                panic!("ended or stalled without pausing between its readings\n{run}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        meanwhile();
        std::fs::write(&go, b"").expect("cannot write the go file");
        Run::wait(&cmd, child, RUN_TIMEOUT)
    }

    /// Read the CSV file `rel` (a header, then rows).
    pub fn read_csv(&self, rel: &str) -> Table {
        Table {
            name: rel.to_string(),
            ..Table::from_path(&self.path(rel))
        }
    }

    /// Read the JSON file `rel`.
    pub fn read_json(&self, rel: &str) -> Value {
        serde_json::from_slice(&self.read(rel))
            .unwrap_or_else(|e| panic!("{rel}: not valid JSON: {e}"))
    }

    /// Read the JSONL file `rel`, one value per line.
    pub fn read_jsonl(&self, rel: &str) -> Vec<Value> {
        self.read_text(rel)
            .lines()
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{rel}:{}: not valid JSON: {e}: {line}", i + 1))
            })
            .collect()
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test files kept in {}", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// `rgrade` with `args`, run in `cwd`, stdin closed, stdout and stderr
/// captured. `COLUMNS` is unset, so stdout's tables take the width of a
/// pipe whatever the shell running the tests exports.
fn command_in(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(RGRADE);
    cmd.args(args)
        .env_remove("COLUMNS")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Run `rgrade args` to the end in `cwd`, for commands whose relative
/// paths must resolve somewhere else than a scratch directory (the
/// README's commands run at the repository's top: [`REPO_ROOT`]).
pub fn rgrade_in(cwd: &Path, args: &[&str]) -> Run {
    run_in(cwd, args, None)
}

/// Run `rgrade args` to the end in `cwd`, feeding it `stdin` if given.
fn run_in(cwd: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut cmd = command_in(cwd, args);
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {RGRADE}: {e}"));
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin was piped");
        // A child that exits before reading all of stdin closes the pipe;
        // its status and stderr then tell the story, not this write.
        let _ = pipe.write_all(bytes);
    }
    Run::wait(&cmd, child, RUN_TIMEOUT)
}

/// How long [`Workdir::rgrade`] and its kin let one run of the binary
/// take before killing it: far more than any test needs, so that a hang
/// fails the test instead of stalling the whole suite.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// Run a prepared command (from [`Workdir::command`], perhaps given more
/// arguments, such as file names that are not UTF-8) to the end.
pub fn run_command(cmd: &mut Command) -> Run {
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {RGRADE}: {e}"));
    Run::wait(cmd, child, RUN_TIMEOUT)
}

/// A command as a shell would show it: `(cd DIR && rgrade ARGS)`, the
/// arguments decoded lossily.
fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let dir = cmd
        .get_current_dir()
        .map_or_else(|| ".".to_string(), |d| d.display().to_string());
    format!("(cd {dir} && rgrade {})", args.join(" "))
}

/// Read a child's pipe to its end on a thread of its own, so that neither
/// pipe can fill up and stall the child while the other is read.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error ends the capture; the status tells the story.
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Make a named pipe at `path` with the system's `mkfifo`; false (and a
/// note on stderr) where there is none, for the caller to skip its test.
pub fn make_fifo(path: &std::path::Path) -> bool {
    match Command::new("mkfifo").arg(path).status() {
        Ok(status) if status.success() => true,
        other => {
            eprintln!("skipped: mkfifo is not available here ({other:?})");
            false
        }
    }
}

/// `bytes` as one gzip member.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// `bytes` as one zstd frame.
pub fn zstd_compress(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).expect("compressing in memory")
}

/// One finished run of the binary, with everything needed to explain a
/// failure: print it with `{}`.
pub struct Run {
    /// The command as a shell would show it.
    pub command: String,
    /// How it ended.
    pub status: ExitStatus,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl Run {
    /// Wait for `child`, started from `cmd` (see [`Workdir::command`]),
    /// and collect what it wrote to the pipes still attached (a pipe the
    /// caller took, or closed on purpose, reads as empty). A child still
    /// running after `timeout` is killed and the test fails, showing what
    /// it wrote so far.
    #[track_caller]
    pub fn wait(cmd: &Command, mut child: Child, timeout: Duration) -> Run {
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(None) => {
                    // Killing the child we still own (not yet reaped) is safe.
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Err(e) => panic!("cannot wait for {RGRADE}: {e}"),
            }
        };
        let text = |h: std::thread::JoinHandle<Vec<u8>>| {
            String::from_utf8_lossy(&h.join().expect("a pipe reader panicked")).into_owned()
        };
        let (stdout, stderr) = (text(stdout), text(stderr));
        let command = describe(cmd);
        let Some(status) = status else {
            panic!(
                "still running after {timeout:?}, killed\ncommand: {command}\n\
                 --- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n---"
            );
        };
        Run {
            command,
            status,
            stdout,
            stderr,
        }
    }

    /// Panic, showing the whole run, unless it exited with `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.status.code(),
            Some(code),
            "expected exit status {code}\n{self}"
        );
        self
    }

    /// Panic, showing the whole run, unless stderr contains every needle.
    #[track_caller]
    pub fn expect_stderr(&self, needles: &[&str]) -> &Run {
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "expected stderr to contain {needle:?}\n{self}"
            );
        }
        self
    }
}

/// The stdout table: (run, stage) → slice (`all`, `task=...`, ...) →
/// column → cell.
pub type StdoutTable = HashMap<(String, String), HashMap<String, HashMap<String, String>>>;

impl Run {
    /// Read the stdout table back into cells: per (run, stage) a
    /// `run R  stage S` title, then one or more blocks, each a header line
    /// and its rows, ended by a blank line; then the other blocks, which
    /// start at the line's start, as `note:` does. A block
    /// is laid out either way the table is (docs/reference.md, Outputs): slices
    /// as rows under `slice queries ok ...`, or turned, under `slice all
    /// task=...`, a row per count and metric. A slice the table names
    /// under `the same queries as all:` reads as the `all` row.
    #[track_caller]
    pub fn stdout_table(&self) -> StdoutTable {
        let mut table = StdoutTable::new();
        let mut current: Option<(String, String)> = None;
        let mut header: Vec<String> = Vec::new();
        let mut repeats: Vec<((String, String), String)> = Vec::new();
        for line in self.stdout.lines() {
            if let Some(names) = line.strip_prefix("  the same queries as all: ") {
                let key = current.clone().expect("a title before its table");
                repeats.extend(
                    names
                        .split(", ")
                        .map(|name| (key.clone(), name.to_string())),
                );
                header.clear();
            } else if let Some(title) = line.strip_prefix("run ") {
                let (name, stage) = title
                    .split_once("  stage ")
                    .unwrap_or_else(|| panic!("bad table title {line:?}\n{self}"));
                current = Some((name.to_string(), stage.to_string()));
                header.clear();
            } else if line.trim().is_empty() {
                header.clear();
            } else if !line.starts_with(' ') {
                // The means tables end at the first other block: `note:`,
                // the evidence lost between stages, the answers' evidence.
                break;
            } else {
                let key = current
                    .clone()
                    .unwrap_or_else(|| panic!("table row before a title: {line:?}\n{self}"));
                let cells: Vec<String> = line.split_whitespace().map(String::from).collect();
                if header.is_empty() {
                    header = cells;
                    continue;
                }
                assert_eq!(cells.len(), header.len(), "ragged row {line:?}\n{self}");
                let slices = table.entry(key).or_default();
                if header[1] == "queries" {
                    let row = header[1..].iter().cloned().zip(cells[1..].iter().cloned());
                    slices.insert(cells[0].clone(), row.collect());
                } else {
                    // Turned: the header names the slices, the row a column.
                    for (slice, cell) in header[1..].iter().zip(&cells[1..]) {
                        let row = slices.entry(slice.clone()).or_default();
                        row.insert(cells[0].clone(), cell.clone());
                    }
                }
            }
        }
        for (key, name) in repeats {
            let slices = table.get_mut(&key).expect("a table before its repeats");
            let all = slices["all"].clone();
            slices.insert(name, all);
        }
        table
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command: {}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n---",
            self.command, self.status, self.stdout, self.stderr
        )
    }
}
