//! One input of a run: a file, standard input, or what a caller handed
//! over in memory; and what reading it taught (sizes, lines, content hash,
//! format).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::options::LogsFormat;
use crate::io::location::{Location, ObjectUri};
use crate::io::tables::{LogLines, LogTable};

/// Extensions a file's run name leaves out: a compression, then a format.
const COMPRESSION_EXTENSIONS: [&str; 2] = [".gz", ".zst"];
const FORMAT_EXTENSIONS: [&str; 6] = [".jsonl", ".trec", ".run", ".txt", ".tsv", ".parquet"];

/// One log input: a file, standard input, or a table in memory.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file on disk.
    File(PathBuf),
    /// An object in object storage.
    Object(ObjectUri),
    /// Standard input (`-`).
    Stdin,
    /// Search events handed over as an Arrow table or stream, laid out as
    /// Parquet logs are.
    Table(LogTable),
    /// The lines handed over of one of the inputs [`LogLines`] names (its
    /// index there).
    Lines(Arc<LogLines>, usize),
}

impl Input {
    /// The file or object `path` names: a URI of a supported scheme is an
    /// object, read from object storage.
    ///
    /// # Errors
    /// `path` is a URI of a scheme rgrade does not read.
    pub fn at(path: &Path) -> anyhow::Result<Input> {
        Ok(match Location::parse(path)? {
            Location::Local(path) => Input::File(path),
            Location::Object(uri) => Input::Object(uri),
        })
    }

    /// The name used in messages and outputs.
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Object(uri) => uri.to_string(),
            Input::Stdin => "-".to_string(),
            Input::Table(table) => table.name().to_string(),
            Input::Lines(lines, index) => lines.inputs()[*index].clone(),
        }
    }

    /// The path outputs record for it: a file's as given, an object's URI
    /// (redacted), the name of what was handed over.
    pub fn path(&self) -> PathBuf {
        match self {
            Input::File(path) => path.clone(),
            other => PathBuf::from(other.name()),
        }
    }

    /// Whether it can be read a second time: a regular file, an object
    /// or what is held in memory can, standard input, a pipe or a stream
    /// of record batches cannot.
    pub fn can_read_again(&self) -> bool {
        match self {
            Input::File(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file()),
            Input::Stdin => false,
            Input::Table(table) => table.can_read_again(),
            Input::Object(_) | Input::Lines(..) => true,
        }
    }

    /// The input's name as a run: its file name without the extensions
    /// rgrade reads (`bm25.dl19.txt.gz` is `bm25.dl19`); `-` for
    /// standard input.
    pub fn run_name(&self) -> String {
        let path = match self {
            Input::File(path) => path.clone(),
            Input::Object(uri) => PathBuf::from(uri.file_name()),
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

    /// The size on disk, when known up front (an object's is asked for
    /// only when it is read, a stream's as it is read).
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            Input::Object(_) | Input::Stdin | Input::Lines(..) => None,
            Input::Table(table) => table.bytes(),
        }
    }
}

/// An error that is the input's own damage: it cannot be read to its end
/// (a truncated gzip or zstd stream, a corrupt Parquet file), as opposed
/// to a setting that does not fit it. Shown as its message; `--bad-files
/// skip` skips such an input instead of stopping.
#[derive(Debug)]
pub struct Damaged {
    /// The input's index among the run's.
    pub input: u32,
    /// What went wrong, naming the input.
    pub message: String,
}

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Damaged {}

impl InputStats {
    /// The stats of an input skipped as damaged, for `why`: nothing read.
    pub fn skipped(why: String) -> Self {
        InputStats {
            bytes: 0,
            decoded_bytes: 0,
            lines: 0,
            hash: String::new(),
            format_doubt: None,
            part: false,
            format: LogsFormat::Jsonl,
            skipped: Some(why),
        }
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
    /// Why it was skipped unread (`--bad-files skip`), if it was.
    pub skipped: Option<String>,
}
