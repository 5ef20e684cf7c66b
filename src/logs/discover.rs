//! Which files the LOGS arguments name: files as given, directories
//! walked for log file names, `-` for standard input, objects in object
//! storage as given or listed under a prefix as a directory is walked;
//! rgrade's own outputs never, and a `.txt`, `.tsv` or `.csv` file only
//! when it holds a run. Each comes with its Hive partition
//! ([`partition`]).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::base::failure::{Error, ErrorKind, OfKind};
use crate::base::options::LogsFormat;
use crate::base::schema::{LOCK_FILE, PER_QUERY_FILE, REJECTS_FILE, SUMMARY_FILE};
use crate::io::decompress::Source;
use crate::io::inputs::Input;
use crate::io::location::{Location, ObjectUri};
use crate::io::objects;
use crate::logs::detect::detect;
use crate::logs::partition::{partition, Partition};

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

/// File name endings a directory walk picks up when the content is a run:
/// published TREC runs mostly end in `.txt`, MS MARCO's in `.tsv`, and runs
/// saved from data frames in `.csv`.
const RUN_TEXT_SUFFIXES: [&str; 9] = [
    ".txt", ".txt.gz", ".txt.zst", ".tsv", ".tsv.gz", ".tsv.zst", ".csv", ".csv.gz", ".csv.zst",
];

/// How much of a `.txt` or `.tsv` file is read to tell whether it is a run.
const SNIFF_BYTES: u64 = 64 << 10;
/// The log inputs the LOGS arguments name.
#[derive(Debug, Default)]
pub struct Discovered {
    /// Files as given, then each directory's logs, `-` for stdin.
    pub inputs: Vec<Input>,
    /// `.txt`, `.tsv` and `.csv` files of the directories that hold no run.
    pub skipped: Vec<PathBuf>,
    /// Each input's Hive partition, as [`partition`] reads it from its
    /// path below the LOGS argument that named its folder.
    pub partitions: Vec<Partition>,
}

/// Why the input order of partitioned logs, file-path order, is not time
/// order, if it is not: a partition key of numbers not padded to one
/// width (`hour=10` sorts before `hour=9`), or a partition of several
/// files (part files, in name order, which is no time order). `None`
/// when no input is in a partition.
pub fn path_order_doubt(inputs: &[Input], partitions: &[Partition]) -> Option<String> {
    let mut values: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (key, value) in partitions.iter().flatten() {
        values.entry(key).or_default().push(value);
    }
    let number = |v: &&str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
    // A number's order: its digits past any leading zeros, by length first.
    let numeric = |v: &str| {
        let digits = v.trim_start_matches('0');
        (digits.len(), digits.to_string())
    };
    for (key, values) in &mut values {
        if !values.iter().all(number) {
            continue;
        }
        values.sort_unstable();
        values.dedup();
        if let Some(pair) = values.windows(2).find(|w| numeric(w[0]) > numeric(w[1])) {
            return Some(format!(
                "'{key}={}' sorts before '{key}={}'",
                pair[0], pair[1]
            ));
        }
    }
    let folder = |input: &Input| {
        let name = input.name();
        name.rsplit_once('/').map(|(folder, _)| folder.to_string())
    };
    let mut files = std::collections::HashMap::new();
    for (input, partition) in inputs.iter().zip(partitions) {
        if partition.is_empty() {
            continue;
        }
        let Some(folder) = folder(input) else {
            continue;
        };
        let count = files.entry(folder.clone()).or_insert(0);
        *count += 1;
        if *count == 2 {
            return Some(format!(
                "'{folder}/' holds several part files, read in name order"
            ));
        }
    }
    None
}

