//! `--unit doc --doc-of PATTERN`: rankings of chunks graded against labels
//! of whole documents. Each result id is mapped to its document, by a
//! regular expression's capture group or by cutting it at the last
//! occurrence of a separator; a document takes its first chunk's place,
//! and its later chunks are dropped (and counted) as the ranks close up,
//! so a document counts once however many of its chunks were retrieved.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use regex::{CaptureLocations, Regex};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::failure::Setting;
use crate::base::options::Unit;
use crate::labels::LabelIndex;

/// How a result id names its document.
#[derive(Debug, Clone)]
pub enum DocOf {
    /// The first capture group of a regular expression: `^(.+)#chunk-\d+$`.
    Capture(Regex),
    /// Everything before the last occurrence of a separator: `#`.
    Separator(String),
}

impl DocOf {
    /// Where in `id` the id of the document it is a chunk of is, or `None`
    /// when the pattern finds none in it (no match, no separator, or an
    /// empty document id). `scratch` holds a regex's capture positions
    /// between calls, so a ranking's ids cost no allocation.
    pub(crate) fn document_span(&self, id: &str, scratch: &mut Scratch) -> Option<Range<usize>> {
        let span = match self {
            DocOf::Capture(regex) => {
                let locations = (scratch.0).get_or_insert_with(|| regex.capture_locations());
                regex.captures_read(locations, id)?;
                let (start, end) = locations.get(1)?;
                start..end
            }
            DocOf::Separator(separator) => 0..id.rfind(separator.as_str())?,
        };
        (!span.is_empty()).then_some(span)
    }

    /// The document `id` is a chunk of, or `None` when the pattern finds
    /// none in it.
    pub fn document<'i>(&self, id: &'i str) -> Option<&'i str> {
        (self.document_span(id, &mut Scratch::default())).map(|span| &id[span])
    }
}

/// Room for [`DocOf::document_span`]'s capture positions, reused.
#[derive(Debug, Clone, Default)]
pub struct Scratch(Option<CaptureLocations>);

impl FromStr for DocOf {
    type Err = String;

    /// A pattern holding `(` is a regular expression, which must have
    /// exactly one capture group; anything else is a separator.
    fn from_str(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err(format!(
                "{} needs a separator or a regular expression",
                Setting::DocOf
            ));
        }
        if !pattern.contains('(') {
            return Ok(DocOf::Separator(pattern.to_string()));
        }
        // A pattern meant as a separator may hold '(' too: say how to write it.
        let as_separator = || {
            format!(
                "; a separator that holds '(' is written as the regex {}",
                separator_regex(pattern)
            )
        };
        let regex = Regex::new(pattern).map_err(|err| {
            let doc_of = Setting::DocOf.given(format!("{pattern:?}"));
            format!("{doc_of} is no regex: {err}{}", as_separator())
        })?;
        match regex.captures_len() {
            2 => Ok(DocOf::Capture(regex)),
            n => Err(format!(
                "{} has {} capture groups; it needs exactly one, around the \
                 document id (write (?:...) for a group that captures nothing){}",
                Setting::DocOf.given(format!("{pattern:?}")),
                n - 1,
                if n == 1 {
                    as_separator()
                } else {
                    String::new()
                }
            )),
        }
    }
}

/// The regular expression that names a document as the separator
/// `separator` does: everything before its last occurrence, if not empty
/// (`.+` is greedy; `(?s)` lets it cross line breaks). A separator that
/// holds `(` is written so, since a pattern that holds one is a regex.
fn separator_regex(separator: &str) -> String {
    format!("(?s)^(.+){}", regex::escape(separator))
}

impl fmt::Display for DocOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocOf::Capture(regex) => f.write_str(regex.as_str()),
            DocOf::Separator(separator) => f.write_str(separator),
        }
    }
}

impl Serialize for DocOf {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DocOf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        pattern.parse().map_err(serde::de::Error::custom)
    }
}

/// Why grading documents refuses a ranking spread over records: its lines are
/// ranked later, from hashes of their ids, where no chunk can meet its
/// document.
pub fn runs_refused() -> String {
    let unit = Setting::Unit.given("doc");
    format!(
        "{unit} maps the results of search events (JSONL, spans, Parquet rows of events); \
         this input is a run of one result a record (TREC, MS MARCO, CSV, or Parquet with a \
         rank column), whose ids it cannot map: write its ids as document ids, or grade \
         without {unit}"
    )
}

