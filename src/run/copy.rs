//! A complete result copied into another output directory as its own run
//! would have written it there: the directory claimed and locked, refused
//! when it holds another kind of result, cleared of an earlier result of
//! this kind, every file staged and moved into place, the marker last.
//! What Python's `Grading.write` and its kin do.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};

use crate::base::failure::{Error, ErrorKind, OfKind};
use crate::output::staged::{finish, stage, Staged};
use crate::output::{OutputDir, ResultKind};

/// Copy the complete result in `from` into `to`.
///
/// # Errors
/// `from` holds no complete result; `to` holds another kind of result, or
/// another run holds it; a file cannot be read or written.
pub fn copy_result(from: &Path, to: &Path) -> Result<(), Error> {
    let (kind, marker) = ResultKind::of_dir(from)
        .with_context(|| format!("{}: holds no complete result", from.display()))
        .of_kind(ErrorKind::Usage)?;
    let held = OutputDir::claim_for(to, kind).of_kind(ErrorKind::Output)?;
    let copied = copy_files(from, held.dir(), marker).and_then(|staged| held.commit(staged));
    Ok(copied.of_kind(ErrorKind::Output)?)
}

/// Every file of `from` but hidden ones (its lock) staged in `to`, in
/// byte order of their names, `marker` last.
fn copy_files(from: &Path, to: &Path, marker: &str) -> Result<Vec<Staged>> {
    let listed = |err| anyhow::Error::new(err).context(format!("{}: cannot list", from.display()));
    let mut names = Vec::new();
    for entry in std::fs::read_dir(from).map_err(listed)? {
        let name = entry
            .map_err(listed)?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with('.') && name != marker {
            names.push(name);
        }
    }
    names.sort_unstable();
    names.push(marker.to_string());
    (names.iter())
        .map(|name| {
            let path = from.join(name);
            let mut source =
                File::open(&path).with_context(|| format!("{}: cannot read", path.display()))?;
            let mut copy = stage(to, name)?;
            std::io::copy(&mut source, &mut copy)
                .with_context(|| format!("{}: cannot copy", path.display()))?;
            finish(copy)
        })
        .collect()
}
