use clap::Parser;
use rgrade::cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Gen(args) => rgrade::cmd::gen::run(&args).unwrap_or(ExitCode::from(2)),
        Command::Grade(_) => ExitCode::from(2),
    }
}
