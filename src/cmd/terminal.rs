//! What every subcommand shares: how a run ended ([`Exit`]), and how it
//! speaks, its tables on stdout and its lines on stderr, neither of which
//! a closed or full stream can stop.

use std::fmt;
use std::io::{self, Write};

/// How a run ended, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: graded (or compared) and clean.
    Clean = 0,
    /// 1: graded, every output written, but a check tripped: rejects over
    /// `--max-rejects`, leaks over `--max-leaks`, a failed compare rule.
    CheckFailed = 1,
    /// 2: nothing graded: a usage error, unreadable input, invalid labels.
    NothingGraded = 2,
}

/// Write a table to stdout with `print`. The table is a view of outputs
/// the run has already decided, so losing it never changes the exit
/// status: a reader that closed the pipe early (`rgrade ... | head`) is
/// quietly let go, and any other failure (a full disk) is said on stderr.
pub fn print_stdout(print: impl FnOnce(&mut io::BufWriter<io::StdoutLock>) -> io::Result<()>) {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match print(&mut out).and_then(|()| out.flush()) {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {}
        Err(err) => tell(format_args!(
            "rgrade: stdout: cannot write the table: {err}"
        )),
        Ok(()) => {}
    }
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

/// Write a line to stderr. A closed or full stderr loses the line, never
/// the run: the exit status still says how it ended.
pub fn tell(line: fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}
