//! `rgrade compare`: read two grade outputs, compare them query by query,
//! check the acceptance rules and report the verdict as an exit status.

use anyhow::Result;
use rgrade::ComparePlan;

use super::terminal::{print_stdout, tell, Exit};
use crate::cli::CompareArgs;

/// Compare the two grade outputs named in `args`.
///
/// # Errors
/// Anything that leaves nothing compared: unreadable or incomparable
/// inputs, an unknown run, metric or rule target, an unwritable output.
pub fn run(args: &CompareArgs) -> Result<Exit> {
    let compared = rgrade::compare(&plan(args)?, &mut |warning| {
        tell(format_args!(
            "rgrade: warning: {}",
            warning.spelled(crate::cli::flag)
        ));
    })?;
    // A failed rule is exit status 1, even if the table is lost.
    let lost = print_stdout(|out| compared.print(out, args.quiet));
    let exit = if compared.passed() {
        Exit::Clean
    } else {
        Exit::CheckFailed
    };
    Ok(exit.unless_lost(lost))
}

/// The library's plan for the options in `args`, its paths handed over
/// as they are.
fn plan(args: &CompareArgs) -> Result<ComparePlan> {
    Ok(ComparePlan {
        baseline: args.baseline.clone(),
        candidate: args.candidate.clone(),
        rules: args.rules.clone(),
        out: args.out.clone(),
        ..crate::cli::plan(args)?
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::ComparePlan;

    use super::plan;
    use crate::cli::{Cli, Command};

    /// `ComparePlan::new` holds the command line's defaults.
    #[test]
    fn a_library_plan_holds_the_command_lines_defaults() {
        let cli = Cli::try_parse_from(["rgrade", "compare", "a", "b"]).unwrap();
        let Command::Compare(args) = cli.command else {
            panic!("expected compare")
        };
        assert_eq!(
            plan(&args).unwrap(),
            ComparePlan::new("a".into(), "b".into())
        );
    }
}
