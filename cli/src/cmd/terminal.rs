//! What every subcommand shares: how a run ended ([`Exit`]), and how it
//! speaks, its tables on stdout and its lines on stderr: a closed stream
//! never stops a run, and a table lost to a full one is said.

use std::fmt;
use std::io::{self, Write};

use rgrade::{visible, visible_json};
use serde::Serialize;

use crate::cli::flag;

/// How a run ended, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: graded (or compared) and clean.
    Clean = 0,
    /// 1: graded, every output written, but a check tripped: rejects over
    /// `--max-rejects`, leaks over `--max-leaks`, a failed compare rule.
    CheckFailed = 1,
    /// 2: nothing graded: a usage error, unreadable input, invalid labels;
    /// or a clean run whose result did not all reach its reader.
    NothingGraded = 2,
}

impl Exit {
    /// This run's status once part of its result was not delivered (`lost`:
    /// the stdout table, the `--openmetrics` export), which was said on
    /// stderr: a tripped check stays 1, so that a failed rule or an alarm is
    /// never hidden; a clean run becomes 2, as its reader did not get all of
    /// it.
    pub fn unless_lost(self, lost: bool) -> Exit {
        match self {
            Exit::Clean if lost => Exit::NothingGraded,
            exit => exit,
        }
    }
}

/// Write a table to stdout with `print`; returns whether part of it was
/// lost. A reader that closed the pipe early (`rgrade ... | head`) is
/// quietly let go, and loses nothing it wanted; any other failure (a full
/// disk) is said on stderr, and is a loss the exit status tells
/// ([`Exit::unless_lost`]): for a command without `-o`, the table is the
/// only result. The table is made whole, then written as a reader can see
/// it ([`visible`]): a control or bidirectional character a name brought
/// in shows as its code point, never acts on the terminal.
#[must_use]
pub fn print_stdout(print: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> bool {
    let mut table = Vec::new();
    let written = print(&mut table)
        .and_then(|()| write_stdout(visible(&String::from_utf8_lossy(&table)).as_bytes()));
    said_if_lost(written, "the table")
}

/// Write `document` to stdout as one line of JSON, as [`print_stdout`]
/// writes a table: each character that would act on a terminal is a JSON
/// escape ([`visible_json`]), so a parser reads the same values. Returns
/// whether part of it was lost.
#[must_use]
pub fn print_json_stdout(document: &impl Serialize) -> bool {
    let written = serde_json::to_string(document)
        .map_err(io::Error::other)
        .and_then(|json| write_stdout(format!("{}\n", visible_json(&json)).as_bytes()));
    said_if_lost(written, "the summary")
}

fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Whether writing `what` to stdout lost part of it, said on stderr; a
/// closed pipe loses nothing its reader wanted.
fn said_if_lost(written: io::Result<()>, what: &str) -> bool {
    match written {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => false,
        Err(err) => {
            tell(format_args!("rgrade: stdout: cannot write {what}: {err}"));
            true
        }
        Ok(()) => false,
    }
}

/// Say on stderr that `--openmetrics` could not be written, if it could
/// not; returns whether it was lost.
pub fn tell_export(failure: Option<&rgrade::Error>) -> bool {
    if let Some(err) = failure {
        tell(format_args!("rgrade: {}", err.spelled(flag)));
    }
    failure.is_some()
}

/// The width stdout's tables fit in when stdout is no terminal (a file, a
/// pipe, a CI log): wide enough for a table of a few cutoffs.
const PIPE_WIDTH: usize = 100;

/// The columns stdout's tables may use: `COLUMNS` when it holds a number
/// (the shell convention, which also lets a caller choose), else the
/// terminal's width, else [`PIPE_WIDTH`] when stdout is no terminal.
pub fn stdout_width() -> usize {
    let columns = std::env::var("COLUMNS").ok();
    let columns = columns.and_then(|c| c.trim().parse::<usize>().ok());
    columns
        .filter(|&c| c > 0)
        .or_else(|| {
            let size = console::Term::stdout().size_checked();
            size.map(|(_rows, columns)| usize::from(columns))
        })
        .unwrap_or(PIPE_WIDTH)
}

/// Write a line to stderr, as a reader can see it ([`visible`]), with the
/// settings the library's messages name spelled as flags. A closed or full
/// stderr loses the line, never the run: the exit status still says how
/// it ended.
pub fn tell(line: fmt::Arguments) {
    let line = rgrade::spell_settings(&line.to_string(), flag);
    let _ = writeln!(io::stderr().lock(), "{}", visible(&line));
}

/// `err`'s message, causes included, as the command line says it: the
/// library's errors with their settings spelled as flags.
pub fn message(err: &anyhow::Error) -> String {
    let said: Vec<String> = (err.chain())
        .map(|cause| match cause.downcast_ref::<rgrade::Error>() {
            Some(err) => err.spelled(flag),
            None => cause.to_string(),
        })
        .collect();
    said.join(": ")
}
