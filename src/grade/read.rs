//! Stage 1, read: find the log inputs, undo their compression (recognised by
//! magic bytes) and cut them into newline-aligned blocks for the workers.
//!
//! One reader serves every kind of input — files, stdin, gzip and zstd
//! streams — and hands each block to a [`ChunkSink`]: the worker pool's
//! channel ([`super::workers`]) or the reading thread itself. Spent block
//! buffers come back to be filled again, so memory stays a few blocks per
//! worker whatever the size of the input.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use flate2::bufread::MultiGzDecoder;
use xxhash_rust::xxh3::Xxh3;

use crate::grade::parquet::{self, ColumnNames, RowGroup, Rows};
use crate::options::LogsFormat;
use crate::output::schema::{LOCK_FILE, PER_QUERY_FILE, REJECTS_FILE, SUMMARY_FILE};
use crate::tables::{ArrowTable, LogLines};

/// The longest log line accepted; a longer one is rejected as `line_too_long`.
pub const MAX_LINE: usize = 64 << 20;

/// How many bytes a block holds before it is cut at its last newline.
pub const BLOCK_SIZE: usize = 1 << 20;

/// File name endings that a directory walk picks up: the text formats
/// plain or compressed, and Parquet (compressed inside its own pages).
const LOG_SUFFIXES: [&str; 10] = [
    ".jsonl",
    ".jsonl.gz",
    ".jsonl.zst",
    ".trec",
    ".trec.gz",
    ".trec.zst",
    ".run",
    ".run.gz",
    ".run.zst",
    ".parquet",
];

/// File name endings a directory walk picks up when the content is a TREC
/// or MS MARCO run: published runs mostly end in `.txt`, MS MARCO's in `.tsv`.
const RUN_TEXT_SUFFIXES: [&str; 6] = [".txt", ".txt.gz", ".txt.zst", ".tsv", ".tsv.gz", ".tsv.zst"];

/// Extensions a file's run name leaves out: a compression, then a format.
const COMPRESSION_EXTENSIONS: [&str; 2] = [".gz", ".zst"];
const FORMAT_EXTENSIONS: [&str; 6] = [".jsonl", ".trec", ".run", ".txt", ".tsv", ".parquet"];

/// How much of a `.txt` or `.tsv` file is read to tell whether it is a run.
const SNIFF_BYTES: u64 = 64 << 10;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
/// The last three bytes of a zstd skippable frame's magic number, whose
/// first byte is 0x50 to 0x5f: `pzstd` opens its files with one.
const ZSTD_SKIPPABLE_MAGIC: &[u8] = &[0x2a, 0x4d, 0x18];

/// Whether `head` opens a zstd stream: a frame, or a skippable frame.
fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(ZSTD_MAGIC)
        || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && &head[1..4] == ZSTD_SKIPPABLE_MAGIC)
}

/// One log input: a file, standard input, or a table in memory.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file on disk.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// Search events handed over as an Arrow table, laid out as Parquet
    /// logs are.
    Table(ArrowTable),
    /// The lines handed over of one of the inputs [`LogLines`] names (its
    /// index there).
    Lines(Arc<LogLines>, usize),
}

impl Input {
    /// The name used in messages and outputs.
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Stdin => "-".to_string(),
            Input::Table(table) => table.name().to_string(),
            Input::Lines(lines, index) => lines.inputs()[*index].clone(),
        }
    }

    /// Whether it can be read a second time: a regular file or what is
    /// held in memory can, standard input or a pipe cannot.
    pub fn can_read_again(&self) -> bool {
        match self {
            Input::File(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file()),
            Input::Stdin => false,
            Input::Table(_) | Input::Lines(..) => true,
        }
    }

    /// The input's name as a run: its file name without the extensions
    /// rgrade reads (`bm25.dl19.txt.gz` is `bm25.dl19`); `-` for
    /// standard input.
    pub fn run_name(&self) -> String {
        let path = match self {
            Input::File(path) => path.clone(),
            Input::Stdin => return "-".to_string(),
            Input::Table(table) => return table.name().to_string(),
            // Named as the file they were read from.
            Input::Lines(lines, index) => PathBuf::from(&lines.inputs()[*index]),
        };
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let strip = |name: &str, extensions: &[&str]| {
            extensions
                .iter()
                .find_map(|ext| name.strip_suffix(ext).filter(|stem| !stem.is_empty()))
                .map(str::to_string)
                .unwrap_or_else(|| name.to_string())
        };
        strip(&strip(&name, &COMPRESSION_EXTENSIONS), &FORMAT_EXTENSIONS)
    }

    /// The size on disk, when known up front.
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            Input::Stdin | Input::Lines(..) => None,
            Input::Table(table) => Some(table.bytes()),
        }
    }
}

/// The log inputs the LOGS arguments name.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Files as given, then each directory's logs, `-` for stdin.
    pub inputs: Vec<Input>,
    /// `.txt` and `.tsv` files of the directories that hold no run.
    pub skipped: Vec<PathBuf>,
}

/// Expand the LOGS arguments into inputs: files as given, directories
/// walked (sorted, for a stable order) for log file names, `-` for stdin.
/// A walk never yields rgrade's own outputs: the rejects.jsonl of the
/// output directory `out`, or of any directory an earlier run wrote into
/// (it holds rgrade's lock file, summary.json or per_query.csv), is no log. `.txt` and
/// `.tsv` files are read when they hold a TREC or MS MARCO run, and
/// otherwise listed as skipped.
///
/// # Errors
/// A path that does not exist, an empty file, a directory with no logs, or
/// one file reached twice (by a second path or a hard link).
pub fn discover(args: &[PathBuf], out: Option<&Path>) -> Result<Discovered> {
    let out = out.and_then(|dir| std::fs::canonicalize(dir).ok());
    let mut found = Discovered::default();
    let Discovered { inputs, skipped } = &mut found;
    for arg in args {
        if arg.as_os_str() == "-" {
            inputs.push(Input::Stdin);
            continue;
        }
        let meta = std::fs::metadata(arg)
            .with_context(|| format!("{}: cannot open log input", arg.display()))?;
        if meta.is_dir() {
            let before = inputs.len();
            walk(arg, out.as_deref(), inputs, skipped)?;
            if inputs.len() == before {
                bail!(
                    "{}: directory holds no log files ({}, or runs in {})",
                    arg.display(),
                    LOG_SUFFIXES.join(", "),
                    RUN_TEXT_SUFFIXES.join(", ")
                );
            }
        } else {
            add_file(arg.clone(), &meta, inputs)?;
        }
    }
    let mut seen = std::collections::HashSet::new();
    for input in inputs.iter() {
        let key = match input {
            Input::File(path) => file_key(path),
            Input::Stdin => FileKey::Stdin,
            // Handed over, never found by a walk.
            Input::Table(_) | Input::Lines(..) => continue,
        };
        if !seen.insert(key) {
            bail!(
                "{}: log input is given twice (its records would be counted twice)",
                input.name()
            );
        }
    }
    Ok(found)
}

