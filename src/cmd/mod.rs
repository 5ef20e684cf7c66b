//! One module per subcommand; each turns its arguments into a plan, calls
//! the library, prints what the user should see and says how the run
//! ended as an [`Exit`] status. [`main`] runs a command line; the binary
//! and the Python package's `rgrade` command both call it.

pub mod agree;
pub mod compare;
pub mod gen;
pub mod grade;
pub mod index;
pub mod merge;
pub mod report;
pub mod terminal;
pub mod trend;

use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Cli, Command};
use terminal::{message, tell, Exit};

/// Run the command line `args` (the program's name first) and return its
/// exit status: 0 clean, 1 a check tripped, 2 nothing graded (a usage
/// error included; `--help` and `--version` are 0).
pub fn main(args: Vec<OsString>) -> u8 {
    // A decoder's panic on a corrupt input is reported as that input's
    // error, not printed as a crash.
    rgrade::quiet_decoder_panics();
    // The command line as typed, for summary.json; arguments that are
    // not UTF-8 (file names) are shown lossily.
    let command_line: Vec<String> = (args.iter())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help and usage errors as its `exit` would.
            let _ = err.print();
            return u8::try_from(err.exit_code()).unwrap_or(Exit::NothingGraded as u8);
        }
    };
    let outcome = match &cli.command {
        Command::Grade(args) => grade::run(args, command_line),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Merge(args) => merge::run(args, command_line),
        Command::Index(args) => index::run(args),
        Command::Agree(args) => agree::run(args),
        Command::Trend(args) => trend::run(args, command_line),
    };
    match outcome {
        Ok(exit) => exit as u8,
        Err(err) => {
            tell(format_args!("rgrade: {}", message(&err)));
            Exit::NothingGraded as u8
        }
    }
}
