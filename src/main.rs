//! The `rgrade` binary: parse the command line, run the subcommand, and turn
//! the outcome into an exit status (0 clean, 1 a check tripped, 2 nothing
//! graded).

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use cmd::Exit;

mod cli;
mod cmd;

// Building the label index makes millions of small strings; mimalloc is
// 2-3x faster at that than the system allocator and neutral elsewhere.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in mimalloc.h's option
/// enum, the same in mimalloc 2 and 3; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keep freed memory for reuse instead of handing it back to the kernel a
/// second later: a grading frees and allocates block buffers and label
/// parts all along, and each page handed back is zeroed again by the
/// kernel when it is touched next, which took a fifth of the CPU time on
/// 1M queries. The memory kept is what a grading freed and would take again:
/// peak RSS grows by about a sixth on 1M queries (docs/BENCHMARKS.md).
fn keep_freed_memory() {
    // SAFETY: sets one option before any thread starts; any value is valid
    // (-1: never purge).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// The command line as typed, for summary.json; arguments that are not
/// UTF-8 (file names) are shown lossily.
fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn main() -> ExitCode {
    keep_freed_memory();
    // A decoder's panic on a corrupt input is reported as that input's
    // error, not printed as a crash.
    rgrade::quiet_decoder_panics();
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Grade(args) => cmd::grade::run(args, command_line()),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Gen(args) => cmd::gen::run(args),
        Command::Merge(args) => cmd::merge::run(args, command_line()),
    };
    match outcome {
        Ok(exit) => exit.into(),
        Err(err) => {
            cmd::tell(format_args!("rgrade: {err:#}"));
            Exit::NothingGraded.into()
        }
    }
}