/// The log files the LOGS arguments `args` name, in the order grade
/// reads them: for a caller that reads them itself (the Spark job reads
/// them with Spark, then hands their lines over).
///
/// # Errors
/// As [`discover`]; standard input, which only rgrade itself can read.
pub fn log_files(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    (discover(args, None)?.inputs.into_iter())
        .map(|input| match input {
            Input::File(path) => Ok(path),
            other => bail!("{}: not a file another reader can read", other.name()),
        })
        .collect()
}

/// What makes two inputs one: the same file, however it is reached.
#[derive(PartialEq, Eq, Hash)]
enum FileKey {
    /// Device and inode: a second path and a hard link are the same file.
    Inode(u64, u64),
    /// The canonical path, where there is no inode to go by.
    Path(PathBuf),
    /// Standard input.
    Stdin,
}

#[cfg(unix)]
fn file_key(path: &Path) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(meta) => FileKey::Inode(meta.dev(), meta.ino()),
        Err(_) => FileKey::Path(path.to_path_buf()),
    }
}

#[cfg(not(unix))]
fn file_key(path: &Path) -> FileKey {
    FileKey::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// Whether `dir` holds a grading's outputs: `out`, or a directory an
/// earlier run wrote into, complete or not.
fn is_output_dir(dir: &Path, out: Option<&Path>) -> bool {
    let is_out = out.is_some_and(|out| std::fs::canonicalize(dir).is_ok_and(|dir| dir == out));
    let written = |name: &str| dir.join(name).is_file();
    // A run takes the lock first and removes summary.json next, so a run
    // killed or failed there left the lock, and perhaps per_query.csv.
    is_out
        || [LOCK_FILE, SUMMARY_FILE, PER_QUERY_FILE]
            .into_iter()
            .any(written)
}

/// Walk a directory in sorted order, leaving out rgrade's own outputs.
/// Symbolic links to directories are not followed (as ripgrep and fd do
/// not), so a link cycle cannot read a log over and over.
fn walk(
    dir: &Path,
    out: Option<&Path>,
    inputs: &mut Vec<Input>,
    skipped: &mut Vec<PathBuf>,
) -> Result<()> {
    let holds_outputs = is_output_dir(dir, out);
    let listing = || format!("{}: cannot list directory", dir.display());
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .with_context(listing)?
        .collect::<io::Result<_>>()
        .with_context(listing)?;
    entries.sort_by_key(|entry| entry.path());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().with_context(listing)?;
        if kind.is_dir() {
            walk(&path, out, inputs, skipped)?;
        } else if holds_outputs && entry.file_name() == REJECTS_FILE
            || kind.is_symlink() && path.is_dir()
        {
            continue;
        } else if has_suffix(&path, &LOG_SUFFIXES) {
            let meta = std::fs::metadata(&path)
                .with_context(|| format!("{}: cannot open log input", path.display()))?;
            add_file(path, &meta, inputs)?;
        } else if has_suffix(&path, &RUN_TEXT_SUFFIXES) {
            let meta = std::fs::metadata(&path)
                .with_context(|| format!("{}: cannot open log input", path.display()))?;
            if meta.len() > 0 && !holds_a_run(&path) {
                skipped.push(path);
            } else {
                add_file(path, &meta, inputs)?;
            }
        }
    }
    Ok(())
}

/// Add a log file; an empty regular file is an error (a pipe's size is
/// only known once it is read).
fn add_file(path: PathBuf, meta: &std::fs::Metadata, inputs: &mut Vec<Input>) -> Result<()> {
    if meta.is_file() && meta.len() == 0 {
        bail!("{}: log file is empty", path.display());
    }
    inputs.push(Input::File(path));
    Ok(())
}

fn has_suffix(path: &Path, suffixes: &[&str]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    suffixes.iter().any(|suffix| name.ends_with(suffix))
}

/// Whether the file at `path` opens as a TREC or MS MARCO run (a header
/// line allowed). One that cannot be read is taken for a run, so that
/// reading it reports the error.
fn holds_a_run(path: &Path) -> bool {
    let Ok(source) = Source::open(&Input::File(path.to_path_buf())) else {
        return true;
    };
    let mut head = Vec::new();
    if source.take(SNIFF_BYTES).read_to_end(&mut head).is_err() {
        return true;
    }
    // Only the first line (or a header and the next) tells: a note whose
    // later line happens to look like a run line is no run.
    let detected = detect(&head, LogsFormat::Auto, 1);
    !detected.looked_past_first && matches!(detected.format, LogsFormat::Trec | LogsFormat::Msmarco)
}

/// A byte stream with its compression undone.
enum Decoded<R: BufRead> {
    Plain(R),
    Gzip(Box<MultiGzDecoder<R>>),
    Zstd(zstd::stream::read::Decoder<'static, R>),
}

impl<R: BufRead> Decoded<R> {
    fn new(mut inner: R) -> io::Result<Self> {
        let head = inner.fill_buf()?;
        Ok(if head.starts_with(GZIP_MAGIC) {
            Decoded::Gzip(Box::new(MultiGzDecoder::new(inner)))
        } else if is_zstd(head) {
            Decoded::Zstd(zstd::stream::read::Decoder::with_buffer(inner)?)
        } else {
            Decoded::Plain(inner)
        })
    }
}

impl<R: BufRead> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoded::Plain(r) => r.read(buf),
            Decoded::Gzip(r) => r.read(buf),
            Decoded::Zstd(r) => r.read(buf),
        }
    }
}

/// Counts and hashes the raw bytes of an input as they are read.
struct Tally<R> {
    inner: R,
    bytes: u64,
    hasher: Xxh3,
}

impl<R: Read> Read for Tally<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A raw input (file or stdin) with its byte count and hash.
type RawTally = Tally<Box<dyn Read + Send>>;

/// The UTF-8 byte-order mark some Windows tools put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An input opened for reading: its compression undone, a leading UTF-8
/// byte-order mark dropped, and its raw bytes counted and hashed as they go.
pub struct Source {
    reader: BufReader<Decoded<BufReader<RawTally>>>,
}

