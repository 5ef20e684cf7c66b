//! Every log input cut into chunks for the workers, by format: lines of
//! text in blocks (the format detected on the first block), a Parquet
//! file as its row groups, an Arrow table or stream as slices of its
//! batches, and lines handed over as blocks of JSON.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use xxhash_rust::xxh3::Xxh3;

use crate::base::options::LogsFormat;
use crate::io::blocks::{Block, BlockCutter, Chunk, ChunkSink, BLOCK_SIZE};
use crate::io::decompress::{Source, BOM};
use crate::io::inputs::{Damaged, Input, InputStats};
use crate::io::location::ObjectUri;
use crate::io::objects;
use crate::io::parquet::{ParquetAt, MAGIC};
use crate::io::tables::{LogTable, TableDigest};
use crate::logs::detect::{detect, shape_of, unread_shape};
use crate::logs::parquet::{self, ColumnNames, RowGroup, Rows};

/// What the reader sends the workers of a grading.
pub type LogChunk = Chunk<RowGroup>;

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
    sink: &mut dyn ChunkSink<RowGroup>,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Result<Vec<InputStats>> {
    let mut stats = Vec::with_capacity(inputs.len());
    for &(index, input) in inputs {
        let name = input.name();
        let handed_over = match input {
            Input::Table(table) => Some(read_table(index, table, columns, sink)),
            Input::Lines(lines, i) => Some(send_lines(index, lines.lines(*i), format, sink)),
            Input::File(_) | Input::Object(_) | Input::Stdin => None,
        };
        if let Some(read) = handed_over {
            match read.with_context(|| name.clone())? {
                Some(read) => stats.push(read),
                None => break,
            }
            continue;
        }
        let object_parquet = match input {
            Input::Object(uri) => object_parquet(uri, format).with_context(|| name.clone())?,
            _ => None,
        };
        if let Some(at) = object_parquet {
            match read_row_groups(index, &at, columns, sink, on_bytes)
                .with_context(|| name.clone())?
            {
                Some(read) => stats.push(read),
                None => break,
            }
            continue;
        }
        // A stream whose first bytes do not decode is damaged; a file that
        // is not there, or not for this user, is not.
        let mut source = Source::open(input).map_err(|err| {
            let message = format!("{name}: cannot open");
            match err.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
                    anyhow::Error::new(err).context(message)
                }
                _ => anyhow::Error::new(err).context(Damaged {
                    input: index,
                    message,
                }),
            }
        })?;
        if format == LogsFormat::Parquet || format == LogsFormat::Auto && source.holds_parquet() {
            let at = parquet_file(input, &source)?;
            drop(source);
            match read_row_groups(index, &at, columns, sink, on_bytes)
                .with_context(|| name.clone())?
            {
                Some(read) => stats.push(read),
                None => break,
            }
            continue;
        }
        if let Some(shape) = unread_shape(source.head(), format) {
            bail!("{name}: {shape}");
        }
        let decide = |bytes: &[u8], first_line| detect(bytes, format, first_line);
        let mut cutter = BlockCutter::new(index, &mut *sink, &decide);
        let lines = match cutter.run(&mut source, on_bytes) {
            Ok(Some(lines)) => lines,
            Ok(None) => break,
            Err(err) => {
                return Err(err).context(Damaged {
                    input: index,
                    message: format!("{name}: cannot read (truncated or corrupt input?)"),
                })
            }
        };
        let (bytes, hash) = source.digest();
        stats.push(InputStats {
            bytes,
            decoded_bytes: cutter.decoded_bytes(),
            lines,
            hash,
            format: cutter.detected().map_or(LogsFormat::Jsonl, |d| d.format),
            format_doubt: cutter
                .detected()
                .and_then(|detected| detected.doubt.clone()),
            part: false,
            skipped: None,
        });
    }
    Ok(stats)
}

