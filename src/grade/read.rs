//! Stage 1, read: find the log inputs, undo their compression (recognised by
//! magic bytes) and cut them into newline-aligned blocks for the workers.
//!
//! One reader serves every kind of input — files, stdin, gzip and zstd
//! streams — and hands each block to a [`ChunkSink`]: the worker pool's
//! channel ([`super::workers`]) or the reading thread itself. Spent block
//! buffers come back to be filled again, so memory stays a few blocks per
//! worker whatever the size of the input.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use flate2::bufread::MultiGzDecoder;
use xxhash_rust::xxh3::Xxh3;

use crate::options::LogsFormat;
use crate::output::schema::{PER_QUERY_FILE, REJECTS_FILE, SUMMARY_FILE};

/// The longest log line accepted; a longer one is rejected as `line_too_long`.
pub const MAX_LINE: usize = 64 << 20;

/// How many bytes a block holds before it is cut at its last newline.
pub const BLOCK_SIZE: usize = 1 << 20;

/// File name endings that a directory walk picks up.
const LOG_SUFFIXES: [&str; 5] = [".jsonl", ".jsonl.gz", ".jsonl.zst", ".trec", ".run"];

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

/// One log input: a file or standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file on disk.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

impl Input {
    /// The name used in messages and outputs.
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Stdin => "-".to_string(),
        }
    }

    /// Whether it can be read a second time: a regular file can, standard
    /// input or a pipe cannot.
    pub fn can_read_again(&self) -> bool {
        match self {
            Input::File(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file()),
            Input::Stdin => false,
        }
    }

    /// The size on disk, when known up front.
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            Input::Stdin => None,
        }
    }
}