impl Source {
    /// Open a file or standard input.
    ///
    /// # Errors
    /// The input cannot be opened or its first bytes read.
    pub fn open(input: &Input) -> io::Result<Self> {
        let raw: Box<dyn Read + Send> = match input {
            Input::File(path) => Box::new(File::open(path)?),
            Input::Stdin => Box::new(io::stdin()),
            Input::Table(_) | Input::Lines(..) => {
                let message = format!("{}: handed over in memory, not read", input.name());
                return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
            }
        };
        let tally = Tally {
            inner: raw,
            bytes: 0,
            hasher: Xxh3::new(),
        };
        let decoded = Decoded::new(BufReader::with_capacity(1 << 20, tally))?;
        // As large as the raw buffer: a plain file is then read straight
        // into this one, which blocks copy out of.
        let mut reader = BufReader::with_capacity(1 << 20, decoded);
        if reader.fill_buf()?.starts_with(BOM) {
            reader.consume(BOM.len());
        }
        Ok(Source { reader })
    }

    /// Whether its (decoded) bytes open as Parquet.
    fn holds_parquet(&self) -> bool {
        self.reader.buffer().starts_with(parquet::MAGIC)
    }

    /// Whether it was gzip or zstd.
    fn is_compressed(&self) -> bool {
        !matches!(self.reader.get_ref(), Decoded::Plain(_))
    }

    fn tally(&self) -> &RawTally {
        match self.reader.get_ref() {
            Decoded::Plain(r) => r.get_ref(),
            Decoded::Gzip(r) => r.get_ref().get_ref(),
            Decoded::Zstd(r) => r.get_ref().get_ref(),
        }
    }

    /// Raw bytes read so far.
    pub fn raw_bytes(&self) -> u64 {
        self.tally().bytes
    }

    /// The raw size and the xxh3-128 of the raw bytes, in hex: the
    /// content hash, once the input was read to its end.
    pub fn digest(&self) -> (u64, String) {
        let tally = self.tally();
        (tally.bytes, format!("{:032x}", tally.hasher.digest128()))
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.reader.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.reader.consume(amount)
    }
}

/// What the reader learned about one input once it was read to the end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputStats {
    /// Raw bytes read (compressed size for compressed input).
    pub bytes: u64,
    /// Bytes after decompression.
    pub decoded_bytes: u64,
    /// Lines, counting a last line without a newline.
    pub lines: u64,
    /// xxh3-128 of the raw bytes, in hex.
    pub hash: String,
    /// What format detection saw when it could not place the first line.
    pub format_doubt: Option<String>,
    /// Whether only some of the input's lines were read (lines handed
    /// over): shards that hold parts of the same inputs merge into them.
    pub part: bool,
    /// The format it was read in (never `Auto`; JSONL for an input whose
    /// only line was too long to place). Parquet's lines are rows, which
    /// cannot be read back as text; so are an Arrow table's, which reads
    /// as Parquet.
    pub format: LogsFormat,
}

/// A run of whole lines from one input.
#[derive(Debug)]
pub struct Block {
    /// Index of the input in the order given.
    pub input: u32,
    /// 1-based number of the block's first line in its input.
    pub first_line: u64,
    /// Whole lines, each ending in `\n` except perhaps the input's last.
    pub bytes: Vec<u8>,
    /// The input's format (never `Auto`): decided once per input.
    pub format: LogsFormat,
    /// The line number of the run's header line, if it has one.
    pub header_line: Option<u64>,
    /// Each line's number when they do not follow each other from
    /// `first_line` (lines handed over from several places); else empty.
    pub numbers: Vec<u64>,
}

impl Block {
    /// The number of the block's line `offset` (from 0).
    pub fn line_number(&self, offset: usize) -> u64 {
        match self.numbers.get(offset) {
            Some(&number) => number,
            None => self.first_line + offset as u64,
        }
    }
}

/// What the reader thread sends the workers.
#[derive(Debug)]
pub enum Chunk {
    /// Lines to parse.
    Lines(Block),
    /// A line longer than the longest accepted (64 MiB): only its start was kept.
    Oversized {
        /// Index of the input.
        input: u32,
        /// 1-based line number.
        line: u64,
        /// The line's first bytes.
        head: Vec<u8>,
    },
    /// Rows of a Parquet file or an Arrow table, which the worker decodes
    /// itself.
    Rows(RowGroup),
}

impl Chunk {
    /// The chunk's buffer, for the reader to fill again.
    pub fn into_buffer(self) -> Vec<u8> {
        match self {
            Chunk::Lines(block) => block.bytes,
            Chunk::Oversized { head, .. } => head,
            Chunk::Rows(_) => Vec::new(),
        }
    }
}

/// Where the reader's chunks go, and where their spent buffers come back
/// from to be filled again.
pub trait ChunkSink {
    /// Take a chunk; false once nobody wants more.
    fn send(&mut self, chunk: Chunk) -> bool;
    /// A spent buffer, if one came back.
    fn recycled(&mut self) -> Option<Vec<u8>>;
}

/// Handles each chunk on the reading thread itself, then fills its buffer
/// again: the sequential pipeline (`-j 1`), one thread doing everything.
pub struct InlineSink<F> {
    handle: F,
    spare: Option<Vec<u8>>,
}

impl<F: FnMut(&Chunk) -> bool> InlineSink<F> {
    /// A sink that hands every chunk to `handle`, which says whether to go on.
    pub fn new(handle: F) -> Self {
        InlineSink {
            handle,
            spare: None,
        }
    }
}

impl<F: FnMut(&Chunk) -> bool> ChunkSink for InlineSink<F> {
    fn send(&mut self, chunk: Chunk) -> bool {
        let go_on = (self.handle)(&chunk);
        self.spare = Some(chunk.into_buffer());
        go_on
    }

    fn recycled(&mut self) -> Option<Vec<u8>> {
        self.spare.take()
    }
}

