//! A result in object storage, complete or absent as in a directory, but
//! without a rename (object storage has none): the files are staged on
//! this machine as [`super::staged`] stages them, then each file the
//! marker lists is stored under a key named by its content hash
//! (`PREFIX/.rgrade/HASH/NAME`), and the marker (summary.json, ...) is
//! stored last at `PREFIX/MARKER` by a conditional put that only one
//! writer can win. So the prefix holds a complete result exactly when its
//! marker is there: every file the marker lists is stored before it, and
//! the keys it names are those of its own files' bytes, whatever another
//! writer stores at the same time. Of two runs writing one prefix at once,
//! the second to finish fails, naming the prefix, and its result is not
//! kept. The page (report.html, which no marker lists) is stored at its
//! plain name once the marker is in place.
//!
//! A result read back is fetched whole into a local copy, each listed file
//! checked against its size and hash, so that the readers of a directory
//! read it as they read one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use serde::Deserialize;

use super::kind::ResultKind;
use super::staged::Staged;
use crate::base::failure;
use crate::base::schema::OutputFile;
use crate::io::location::ObjectUri;
use crate::io::objects::{self, AlreadyThere};

/// The folder, under a result's prefix, of the files its marker lists.
const FILES_FOLDER: &str = ".rgrade";

/// A directory of this machine's temporary space that this process made
/// for itself, removed with everything in it when dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A new, empty directory named for `what` it holds.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new(what: &str) -> Result<Self> {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("rgrade-{what}-{}-{made}", std::process::id()));
        // A directory a killed process of the same id left is not ours.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        Ok(Scratch { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The list of files every marker holds, whatever else it says.
#[derive(Deserialize)]
struct Listing {
    outputs: Vec<OutputFile>,
}

/// The files the marker `bytes` lists.
fn listing(bytes: &[u8]) -> Result<Vec<OutputFile>> {
    Ok(serde_json::from_slice::<Listing>(bytes)?.outputs)
}

/// Where the file `listed` of the result at `prefix` is stored.
fn file_uri(prefix: &ObjectUri, listed: &OutputFile) -> ObjectUri {
    in_prefix(
        prefix,
        &format!("{FILES_FOLDER}/{}/{}", listed.hash, listed.name),
    )
}

/// The object `name` under `prefix`.
pub fn in_prefix(prefix: &ObjectUri, name: &str) -> ObjectUri {
    let key = prefix.key();
    match key.trim_end_matches('/') {
        "" => prefix.with_key(name),
        folder => prefix.with_key(&format!("{folder}/{name}")),
    }
}

/// The marker of the complete result under `prefix`, its URI and bytes, if
/// it holds one: looked for in the order [`ResultKind::of_dir`] looks.
fn find_marker(prefix: &ObjectUri) -> Result<Option<(&'static str, ObjectUri, Bytes)>> {
    for kind in ResultKind::ALL {
        for &marker in kind.markers() {
            let uri = in_prefix(prefix, marker);
            if let Some(bytes) = objects::get(&uri)? {
                return Ok(Some((marker, uri, bytes)));
            }
        }
    }
    Ok(None)
}

/// A prefix of object storage one run writes a result under: its files
/// are staged in a local directory until committed.
#[derive(Debug)]
pub struct Claimed {
    prefix: ObjectUri,
    staging: Scratch,
}

impl Claimed {
    /// Claim `prefix` to write files into it, leaving what it holds alone.
    ///
    /// # Errors
    /// The local staging directory cannot be created.
    pub fn claim(prefix: ObjectUri) -> Result<Self> {
        Ok(Claimed {
            prefix,
            staging: Scratch::new("out")?,
        })
    }

    /// Claim `prefix` for a result of `kind`: refuse a prefix holding a
    /// result of another kind, and remove an earlier result of this kind
    /// (its marker first, then the files it listed and its page), so that
    /// until this run's result is complete the prefix holds none a reader
    /// could take for it.
    ///
    /// # Errors
    /// The store cannot be reached; the prefix holds another kind of
    /// result; the staging directory cannot be created.
    pub fn claim_for(prefix: ObjectUri, kind: ResultKind) -> Result<Self> {
        let claimed = Claimed::claim(prefix)?;
        let prefix = &claimed.prefix;
        for other in ResultKind::ALL.into_iter().filter(|&other| other != kind) {
            for marker in other.markers() {
                if objects::head(&in_prefix(prefix, marker))?.is_some() {
                    bail!(
                        "{prefix}: holds {} ({marker}); write under another prefix",
                        other.described()
                    );
                }
            }
        }
        for &marker in kind.markers() {
            let uri = in_prefix(prefix, marker);
            if let Some(bytes) = objects::get(&uri)? {
                objects::delete(&uri)?;
                for file in listing(&bytes).unwrap_or_default() {
                    objects::delete(&file_uri(prefix, &file))?;
                }
            }
        }
        for name in kind.files() {
            objects::delete(&in_prefix(prefix, name))?;
        }
        Ok(claimed)
    }

    /// The object `name` under the prefix, as messages show it.
    pub fn shown(&self, name: &str) -> String {
        in_prefix(&self.prefix, name).to_string()
    }

