//! What reading Parquet and Arrow columns takes whatever they hold: the
//! footer (decoder panics caught), a column checked for the type wanted,
//! and a column's cells read as text, ids, numbers, times or booleans.

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Schema, TimeUnit};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;

use crate::base::whole::whole_float;
use crate::io::guarded;
use crate::io::location::ObjectUri;
use crate::io::objects::{self, FetchedRanges, Head, RangeReader, ReadAhead};

/// The magic bytes a Parquet file opens (and ends) with.
pub const MAGIC: &[u8] = b"PAR1";

/// Where a Parquet file is read from: Parquet is read by seeking, to its
/// footer and then to the column chunks wanted, so a file on disk or an
/// object read by ranges, never a stream.
#[derive(Debug, Clone)]
pub enum ParquetAt {
    /// A regular file.
    File(PathBuf),
    /// An object, read by ranges.
    Object {
        /// Where it is.
        uri: ObjectUri,
        /// Its size, as the store gave it.
        size: u64,
        /// Its version (ETag), as the store gave it.
        version: Option<String>,
        /// Its row groups, each fetched ahead of its decoding.
        ahead: Arc<ReadAhead>,
    },
}

impl ParquetAt {
    /// The object at `uri`, its size asked of the store.
    ///
    /// # Errors
    /// There is no such object, or the store cannot be asked.
    pub fn object(uri: &ObjectUri) -> Result<Self> {
        let head = objects::head(uri)?.ok_or_else(|| anyhow!("cannot open: no such object"))?;
        Ok(ParquetAt::object_as(uri, head))
    }

    /// The object at `uri`, as the store described it in `head`.
    pub fn object_as(uri: &ObjectUri, head: Head) -> Self {
        ParquetAt::Object {
            uri: uri.clone(),
            size: head.size,
            version: head.version,
            ahead: Arc::new(ReadAhead::new(uri.clone(), head.size)),
        }
    }

    /// Its footer, as [`footer`] reads it.
    ///
    /// # Errors
    /// As [`footer`]; the file cannot be opened.
    pub fn footer(&self) -> Result<ArrowReaderMetadata> {
        match self {
            ParquetAt::File(path) => footer(&File::open(path).context("cannot open")?),
            ParquetAt::Object { uri, size, .. } => footer(&RangeReader::new(uri.clone(), *size)),
        }
    }

    /// A reader of the columns in `mask` of the row groups `groups` (all
    /// when `None`), `batch_rows` rows a batch. Of an object, the column
    /// chunks wanted are fetched first, together, and nothing else; one
    /// row group asked for alone (as the workers ask for them) comes with
    /// the next ones fetched ahead ([`ReadAhead`]).
    ///
    /// # Errors
    /// The file cannot be opened, or the column chunks fetched; the
    /// reader cannot be built on the footer `metadata`.
    pub fn batches(
        &self,
        metadata: &ArrowReaderMetadata,
        groups: Option<Vec<usize>>,
        mask: ProjectionMask,
        batch_rows: usize,
    ) -> Result<ParquetRecordBatchReader> {
        match self {
            ParquetAt::File(path) => {
                let file = File::open(path).context("cannot open")?;
                build_batches(file, metadata, groups, mask, batch_rows)
            }
            ParquetAt::Object {
                uri, size, ahead, ..
            } => {
                let footer = metadata.metadata();
                let chunks = |groups: &[usize]| column_chunks(footer, groups, &mask);
                let fetched = match groups.as_deref() {
                    Some(&[group]) => {
                        ahead.take(group, footer.num_row_groups(), |next| chunks(&[next]))?
                    }
                    Some(some) => FetchedRanges::fetch(uri, *size, chunks(some))?,
                    None => {
                        let all: Vec<usize> = (0..footer.num_row_groups()).collect();
                        FetchedRanges::fetch(uri, *size, chunks(&all))?
                    }
                };
                build_batches(fetched, metadata, groups, mask, batch_rows)
            }
        }
    }
}

