//! `rgrade trend`: watch a series of nightly gradings, print the alarms
//! and the overall series, and report an alarm as exit status 1.

use anyhow::Result;
use rgrade::TrendPlan;

use super::terminal::{print_stdout, tell, tell_export, Exit};
use crate::cli::TrendArgs;

/// Watch the nights named in `args`; `command` is the command line as
/// typed, for alarms.json.
///
/// # Errors
/// Anything that leaves nothing watched: bad options, a night that is no
/// complete grade output or was graded unlike the others, an unwritable
/// output.
pub fn run(args: &TrendArgs, command: Vec<String>) -> Result<Exit> {
    let trended = rgrade::trend(&plan(args, command), &mut |warning| {
        tell(format_args!(
            "rgrade: warning: {}",
            warning.spelled(crate::cli::flag)
        ));
    })?;
    // An alarm is printed, and exit status 1, whatever else is lost.
    let lost_table = !args.quiet && print_stdout(|out| trended.print(out));
    let lost_export = tell_export(trended.openmetrics_failure.as_ref());
    let exit = if trended.alarmed() {
        Exit::CheckFailed
    } else {
        Exit::Clean
    };
    Ok(exit.unless_lost(lost_table || lost_export))
}

/// The library's plan for the options in `args`.
fn plan(args: &TrendArgs, command: Vec<String>) -> TrendPlan {
    TrendPlan {
        out: args.out.clone(),
        baseline_nights: args.baseline,
        alpha: args.alpha,
        metrics: args.metrics.clone(),
        allow_label_changes: args.allow_label_changes,
        command,
        threads: args.threads,
        openmetrics: args.openmetrics.clone(),
        ..TrendPlan::new(args.nights.clone())
    }
}