/// Expand the LOGS arguments into inputs: files as given, directories
/// walked (sorted, for a stable order) for log file names, `-` for stdin.
/// A walk never yields rgrade's own outputs: the rejects.jsonl of the
/// output directory `out`, or of any directory an earlier grading wrote
/// (it holds summary.json beside per_query.csv), is no log.
///
/// # Errors
/// A path that does not exist, an empty file, a directory with no logs, or
/// one file reached twice (by a second path or a hard link).
pub fn discover(args: &[PathBuf], out: Option<&Path>) -> Result<Vec<Input>> {
    let out = out.and_then(|dir| std::fs::canonicalize(dir).ok());
    let mut inputs = Vec::new();
    for arg in args {
        if arg.as_os_str() == "-" {
            inputs.push(Input::Stdin);
            continue;
        }
        let meta = std::fs::metadata(arg)
            .with_context(|| format!("{}: cannot open log input", arg.display()))?;
        if meta.is_dir() {
            let before = inputs.len();
            walk(arg, out.as_deref(), &mut inputs)?;
            if inputs.len() == before {
                bail!(
                    "{}: directory holds no log files ({})",
                    arg.display(),
                    LOG_SUFFIXES.join(", ")
                );
            }
        } else {
            add_file(arg.clone(), &meta, &mut inputs)?;
        }
    }
    let mut seen = std::collections::HashSet::new();
    for input in &inputs {
        let key = match input {
            Input::File(path) => file_key(path),
            Input::Stdin => FileKey::Stdin,
        };
        if !seen.insert(key) {
            bail!(
                "{}: log input is given twice (its records would be counted twice)",
                input.name()
            );
        }
    }
    Ok(inputs)
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

/// Whether `dir` holds a grading's outputs: `out`, or a directory with
/// summary.json beside per_query.csv.
fn is_output_dir(dir: &Path, out: Option<&Path>) -> bool {
    let is_out = out.is_some_and(|out| std::fs::canonicalize(dir).is_ok_and(|dir| dir == out));
    let written = |name: &str| dir.join(name).is_file();
    is_out || (written(SUMMARY_FILE) && written(PER_QUERY_FILE))
}

/// Walk a directory in sorted order, leaving out rgrade's own outputs.
/// Symbolic links to directories are not followed (as ripgrep and fd do
/// not), so a link cycle cannot read a log over and over.
fn walk(dir: &Path, out: Option<&Path>, inputs: &mut Vec<Input>) -> Result<()> {
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
            walk(&path, out, inputs)?;
        } else if holds_outputs && entry.file_name() == REJECTS_FILE {
            continue;
        } else if is_log_name(&path) && !(kind.is_symlink() && path.is_dir()) {
            let meta = std::fs::metadata(&path)
                .with_context(|| format!("{}: cannot open log input", path.display()))?;
            add_file(path, &meta, inputs)?;
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

fn is_log_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    LOG_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
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
#[derive(Debug, Clone)]
pub struct InputStats {
    /// Raw bytes read (compressed size for compressed input).
    pub bytes: u64,
    /// Bytes after decompression.
    pub decoded_bytes: u64,
    /// Lines, counting a last line without a newline.
    pub lines: u64,
    /// xxh3-128 of the raw bytes, in hex.
    pub hash: String,
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
}

impl Chunk {
    /// The chunk's buffer, for the reader to fill again.
    pub fn into_buffer(self) -> Vec<u8> {
        match self {
            Chunk::Lines(block) => block.bytes,
            Chunk::Oversized { head, .. } => head,
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
/// its chunks carry.
///
/// # Errors
/// An input that cannot be opened or read, or a corrupt compressed stream,
/// named by its path. Sending stops early (without error) if the workers hang up.
pub fn read_inputs(
    inputs: &[(u32, &Input)],
    format: LogsFormat,
    sink: &mut dyn ChunkSink,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Result<Vec<InputStats>> {
    let mut stats = Vec::with_capacity(inputs.len());
    for &(index, input) in inputs {
        let name = input.name();
        let mut source = Source::open(input).with_context(|| format!("{name}: cannot open"))?;
        let mut cutter = BlockCutter {
            input: index,
            sink: &mut *sink,
            next_line: 1,
            decoded_bytes: 0,
            format,
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
        });
    }
    Ok(stats)
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
        format: LogsFormat::Jsonl,
    };
    Ok(cutter.run(source, &|_| {})?.is_some())
}

/// Cuts one decoded stream into blocks of whole lines.
struct BlockCutter<'a> {
    input: u32,
    sink: &'a mut dyn ChunkSink,
    next_line: u64,
    decoded_bytes: u64,
    format: LogsFormat,
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
        if self.format == LogsFormat::Auto {
            self.format = detect_format(&bytes);
        }
        let lines =
            memchr::memchr_iter(b'\n', &bytes).count() as u64 + u64::from(!bytes.ends_with(b"\n"));
        let block = Block {
            input: self.input,
            first_line: self.next_line,
            bytes,
            format: self.format,
        };
        self.next_line += lines;
        self.sink.send(Chunk::Lines(block))
    }
}

/// A log is a TREC run when its first non-blank line has the shape of one:
/// at least six fields, an integer rank in the fourth and a number in the
/// fifth. Anything else is read as JSONL, so a broken first JSON line is
/// rejected as such rather than misread.
fn detect_format(bytes: &[u8]) -> LogsFormat {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let rest = &bytes[start..];
    let first_line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
    let fields: Vec<&[u8]> = first_line
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty())
        .collect();
    let parses =
        |field: &[u8], number: fn(&str) -> bool| std::str::from_utf8(field).is_ok_and(number);
    let trec = fields.len() >= 6
        && parses(fields[3], |f| f.parse::<i64>().is_ok())
        && parses(fields[4], |f| f.parse::<f64>().is_ok());
    if trec {
        LogsFormat::Trec
    } else {
        LogsFormat::Jsonl
    }
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

/// The lines read again from an input, and the hash of its raw bytes
/// this time, to check it did not change since the first reading.
pub struct Excerpts {
    /// (1-based line, its first bytes).
    pub lines: Vec<(u64, Vec<u8>)>,
    /// xxh3-128 of the raw bytes, in hex, as [`InputStats::hash`].
    pub hash: String,
}

/// Read an input again for the first `max_bytes` of the given lines
/// (sorted, 1-based), without their line ends, and to its end for its
/// hash. Rejects that concern a whole capture are found only after every
/// block was judged, when the record's bytes are gone; this recovers them.
/// Only a regular file can be read a second time: for anything else
/// (stdin, a pipe) this yields `None`.
///
/// # Errors
/// The input cannot be opened or read.
pub fn excerpts(input: &Input, lines: &[u64], max_bytes: usize) -> io::Result<Option<Excerpts>> {
    let Input::File(path) = input else {
        return Ok(None);
    };
    if !std::fs::metadata(path)?.is_file() {
        return Ok(None);
    }
    let mut source = Source::open(input)?;
    let mut found = Vec::with_capacity(lines.len());
    let mut wanted = lines.iter().copied().peekable();
    let mut line = Vec::new();
    let mut number = 0;
    while let Some(&next) = wanted.peek() {
        line.clear();
        if source.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        if number == next {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            found.push((number, text[..text.len().min(max_bytes)].to_vec()));
            while wanted.next_if_eq(&number).is_some() {}
        }
    }
    io::copy(&mut source, &mut io::sink())?;
    Ok(Some(Excerpts {
        lines: found,
        hash: source.digest().1,
    }))
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
            });
            true
        });
        let input = Input::File(path);
        let stats = read_inputs(&[(0, &input)], LogsFormat::Auto, &mut sink, &|_| {});
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
        assert_eq!(detect_format(b"\n{\"query_id\": 1}\n"), LogsFormat::Jsonl);
        assert_eq!(detect_format(b"q1 Q0 d1 1 2.5 run\n{"), LogsFormat::Trec);
        assert_eq!(detect_format(b"not json at all\n"), LogsFormat::Jsonl);
        // The tail of a line cut off by log rotation: six tokens, but no rank and score.
        let cut = br#"al", "results": ["a", "b"], "latency_ms": 41.2}"#;
        assert_eq!(detect_format(cut), LogsFormat::Jsonl);
        assert_eq!(detect_format(b""), LogsFormat::Jsonl);
    }

    #[test]
    fn discover_rejects_missing_and_empty_inputs() {
        let dir = std::env::temp_dir().join(format!("rgrade-discover-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.jsonl"), "x\n").unwrap();
        std::fs::write(dir.join("a.run"), "x\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "x\n").unwrap();
        let found = discover(std::slice::from_ref(&dir), None).unwrap();
        assert_eq!(
            found,
            [
                Input::File(dir.join("a.run")),
                Input::File(dir.join("sub/b.jsonl"))
            ]
        );
        std::fs::write(dir.join("empty.jsonl"), "").unwrap();
        let err = discover(&[dir.join("empty.jsonl")], None).unwrap_err();
        assert!(format!("{err:#}").contains("empty.jsonl: log file is empty"));
        let err = discover(&[dir.join("nope.jsonl")], None).unwrap_err();
        assert!(format!("{err:#}").contains("nope.jsonl: cannot open log input"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
