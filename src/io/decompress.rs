//! An input opened for reading: gzip and zstd recognised by their magic
//! bytes (not by the file name) and undone, a byte-order mark dropped, and
//! the raw bytes counted and hashed as they go by, for the content hash.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::MultiGzDecoder;
use xxhash_rust::xxh3::Xxh3;

use crate::io::inputs::Input;
use crate::io::{objects, parquet};

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
pub struct Tally<R> {
    inner: R,
    bytes: u64,
    hasher: Xxh3,
}

impl<R> Tally<R> {
    /// `inner`, none of it read yet.
    pub fn new(inner: R) -> Self {
        Tally {
            inner,
            bytes: 0,
            hasher: Xxh3::new(),
        }
    }

    /// The bytes read so far and their xxh3-128, in hex: the content
    /// hash, once the input was read to its end.
    pub fn digest(&self) -> (u64, String) {
        (self.bytes, format!("{:032x}", self.hasher.digest128()))
    }
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
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An input opened for reading: its compression undone, a leading UTF-8
/// byte-order mark dropped, and its raw bytes counted and hashed as they go.
pub struct Source {
    reader: BufReader<Decoded<BufReader<RawTally>>>,
}

impl Source {
    /// Open a file, an object (streamed, never downloaded whole first) or
    /// standard input.
    ///
    /// # Errors
    /// The input cannot be opened or its first bytes read.
    pub fn open(input: &Input) -> io::Result<Self> {
        let raw: Box<dyn Read + Send> = match input {
            Input::File(path) => Box::new(File::open(path)?),
            Input::Object(uri) => Box::new(objects::open(uri).map_err(io::Error::other)?),
            Input::Stdin => Box::new(io::stdin()),
            Input::Table(_) | Input::Lines(..) => {
                let message = format!("{}: handed over in memory, not read", input.name());
                return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
            }
        };
        let decoded = Decoded::new(BufReader::with_capacity(1 << 20, Tally::new(raw)))?;
        // As large as the raw buffer: a plain file is then read straight
        // into this one, which blocks copy out of.
        let mut reader = BufReader::with_capacity(1 << 20, decoded);
        if reader.fill_buf()?.starts_with(BOM) {
            reader.consume(BOM.len());
        }
        Ok(Source { reader })
    }

    /// Whether its (decoded) bytes open as Parquet.
    pub fn holds_parquet(&self) -> bool {
        self.reader.buffer().starts_with(parquet::MAGIC)
    }

    /// Its first (decoded) bytes, as far as the buffer holds them, without
    /// reading them.
    pub fn head(&self) -> &[u8] {
        self.reader.buffer()
    }

    /// Whether it was gzip or zstd.
    pub fn is_compressed(&self) -> bool {
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
        self.tally().digest()
    }

    /// [`Source::digest`] of the whole input: the rest of it is read, and
    /// dropped.
    ///
    /// # Errors
    /// The input cannot be read, or decompressed, to its end.
    pub fn digest_to_end(&mut self) -> io::Result<(u64, String)> {
        io::copy(self, &mut io::sink())?;
        Ok(self.digest())
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