/// Read every input in order (in `format`, or each by its first bytes when
/// `Auto`), sending chunks to `sink`; `on_bytes` hears of raw bytes as
/// they go. Each input comes with its index among all the inputs, which
/// its chunks carry. A Parquet file is sent as its row groups, whose
/// columns `columns` names.
///
/// # Errors
/// An input that cannot be opened or read, or a corrupt compressed stream,
/// named by its path; Parquet that is not a file, or whose columns do not
/// fit. Sending stops early (without error) if the workers hang up.
pub fn read_inputs(
    inputs: &[(u32, &Input)],
    format: LogsFormat,
    columns: ColumnNames<'_>,
    sink: &mut dyn ChunkSink,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Result<Vec<InputStats>> {
    let mut stats = Vec::with_capacity(inputs.len());
    for &(index, input) in inputs {
        let name = input.name();
        let handed_over = match input {
            Input::Table(table) => Some(read_table(index, table, columns, sink)),
            Input::Lines(lines, i) => Some(send_lines(index, lines.lines(*i), format, sink)),
            Input::File(_) | Input::Stdin => None,
        };
        if let Some(read) = handed_over {
            match read.with_context(|| name.clone())? {
                Some(read) => stats.push(read),
                None => break,
            }
            continue;
        }
        let mut source = Source::open(input).with_context(|| format!("{name}: cannot open"))?;
        if format == LogsFormat::Parquet || format == LogsFormat::Auto && source.holds_parquet() {
            let path = parquet_file(input, &source)?;
            drop(source);
            match read_row_groups(index, path, columns, sink, on_bytes)
                .with_context(|| name.clone())?
            {
                Some(read) => stats.push(read),
                None => break,
            }
            continue;
        }
        let mut cutter = BlockCutter {
            input: index,
            sink: &mut *sink,
            next_line: 1,
            decoded_bytes: 0,
            given: format,
            detected: None,
        };
        let lines = match cutter.run(&mut source, on_bytes) {
            Ok(Some(lines)) => lines,
            Ok(None) => break,
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("{name}: cannot read (truncated or corrupt input?)"))
            }
        };
        if cutter.decoded_bytes == 0 {
            bail!("{name}: log input is empty");
        }
        let (bytes, hash) = source.digest();
        stats.push(InputStats {
            bytes,
            decoded_bytes: cutter.decoded_bytes,
            lines,
            hash,
            format: (cutter.detected.as_ref()).map_or(LogsFormat::Jsonl, |d| d.format),
            format_doubt: cutter.detected.and_then(|detected| detected.doubt),
            part: false,
        });
    }
    Ok(stats)
}

/// Read the Parquet file at `path`, input `index` of the run: send a chunk
/// per row group to `sink`, and hash the file's bytes on this thread as
/// the workers decode. Returns `None` if the sink stopped taking chunks.
///
/// # Errors
/// As [`parquet::open`]; the file cannot be read; it holds no row.
fn read_row_groups(
    index: u32,
    path: &Path,
    columns: ColumnNames<'_>,
    sink: &mut dyn ChunkSink,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Result<Option<InputStats>> {
    let (file, places) = parquet::open(path, columns)?;
    let mut hashing = Hashing {
        file: File::open(path).context("cannot open")?,
        hasher: Xxh3::new(),
        read: 0,
        buffer: vec![0; 1 << 20],
    };
    let (mut rows, mut decoded_bytes) = (0u64, 0u64);
    for (i, place) in places.iter().enumerate() {
        // Hashed up to the row group's end before it is sent: its bytes
        // are then in the page cache when a worker decodes them.
        hashing.up_to(place.end, on_bytes).context("cannot read")?;
        let chunk = Chunk::Rows(RowGroup {
            input: index,
            rows: Rows::Parquet {
                file: Arc::clone(&file),
                group: i,
            },
            first_row: rows + 1,
        });
        if !sink.send(chunk) {
            return Ok(None);
        }
        rows += place.rows;
        decoded_bytes += place.decoded_bytes;
    }
    hashing.up_to(u64::MAX, on_bytes).context("cannot read")?;
    if rows == 0 {
        bail!("Parquet file holds no rows");
    }
    Ok(Some(InputStats {
        bytes: hashing.read,
        decoded_bytes,
        lines: rows,
        hash: format!("{:032x}", hashing.hasher.digest128()),
        format: LogsFormat::Parquet,
        format_doubt: None,
        part: false,
    }))
}

/// Send the rows of `table`, input `index` of the run, to `sink` a few
/// thousand at a time, so that workers share even one large batch.
/// Returns `None` if the sink stopped taking chunks.
///
/// # Errors
/// As [`parquet::open_table`]; the table holds no rows.
fn read_table(
    index: u32,
    table: &ArrowTable,
    columns: ColumnNames<'_>,
    sink: &mut dyn ChunkSink,
) -> Result<Option<InputStats>> {
    let planned = parquet::open_table(table, columns)?;
    let mut rows = 0u64;
    for (batch, records) in (0..).zip(table.batches()) {
        let len = records.num_rows();
        for start in (0..len).step_by(TABLE_CHUNK_ROWS) {
            let chunk = Chunk::Rows(RowGroup {
                input: index,
                rows: Rows::Table {
                    table: Arc::clone(&planned),
                    batch,
                    range: start..len.min(start + TABLE_CHUNK_ROWS),
                },
                first_row: rows + start as u64 + 1,
            });
            if !sink.send(chunk) {
                return Ok(None);
            }
        }
        rows += len as u64;
    }
    if rows == 0 {
        bail!("table holds no rows");
    }
    Ok(Some(InputStats {
        bytes: table.bytes(),
        decoded_bytes: table.bytes(),
        lines: rows,
        hash: table.content_hash(),
        format: LogsFormat::Parquet,
        format_doubt: None,
        part: false,
    }))
}

/// Send lines handed over with their numbers (`lines`, in line order) as
/// blocks to `sink`, input `index` of the run. They read as JSONL, or as
/// OTLP traces when asked or when the first JSON object has that shape. A part of
/// an input has no content hash: its stats say it is a part.
/// Returns `None` if the sink stopped taking chunks.
///
/// # Errors
/// A format asked for that is not one of lines of JSON.
fn send_lines<'a>(
    index: u32,
    lines: impl Iterator<Item = (u64, &'a [u8])>,
    given: LogsFormat,
    sink: &mut dyn ChunkSink,
) -> Result<Option<InputStats>> {
    let mut format = match given {
        LogsFormat::Jsonl | LogsFormat::Otlp => Some(given),
        LogsFormat::Auto => None,
        other => bail!("lines handed over are JSONL or OTLP records, not {other:?}"),
    };
    let (mut count, mut bytes) = (0u64, 0u64);
    let mut block = Block {
        input: index,
        first_line: 1,
        bytes: Vec::new(),
        format: LogsFormat::Jsonl,
        header_line: None,
        numbers: Vec::new(),
    };
    let mut send = |block: &mut Block, format: LogsFormat| {
        let full = Block {
            bytes: std::mem::take(&mut block.bytes),
            numbers: std::mem::take(&mut block.numbers),
            format,
            ..*block
        };
        sink.send(Chunk::Lines(full))
    };
    for (number, text) in lines {
        let text = match number {
            1 => text.strip_prefix(BOM).unwrap_or(text),
            _ => text,
        };
        // The first JSON object decides, as the first line that fits does
        // in a file: a broken line before it is rejected alone.
        if format.is_none() {
            format = shape_of(text)
                .filter(|shape| matches!(shape, LogsFormat::Jsonl | LogsFormat::Otlp));
        }
        if block.numbers.is_empty() {
            block.first_line = number;
        }
        block.numbers.push(number);
        block.bytes.extend_from_slice(text);
        block.bytes.push(b'\n');
        count += 1;
        bytes += text.len() as u64 + 1;
        if block.bytes.len() >= BLOCK_SIZE
            && !send(&mut block, *format.get_or_insert(LogsFormat::Jsonl))
        {
            return Ok(None);
        }
    }
    if !block.numbers.is_empty() && !send(&mut block, format.unwrap_or(LogsFormat::Jsonl)) {
        return Ok(None);
    }
    Ok(Some(InputStats {
        bytes,
        decoded_bytes: bytes,
        lines: count,
        hash: String::new(),
        format: format.unwrap_or(LogsFormat::Jsonl),
        format_doubt: None,
        part: true,
    }))
}

/// Rows of a table a worker takes at a time.
const TABLE_CHUNK_ROWS: usize = 4096;

/// Reads a file front to back for its content hash.
struct Hashing {
    file: File,
    hasher: Xxh3,
    read: u64,
    buffer: Vec<u8>,
}

impl Hashing {
    /// Hash up to byte `end`, or to the end of the file.
    fn up_to(&mut self, end: u64, on_bytes: &(dyn Fn(u64) + Sync)) -> io::Result<()> {
        while self.read < end {
            let want = (end - self.read).min(self.buffer.len() as u64) as usize;
            let n = match self.file.read(&mut self.buffer[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            self.hasher.update(&self.buffer[..n]);
            self.read += n as u64;
            on_bytes(n as u64);
        }
        Ok(())
    }
}

/// The file a Parquet input is: Parquet is read by seeking to its footer,
/// so it must be a regular file, not compressed.
///
/// # Errors
/// The input does not open with Parquet's magic bytes, or is standard
/// input, a pipe or a compressed stream.
fn parquet_file<'i>(input: &'i Input, source: &Source) -> Result<&'i Path> {
    let name = input.name();
    if source.is_compressed() && source.holds_parquet() {
        bail!("{name}: Parquet inside a compressed stream cannot be read: Parquet needs a seekable file (its columns are compressed already); decompress it to a file");
    }
    if !source.holds_parquet() {
        bail!("{name}: not a Parquet file (it does not open with PAR1)");
    }
    match input {
        Input::File(path) if input.can_read_again() => Ok(path),
        _ => bail!("{name}: Parquet needs a seekable file, not standard input or a pipe; save it to a file and grade that"),
    }
}

/// Cut one open source into blocks of whole lines for `sink`, as if it
/// were the only input. Returns false if the sink stopped taking them.
///
/// # Errors
/// The source cannot be read.
pub fn read_blocks(source: &mut Source, sink: &mut dyn ChunkSink) -> io::Result<bool> {
    let mut cutter = BlockCutter {
        input: 0,
        sink,
        next_line: 1,
        decoded_bytes: 0,
        given: LogsFormat::Jsonl,
        detected: None,
    };
    Ok(cutter.run(source, &|_| {})?.is_some())
}

/// Cuts one decoded stream into blocks of whole lines.
struct BlockCutter<'a> {
    input: u32,
    sink: &'a mut dyn ChunkSink,
    next_line: u64,
    decoded_bytes: u64,
    /// The format asked for, perhaps `Auto`.
    given: LogsFormat,
    /// How the input reads, decided on its first block.
    detected: Option<Detected>,
}

