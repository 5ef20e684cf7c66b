//! The limits a caller holds a grading to: how many rejected records and
//! how many results outside the user's allowed collections it tolerates,
//! and never a grading whose every record was rejected.
//! Over a limit, the grading still wrote every output; the caller decides
//! what that means (the command line exits with status 1).

use std::path::Path;

use crate::base::failure::{Message, Setting};
use crate::base::schema::{Status, REJECTS_FILE};
use crate::base::text::plural;
use crate::grade::graded::Graded;
use crate::io::location::shown_in;

impl Graded {
    /// Why the rejected records fail the grading, naming the first, or
    /// `None` if they do not: more of them than `max_rejects`, or every
    /// record read, whatever `max_rejects` tolerates (nothing was graded).
    /// `out` is where rejects.jsonl was written.
    pub fn rejects_over(&self, max_rejects: u64, out: Option<&Path>) -> Option<Message> {
        let listed = match out {
            Some(dir) => format!("all are listed in {}", shown_in(dir, REJECTS_FILE)),
            None => format!(
                "use {} to list them all in rejects.jsonl",
                Setting::Out.given("DIR")
            ),
        };
        if let Some(every) = self.every_record_rejected() {
            return Some(Message::new(format!("{} ({listed})", every.marked())));
        }
        if self.counts.rejected <= max_rejects {
            return None;
        }
        Some(Message::new(format!(
            "{} {}; the first is {} ({listed})",
            exceed(self.counts.rejected, "rejected record", "rejected records"),
            Setting::MaxRejects.given(max_rejects),
            self.first_reject()?
        )))
    }

    /// Why nothing was graded when every record read was rejected, or
    /// every capture of a labeled query (records of other queries aside),
    /// naming the first reject (whose detail carries any hint at the
    /// cause, such as runs that share a TREC tag); `None` otherwise.
    pub fn every_record_rejected(&self) -> Option<Message> {
        let (records, rejected) = (self.counts.records, self.counts.rejected);
        let invalid: u64 = (self.pairs.iter())
            .filter_map(|pair| pair.aggregates.first())
            .map(|overall| overall.status_count(Status::Invalid))
            .sum();
        let every = if records > 0 && rejected >= records {
            match records {
                1 => "the only record read was rejected".to_string(),
                n => format!("every one of the {n} records read was rejected"),
            }
        } else if self.counts.graded == 0 && invalid > 0 {
            format!(
                "every capture of a labeled query was rejected ({})",
                plural(rejected, "rejected record", "rejected records")
            )
        } else {
            return None;
        };
        Some(Message::new(format!(
            "{every}, so nothing was graded; the first is {}",
            self.first_reject()?
        )))
    }

    /// The first rejected record: where it is, why, and the detail.
    fn first_reject(&self) -> Option<String> {
        // Every rejected record is in the list the count counts.
        let first = self.rejects.first()?;
        Some(format!(
            "{}:{}: {}: {}",
            self.input_name(first.origin),
            first.origin.line,
            first.reason,
            first.detail
        ))
    }

    /// Why the results outside their user's allowed collections exceed
    /// `max_leaks`, naming the first, or `None` within the limit.
    pub fn leaks_over(&self, max_leaks: u64) -> Option<Message> {
        if self.counts.leaked_results <= max_leaks {
            return None;
        }
        let mut message = format!(
            "{} {}",
            exceed(
                self.counts.leaked_results,
                "result outside the user's allowed collections",
                "results outside the user's allowed collections"
            ),
            Setting::MaxLeaks.given(max_leaks)
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
        Some(Message::new(message))
    }
}

/// "1 rejected record exceeds", "2 rejected records exceed".
fn exceed(n: u64, one: &str, many: &str) -> String {
    let verb = if n == 1 { "exceeds" } else { "exceed" };
    format!("{} {verb}", plural(n, one, many))
}
