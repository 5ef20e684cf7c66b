//! `rgrade grade`: grade the logs, print the table and the warnings, and
//! turn rejects and leaks over their limits into exit status 1; with
//! `--partial`, write the shard's captures for `rgrade merge`.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use rgrade::{GradePlan, Graded, Warning};

use super::progress;
use super::terminal::{print_json_stdout, print_stdout, stdout_width, tell, tell_export, Exit};
use crate::cli::GradeArgs;

/// Grade the logs named in `args`; `command` is the command line as typed,
/// for summary.json.
///
/// # Errors
/// Anything that leaves nothing graded: bad options, unreadable or invalid
/// labels, a missing, empty or corrupt log input, an unwritable output.
pub fn run(args: &GradeArgs, command: Vec<String>) -> Result<Exit> {
    let plan = GradePlan {
        doc_of: rgrade::doc_of(args.unit, args.doc_of.clone()).map_err(anyhow::Error::msg)?,
        ..plan(args, command)?
    };
    let mut warnings = Vec::new();
    let mut warn = |warning| warnings.push(warning);
    if args.partial {
        let partial = rgrade::grade_partial(&plan, &mut warn)?;
        tell_warnings(&warnings);
        let dir = plan.out.as_deref().unwrap_or(std::path::Path::new("."));
        let lost = !args.quiet
            && print_stdout(|out| {
                writeln!(
                    out,
                    "partial grading of {} captured queries ({} rejected records) in {}; \
                     rgrade merge grades the shards as one",
                    partial.captured_queries,
                    partial.rejected,
                    rgrade::shown_path(dir)
                )
            });
        // A shard's other limits are held at the merge, but a shard of
        // which nothing could be graded fails here.
        let records: u64 = partial.inputs.iter().map(|input| input.records).sum();
        if records > 0 && partial.rejected >= records {
            tell(format_args!(
                "rgrade: every one of the shard's {records} records was rejected, so nothing \
                 was graded (rgrade grade without --partial lists them in rejects.jsonl)"
            ));
            return Ok(Exit::CheckFailed);
        }
        return Ok(Exit::Clean.unless_lost(lost));
    }
    let graded = rgrade::grade(&plan, &mut warn)?;
    Ok(show(
        &graded,
        &warnings,
        &Checks {
            stdout: Stdout::chosen(args.quiet, args.json),
            max_leaks: args.max_leaks,
            max_rejects: args.max_rejects,
            out: args.out.as_deref(),
        },
    ))
}

/// What a grading prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// The table of means.
    Table,
    /// summary.json's document, one line of JSON (`--json`).
    Summary,
    /// Nothing (`--quiet`).
    Nothing,
}

impl Stdout {
    /// What `--quiet` and `--json` ask for; clap lets only one be given.
    pub fn chosen(quiet: bool, json: bool) -> Stdout {
        match (quiet, json) {
            (true, _) => Stdout::Nothing,
            (false, true) => Stdout::Summary,
            (false, false) => Stdout::Table,
        }
    }
}

/// What the user asked of a grading's end: what to print, and the limits
/// of rejects and leaks.
pub struct Checks<'a> {
    /// What stdout shows.
    pub stdout: Stdout,
    /// Leaks tolerated.
    pub max_leaks: u64,
    /// Rejected records tolerated.
    pub max_rejects: u64,
    /// Where the outputs were written.
    pub out: Option<&'a Path>,
}

/// Print the table or the summary of `graded` (as asked) and its
/// warnings, turn rejects and leaks over their limits into exit status 1,
/// and say what did not reach the reader (stdout, the `--openmetrics`
/// export).
pub fn show(graded: &Graded, warnings: &[Warning], checks: &Checks) -> Exit {
    let lost_table = match checks.stdout {
        Stdout::Table => print_stdout(|out| graded.print_table(out, stdout_width())),
        Stdout::Summary => print_json_stdout(&graded.summary),
        Stdout::Nothing => false,
    };
    tell_warnings(warnings);
    let lost_export = tell_export(graded.openmetrics_failure.as_ref());
    let leaks = graded.leaks_over(checks.max_leaks);
    let rejects = graded.rejects_over(checks.max_rejects, checks.out);
    for message in leaks.iter().chain(&rejects) {
        tell(format_args!(
            "rgrade: {}",
            message.spelled(crate::cli::flag)
        ));
    }
    let exit = if leaks.is_some() || rejects.is_some() {
        Exit::CheckFailed
    } else {
        Exit::Clean
    };
    exit.unless_lost(lost_table || lost_export)
}

/// The library's plan for the options in `args`, its paths handed over
/// as they are.
fn plan(args: &GradeArgs, command: Vec<String>) -> Result<GradePlan> {
    Ok(GradePlan {
        command,
        progress: progress::shown(args.progress, args.progress_every),
        labels: args.labels.clone(),
        logs: args.logs.clone(),
        out: args.out.clone(),
        calibrate: args.calibrate.clone(),
        doc_collections: args.doc_collections.clone(),
        corpus: args.corpus.clone(),
        openmetrics: args.openmetrics.clone(),
        ..crate::cli::plan(args)?
    })
}

fn tell_warnings(warnings: &[Warning]) {
    for warning in warnings {
        tell(format_args!(
            "rgrade: warning: {}",
            warning.spelled(crate::cli::flag)
        ));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::GradePlan;

    use super::plan;
    use crate::cli::{Cli, Command};

    /// `GradePlan::new` holds the command line's defaults: the plan of
    /// `rgrade grade --labels L LOGS` is a library caller's with the same
    /// labels and logs (the progress shown is no part of a plan written
    /// down).
    #[test]
    fn a_library_plan_holds_the_command_lines_defaults() {
        let cli = Cli::try_parse_from(["rgrade", "grade", "--labels", "l.jsonl", "logs"]).unwrap();
        let Command::Grade(args) = cli.command else {
            panic!("expected grade")
        };
        let library = GradePlan::new("l.jsonl".into(), vec!["logs".into()]);
        let json = |plan: &GradePlan| serde_json::to_value(plan).unwrap();
        assert_eq!(json(&plan(&args, Vec::new()).unwrap()), json(&library));
    }
}
