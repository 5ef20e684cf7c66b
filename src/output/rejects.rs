//! rejects.jsonl: one object per rejected record, in input order.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::staged::{self, stage, Staged};
use crate::base::failure::plan_spelled;
use crate::base::schema::{RejectLine, REJECTS_FILE};
use crate::grade::capture::Reject;

/// Write rejects.jsonl, one object per rejected record, in input order,
/// each detail naming settings as the plan does: a file knows no front end.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_rejects(dir: &Path, rejects: &[Reject], input_names: &[String]) -> Result<Staged> {
    let mut out = stage(dir, REJECTS_FILE)?;
    for reject in rejects {
        let line = RejectLine {
            file: input_names[reject.origin.input as usize].clone(),
            line: reject.origin.line,
            reason: reject.reason.code().to_string(),
            detail: plan_spelled(&reject.detail),
            record: String::from_utf8_lossy(&reject.excerpt).into_owned(),
        };
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    staged::finish(out)
}
