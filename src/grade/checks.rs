//! The limits a caller holds a grading to: how many rejected records and
//! how many results outside the user's allowed collections it tolerates.
//! Over a limit, the grading still wrote every output; the caller decides
//! what that means (the command line exits with status 1).

use std::path::Path;

use crate::base::schema::REJECTS_FILE;
use crate::base::text::plural;
use crate::grade::graded::Graded;

impl Graded {
    /// Why the rejected records exceed `max_rejects`, naming the first,
    /// or `None` within the limit. `out` is where rejects.jsonl was written.
    pub fn rejects_over(&self, max_rejects: u64, out: Option<&Path>) -> Option<String> {
        if self.counts.rejected <= max_rejects {
            return None;
        }
        // Every rejected record is in the list the count counts.
        let first = self.rejects.first()?;
        let listed = match out {
            Some(dir) => format!("all are listed in {}", dir.join(REJECTS_FILE).display()),
            None => "use -o DIR to list them all in rejects.jsonl".to_string(),
        };
        Some(format!(
            "{} --max-rejects {max_rejects}; the first is {}:{}: {}: {} ({listed})",
            exceed(self.counts.rejected, "rejected record", "rejected records"),
            self.input_name(first.origin),
            first.origin.line,
            first.reason,
            first.detail
        ))
    }

    /// Why the results outside their user's allowed collections exceed
    /// `max_leaks`, naming the first, or `None` within the limit.
    pub fn leaks_over(&self, max_leaks: u64) -> Option<String> {
        if self.counts.leaked_results <= max_leaks {
            return None;
        }
        let mut message = format!(
            "{} --max-leaks {max_leaks}",
            exceed(
                self.counts.leaked_results,
                "result outside the user's allowed collections",
                "results outside the user's allowed collections"
            )
        );
        if let Some(first) = self.leaks.first() {
            message.push_str(&format!(
                "; the first is {}:{}: query {} got {} from collection {}",
                self.input_name(first.origin),
                first.origin.line,
                first.query_id,
                first.doc_id,
                first.collection
            ));
        }
        Some(message)
    }
}

/// "1 rejected record exceeds", "2 rejected records exceed".
fn exceed(n: u64, one: &str, many: &str) -> String {
    let verb = if n == 1 { "exceeds" } else { "exceed" };
    format!("{} {verb}", plural(n, one, many))
}
