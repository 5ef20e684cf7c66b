//! `rgrade report`: draw the report page of a grade output directory again.

use anyhow::Result;

use super::terminal::{tell, Exit};
use crate::cli::ReportArgs;

/// Draw the page of `args.dir` and say on stderr where it went.
///
/// # Errors
/// The directory holds no complete grade output, or the page cannot be
/// written.
pub fn run(args: &ReportArgs) -> Result<Exit> {
    let written = rgrade::draw_report(&args.dir, args.out.as_deref())?;
    tell(format_args!(
        "rgrade report: wrote {}",
        rgrade::shown_path(&written)
    ));
    Ok(Exit::Clean)
}
