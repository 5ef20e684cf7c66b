//! Captured search logs, one file per format, behind one boundary: every
//! format yields [`record::Record`]s (an event with its key and a ranking
//! read on demand, one result of a ranking spread over lines or rows, what
//! such a ranking lost, a line that cannot be read), and
//! [`records::records`] makes, for each chunk the reader cut, the source of
//! its format's records. Grading sees records, never a format's own shape.
//!
//! - [`discover`]: which files of the LOGS arguments are logs;
//! - [`partition`]: the Hive partition folders above a log, fields of its
//!   records;
//! - [`detect`]: an input's format, from its first lines;
//! - [`read`]: every input cut into chunks for the workers, by format;
//! - [`record`]: what a record is, in every format;
//! - [`records`]: a chunk's records, read by its format;
//! - [`seen`]: which fields the records had, for the field flags given;
//! - [`jsonl`]: a JSONL search event and its field mapping;
//! - [`otlp`]: OTLP/JSON traces and the capture spans in them;
//! - [`trec`]: a TREC or MS MARCO run line;
//! - [`csv_run`]: a CSV run's header and lines;
//! - [`time`]: capture times, as each format writes them;
//! - [`parquet`]: Parquet logs and Arrow tables, row by row.
//!
//! A new format of lines is a file here whose reader of one line
//! implements [`record::LineFormat`] (handing each record to the sink
//! with [`record::deliver`]), a variant of `LogsFormat` (`--logs-format`),
//! its arm in the match of [`records::records`], and its signs in
//! [`detect`]. Grading needs no change: a record it judges already.

pub mod csv_run;
pub mod detect;
pub mod discover;
pub mod jsonl;
pub mod otlp;
pub mod parquet;
pub mod partition;
pub mod read;
pub mod record;
pub mod records;
pub mod seen;
pub mod time;
pub mod trec;
