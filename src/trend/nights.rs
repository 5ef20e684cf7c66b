//! The nights of a trend: grade output directories, put in the order of
//! the time each stands for (summary.json's `as_of`), each with its labels
//! revision.

use std::path::PathBuf;

use anyhow::{bail, ensure, Result};

use crate::base::schema::OutputFile;
use crate::base::timestamp::Timestamp;
use crate::compare::graded::{facts_of, listed, locate, Difference, GradingFacts};
use crate::io::location::shown;
use crate::output::complete::{self, ReadBack};

/// One night: a complete grade output.
#[derive(Debug, Clone)]
pub struct Night {
    /// The directory (or per_query.csv) as given.
    pub given: PathBuf,
    /// The result it names, held: a copy fetched from object storage
    /// lasts as long as the night is read.
    _read_back: ReadBack,
    /// Its per_query.csv.
    pub per_query: PathBuf,
    /// per_query.csv as its summary.json lists it: the bytes checked,
    /// which are the bytes to read.
    pub per_query_listed: OutputFile,
    /// The time it stands for.
    pub as_of: Timestamp,
    /// What its grades depend on besides the logs.
    pub facts: GradingFacts,
    /// Its labels revision, from 1.
    pub revision: u32,
    /// What it was graded with unlike the night before, when it starts a
    /// labels revision.
    pub changed: Option<Difference>,
}

/// The nights `given` names, in the order of their `as_of`, each checked
/// to be a complete grade output, numbered by labels revision: a night
/// graded with other labels or settings than the night before starts the
/// next one, which only `allow_label_changes` allows.
///
/// # Errors
/// A night that is no complete grade output or records no time; two
/// nights that stand for the same time; a change of labels or settings
/// not allowed. Each message names the directories.
pub fn order(given: &[PathBuf], allow_label_changes: bool) -> Result<Vec<Night>> {
    let mut nights = Vec::with_capacity(given.len());
    for path in given {
        let source = ReadBack::open(path)?;
        let (per_query, summary_path) = locate(source.path())?;
        let summary = complete::read_summary(&summary_path)?;
        let Some(as_of) = summary.as_of else {
            bail!(
                "{}: records no as_of (written by an older rgrade); grade that night again, \
                 with {} for the time it stands for",
                summary_path.display(),
                crate::base::failure::Setting::AsOf
            );
        };
        nights.push(Night {
            given: path.clone(),
            _read_back: source,
            facts: facts_of(&summary, &summary_path, &per_query)?,
            per_query_listed: listed(&summary, &summary_path, &per_query)?.clone(),
            per_query,
            as_of,
            revision: 1,
            changed: None,
        });
    }
    nights.sort_by_key(|night| night.as_of);
    for i in 1..nights.len() {
        let (before, night) = (&nights[i - 1], &nights[i]);
        ensure!(
            before.as_of != night.as_of,
            "{} and {}: both stand for {} (the same night given twice? grade's {} sets \
             the time a grading stands for)",
            shown(&before.given),
            shown(&night.given),
            night.as_of,
            crate::base::failure::Setting::AsOf
        );
        let (revision, changed) = (before.revision, before.facts.difference(&night.facts));
        let revision = match changed {
            None => revision,
            Some(_) if allow_label_changes => revision + 1,
            Some(what) => bail!(
                "{} and {}: graded with other {}; a trend compares nights graded alike \
                 ({} watches each revision apart)",
                shown(&before.given),
                shown(&night.given),
                what.name(),
                crate::base::failure::Setting::AllowLabelChanges
            ),
        };
        nights[i].revision = revision;
        nights[i].changed = changed;
    }
    Ok(nights)
}