/// The byte ranges of the column chunks in `mask` of the row groups
/// `groups` of the file `footer` describes.
fn column_chunks(
    footer: &ParquetMetaData,
    groups: &[usize],
    mask: &ProjectionMask,
) -> Vec<Range<u64>> {
    (groups.iter())
        .filter_map(|&group| footer.row_groups().get(group))
        .flat_map(|group| group.columns().iter().enumerate())
        .filter(|(leaf, _)| mask.leaf_included(*leaf))
        .map(|(_, column)| {
            let (start, len) = column.byte_range();
            start..start.saturating_add(len)
        })
        .collect()
}

/// [`ParquetAt::batches`] of `reader`.
fn build_batches<T: ChunkReader + 'static>(
    reader: T,
    metadata: &ArrowReaderMetadata,
    groups: Option<Vec<usize>>,
    mask: ProjectionMask,
    batch_rows: usize,
) -> Result<ParquetRecordBatchReader> {
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(reader, metadata.clone())
        .with_projection(mask)
        .with_batch_size(batch_rows);
    let builder = match groups {
        Some(groups) => builder.with_row_groups(groups),
        None => builder,
    };
    Ok(builder.build()?)
}

/// The footer of a Parquet file (on disk, or an object read by ranges):
/// its metadata, with the schema read from the Parquet types alone
/// (strings, large strings and dictionaries all decode as strings; large
/// lists as lists).
///
/// # Errors
/// The file is no readable Parquet file, the decoder's panics included;
/// a column is compressed with a codec rgrade does not read.
pub fn footer(file: &impl ChunkReader) -> Result<ArrowReaderMetadata> {
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    match guarded::decode(|| ArrowReaderMetadata::load(file, options)) {
        Some(Ok(metadata)) => {
            known_codecs(&metadata)?;
            Ok(metadata)
        }
        Some(Err(err)) => Err(anyhow!(
            "not a readable Parquet file (truncated or corrupt?): {err}"
        )),
        None => Err(anyhow!(
            "not a readable Parquet file (truncated or corrupt?)"
        )),
    }
}

/// Fail on the first column compressed with a codec rgrade is not built
/// to read (those of Cargo.toml's parquet features: snappy, gzip, lz4 and
/// zstd), naming it: decoding it would fail as if the file were corrupt.
fn known_codecs(metadata: &ArrowReaderMetadata) -> Result<()> {
    let metadata = metadata.metadata();
    let columns = (metadata.row_groups().iter()).flat_map(|group| group.columns());
    for column in columns {
        let unread = match column.compression() {
            Compression::BROTLI(_) => "brotli",
            Compression::LZO => "LZO",
            Compression::UNCOMPRESSED
            | Compression::SNAPPY
            | Compression::GZIP(_)
            | Compression::LZ4
            | Compression::LZ4_RAW
            | Compression::ZSTD(_) => continue,
        };
        return Err(anyhow!(
            "column '{}' is compressed with {unread}, which rgrade does not read; write the \
             file uncompressed or with snappy, gzip, lz4 or zstd",
            column.column_path().string()
        ));
    }
    Ok(())
}

/// What a column must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Strings.
    Text,
    /// Strings, or integers read as their decimal text.
    Id,
    /// Numbers.
    Number,
    /// Whole numbers, or floats that hold them (pandas' `rank()` gives
    /// floats): [`Cells::whole`] reads them.
    Whole,
    /// Timestamps, or integer nanoseconds.
    Time,
    /// A capture time: timestamps, numbers counting since 1970, or text.
    Moment,
    /// Booleans.
    Bool,
}

impl Want {
    /// Whether a column of `data_type` holds what is wanted.
    pub fn fits(self, data_type: &DataType) -> bool {
        use DataType::*;
        let integer = data_type.is_integer();
        match self {
            Want::Text => matches!(data_type, Utf8),
            Want::Id => integer || matches!(data_type, Utf8),
            Want::Number => integer || matches!(data_type, Float32 | Float64),
            Want::Whole => integer || matches!(data_type, Float32 | Float64),
            Want::Time => matches!(data_type, Timestamp(..) | Int64),
            Want::Moment => {
                integer || matches!(data_type, Timestamp(..) | Float32 | Float64 | Utf8)
            }
            Want::Bool => matches!(data_type, Boolean),
        }
    }

