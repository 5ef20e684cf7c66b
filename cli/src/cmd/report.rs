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
    let shown = if written.as_os_str() == rgrade::REPORT_TO_STDOUT {
        "the page to stdout".to_string()
    } else {
        rgrade::shown_path(&written)
    };
    tell(format_args!("rgrade report: wrote {shown}"));
    Ok(Exit::Clean)
}