impl BlockCutter<'_> {
    /// Returns the input's line count, or `None` if the workers hung up.
    fn run(
        &mut self,
        source: &mut Source,
        on_bytes: &(dyn Fn(u64) + Sync),
    ) -> io::Result<Option<u64>> {
        let mut carry: Vec<u8> = Vec::new();
        let mut raw_seen = 0;
        loop {
            // A recycled buffer keeps its capacity, so a block normally costs
            // no allocation and no fresh pages.
            let mut block = self
                .sink
                .recycled()
                .unwrap_or_else(|| Vec::with_capacity(2 * BLOCK_SIZE));
            block.clear();
            block.append(&mut carry);
            let carried = block.len();
            let eof = fill(source, &mut block, carried + BLOCK_SIZE)?;
            let raw_now = source.raw_bytes();
            on_bytes(raw_now - raw_seen);
            raw_seen = raw_now;
            self.decoded_bytes += (block.len() - carried) as u64;
            match memchr::memrchr(b'\n', &block) {
                _ if eof => {
                    if !block.is_empty() && !self.send_lines(block) {
                        return Ok(None);
                    }
                    break;
                }
                Some(last) => {
                    carry.extend_from_slice(&block[last + 1..]);
                    block.truncate(last + 1);
                    if !self.send_lines(block) {
                        return Ok(None);
                    }
                }
                None if block.len() <= MAX_LINE => carry = block,
                None => {
                    let line = self.next_line;
                    self.next_line += 1;
                    block.truncate(crate::grade::parse::EXCERPT_BYTES);
                    let head = Chunk::Oversized {
                        input: self.input,
                        line,
                        head: block,
                    };
                    if !self.sink.send(head) {
                        return Ok(None);
                    }
                    let (rest, skipped) = skip_line(source)?;
                    self.decoded_bytes += skipped;
                    carry = rest;
                }
            }
        }
        Ok(Some(self.next_line - 1))
    }

    fn send_lines(&mut self, bytes: Vec<u8>) -> bool {
        let detected = self
            .detected
            .get_or_insert_with(|| detect(&bytes, self.given, self.next_line));
        let lines =
            memchr::memchr_iter(b'\n', &bytes).count() as u64 + u64::from(!bytes.ends_with(b"\n"));
        let block = Block {
            input: self.input,
            first_line: self.next_line,
            bytes,
            format: detected.format,
            header_line: detected.header_line,
            numbers: Vec::new(),
        };
        self.next_line += lines;
        self.sink.send(Chunk::Lines(block))
    }
}