    /// What is wanted, as a message says it.
    pub fn expected(self) -> &'static str {
        match self {
            Want::Text => "a string",
            Want::Id => "a string or an integer",
            Want::Number => "a number",
            Want::Whole => "a whole number",
            Want::Time => "a timestamp",
            Want::Moment => "a timestamp, a number or text",
            Want::Bool => "a boolean",
        }
    }
}

/// The index of the top-level column `name`, if the schema has it.
///
/// # Errors
/// It holds something else than `want`.
pub fn top_column(schema: &Schema, name: &str, want: Want) -> Result<Option<usize>, String> {
    let Ok(index) = schema.index_of(name) else {
        return Ok(None);
    };
    let data_type = schema.field(index).data_type();
    if !want.fits(data_type) {
        return Err(wrong_type(&[name.to_string()], data_type, want.expected()));
    }
    Ok(Some(index))
}

/// A column path as the user would name it.
pub fn show(path: &[String]) -> String {
    match path {
        [column] => column.clone(),
        _ => format!("/{}", path.join("/")),
    }
}

/// What a column of the wrong type is told.
pub fn wrong_type(path: &[String], found: &DataType, expected: &str) -> String {
    format!("column '{}' is {found}, expected {expected}", show(path))
}

/// The array at `path`: a column, or a field of struct columns.
pub fn column<'a>(batch: &'a RecordBatch, path: &[String]) -> Option<&'a ArrayRef> {
    let (top, inner) = path.split_first()?;
    let mut array = batch.column_by_name(top)?;
    for name in inner {
        array = array.as_struct_opt()?.column_by_name(name)?;
    }
    Some(array)
}

/// One column's values, typed, with its nulls.
pub struct Cells<'a> {
    nulls: Option<&'a NullBuffer>,
    values: Values<'a>,
}

