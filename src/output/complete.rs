//! Reading an output back: a directory holds a complete result only when
//! its summary.json (or a comparison's comparison.json) is there and every
//! file it lists is too, byte for byte. Readers of a result (`compare`,
//! `report`) go through here, so a directory left by a killed run, or
//! changed since, is refused rather than read. A result in object storage
//! is fetched whole into a local copy first ([`ReadBack`]), checked as
//! [`super::bucket`] says, and then read as a directory is.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use serde::de::DeserializeOwned;
use xxhash_rust::xxh3::Xxh3;

use crate::base::schema::{
    AgreementSummary, ComparisonSummary, OutputFile, PartialSummary, Summary, TrendSummary,
};
use crate::io::location::{Location, ObjectUri};
use crate::output::bucket::{self, Copy};
use crate::output::kind::{is_result_file, ResultKind};

/// A result named by a path: a local directory (or a file in one) as it
/// is, or a prefix of object storage (or an object under one) fetched
/// whole, once its marker and every file it lists are there as listed.
/// The copy lasts as long as this value (or a clone) does.
#[derive(Debug, Clone)]
pub struct ReadBack {
    path: PathBuf,
    copy: Option<(ObjectUri, Arc<Copy>)>,
}

impl ReadBack {
    /// The result at `path`, fetched if it is in object storage.
    ///
    /// # Errors
    /// `path` is a URI of a scheme rgrade does not support; the prefix
    /// holds no complete result (each message names what is missing).
    pub fn open(path: &Path) -> Result<Self> {
        let uri = match Location::parse(path)? {
            Location::Local(path) => return Ok(ReadBack::local(path)),
            Location::Object(uri) => uri,
        };
        let name = uri.file_name();
        let (prefix, file) = if is_result_file(&name) || ResultKind::is_marker(&name) {
            (uri.parent(), Some(name))
        } else {
            (uri, None)
        };
        let copy = Copy::fetch(&prefix)?;
        let path = match file {
            Some(name) => copy.dir().join(name),
            None => copy.dir().to_path_buf(),
        };
        Ok(ReadBack {
            path,
            copy: Some((prefix, Arc::new(copy))),
        })
    }

    /// The result at the local `path`, as it is.
    pub fn local(path: PathBuf) -> Self {
        ReadBack { path, copy: None }
    }

    /// Where to read it on this machine.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `local`, a path in the result read, as outputs record it: the
    /// object's URI for a copy of one.
    pub fn shown(&self, local: &Path) -> String {
        let copied = (self.copy.as_ref())
            .and_then(|(prefix, copy)| Some((prefix, local.strip_prefix(copy.dir()).ok()?)));
        match copied {
            Some((prefix, name)) => bucket::in_prefix(prefix, &name.to_string_lossy()).to_string(),
            None => local.display().to_string(),
        }
    }

    /// Whether the result is still the one read: its marker in object
    /// storage lists `outputs` (a local result is checked by reading it).
    ///
    /// # Errors
    /// The store cannot be reached.
    pub fn still_lists(&self, outputs: &[OutputFile]) -> Result<bool> {
        match &self.copy {
            Some((prefix, _)) => bucket::still_lists(prefix, outputs),
            None => Ok(true),
        }
    }

    /// The prefix of object storage the result was fetched from, if it was.
    pub fn prefix(&self) -> Option<&ObjectUri> {
        self.copy.as_ref().map(|(prefix, _)| prefix)
    }
}

/// Read the summary.json at `summary` and check every output it lists in
/// its directory.
///
/// # Errors
/// summary.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_summary(summary: &Path) -> Result<Summary> {
    read_marker(
        summary,
        "a summary.json written by rgrade grade",
        |s: &Summary| &s.outputs,
    )
}

/// Read the partial.json at `path` and check every output it lists in its
/// directory.
///
/// # Errors
/// partial.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_partial(path: &Path) -> Result<PartialSummary> {
    Location::local_only(path, "a result read back")?;
    ensure!(
        path.is_file(),
        "{}: cannot open: not a partial grading (grade --partial -o DIR writes one)",
        path.display()
    );
    let what = "a partial.json written by rgrade grade --partial";
    read_marker(path, what, |s: &PartialSummary| &s.outputs)
}

/// Read the comparison.json at `path` and check every output it lists in
/// its directory.
///
/// # Errors
/// comparison.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_comparison(path: &Path) -> Result<ComparisonSummary> {
    let what = "a comparison.json written by rgrade";
    read_marker(path, what, |s: &ComparisonSummary| &s.outputs)
}

/// Read agreement.json at `path` and check every file it lists.
///
/// # Errors
/// agreement.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_agreement(path: &Path) -> Result<AgreementSummary> {
    let what = "an agreement.json written by rgrade";
    read_marker(path, what, |s: &AgreementSummary| &s.outputs)
}

/// Read the alarms.json at `path` and check every file it lists.
///
/// # Errors
/// alarms.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_trend(path: &Path) -> Result<TrendSummary> {
    let what = "an alarms.json written by rgrade trend";
    read_marker(path, what, |s: &TrendSummary| &s.outputs)
}

/// Read the file at `path` that marks a set of outputs complete (`what` it
/// should be), and check every output it lists (`outputs`) in its directory.
fn read_marker<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    outputs: impl Fn(&T) -> &[OutputFile],
) -> Result<T> {
    Location::local_only(path, "a result read back")?;
    let file = open_regular(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let parsed: T = serde_json::from_reader(BufReader::new(file))
        .with_context(|| format!("{}: not {what}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for listed in outputs(&parsed) {
        check_file(dir, listed, path)?;
    }
    Ok(parsed)
}

/// Open `path` if it is a regular file (or a link to one): a pipe or a
/// device in its place would block a reader, or never end.
fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path)?;
    ensure!(
        meta.is_file(),
        "not a regular file (a pipe, a device or a directory)"
    );
    Ok(File::open(path)?)
}

/// Fail unless `dir` holds `listed` with its size and hash.
fn check_file(dir: &Path, listed: &OutputFile, summary: &Path) -> Result<()> {
    let path = dir.join(&listed.name);
    let reader = open_regular(&path).with_context(|| {
        format!(
            "{}: cannot open a file {} lists: not a complete result",
            path.display(),
            summary.display()
        )
    })?;
    let mut hasher = Xxh3::new();
    // One byte past the size listed tells a longer file, however long.
    let bytes = std::io::copy(&mut reader.take(listed.bytes + 1), &mut hasher)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let hash = format!("{:032x}", hasher.digest128());
    ensure!(
        bytes == listed.bytes && hash == listed.hash,
        "{}: does not match {} (changed or cut short since it was written); run what wrote \
         it again",
        path.display(),
        summary.display()
    );
    Ok(())
}
