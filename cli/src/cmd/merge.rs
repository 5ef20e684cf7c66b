//! `rgrade merge`: grade partial gradings of logs partitioned by query id
//! as one, and show the outcome as `rgrade grade` does.

use anyhow::Result;
use rgrade::MergePlan;

use super::grade::{show, Checks};
use super::terminal::Exit;
use crate::cli::MergeArgs;

/// Merge the shards named in `args`; `command` is the command line as
/// typed, for summary.json.
///
/// # Errors
/// A shard that is not a complete partial grading, shards graded with
/// other labels or options, a query captured in two shards, an output
/// that cannot be written.
pub fn run(args: &MergeArgs, command: Vec<String>) -> Result<Exit> {
    let plan = MergePlan {
        threads: args.threads,
        command,
        as_of: args.as_of,
        openmetrics: args.openmetrics.clone(),
        ..MergePlan::new(args.labels.clone(), args.shards.clone(), args.out.clone())
    };
    let mut warnings = Vec::new();
    let graded = rgrade::merge(&plan, &mut |warning| warnings.push(warning))?;
    let checks = Checks {
        quiet: args.quiet,
        max_leaks: args.max_leaks,
        max_rejects: args.max_rejects,
        out: Some(&args.out),
    };
    Ok(show(&graded, &warnings, &checks))
}
