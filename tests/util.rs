//! Helpers shared by the integration tests: a scratch directory per test,
//! running the real `rgrade` binary in it, and reading its outputs back
//! (CSV into rows, JSON and JSONL through serde_json).

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The binary under test, built by cargo for this test run.
pub const RGRADE: &str = env!("CARGO_BIN_EXE_rgrade");

/// The absolute path of a file of the shipped worked example
/// (`data-samples/seed/`), as a command-line argument.
pub fn seed(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples/seed")
        .join(name)
        .display()
        .to_string()
}

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

    /// Whether `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// `rgrade` with `args`, run in this directory (so relative paths in
    /// arguments and outputs are relative to it), stdin closed.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(RGRADE);
        cmd.args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Run `rgrade args` to the end.
    pub fn rgrade(&self, args: &[&str]) -> Run {
        self.run(args, None)
    }

    /// Run `rgrade args` with `stdin` as its standard input.
    pub fn rgrade_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        self.run(args, Some(stdin))
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut cmd = self.command(args);
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
        let output = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("cannot wait for {RGRADE}: {e}"));
        Run {
            command: format!("(cd {} && rgrade {})", self.root.display(), args.join(" ")),
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Read the CSV file `rel` (a header, then rows).
    pub fn read_csv(&self, rel: &str) -> Table {
        let path = self.path(rel);
        let mut rdr = csv::Reader::from_path(&path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        let header = rdr
            .headers()
            .unwrap_or_else(|e| panic!("{}: bad header: {e}", path.display()))
            .iter()
            .map(String::from)
            .collect();
        let rows = rdr
            .records()
            .map(|r| {
                r.unwrap_or_else(|e| panic!("{}: bad row: {e}", path.display()))
                    .iter()
                    .map(String::from)
                    .collect()
            })
            .collect();
        Table {
            name: rel.to_string(),
            header,
            rows,
        }
    }

    /// Read the JSON file `rel`.
    pub fn read_json(&self, rel: &str) -> Value {
        serde_json::from_slice(&self.read(rel))
            .unwrap_or_else(|e| panic!("{rel}: not valid JSON: {e}"))
    }

    /// Read the JSONL file `rel`, one value per line.
    pub fn read_jsonl(&self, rel: &str) -> Vec<Value> {
        let bytes = self.read(rel);
        let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{rel}: not UTF-8: {e}"));
        text.lines()
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

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command: {}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n---",
            self.command, self.status, self.stdout, self.stderr
        )
    }
}

/// A CSV file read back: its header and its rows, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The file it came from, for messages.
    pub name: String,
    /// Column names, in order.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The rows as column name → cell.
    pub fn records(&self) -> Vec<HashMap<String, String>> {
        self.rows
            .iter()
            .map(|row| {
                self.header
                    .iter()
                    .cloned()
                    .zip(row.iter().cloned())
                    .collect()
            })
            .collect()
    }

    /// The one row whose cells equal `key` (column, value) pairs.
    #[track_caller]
    pub fn row(&self, key: &[(&str, &str)]) -> HashMap<String, String> {
        let found: Vec<HashMap<String, String>> = self
            .records()
            .into_iter()
            .filter(|r| {
                key.iter()
                    .all(|(c, v)| r.get(*c).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{}: expected exactly one row with {key:?}, found {}:\n{}",
            self.name,
            found.len(),
            self.dump()
        );
        found.into_iter().next().expect("one row")
    }

    /// Every cell of column `name`, top to bottom.
    #[track_caller]
    pub fn column(&self, name: &str) -> Vec<String> {
        let i = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| {
                panic!(
                    "{}: no column {name:?} in header {:?}",
                    self.name, self.header
                )
            });
        self.rows.iter().map(|r| r[i].clone()).collect()
    }

    /// The table as text, for failure messages.
    pub fn dump(&self) -> String {
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| r.join(","))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Panic unless the cell `column` of `row` holds a number within 1e-9 of `want`.
#[track_caller]
pub fn assert_cell(row: &HashMap<String, String>, column: &str, want: f64) {
    let cell = row
        .get(column)
        .unwrap_or_else(|| panic!("no column {column:?} in row {row:?}"));
    let got: f64 = cell
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {cell:?} is not a number, want {want} in {row:?}"));
    assert!(
        (got - want).abs() < 1e-9,
        "{column}: got {got}, want {want}, in row {row:?}"
    );
}

/// Panic unless the cell `column` of `row` is exactly `want` (text).
#[track_caller]
pub fn assert_text(row: &HashMap<String, String>, column: &str, want: &str) {
    let cell = row
        .get(column)
        .unwrap_or_else(|| panic!("no column {column:?} in row {row:?}"));
    assert_eq!(cell, want, "{column} in row {row:?}");
}