/// How an input reads: its format, the header line of a run that has one,
/// whether a later line decided it, and, when no line fit a format, what
/// the first looked like.
#[derive(Debug, Clone, PartialEq)]
struct Detected {
    format: LogsFormat,
    header_line: Option<u64>,
    /// The first line fit no format (nor was a header) and a later line
    /// decided: the first is rejected by that format's reader.
    looked_past_first: bool,
    doubt: Option<String>,
}

/// Decide how the input whose first block is `bytes` (from line
/// `first_line`) reads. A line of the given format (or, under `Auto`, a
/// JSON object, a TREC run line or an MS MARCO run line) decides it. A
/// first line that fits nothing is taken for a run's header when the next
/// line that fits is a run line; otherwise it is a broken line (cut
/// mid-line where a byte range began, a byte that is not UTF-8), and the
/// first line of the block that fits decides, so that only the broken line
/// is rejected. When none fits, the input is read as asked, JSONL under
/// `Auto`, so a broken JSON line is rejected as such, not misread. An
/// empty object `{}`, what OTLP exporters write for a batch of no spans,
/// says nothing of the format and is looked past, as blank lines are.
fn detect(bytes: &[u8], given: LogsFormat, first_line: u64) -> Detected {
    let says_nothing = |line: &[u8]| {
        crate::grade::parse::is_blank(line)
            || std::str::from_utf8(line).is_ok_and(|text| {
                let text = text.trim();
                text.strip_prefix('{')
                    .and_then(|rest| rest.strip_suffix('}'))
                    .is_some_and(|inside| inside.trim().is_empty())
            })
    };
    let mut lines = line_ranges(bytes)
        .zip(first_line..)
        .map(|(range, number)| (&bytes[range], number))
        .filter(|(line, _)| !says_nothing(line));
    let first = lines.next();
    let fits = |line: &[u8]| match given {
        LogsFormat::Auto => shape_of(line),
        wanted => shape_of(line).filter(|&format| format == wanted),
    };
    let read_as = |format, header_line, looked_past_first| Detected {
        format,
        header_line,
        looked_past_first,
        doubt: None,
    };
    if let Some(format) = first.and_then(|(line, _)| fits(line)) {
        return read_as(format, None, false);
    }
    match (first, lines.find_map(|(line, _)| fits(line))) {
        (Some((header, number)), Some(format @ (LogsFormat::Trec | LogsFormat::Msmarco)))
            if is_header(header, format) =>
        {
            read_as(format, Some(number), false)
        }
        (_, Some(format)) => read_as(format, None, true),
        _ => {
            let format = if given == LogsFormat::Auto {
                LogsFormat::Jsonl
            } else {
                given
            };
            Detected {
                format,
                header_line: None,
                looked_past_first: false,
                doubt: first.map(|(line, _)| doubt(line, format)),
            }
        }
    }
}

/// The format a single line has the shape of: an OTLP trace export (a
/// JSON object whose first key is `resourceSpans`, as exporters write
/// it); another JSON object; a TREC run line (at least six fields, a
/// whole-number rank in the fourth, a number in the fifth); or an MS MARCO
/// run line (three fields, a whole-number rank in the third).
fn shape_of(line: &[u8]) -> Option<LogsFormat> {
    let text = std::str::from_utf8(line).ok()?.trim();
    if let Some(object) = text.strip_prefix('{') {
        if object.trim_start().starts_with("\"resourceSpans\"") {
            return Some(LogsFormat::Otlp);
        }
        return Some(LogsFormat::Jsonl);
    }
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let whole = |field: &str| field.parse::<i64>().is_ok();
    match fields.len() {
        3 if whole(fields[2]) => Some(LogsFormat::Msmarco),
        n if n >= 6 && whole(fields[3]) && fields[4].parse::<f64>().is_ok() => {
            Some(LogsFormat::Trec)
        }
        _ => None,
    }
}

/// Whether `line` can be the header of a run in `format`: its fields where
/// the run line's are, with words where the numbers go. A run line with a
/// defect (a field missing, a bad score) is no header: it is rejected.
fn is_header(line: &[u8], format: LogsFormat) -> bool {
    let text = String::from_utf8_lossy(line);
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let number = |field: &str| field.parse::<f64>().is_ok();
    match format {
        LogsFormat::Trec => fields.len() >= 6 && !number(fields[3]) && !number(fields[4]),
        LogsFormat::Msmarco => fields.len() == 3 && !number(fields[2]),
        LogsFormat::Jsonl | LogsFormat::Otlp | LogsFormat::Parquet | LogsFormat::Auto => false,
    }
}

/// What a first line that fits `format` looked like instead, and the
/// format it may be.
fn doubt(line: &[u8], format: LogsFormat) -> String {
    let read_as = match format {
        LogsFormat::Trec => "a TREC run",
        LogsFormat::Msmarco => "an MS MARCO run",
        LogsFormat::Otlp => "OTLP traces",
        LogsFormat::Parquet => "Parquet",
        LogsFormat::Jsonl | LogsFormat::Auto => "JSONL",
    };
    let text = String::from_utf8_lossy(line);
    let fields = text.split_ascii_whitespace().count();
    let saw = match shape_of(line) {
        Some(LogsFormat::Msmarco) => {
            "3 fields with a whole number third: an MS MARCO run? --logs-format msmarco".to_string()
        }
        Some(LogsFormat::Trec) => {
            format!("{fields} fields shaped as a TREC run line? --logs-format trec")
        }
        Some(LogsFormat::Jsonl) => "a JSON object? --logs-format jsonl".to_string(),
        Some(LogsFormat::Otlp) => {
            "an OTLP trace export (resourceSpans)? --logs-format otlp".to_string()
        }
        _ if fields == 3 => "3 fields, the third not a whole number (an MS MARCO run line is \
                             'query_id doc_id rank')"
            .to_string(),
        _ if fields >= 6 => format!(
            "{fields} fields, without a whole-number rank 4th and a number 5th (a TREC run \
             line is 'query_id Q0 doc_id rank score tag')"
        ),
        _ => format!(
            "{fields} {} and no JSON object",
            if fields == 1 { "field" } else { "fields" }
        ),
    };
    format!("read as {read_as}, but its first line has {saw}")
}

