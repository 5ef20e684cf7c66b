//! A stream cut into blocks of whole lines for the workers.
//!
//! A block is cut at its last newline once it holds [`BLOCK_SIZE`] bytes;
//! the rest carries into the next. A line longer than [`MAX_LINE`] is sent
//! as its first bytes only. Spent block buffers come back from the sink to
//! be filled again, so memory stays a few blocks per worker whatever the
//! size of the input. What format the lines are in is decided once per
//! input, on its first block, by the caller's detection; a block carries
//! that decision for the readers of the format, and reads none.

use std::io::{self, BufRead, Read};
use std::ops::Range;
use std::sync::Arc;

use crate::base::options::LogsFormat;
use crate::io::decompress::Source;

/// The longest log line accepted; a longer one is rejected as `line_too_long`.
pub const MAX_LINE: usize = 64 << 20;

/// How many bytes a block holds before it is cut at its last newline.
pub const BLOCK_SIZE: usize = 1 << 20;

/// How much of an oversized line is kept: as much as a reject's excerpt.
pub const OVERSIZED_HEAD: usize = 200;

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
    /// The run's header line, if it has one.
    pub header: Option<Header>,
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
pub enum Chunk<R> {
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
    /// itself (the logs' row groups; labels read lines only).
    Rows(R),
}

impl<R> Chunk<R> {
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
pub trait ChunkSink<R> {
    /// Take a chunk; false once nobody wants more.
    fn send(&mut self, chunk: Chunk<R>) -> bool;
    /// A spent buffer, if one came back.
    fn recycled(&mut self) -> Option<Vec<u8>>;
}

/// Handles each chunk on the reading thread itself, then fills its buffer
/// again: the sequential pipeline (`-j 1`), one thread doing everything.
pub struct InlineSink<F> {
    handle: F,
    spare: Option<Vec<u8>>,
}

impl<F> InlineSink<F> {
    /// A sink that hands every chunk to `handle`, which says whether to go on.
    pub fn new(handle: F) -> Self {
        InlineSink {
            handle,
            spare: None,
        }
    }
}

impl<R, F: FnMut(&Chunk<R>) -> bool> ChunkSink<R> for InlineSink<F> {
    fn send(&mut self, chunk: Chunk<R>) -> bool {
        let go_on = (self.handle)(&chunk);
        self.spare = Some(chunk.into_buffer());
        go_on
    }

    fn recycled(&mut self) -> Option<Vec<u8>> {
        self.spare.take()
    }
}

/// Cut one open source into blocks of whole lines for `sink`, as if it
/// were the only input. Returns false if the sink stopped taking them.
///
/// # Errors
/// The source cannot be read.
pub fn read_blocks<R>(source: &mut Source, sink: &mut dyn ChunkSink<R>) -> io::Result<bool> {
    let mut cutter = BlockCutter {
        input: 0,
        sink,
        next_line: 1,
        decoded_bytes: 0,
        decide: &|_, _| Detected::lines(LogsFormat::Jsonl),
        detected: None,
    };
    Ok(cutter.run(source, &|_| {})?.is_some())
}

/// Cuts one decoded stream into blocks of whole lines.
pub struct BlockCutter<'a, R> {
    input: u32,
    sink: &'a mut dyn ChunkSink<R>,
    next_line: u64,
    decoded_bytes: u64,
    /// How an input whose first block (and its first line number) is
    /// given reads.
    decide: &'a dyn Fn(&[u8], u64) -> Detected,
    /// How the input reads, decided on its first block.
    detected: Option<Detected>,
}

impl<'a, R> BlockCutter<'a, R> {
    /// A cutter of input `input` for `sink`, whose format `decide` tells
    /// from the first block.
    pub fn new(
        input: u32,
        sink: &'a mut dyn ChunkSink<R>,
        decide: &'a dyn Fn(&[u8], u64) -> Detected,
    ) -> Self {
        BlockCutter {
            input,
            sink,
            next_line: 1,
            decoded_bytes: 0,
            decide,
            detected: None,
        }
    }

    /// Bytes after decompression so far.
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded_bytes
    }

    /// How the input reads, once its first block was cut.
    pub fn detected(&self) -> Option<&Detected> {
        self.detected.as_ref()
    }

    /// Cut `source` to its end; `on_bytes` hears of raw bytes as they go.
    /// Returns the input's line count, or `None` if the sink hung up.
    ///
    /// # Errors
    /// The source cannot be read.
    pub fn run(
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
                    block.truncate(OVERSIZED_HEAD);
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
            .get_or_insert_with(|| (self.decide)(&bytes, self.next_line));
        let lines =
            memchr::memchr_iter(b'\n', &bytes).count() as u64 + u64::from(!bytes.ends_with(b"\n"));
        let block = Block {
            input: self.input,
            first_line: self.next_line,
            bytes,
            format: detected.format,
            header: detected.header.clone(),
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
pub struct Detected {
    /// The format (never `Auto`).
    pub format: LogsFormat,
    /// A run's header line.
    pub header: Option<Header>,
    /// The first line fit no format (nor was a header) and a later line
    /// decided: the first is rejected by that format's reader.
    pub looked_past_first: bool,
    /// What the first line looked like when no line fit a format.
    pub doubt: Option<String>,
}

/// A run's header line: where it is, and what it says (a CSV run's header
/// tells where each field is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Its 1-based line number.
    pub line: u64,
    /// Its text, without the line end.
    pub text: Arc<str>,
}

impl Detected {
    /// Lines read in `format`, no question asked.
    pub fn lines(format: LogsFormat) -> Self {
        Detected {
            format,
            header: None,
            looked_past_first: false,
            doubt: None,
        }
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
/// Whether a line holds nothing but whitespace (skipped, and counted).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_newlines_and_drop_carriage_returns() {
        let got: Vec<&[u8]> = lines(b"a\r\n\nb\nc").collect();
        assert_eq!(got, [&b"a"[..], b"", b"b", b"c"]);
        assert_eq!(lines(b"a\n").count(), 1);
        assert_eq!(lines(b"").count(), 0);
    }
}