    /// The local directory the files are staged in.
    pub fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// Store the staged `files`: each file the last one (a marker) lists
    /// under its content's key, then the marker, only if no other run's
    /// is there, then the files it does not list (the page) at their
    /// names. Files staged without a marker are stored at their names.
    ///
    /// # Errors
    /// A file cannot be read or stored; another run stored its marker
    /// first (then this run's files are removed, and its result not kept).
    pub fn commit(&self, files: Vec<Staged>) -> Result<()> {
        let prefix = &self.prefix;
        let (marked, rest) = match files.split_last() {
            Some((last, rest)) if ResultKind::is_marker(&last.listed().name) => (Some(last), rest),
            _ => (None, files.as_slice()),
        };
        let listed = match marked {
            Some(marker) => listing(&read(marker)?)
                .with_context(|| format!("{}: not a marker", marker.listed().name))?,
            None => Vec::new(),
        };
        let (in_listing, unlisted): (Vec<&Staged>, Vec<&Staged>) =
            rest.iter().partition(|file| listed.contains(file.listed()));
        for file in in_listing {
            objects::put(&file_uri(prefix, file.listed()), read(file)?, false)?;
        }
        if let Some(marker) = marked {
            let uri = in_prefix(prefix, &marker.listed().name);
            if let Err(err) = objects::put(&uri, read(marker)?, true) {
                if !err.is::<AlreadyThere>() {
                    return Err(err.context(format!("{uri}: cannot store")));
                }
                self.remove_own(&listed, &uri)?;
                bail!(
                    "{prefix}: another rgrade run stored a result here while this one was \
                     writing; this run's result was not kept (write under another prefix, \
                     or run again to replace that result)"
                );
            }
        }
        for file in unlisted {
            let uri = in_prefix(prefix, &file.listed().name);
            objects::put(&uri, read(file)?, false)?;
        }
        Ok(())
    }

    /// Remove the files `ours` lists that the marker at `winner` (another
    /// run's) does not: the same bytes under the same key serve both.
    fn remove_own(&self, ours: &[OutputFile], winner: &ObjectUri) -> Result<()> {
        let kept = match objects::get(winner)? {
            Some(bytes) => listing(&bytes).unwrap_or_default(),
            None => Vec::new(),
        };
        for file in ours.iter().filter(|file| !kept.contains(file)) {
            objects::delete(&file_uri(&self.prefix, file))?;
        }
        Ok(())
    }
}

/// The bytes of the staged `file`.
fn read(file: &Staged) -> Result<Bytes> {
    let path = file.path();
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    Ok(Bytes::from(bytes))
}

/// A complete result fetched from object storage into a local directory,
/// removed when dropped.
#[derive(Debug)]
pub struct Copy {
    dir: PathBuf,
    _scratch: Scratch,
}

impl Copy {
    /// Fetch the complete result under `prefix`: its marker and every file
    /// it lists, each checked against its size and hash.
    ///
    /// # Errors
    /// No marker (a run that failed, was killed or is still writing), a
    /// listed file missing or not as listed: each message names the
    /// object; the store cannot be reached.
    pub fn fetch(prefix: &ObjectUri) -> Result<Self> {
        let Some((marker, marker_uri, bytes)) = find_marker(prefix)? else {
            let markers: Vec<&str> = (ResultKind::ALL.iter())
                .flat_map(|kind| kind.markers().iter().copied())
                .collect();
            bail!(
                "{prefix}: holds none of {}: not a complete result (a run that failed, was \
                 killed or is still writing leaves none)",
                markers.join(", ")
            );
        };
        let scratch = Scratch::new("read")?;
        // Named after the URI, so that a message naming the copy says
        // what it is a copy of; errors name the URI itself.
        let dir = (scratch.path().join(prefix.url().scheme()))
            .join(prefix.url().host_str().unwrap_or_default())
            .join(prefix.key().trim_end_matches('/'));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        failure::name_copy(&dir, &prefix.to_string());
        let listed =
            listing(&bytes).with_context(|| format!("{marker_uri}: not a marker of rgrade's"))?;
        for file in &listed {
            let uri = file_uri(prefix, file);
            let fetched = objects::get(&uri)?.ok_or_else(|| {
                anyhow!(
                    "{uri}: missing, though {marker_uri} lists {}: not a complete result",
                    file.name
                )
            })?;
            let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&fetched));
            if fetched.len() as u64 != file.bytes || hash != file.hash {
                bail!("{uri}: does not match {marker_uri} (changed since it was written)");
            }
            write(&dir.join(&file.name), &fetched)?;
        }
        write(&dir.join(marker), &bytes)?;
        Ok(Copy {
            dir,
            _scratch: scratch,
        })
    }

    /// The local directory holding the copy.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Write `bytes` to the local `path`.
fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("{}: cannot write", path.display()))
}

/// Whether `prefix` holds a complete result.
///
/// # Errors
/// The store cannot be reached.
pub fn holds_result(prefix: &ObjectUri) -> Result<bool> {
    Ok(find_marker(prefix)?.is_some())
}

/// Whether the result under `prefix` lists the same files as `outputs`.
///
/// # Errors
/// The store cannot be reached.
pub fn still_lists(prefix: &ObjectUri, outputs: &[OutputFile]) -> Result<bool> {
    Ok(find_marker(prefix)?
        .and_then(|(_, _, bytes)| listing(&bytes).ok())
        .is_some_and(|now| now == outputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_files_are_stored_under_their_hash_in_the_prefix() {
        let file = OutputFile {
            name: "per_query.csv".to_string(),
            bytes: 3,
            hash: "ab".repeat(16),
        };
        for (prefix, key) in [
            ("s3://b/night", "night/.rgrade/"),
            ("s3://b/night/", "night/.rgrade/"),
            ("s3://b", ".rgrade/"),
        ] {
            let uri = ObjectUri::parse(prefix).unwrap();
            let stored = file_uri(&uri, &file);
            assert_eq!(stored.key(), format!("{key}{}/per_query.csv", file.hash));
            assert_eq!(in_prefix(&uri, "summary.json").file_name(), "summary.json");
        }
    }

    #[test]
    fn a_scratch_directory_goes_when_dropped() {
        let scratch = Scratch::new("unit").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("f"), b"x").unwrap();
        drop(scratch);
        assert!(!path.exists());
    }
}
