//! `rgrade merge`: grade partial gradings of logs partitioned by query id
//! as one, and show the outcome as `rgrade grade` does.

use anyhow::Result;
use rgrade::MergePlan;

use super::grade::{show, Checks, Stdout};
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
        labels: args.labels.clone(),
        shards: args.shards.clone(),
        out: args.out.clone(),
        openmetrics: args.openmetrics.clone(),
        command,
        ..crate::cli::plan(args)?
    };
    let mut warnings = Vec::new();
    let graded = rgrade::merge(&plan, &mut |warning| warnings.push(warning))?;
    let checks = Checks {
        stdout: Stdout::chosen(args.quiet, args.json),
        max_leaks: args.max_leaks,
        max_rejects: args.max_rejects,
        out: Some(&args.out),
    };
    Ok(show(&graded, &warnings, &checks))
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::MergePlan;

    use crate::cli::plan;
    use crate::cli::{Cli, Command};

    /// `MergePlan::new` holds the command line's defaults.
    #[test]
    fn a_library_plan_holds_the_command_lines_defaults() {
        let cli =
            Cli::try_parse_from(["rgrade", "merge", "--labels", "l", "-o", "m", "s"]).unwrap();
        let Command::Merge(args) = cli.command else {
            panic!("expected merge")
        };
        let parsed = MergePlan {
            labels: args.labels.clone(),
            shards: args.shards.clone(),
            out: args.out.clone(),
            ..plan(&args).unwrap()
        };
        let library = MergePlan::new("l".into(), vec!["s".into()], "m".into());
        let json = |plan: &MergePlan| serde_json::to_value(plan).unwrap();
        assert_eq!(json(&parsed), json(&library));
    }
}