/// Expand the LOGS arguments into inputs: files as given, directories
/// walked (sorted, for a stable order) for log file names, `-` for stdin,
/// an object-storage URI as the object it names or, when it names none,
/// as a prefix whose log objects are listed (sorted by key).
/// A walk never yields rgrade's own outputs: the rejects.jsonl and CSV
/// files of the output directory `out`, or of any directory an earlier run
/// wrote into (it holds rgrade's lock file, summary.json or per_query.csv),
/// are no logs.
/// `.txt`, `.tsv` and `.csv` files are read when they hold a TREC, MS MARCO
/// or CSV run, and otherwise listed as skipped.
///
/// # Errors
/// A path that does not exist, an empty file, a directory with no logs, or
/// one file reached twice (by a second path or a hard link); a URI of a
/// scheme rgrade does not read; object storage that cannot be reached.
pub fn discover(args: &[PathBuf], out: Option<&Path>) -> Result<Discovered> {
    let out = out.and_then(|dir| std::fs::canonicalize(dir).ok());
    let mut found = Discovered::default();
    let Discovered {
        inputs,
        skipped,
        partitions,
    } = &mut found;
    for arg in args {
        if arg.as_os_str() == "-" {
            inputs.push(Input::Stdin);
            partitions.push(Partition::new());
            continue;
        }
        let before = inputs.len();
        if let Location::Object(uri) = Location::parse(arg)? {
            add_objects(&uri, inputs, skipped)?;
            let prefix = uri.key();
            for input in &inputs[before..] {
                let key = match input {
                    Input::Object(object) => object.key(),
                    _ => String::new(),
                };
                let below = key.strip_prefix(&prefix).unwrap_or_default();
                partitions.push(partition(below));
            }
            continue;
        }
        let meta = std::fs::metadata(arg)
            .with_context(|| format!("{}: cannot open log input", arg.display()))?;
        if meta.is_dir() {
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
            inputs.push(Input::File(arg.clone()));
        }
        for input in &inputs[before..] {
            let below = match input {
                Input::File(path) => path.strip_prefix(arg).ok(),
                _ => None,
            };
            let below = below.map(|p| p.to_string_lossy().replace('\\', "/"));
            partitions.push(partition(&below.unwrap_or_default()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for input in inputs.iter() {
        let key = match input {
            Input::File(path) => file_key(path),
            Input::Object(uri) => FileKey::Object(uri.clone()),
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
pub fn log_files(args: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let files = || -> Result<Vec<PathBuf>> {
        (discover(args, None)?.inputs.into_iter())
            .map(|input| match input {
                Input::File(path) => Ok(path),
                Input::Object(uri) => Ok(PathBuf::from(uri.to_string())),
                other => bail!("{}: not a file another reader can read", other.name()),
            })
            .collect()
    };
    Ok(files().of_kind(ErrorKind::Logs)?)
}

/// What makes two inputs one: the same file, however it is reached.
#[derive(PartialEq, Eq, Hash)]
enum FileKey {
    /// Device and inode: a second path and a hard link are the same file.
    Inode(u64, u64),
    /// The canonical path, where there is no inode to go by.
    Path(PathBuf),
    /// An object's URI.
    Object(ObjectUri),
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
        } else if holds_outputs && is_output_file(&path) || kind.is_symlink() && path.is_dir() {
            continue;
        } else if has_suffix(&path, &LOG_SUFFIXES) {
            inputs.push(Input::File(path));
        } else if has_suffix(&path, &RUN_TEXT_SUFFIXES) {
            let meta = std::fs::metadata(&path)
                .with_context(|| format!("{}: cannot open log input", path.display()))?;
            if meta.len() > 0 && !holds_a_run(&Input::File(path.clone())) {
                skipped.push(path);
            } else {
                inputs.push(Input::File(path));
            }
        }
    }
    Ok(())
}

/// Whether `path`, in a directory of outputs, is one of them: its
/// rejects.jsonl, or a CSV file (per_query.csv and the others).
fn is_output_file(path: &Path) -> bool {
    path.file_name() == Some(REJECTS_FILE.as_ref()) || has_suffix(path, &[".csv"])
}

/// Add the object `uri` names or, if it names none (or ends in `/`), the
/// log objects under it as a prefix, chosen by name as a directory walk
/// chooses files (`_SUCCESS` and `.crc` files left out).
fn add_objects(uri: &ObjectUri, inputs: &mut Vec<Input>, skipped: &mut Vec<PathBuf>) -> Result<()> {
    let key = uri.key();
    if !key.is_empty() && !key.ends_with('/') {
        let head = objects::head(uri).with_context(|| format!("{uri}: cannot open log input"))?;
        if head.is_some() {
            inputs.push(Input::Object(uri.clone()));
            return Ok(());
        }
    }
    let listed = objects::list(uri).with_context(|| format!("{uri}: cannot list log inputs"))?;
    let before = inputs.len();
    for (object, size) in listed {
        let name = object.file_name();
        let input = Input::Object(object);
        if name_has_suffix(&name, &LOG_SUFFIXES) {
            inputs.push(input);
        } else if name_has_suffix(&name, &RUN_TEXT_SUFFIXES) {
            if size > 0 && !holds_a_run(&input) {
                skipped.push(PathBuf::from(input.name()));
            } else {
                inputs.push(input);
            }
        }
    }
    if inputs.len() == before {
        bail!(
            "{uri}: no such object, and no log objects under it ({}, or runs in {})",
            LOG_SUFFIXES.join(", "),
            RUN_TEXT_SUFFIXES.join(", ")
        );
    }
    Ok(())
}

fn has_suffix(path: &Path, suffixes: &[&str]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name_has_suffix(&name, suffixes)
}

fn name_has_suffix(name: &str, suffixes: &[&str]) -> bool {
    suffixes.iter().any(|suffix| name.ends_with(suffix))
}

/// Whether `input` opens as a TREC, MS MARCO or CSV run (a header line
/// allowed). One that cannot be read is taken for a run, so that reading
/// it reports the error.
fn holds_a_run(input: &Input) -> bool {
    let Ok(source) = Source::open(input) else {
        return true;
    };
    let mut head = Vec::new();
    if source.take(SNIFF_BYTES).read_to_end(&mut head).is_err() {
        return true;
    }
    // Only the first line (or a header and the next) tells: a note whose
    // later line happens to look like a run line is no run.
    let detected = detect(&head, LogsFormat::Auto, 1);
    !detected.looked_past_first
        && matches!(
            detected.format,
            LogsFormat::Trec | LogsFormat::Msmarco | LogsFormat::Csv
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_the_key_value_folders_below_the_argument() {
        let read = partition("dt=2026-12-01/hour=3/x/part-0=1.parquet");
        let want = [("dt", "2026-12-01"), ("hour", "3")].map(|(k, v)| (k.into(), v.into()));
        assert_eq!(read, want);
        assert_eq!(
            partition("k=a%3Ab%2Fc/f.jsonl"),
            [("k".into(), "a:b/c".into())]
        );
        assert_eq!(partition("f.jsonl"), Partition::new());
        assert_eq!(partition("=v/f.jsonl"), Partition::new());
        let hours = |hours: &[&str]| -> (Vec<Input>, Vec<Partition>) {
            let files = hours.iter().map(|h| format!("lake/hour={h}/part-0.jsonl"));
            let partitions = files.clone().map(|f| partition(&f[5..])).collect();
            (files.map(|f| Input::File(f.into())).collect(), partitions)
        };
        let (inputs, partitions) = hours(&["1", "10", "2"]);
        assert_eq!(
            path_order_doubt(&inputs, &partitions).as_deref(),
            Some("'hour=10' sorts before 'hour=2'")
        );
        let (inputs, partitions) = hours(&["01", "02", "10"]);
        assert_eq!(path_order_doubt(&inputs, &partitions), None);
        let mut parts = inputs.clone();
        parts.push(Input::File("lake/hour=10/part-1.jsonl".into()));
        let mut partitions = partitions.clone();
        partitions.push(partitions[2].clone());
        assert_eq!(
            path_order_doubt(&parts, &partitions).as_deref(),
            Some("'lake/hour=10/' holds several part files, read in name order")
        );
    }

    #[test]
    fn discover_rejects_missing_and_empty_inputs() {
        let dir = std::env::temp_dir().join(format!("rgrade-discover-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.jsonl"), "x\n").unwrap();
        std::fs::write(dir.join("a.run"), "x\n").unwrap();
        std::fs::write(dir.join("c.trec.gz"), "x\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "x\n").unwrap();
        std::fs::write(dir.join("per_query_old.csv"), "run,stage,query_id\n").unwrap();
        std::fs::write(dir.join("ranx.csv"), "q_id,doc_id,score\nq1,d1,0.5\n").unwrap();
        std::fs::write(
            dir.join("bm25.dl19.txt"),
            "qid Q0 docno rank score tag\n1 Q0 d 1 2 r\n",
        )
        .unwrap();
        let found = discover(std::slice::from_ref(&dir), None).unwrap();
        let names: Vec<String> = found.inputs.iter().map(Input::name).collect();
        let expected = [
            "a.run",
            "bm25.dl19.txt",
            "c.trec.gz",
            "ranx.csv",
            "sub/b.jsonl",
        ]
        .map(|f| dir.join(f));
        assert_eq!(names, expected.map(|p| p.display().to_string()));
        assert_eq!(
            found.skipped,
            [dir.join("notes.txt"), dir.join("per_query_old.csv")]
        );
        assert_eq!(found.inputs[1].run_name(), "bm25.dl19");
        // An empty file is an input of no records, read as any other.
        std::fs::write(dir.join("empty.jsonl"), "").unwrap();
        assert_eq!(
            discover(&[dir.join("empty.jsonl")], None)
                .unwrap()
                .inputs
                .len(),
            1
        );
        let err = discover(&[dir.join("nope.jsonl")], None).unwrap_err();
        assert!(format!("{err:#}").contains("nope.jsonl: cannot open log input"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
