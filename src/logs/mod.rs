//! Captured search logs, one file per format, behind one boundary: what
//! a record is ([`record`]: where it came from, its key, why it may be
//! rejected). Grading sees records, never a format's own shape.
//!
//! - [`discover`]: which files of the LOGS arguments are logs;
//! - [`detect`]: an input's format, from its first lines;
//! - [`read`]: every input cut into chunks for the workers, by format;
//! - [`jsonl`]: a JSONL search event and its field mapping;
//! - [`otlp`]: OTLP/JSON traces and the capture spans in them;
//! - [`trec`]: a TREC or MS MARCO run line;
//! - [`csv_run`]: a CSV run's header and lines;
//! - [`parquet`]: Parquet logs and Arrow tables, row by row.

pub mod csv_run;
pub mod detect;
pub mod discover;
pub mod jsonl;
pub mod otlp;
pub mod parquet;
pub mod read;
pub mod record;
pub mod trec;
