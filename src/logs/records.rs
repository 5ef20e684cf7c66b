//! The one place grading gets records from: [`records`] makes, for a chunk
//! the reader cut, the source of records of its format, the way each
//! format's own file reads it. Grading hands the source a [`RecordSink`]
//! and sees [`Record`]s only.

use crate::base::options::{LogsFormat, RunName};
use crate::io::blocks::{is_blank, line_ranges, Block, Chunk, MAX_LINE};
use crate::io::json::JsonParser;
use crate::logs::csv_run::CsvLines;
use crate::logs::jsonl::{JsonlLines, LogFields};
use crate::logs::otlp::{OtlpLines, SpanFields};
use crate::logs::parquet::rows::RowRecords;
use crate::logs::partition::{partition_of, Partition};
use crate::logs::read::LogChunk;
use crate::logs::record::{
    deliver, Invalid, LineFormat, Origin, Record, RecordSink, RecordSource, RejectReason, RunNames,
    Skipped,
};
use crate::logs::trec::RunLines;

/// What reading records needs to know besides the bytes: where records
/// keep their fields, and what names a run.
#[derive(Debug, Clone, Copy)]
pub struct RecordOptions<'a> {
    /// Where JSONL records keep their fields.
    pub fields: &'a LogFields,
    /// Where spans keep what a capture needs.
    pub spans: &'a SpanFields,
    /// What names a TREC or CSV run.
    pub run_name: RunName,
    /// Each input's name as a run: its file name without extensions.
    pub file_runs: &'a [String],
    /// Each input's Hive partition (none for one handed over).
    pub partitions: &'a [Partition],
}

impl<'a> RecordOptions<'a> {
    /// The Hive partition of input `input`: its `key=value` folders.
    pub fn partition(&self, input: u32) -> &'a [(String, String)] {
        partition_of(self.partitions, input)
    }

    /// What names a run of run lines.
    pub fn runs(&self) -> RunNames<'a> {
        RunNames {
            run_name: self.run_name,
            file_runs: self.file_runs,
        }
    }
}

/// The records of `chunk`, read as its format reads them; `parser` is the
/// worker's JSON parser, reused from chunk to chunk.
pub fn records<'c>(
    chunk: &'c LogChunk,
    options: &'c RecordOptions<'c>,
    parser: &'c mut JsonParser,
) -> Box<dyn RecordSource + 'c> {
    match chunk {
        &Chunk::Oversized {
            input,
            line,
            ref head,
        } => Box::new(Oversized {
            origin: Origin::line(input, line),
            head,
        }),
        Chunk::Rows(group) => Box::new(RowRecords {
            group,
            spans: options.spans,
        }),
        Chunk::Lines(block) => match block.format {
            LogsFormat::Trec | LogsFormat::Msmarco => Box::new(LineRecords::new(
                block,
                RunLines::new(block.format, options.runs()),
            )),
            LogsFormat::Csv => Box::new(LineRecords::new(
                block,
                CsvLines::new(block, options.runs()),
            )),
            LogsFormat::Otlp => Box::new(LineRecords::new(
                block,
                OtlpLines::new(parser, options.spans, options.partition(block.input)),
            )),
            // A block's format is decided (never `Auto`); Parquet comes in rows.
            LogsFormat::Jsonl | LogsFormat::Auto | LogsFormat::Parquet => {
                Box::new(LineRecords::new(
                    block,
                    JsonlLines::new(parser, options.fields, options.partition(block.input)),
                ))
            }
        },
    }
}

/// The input `chunk` is from.
pub fn input_of(chunk: &LogChunk) -> u32 {
    match chunk {
        Chunk::Lines(block) => block.input,
        &Chunk::Oversized { input, .. } => input,
        Chunk::Rows(group) => group.input,
    }
}

/// The lines of a block, each read by the block's format; blank lines and
/// a run's header are skipped, a line too long is rejected.
struct LineRecords<'c, F> {
    block: &'c Block,
    format: F,
}

impl<'c, F: LineFormat> LineRecords<'c, F> {
    fn new(block: &'c Block, format: F) -> Self {
        LineRecords { block, format }
    }
}

impl<F: LineFormat> RecordSource for LineRecords<'_, F> {
    fn for_each(&mut self, sink: &mut dyn RecordSink) -> Result<(), String> {
        if let Some(unreadable) = self.format.unreadable() {
            return Err(unreadable);
        }
        let block = self.block;
        let text = match F::AS_TEXT {
            true => std::str::from_utf8(&block.bytes).ok(),
            false => None,
        };
        for (offset, range) in line_ranges(&block.bytes).enumerate() {
            let line = &block.bytes[range.clone()];
            let origin = Origin::line(block.input, block.line_number(offset));
            if is_blank(line) {
                deliver(sink, origin, Record::Skipped(Skipped::Blank), line);
            } else if block.header.as_ref().is_some_and(|h| h.line == origin.line) {
                deliver(sink, origin, Record::Skipped(Skipped::Header), line);
            } else if line.len() > MAX_LINE {
                deliver(sink, origin, Record::Invalid(too_long()), line);
            } else {
                let text = text.and_then(|text| text.get(range));
                self.format.line(line, text, origin, sink);
            }
        }
        Ok(())
    }
}

/// A line longer than the longest accepted, of which only its first bytes
/// were kept.
struct Oversized<'c> {
    origin: Origin,
    head: &'c [u8],
}

impl RecordSource for Oversized<'_> {
    fn for_each(&mut self, sink: &mut dyn RecordSink) -> Result<(), String> {
        deliver(sink, self.origin, Record::Invalid(too_long()), self.head);
        Ok(())
    }
}

fn too_long() -> Invalid {
    Invalid::new(
        RejectReason::LineTooLong,
        format!("the line is longer than {} MiB", MAX_LINE >> 20),
    )
}
