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
    let trended = rgrade::trend(&plan(args, command)?, &mut |warning| {
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

/// The library's plan for the options in `args`, its paths handed over
/// as they are.
fn plan(args: &TrendArgs, command: Vec<String>) -> Result<TrendPlan> {
    Ok(TrendPlan {
        nights: args.nights.clone(),
        out: args.out.clone(),
        openmetrics: args.openmetrics.clone(),
        command,
        ..crate::cli::plan(args)?
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::TrendPlan;

    use super::plan;
    use crate::cli::{Cli, Command};

    /// `TrendPlan::new` holds the command line's defaults.
    #[test]
    fn a_library_plan_holds_the_command_lines_defaults() {
        let cli = Cli::try_parse_from(["rgrade", "trend", "a", "b"]).unwrap();
        let Command::Trend(args) = cli.command else {
            panic!("expected trend")
        };
        let library = TrendPlan::new(vec!["a".into(), "b".into()]);
        assert_eq!(plan(&args, Vec::new()).unwrap(), library);
    }
}