enum Values<'a> {
    /// The column is not in the file: every cell is null.
    Absent,
    Text(&'a StringArray),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    /// Times, as counts of this many nanoseconds.
    Time(&'a [i64], i128),
    Bool(&'a BooleanArray),
}

impl<'a> Cells<'a> {
    /// The cells of a column the file does not have: every one is null.
    pub fn absent() -> Self {
        Cells {
            nulls: None,
            values: Values::Absent,
        }
    }

    /// The cells of `array`, whose type the layout checked.
    ///
    /// # Errors
    /// A type rgrade does not read, for the caller to report.
    pub fn of(array: &'a ArrayRef) -> Result<Self, String> {
        let values = match array.data_type() {
            DataType::Utf8 => array.as_string_opt::<i32>().map(Values::Text),
            DataType::Int8 => array
                .as_primitive_opt::<Int8Type>()
                .map(|a| Values::I8(a.values())),
            DataType::Int16 => array
                .as_primitive_opt::<Int16Type>()
                .map(|a| Values::I16(a.values())),
            DataType::Int32 => array
                .as_primitive_opt::<Int32Type>()
                .map(|a| Values::I32(a.values())),
            DataType::Int64 => array
                .as_primitive_opt::<Int64Type>()
                .map(|a| Values::I64(a.values())),
            DataType::UInt8 => array
                .as_primitive_opt::<UInt8Type>()
                .map(|a| Values::U8(a.values())),
            DataType::UInt16 => array
                .as_primitive_opt::<UInt16Type>()
                .map(|a| Values::U16(a.values())),
            DataType::UInt32 => array
                .as_primitive_opt::<UInt32Type>()
                .map(|a| Values::U32(a.values())),
            DataType::UInt64 => array
                .as_primitive_opt::<UInt64Type>()
                .map(|a| Values::U64(a.values())),
            DataType::Float32 => array
                .as_primitive_opt::<Float32Type>()
                .map(|a| Values::F32(a.values())),
            DataType::Float64 => array
                .as_primitive_opt::<Float64Type>()
                .map(|a| Values::F64(a.values())),
            DataType::Timestamp(TimeUnit::Second, _) => array
                .as_primitive_opt::<TimestampSecondType>()
                .map(|a| Values::Time(a.values(), 1_000_000_000)),
            DataType::Timestamp(TimeUnit::Millisecond, _) => array
                .as_primitive_opt::<TimestampMillisecondType>()
                .map(|a| Values::Time(a.values(), 1_000_000)),
            DataType::Timestamp(TimeUnit::Microsecond, _) => array
                .as_primitive_opt::<TimestampMicrosecondType>()
                .map(|a| Values::Time(a.values(), 1_000)),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => array
                .as_primitive_opt::<TimestampNanosecondType>()
                .map(|a| Values::Time(a.values(), 1)),
            DataType::Boolean => array.as_boolean_opt().map(Values::Bool),
            _ => None,
        };
        let values = values.ok_or_else(|| format!("unexpected type {}", array.data_type()))?;
        Ok(Cells {
            nulls: array.nulls(),
            values,
        })
    }

    /// Whether the column is in the file.
    pub fn is_present(&self) -> bool {
        !matches!(self.values, Values::Absent)
    }

    /// Whether the cell at `row` is null (every cell of an absent column is).
    pub fn is_null(&self, row: usize) -> bool {
        matches!(self.values, Values::Absent) || self.nulls.is_some_and(|n| n.is_null(row))
    }

    /// A string; `None` when null.
    pub fn text(&self, row: usize) -> Option<&'a str> {
        match self.values {
            Values::Text(array) if !self.is_null(row) => Some(array.value(row)),
            _ => None,
        }
    }

    /// A string, or an integer as its decimal text; `None` when null.
    pub fn id(&self, row: usize) -> Option<Cow<'a, str>> {
        if self.is_null(row) {
            return None;
        }
        match self.values {
            Values::Text(array) => Some(Cow::Borrowed(array.value(row))),
            _ => self.integer(row).map(|n| Cow::Owned(n.to_string())),
        }
    }

    /// An integer; `None` when null.
    pub fn integer(&self, row: usize) -> Option<i128> {
        if self.is_null(row) {
            return None;
        }
        match self.values {
            Values::I8(v) => Some(v[row].into()),
            Values::I16(v) => Some(v[row].into()),
            Values::I32(v) => Some(v[row].into()),
            Values::I64(v) => Some(v[row].into()),
            Values::U8(v) => Some(v[row].into()),
            Values::U16(v) => Some(v[row].into()),
            Values::U32(v) => Some(v[row].into()),
            Values::U64(v) => Some(v[row].into()),
            _ => None,
        }
    }

    /// A whole number: an integer, or a float that holds one exactly;
    /// `None` when null, or for a float with a fraction, NaN or an infinity.
    pub fn whole(&self, row: usize) -> Option<i128> {
        match self.values {
            Values::F32(_) | Values::F64(_) => self.number(row).and_then(whole_float),
            _ => self.integer(row),
        }
    }

    /// A number as stored, NaN and infinities included; `None` when null.
    pub fn number(&self, row: usize) -> Option<f64> {
        if self.is_null(row) {
            return None;
        }
        match self.values {
            Values::F32(v) => Some(f64::from(v[row])),
            Values::F64(v) => Some(v[row]),
            _ => self.integer(row).map(|n| n as f64),
        }
    }

    /// A boolean; `None` when null.
    pub fn boolean(&self, row: usize) -> Option<bool> {
        match self.values {
            Values::Bool(array) if !self.is_null(row) => Some(array.value(row)),
            _ => None,
        }
    }

    /// A time in nanoseconds; `None` when null.
    pub fn nanos(&self, row: usize) -> Option<i128> {
        match self.values {
            Values::Time(v, unit) if !self.is_null(row) => Some(i128::from(v[row]) * unit),
            _ => None,
        }
    }
}
