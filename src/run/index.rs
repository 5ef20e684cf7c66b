//! `rgrade index`: the answer key compiled once into a file that gradings
//! read back instead of parsing the labels (docs/guide.md, "Compiled
//! answer keys"). The key is written under a temporary name beside its
//! final one and renamed into place when complete, so a killed run leaves
//! no file that looks like a key; it replaces only a key, or is written
//! into a stream ([`crate::output::target`]).

use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::base::failure::{ErrorKind, OfKind};
use crate::base::options::{JoinBy, LabelsFormat, ReviewerPolicy, Reviewing};
use crate::io::workers;
use crate::labels::LabelIndex;
use crate::output::target::{Destination, Output};

/// What to compile, and where to. As [`crate::GradePlan`], the one place
/// an option is defined: the command line's arguments are read into it by
/// name, an option left out keeping [`Plan::new`]'s default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default = "Plan::unset", deny_unknown_fields)]
pub struct Plan {
    /// The labels file.
    pub labels: PathBuf,
    /// Its format.
    pub labels_format: LabelsFormat,
    /// Whether the key keeps each query's question text, for gradings
    /// joined by text.
    pub join: JoinBy,
    /// Whose grade counts for a (query, document) pair several reviewers
    /// judged: the key holds the combined grades.
    pub reviewers: Option<ReviewerPolicy>,
    /// The key file to write.
    pub out: PathBuf,
    /// Worker threads for parsing the labels; all cores when `None`.
    pub threads: Option<NonZeroUsize>,
}

impl Plan {
    /// Compile `labels` into `out` as `rgrade index LABELS -o KEY` does
    /// with no other option (format by content, joined by id, all
    /// cores): a caller sets the fields it wants otherwise.
    pub fn new(labels: PathBuf, out: PathBuf) -> Self {
        Plan {
            labels,
            labels_format: LabelsFormat::Auto,
            join: JoinBy::Id,
            reviewers: None,
            out,
            threads: None,
        }
    }

    /// The plan of no labels, whose other options a deserialized plan
    /// keeps when it is not given them.
    fn unset() -> Self {
        Plan::new(PathBuf::new(), PathBuf::new())
    }
}

/// What was compiled.
#[derive(Debug, Clone, Copy)]
pub struct Compiled {
    /// Labeled queries in the key.
    pub queries: usize,
    /// Judged documents, over all queries, of any grade.
    pub judged_docs: usize,
    /// The key's size in bytes.
    pub bytes: u64,
}

/// Read the labels of `plan` and write them as a compiled key.
///
/// # Errors
/// A bad thread count, labels that do not load, a key that cannot be
/// written.
pub fn run(plan: &Plan) -> Result<Compiled> {
    let destination = Destination {
        path: &plan.out,
        output: Output::CompiledKey,
        out_dir: None,
        inputs: vec![&plan.labels],
    };
    destination.check().of_kind(ErrorKind::Usage)?;
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    // Any --min-rel: a key counts the relevant documents when it is read.
    let labels = LabelIndex::load(
        &plan.labels,
        plan.labels_format,
        1,
        plan.join,
        Reviewing::by_reviewers(plan.reviewers.as_ref()),
        &pool,
    )
    .of_kind(ErrorKind::Labels)?;
    let bytes = (destination.write(|mut out| labels.write_compiled(&mut out)))
        .of_kind(ErrorKind::Output)?;
    Ok(Compiled {
        queries: labels.queries().len(),
        judged_docs: labels.n_judged_docs(),
        bytes,
    })
}