/// The plan's `doc_of` for `--unit UNIT` and `--doc-of PATTERN` as given:
/// `--unit doc` needs a pattern, and a pattern means nothing without it.
///
/// # Errors
/// One is given without the other.
pub fn doc_of(unit: Unit, pattern: Option<DocOf>) -> Result<Option<DocOf>, String> {
    match (unit, pattern) {
        (Unit::Doc, Some(pattern)) => Ok(Some(pattern)),
        (Unit::Result, None) => Ok(None),
        (Unit::Doc, None) => Err(format!(
            "{} needs {}: how a result id names its document ('#', or a regex such as \
             '^(.+)#chunk-[0-9]+$')",
            Setting::Unit.given("doc"),
            Setting::DocOf.given("PATTERN")
        )),
        (Unit::Result, Some(_)) => Err(format!(
            "{} only applies with {}",
            Setting::DocOf,
            Setting::Unit.given("doc")
        )),
    }
}

/// Labeled ids in which a `--doc-of` pattern finds a document: labels
/// that look made per chunk. Only results are mapped, so a result can
/// never match such a label, and its query scores 0 with nothing wrong
/// to be seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLabels {
    /// How many labeled ids (judged documents, whatever their grade).
    pub ids: u64,
    /// Of how many.
    pub of: u64,
    /// The first, in the labels' order.
    pub example: String,
}

impl ChunkLabels {
    /// The labeled ids of `labels` in which `doc_of` finds a document, if
    /// any.
    pub(crate) fn find(doc_of: &DocOf, labels: &LabelIndex) -> Option<Self> {
        let mut scratch = Scratch::default();
        let all = labels.n_judged_docs() as u32;
        let mut chunks = (0..all)
            .map(|doc| labels.doc_id(doc))
            .filter(|id| doc_of.document_span(id, &mut scratch).is_some());
        let example = chunks.next()?.to_string();
        Some(ChunkLabels {
            ids: 1 + chunks.count() as u64,
            of: u64::from(all),
            example,
        })
    }
}

/// What mapping a ranking's ids to documents did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Folded {
    /// Results dropped because an earlier result was of the same document.
    pub later_chunks: u32,
    /// Result ids the pattern found no document in, kept as their own.
    pub unmapped: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separator_cuts_at_its_last_occurrence() {
        let doc_of: DocOf = "#".parse().unwrap();
        assert_eq!(doc_of.document("kb/a#b#chunk-3"), Some("kb/a#b"));
        assert_eq!(doc_of.document("kb/a"), None);
        assert_eq!(
            doc_of.document("#chunk-3"),
            None,
            "an empty document is none"
        );
        let doc_of: DocOf = "::".parse().unwrap();
        assert_eq!(doc_of.document("doc::7"), Some("doc"));
    }

    #[test]
    fn a_regex_takes_its_one_capture_group() {
        let doc_of: DocOf = r"^(.+)#chunk-\d+$".parse().unwrap();
        assert_eq!(doc_of.document("kb/a#chunk-0012"), Some("kb/a"));
        assert_eq!(doc_of.document("kb/a#summary"), None);
        let doc_of: DocOf = r"^doc-(\d+)".parse().unwrap();
        assert_eq!(doc_of.document("doc-42-p3"), Some("42"));
    }

    #[test]
    fn a_separator_holding_a_parenthesis_is_written_as_a_regex() {
        for pattern in ["_(", "_(x"] {
            let err = pattern.parse::<DocOf>().unwrap_err();
            assert!(
                err.contains(r"is written as the regex (?s)^(.+)_\("),
                "{err}"
            );
        }
        let regex: DocOf = separator_regex("_(").parse().unwrap();
        let separator = DocOf::Separator("_(".to_string());
        for id in [
            "kb/a_(1",
            "kb/a_(b_(2",
            "_(3",
            "kb/a",
            "a\nb_(c",
            "x_(_(_(",
            "_(_(",
        ] {
            assert_eq!(regex.document(id), separator.document(id), "{id:?}");
        }
    }

    #[test]
    fn patterns_that_cannot_name_a_document_are_refused() {
        for (pattern, says) in [
            ("", "needs a separator"),
            ("(a)(b)", "2 capture groups"),
            ("(?:a)", "0 capture groups"),
            ("([", "is no regex"),
        ] {
            let err = pattern.parse::<DocOf>().unwrap_err();
            assert!(err.contains(says), "{pattern:?}: {err}");
        }
    }

    #[test]
    fn a_pattern_survives_a_plan_written_down() {
        for pattern in ["#", r"^(.+)#chunk-\d+$"] {
            let doc_of: DocOf = pattern.parse().unwrap();
            let text = serde_json::to_string(&doc_of).unwrap();
            let back: DocOf = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_string(), pattern);
        }
    }
}