/// Where the lines of a block are, without their line ends (`\n` or
/// `\r\n`), found with memchr: a byte-at-a-time split costs a third of the
/// throughput.
pub fn line_ranges(bytes: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let line_start = start;
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        start = end + 1;
        let crlf = bytes[line_start..end].ends_with(b"\r");
        Some(line_start..end - usize::from(crlf))
    })
}

/// The lines of a block without their line ends.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    line_ranges(bytes).map(|range| &bytes[range])
}

/// Read until `block` holds at least `target` bytes or the stream ends;
/// returns whether it ended. Copies out of the source's buffer, which is
/// zeroed once: reading into a block's spare capacity instead would have
/// std zero that capacity first, for every block.
fn fill(reader: &mut impl BufRead, block: &mut Vec<u8>, target: usize) -> io::Result<bool> {
    while block.len() < target {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(true);
        }
        let taken = available.len().min(target - block.len());
        block.extend_from_slice(&available[..taken]);
        reader.consume(taken);
    }
    Ok(false)
}

/// Discard the rest of an oversized line; returns the bytes after its
/// newline and how many bytes were read.
fn skip_line(reader: &mut impl Read) -> io::Result<(Vec<u8>, u64)> {
    let mut buf = vec![0; 1 << 20];
    let mut read = 0;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok((Vec::new(), read));
        }
        read += n as u64;
        if let Some(newline) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok((buf[newline + 1..n].to_vec(), read));
        }
    }
}

/// Read an input again, handing `each` the given lines (sorted, 1-based)
/// without their line ends, then on to its end to check that its bytes
/// are those of the first reading, `first`. What is decided after every
/// block was judged (rejects of whole captures, the ids of pooled run
/// lines) needs bytes that are gone by then; this recovers them. Returns
/// false, reading nothing, for an input that cannot be read a second time
/// (stdin, a pipe).
///
/// # Errors
/// The input cannot be opened or read, or changed since it was first read.
pub fn read_lines_again(
    input: &Input,
    first: &InputStats,
    lines: &[u64],
    mut each: impl FnMut(u64, &[u8]),
) -> Result<bool> {
    let name = input.name();
    let path = match input {
        Input::File(path) => path,
        Input::Stdin | Input::Table(_) => return Ok(false),
        Input::Lines(handed, i) => {
            let mut wanted = lines.iter().copied().peekable();
            for (number, text) in handed.lines(*i) {
                if wanted.next_if_eq(&number).is_some() {
                    each(number, text);
                    while wanted.next_if_eq(&number).is_some() {}
                }
            }
            return Ok(true);
        }
    };
    // A file gone since is an error; a pipe simply cannot be read twice.
    let metadata = std::fs::metadata(path).with_context(|| format!("{name}: cannot read again"))?;
    if !metadata.is_file() {
        return Ok(false);
    }
    let mut source = Source::open(input).with_context(|| format!("{name}: cannot open"))?;
    let mut wanted = lines.iter().copied().peekable();
    let mut line = Vec::new();
    let mut number = 0;
    let mut read = || -> io::Result<()> {
        while let Some(&next) = wanted.peek() {
            line.clear();
            if source.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            if number == next {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                each(number, text.strip_suffix(b"\r").unwrap_or(text));
                while wanted.next_if_eq(&number).is_some() {}
            }
        }
        io::copy(&mut source, &mut io::sink())?;
        Ok(())
    };
    read().with_context(|| format!("{name}: cannot read again"))?;
    ensure_unchanged(input, first, &source.digest().1)?;
    Ok(true)
}

