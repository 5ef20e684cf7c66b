//! Output files, written line by line through a large buffer and counted as
//! they go, so the command can say what it wrote without reading it back:
//! [`Written`] and [`WrittenFile`] are that account.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// What `write_dataset` wrote, so the command can report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Queries in the answer key.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// The files, labels first.
    pub files: Vec<WrittenFile>,
}

/// One file `write_dataset` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its lines: labeled queries, search events or TREC result lines (a
    /// Parquet log's rows).
    pub lines: u64,
    /// Its size.
    pub bytes: u64,
}

/// The write buffer: large writes keep the generator CPU-bound.
const WRITE_BUFFER: usize = 1 << 20;

/// A file written line by line through a large buffer, counting what it
/// wrote. Lines are formatted into one reused buffer, so no result allocates.
pub(super) struct Output {
    path: PathBuf,
    writer: BufWriter<File>,
    line: Vec<u8>,
    lines: u64,
    bytes: u64,
}

impl Output {
    fn create(path: PathBuf) -> anyhow::Result<Self> {
        let file =
            File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Output {
            path,
            writer: BufWriter::with_capacity(WRITE_BUFFER, file),
            line: Vec::with_capacity(4096),
            lines: 0,
            bytes: 0,
        })
    }

    /// The emptied line buffer, to format the next line into.
    pub(super) fn start_line(&mut self) -> &mut Vec<u8> {
        self.line.clear();
        &mut self.line
    }

    pub(super) fn end_line(&mut self) -> io::Result<()> {
        self.line.push(b'\n');
        self.writer.write_all(&self.line)?;
        self.lines += 1;
        self.bytes += self.line.len() as u64;
        Ok(())
    }

    /// Write `bytes` of a binary file as they are, and count `rows` more
    /// records in it: a Parquet file's rows are its lines.
    pub(super) fn write_binary(&mut self, bytes: &[u8], rows: u64) -> io::Result<()> {
        self.writer.write_all(bytes)?;
        self.lines += rows;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn finish(mut self) -> io::Result<WrittenFile> {
        self.writer.flush()?;
        Ok(WrittenFile {
            path: self.path,
            lines: self.lines,
            bytes: self.bytes,
        })
    }
}

/// Create `name` in the directory `dir` and fill it with `write`; an I/O
/// error names the file.
pub(super) fn write_file(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut Output) -> io::Result<()>,
) -> anyhow::Result<WrittenFile> {
    let path = dir.join(name);
    let mut output = Output::create(path.clone())?;
    write(&mut output)
        .and_then(|()| output.finish())
        .with_context(|| format!("cannot write {}", path.display()))
}
