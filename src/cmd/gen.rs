//! `rgrade gen`: write synthetic labels and logs.

use std::process::ExitCode;

use crate::cli::GenArgs;

/// Write the data set described by `args`.
pub fn run(args: &GenArgs) -> anyhow::Result<ExitCode> {
    crate::gen::write_dataset(args)?;
    Ok(ExitCode::SUCCESS)
}