/// Read the Parquet file `at`, input `index` of the run: send a chunk per
/// row group to `sink`. A file on disk is hashed on this thread as the
/// workers decode; an object, read by ranges and never whole, is known by
/// its version and size instead (see [`object_hash`]). Returns `None` if
/// the sink stopped taking chunks.
///
/// # Errors
/// As [`parquet::open`]; the file cannot be read. A file of no rows (the
/// part Spark writes for an empty partition) is an input of no records.
fn read_row_groups(
    index: u32,
    at: &ParquetAt,
    columns: ColumnNames<'_>,
    sink: &mut dyn ChunkSink<RowGroup>,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> Result<Option<InputStats>> {
    let footer = at.footer().map_err(|err| {
        // Named by the caller; the footer is what a damaged file lacks.
        err.context(Damaged {
            input: index,
            message: "cannot be read".to_string(),
        })
    })?;
    let (file, places) = parquet::open(at, index, footer, columns)?;
    let mut identity = match at {
        ParquetAt::File(path) => Identity::Hashed(Box::new(Hashing {
            file: File::open(path).context("cannot open")?,
            hasher: Xxh3::new(),
            read: 0,
            buffer: vec![0; 1 << 20],
        })),
        ParquetAt::Object { size, version, .. } => Identity::Object {
            size: *size,
            version: version.as_deref(),
        },
    };
    let (mut rows, mut decoded_bytes, mut sent_up_to) = (0u64, 0u64, 0u64);
    for (i, place) in places.iter().enumerate() {
        // Hashed up to the row group's end before it is sent: its bytes
        // are then in the page cache when a worker decodes them.
        match &mut identity {
            Identity::Hashed(hashing) => {
                hashing.up_to(place.end, on_bytes).context("cannot read")?
            }
            Identity::Object { .. } => on_bytes(place.end.saturating_sub(sent_up_to)),
        }
        sent_up_to = sent_up_to.max(place.end);
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
    let (bytes, hash) = match identity {
        Identity::Hashed(mut hashing) => {
            hashing.up_to(u64::MAX, on_bytes).context("cannot read")?;
            (hashing.read, format!("{:032x}", hashing.hasher.digest128()))
        }
        Identity::Object { size, version } => {
            on_bytes(size.saturating_sub(sent_up_to));
            (size, object_hash(size, version))
        }
    };
    Ok(Some(InputStats {
        bytes,
        decoded_bytes,
        lines: rows,
        hash,
        format: LogsFormat::Parquet,
        format_doubt: None,
        part: false,
        skipped: None,
    }))
}

/// The object at `uri` as Parquet, if `format` says it is or, when
/// `Auto`, it opens with Parquet's magic bytes: read by a range, so that
/// a Parquet object is never streamed whole.
///
/// # Errors
/// There is no such object, or its first bytes cannot be read.
fn object_parquet(uri: &ObjectUri, format: LogsFormat) -> Result<Option<ParquetAt>> {
    if !matches!(format, LogsFormat::Auto | LogsFormat::Parquet) {
        return Ok(None);
    }
    let head = objects::head(uri)?.context("cannot open: no such object")?;
    let magic = MAGIC.len() as u64;
    let is_parquet = format == LogsFormat::Parquet
        || head.size >= magic && objects::get_range(uri, 0..magic)? == MAGIC;
    Ok(is_parquet.then(|| ParquetAt::object_as(uri, head)))
}

/// What a Parquet input's content hash is taken from.
enum Identity<'a> {
    /// A file's bytes, read front to back.
    Hashed(Box<Hashing>),
    /// An object's size and version.
    Object { size: u64, version: Option<&'a str> },
}

/// The content hash of a Parquet object, which is read by ranges and so
/// never hashed whole: xxh3-128 of its size and its version (ETag) as the
/// store gave them, which change whenever its bytes do.
fn object_hash(size: u64, version: Option<&str>) -> String {
    let identity = format!("{size}:{}", version.unwrap_or_default());
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(identity.as_bytes()))
}

/// Send the rows of `table`, input `index` of the run, to `sink` a few
/// thousand at a time, so that workers share even one large batch. A
/// stream's batches are read one at a time as the sink takes their
/// chunks, each counted and hashed as it passes: memory holds the batches
/// the workers have yet to grade, however long the stream. Returns `None`
/// if the sink stopped taking chunks.
///
/// # Errors
/// As [`parquet::open_table`]; a stream read already, or whose next batch
/// cannot be read or cast. A table of no rows is an input of no records.
fn read_table(
    index: u32,
    table: &LogTable,
    columns: ColumnNames<'_>,
    sink: &mut dyn ChunkSink<RowGroup>,
) -> Result<Option<InputStats>> {
    let planned = parquet::open_table(table.schema(), columns)?;
    let mut digest = TableDigest::new(table.schema());
    let mut rows = 0u64;
    for records in table.batches()? {
        let records = records?;
        digest.add(&records);
        let len = records.num_rows();
        for start in (0..len).step_by(TABLE_CHUNK_ROWS) {
            let chunk = Chunk::Rows(RowGroup {
                input: index,
                rows: Rows::Table {
                    table: Arc::clone(&planned),
                    rows: records.slice(start, TABLE_CHUNK_ROWS.min(len - start)),
                },
                first_row: rows + start as u64 + 1,
            });
            if !sink.send(chunk) {
                return Ok(None);
            }
        }
        rows += len as u64;
    }
    Ok(Some(InputStats {
        bytes: digest.bytes(),
        decoded_bytes: digest.bytes(),
        lines: rows,
        hash: digest.hash(),
        format: LogsFormat::Parquet,
        format_doubt: None,
        part: false,
        skipped: None,
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
    sink: &mut dyn ChunkSink<RowGroup>,
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
        header: None,
        numbers: Vec::new(),
    };
    let mut send = |block: &mut Block, format: LogsFormat| {
        let full = Block {
            bytes: std::mem::take(&mut block.bytes),
            numbers: std::mem::take(&mut block.numbers),
            format,
            input: block.input,
            first_line: block.first_line,
            header: None,
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
        skipped: None,
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

/// Where a Parquet input is read from: Parquet is read by seeking, so it
/// must be a regular file or an object, not compressed.
///
/// # Errors
/// The input does not open with Parquet's magic bytes, or is standard
/// input, a pipe or a compressed stream; an object's size cannot be had.
fn parquet_file(input: &Input, source: &Source) -> Result<ParquetAt> {
    let name = input.name();
    if source.is_compressed() && source.holds_parquet() {
        bail!("{name}: Parquet inside a compressed stream cannot be read: Parquet needs a seekable file (its columns are compressed already); decompress it to a file");
    }
    if !source.holds_parquet() {
        bail!("{name}: not a Parquet file (it does not open with PAR1)");
    }
    match input {
        Input::File(path) if input.can_read_again() => Ok(ParquetAt::File(path.clone())),
        Input::Object(uri) => ParquetAt::object(uri).with_context(|| name.clone()),
        _ => bail!("{name}: Parquet needs a seekable file, not standard input or a pipe; save it to a file and grade that"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::blocks::InlineSink;
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
        let mut sink = InlineSink::new(|chunk: &LogChunk| {
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
            partitions: &[],
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
}
