//! `rgrade index`: compile an answer key, and say on stderr what went in.

use anyhow::Result;
use rgrade::IndexPlan;

use super::terminal::{tell, Exit};
use crate::cli::IndexArgs;

/// Compile the labels of `args` into the key file it names.
///
/// # Errors
/// Labels that do not load, a key that cannot be written.
pub fn run(args: &IndexArgs) -> Result<Exit> {
    let plan = IndexPlan {
        labels: args.labels.clone(),
        labels_format: args.labels_format,
        join: args.join,
        reviewers: args.reviewers.clone(),
        out: args.out.clone(),
        threads: args.threads,
    };
    let compiled = rgrade::index(&plan)?;
    tell(format_args!(
        "rgrade index: wrote {} ({} labeled queries, {} judged documents, {} bytes)",
        args.out.display(),
        compiled.queries,
        compiled.judged_docs,
        compiled.bytes
    ));
    Ok(Exit::Clean)
}