/// Fail unless `hash`, of a second reading of `input`, is that of its
/// first reading: what is recovered from other bytes than those graded
/// would mislead.
///
/// # Errors
/// The input changed.
pub fn ensure_unchanged(input: &Input, first: &InputStats, hash: &str) -> Result<()> {
    if hash != first.hash {
        bail!(
            "{}: changed while it was being graded; grade it again",
            input.name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Blocks as (first line, bytes).
    type Blocks = Vec<(u64, Vec<u8>)>;

    fn read_all(bytes: &[u8]) -> Result<(Blocks, Vec<InputStats>)> {
        let dir = std::env::temp_dir().join(format!(
            "rgrade-read-{}-{:x}",
            std::process::id(),
            xxhash_rust::xxh3::xxh3_64(bytes)
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("log.jsonl");
        std::fs::write(&path, bytes)?;
        let mut blocks = Vec::new();
        let mut sink = InlineSink::new(|chunk: &Chunk| {
            blocks.push(match chunk {
                Chunk::Lines(block) => (block.first_line, block.bytes.clone()),
                Chunk::Oversized { line, .. } => (*line, b"<oversized>".to_vec()),
                Chunk::Rows(group) => (group.first_row, b"<row group>".to_vec()),
            });
            true
        });
        let input = Input::File(path);
        let (fields, spans) = Default::default();
        let columns = ColumnNames {
            fields: &fields,
            spans: &spans,
        };
        let stats = read_inputs(
            &[(0, &input)],
            LogsFormat::Auto,
            columns,
            &mut sink,
            &|_| {},
        );
        std::fs::remove_dir_all(&dir)?;
        Ok((blocks, stats?))
    }

    #[test]
    fn lines_are_numbered_and_whole() {
        let (blocks, stats) = read_all(b"a\nb\nc").unwrap();
        assert_eq!(blocks, [(1, b"a\nb\nc".to_vec())]);
        assert_eq!(
            (stats[0].lines, stats[0].bytes, stats[0].decoded_bytes),
            (3, 5, 5)
        );
    }

    #[test]
    fn compression_is_recognised_by_magic_bytes() {
        let text = b"{\"x\":1}\n{\"x\":2}\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let zst = zstd::encode_all(&text[..], 3).unwrap();
        for compressed in [gz, zst] {
            let (blocks, stats) = read_all(&compressed).unwrap();
            assert_eq!(blocks, [(1, text.to_vec())]);
            assert_eq!(
                (stats[0].bytes, stats[0].decoded_bytes, stats[0].lines),
                (compressed.len() as u64, text.len() as u64, 2)
            );
        }
    }

    /// Every valid stream reads: gzip with a name, a comment and extra
    /// fields in its header; zstd opening with a skippable frame (as
    /// `pzstd` writes it) and holding another between two frames.
    #[test]
    fn compressed_streams_with_optional_parts_are_read() {
        let text = b"{\"x\":1}\n{\"x\":2}\n";
        let mut gz = flate2::GzBuilder::new()
            .filename("log.jsonl")
            .comment("captured nightly")
            .extra(&b"RG\x02\x00ok"[..])
            .write(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let skippable = |kind: u8, payload: &[u8]| {
            let mut frame = vec![0x50 | kind, 0x2a, 0x4d, 0x18];
            frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            frame.extend_from_slice(payload);
            frame
        };
        let mut zst = skippable(0xa, &[0, 0, 1, 0]);
        zst.extend(zstd::encode_all(&text[..8], 3).unwrap());
        zst.extend(skippable(0x0, b""));
        zst.extend(zstd::encode_all(&text[8..], 3).unwrap());
        for compressed in [gz, zst] {
            let (blocks, stats) = read_all(&compressed).unwrap();
            assert_eq!(blocks, [(1, text.to_vec())]);
            assert_eq!(stats[0].decoded_bytes, text.len() as u64);
        }
    }

    #[test]
    fn truncated_compressed_input_is_an_error_naming_the_file() {
        let text = "{\"x\":1}\n".repeat(1000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let err = read_all(&gz[..gz.len() / 2]).unwrap_err();
        assert!(
            format!("{err:#}").contains("log.jsonl: cannot read"),
            "{err:#}"
        );
    }

    #[test]
    fn lines_split_on_newlines_and_drop_carriage_returns() {
        let got: Vec<&[u8]> = lines(b"a\r\n\nb\nc").collect();
        assert_eq!(got, [&b"a"[..], b"", b"b", b"c"]);
        assert_eq!(lines(b"a\n").count(), 1);
        assert_eq!(lines(b"").count(), 0);
    }

    #[test]
    fn format_is_detected_from_the_first_line() {
        let format = |bytes: &[u8]| detect(bytes, LogsFormat::Auto, 1).format;
        assert_eq!(format(b"\n{\"query_id\": 1}\n"), LogsFormat::Jsonl);
        assert_eq!(format(b"q1 Q0 d1 1 2.5 run\n{"), LogsFormat::Trec);
        assert_eq!(format(b"1048585\t7187158\t1\n"), LogsFormat::Msmarco);
        assert_eq!(format(b"not json at all\n"), LogsFormat::Jsonl);
        // The tail of a line cut off by log rotation: six tokens, but no rank and score.
        let cut = br#"al", "results": ["a", "b"], "latency_ms": 41.2}"#;
        assert_eq!(format(cut), LogsFormat::Jsonl);
        assert_eq!(format(b""), LogsFormat::Jsonl);
        // An OTLP export of no spans first: the next line decides.
        let traces = b"{}\n { } \n{\"resourceSpans\": []}\n";
        assert_eq!(format(traces), LogsFormat::Otlp);
        // A first line with a byte that is not UTF-8, or the tail of a line
        // cut where a byte range began: the next line decides.
        let export = b"{\"resourceSpans\": []}";
        let garbled = [&b"{\"resourceSpans\": [\xff]}\n"[..], export].concat();
        assert_eq!(format(&garbled), LogsFormat::Otlp);
        let cut = [&b"ue\": \"q1\"}}]}]}]}\n"[..], export, b"\n", export].concat();
        assert_eq!(format(&cut), LogsFormat::Otlp);
    }

    /// A header line is looked past, and only a line shaped as the run's
    /// header counts as one; a first line that fits nothing says what it
    /// looked like.
    #[test]
    fn detection_looks_past_a_header_and_explains_itself() {
        let auto = |bytes: &[u8]| detect(bytes, LogsFormat::Auto, 1);
        let trec = auto(b"\nqid Q0 docno rank score tag\nq1 Q0 d1 1 2.5 run\n");
        assert_eq!((trec.format, trec.header_line), (LogsFormat::Trec, Some(2)));
        let msmarco = auto(b"qid\tpid\trank\n1\t7\t1\n");
        assert_eq!(
            (msmarco.format, msmarco.header_line),
            (LogsFormat::Msmarco, Some(1))
        );
        // A run line with a defect is rejected later, not taken for a header.
        let broken = auto(b"q1 Q0 d1 1 2.5\nq1 Q0 d2 2 2.0 run\n");
        assert_eq!(
            (broken.format, broken.header_line, broken.looked_past_first),
            (LogsFormat::Trec, None, true)
        );
        let lone = auto(b"q1 Q0 d1 1 2.5\n");
        assert_eq!(lone.format, LogsFormat::Jsonl);
        assert!(lone.doubt.unwrap().contains("5 fields and no JSON object"));
        let scores = auto(b"q1 d1 0.5\nq1 d2 0.25\n").doubt.unwrap();
        assert!(scores.contains("the third not a whole number"), "{scores}");
        // Asked for TREC, given an MS MARCO run: read as asked, and said.
        let asked = detect(b"1\t7\t1\n", LogsFormat::Trec, 1);
        assert_eq!(asked.format, LogsFormat::Trec);
        assert!(asked.doubt.unwrap().contains("--logs-format msmarco"));
        let header = detect(b"qid\tpid\trank\n1\t7\t1\n", LogsFormat::Msmarco, 1);
        assert_eq!(header.header_line, Some(1));
        assert_eq!(auto(b"{\"query_id\": 1}\n").doubt, None);
    }

    #[test]
    fn discover_rejects_missing_and_empty_inputs() {
        let dir = std::env::temp_dir().join(format!("rgrade-discover-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.jsonl"), "x\n").unwrap();
        std::fs::write(dir.join("a.run"), "x\n").unwrap();
        std::fs::write(dir.join("c.trec.gz"), "x\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "x\n").unwrap();
        std::fs::write(
            dir.join("bm25.dl19.txt"),
            "qid Q0 docno rank score tag\n1 Q0 d 1 2 r\n",
        )
        .unwrap();
        let found = discover(std::slice::from_ref(&dir), None).unwrap();
        let names: Vec<String> = found.inputs.iter().map(Input::name).collect();
        let expected = ["a.run", "bm25.dl19.txt", "c.trec.gz", "sub/b.jsonl"].map(|f| dir.join(f));
        assert_eq!(names, expected.map(|p| p.display().to_string()));
        assert_eq!(found.skipped, [dir.join("notes.txt")]);
        assert_eq!(found.inputs[1].run_name(), "bm25.dl19");
        std::fs::write(dir.join("empty.jsonl"), "").unwrap();
        let err = discover(&[dir.join("empty.jsonl")], None).unwrap_err();
        assert!(format!("{err:#}").contains("empty.jsonl: log file is empty"));
        let err = discover(&[dir.join("nope.jsonl")], None).unwrap_err();
        assert!(format!("{err:#}").contains("nope.jsonl: cannot open log input"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
