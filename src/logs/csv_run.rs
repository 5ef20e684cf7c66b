//! CSV runs: a header naming the columns, then one line per result, as
//! ir_measures' and ranx's run frames are saved (`query_id` or `q_id`,
//! `doc_id`, `score`), or tab-separated under BEIR's names (`query-id`,
//! `corpus-id`, `score`), as its qrels are. Ranked as a TREC run by its
//! scores, or by a `rank` column when there is one (docs/reference.md,
//! "Logs").
//!
//! The header is read whole: a column rgrade does not know stops the input
//! rather than being left out, since a rank kept under another name would
//! leave the run ranked by its scores, a plausible and wrong result.

use std::borrow::Cow;

use crate::base::options::LogsFormat;
use crate::base::whole::whole_text;
use crate::io::blocks::Block;
use crate::logs::jsonl::FieldNames;
use crate::logs::record::{
    deliver, EventKey, Invalid, LineFormat, Origin, RankKey, Record, RecordSink, RejectReason,
    RunNames, RunResult, DEFAULT_STAGE,
};

/// The names a query id column goes by: ir_measures', ranx's, BEIR's.
const QUERY_COLUMNS: [&str; 3] = [FieldNames::QUERY, FieldNames::QUERY_ALIAS, "query-id"];
/// The names the doc id column goes by: ir_measures' and ranx's, BEIR's.
const DOC_COLUMNS: [&str; 2] = ["doc_id", "corpus-id"];
/// A run's column of scores, higher first.
const SCORE_COLUMN: &str = FieldNames::SCORE;
/// A run's column of ranks, from 1; it decides when a score is there too.
const RANK_COLUMN: &str = FieldNames::RANK;
/// Columns read as nothing: TREC's `Q0` field and qrels' `iteration`.
const IGNORED_COLUMNS: [&str; 2] = ["Q0", "iteration"];

/// Where the fields of a CSV run's lines are, from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRun {
    /// What separates the fields: a comma, or a tab.
    separator: char,
    query: usize,
    doc: usize,
    /// The rank column, or the score column.
    order: usize,
    by_score: bool,
    run: Option<usize>,
    stage: Option<usize>,
    /// How many fields each line has.
    width: usize,
}

/// The fields of a CSV run line.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvLine<'a> {
    /// The query id.
    pub query_id: Cow<'a, str>,
    /// The retrieved document.
    pub doc_id: Cow<'a, str>,
    /// What ranks it (higher first).
    pub key: RankKey,
    /// The run: empty without a run column.
    pub run: Cow<'a, str>,
    /// The stage, or `None` without a stage column.
    pub stage: Option<Cow<'a, str>>,
}

/// A CSV run line that cannot be read, with what it names of its ranking:
/// the query id, and whether the run and stage are known too.
#[derive(Debug, Clone, PartialEq)]
pub struct BadCsvLine<'a> {
    /// Why the line is rejected.
    pub invalid: Invalid,
    /// The line's query id, when it has one.
    pub query_id: Option<Cow<'a, str>>,
    /// Its run and stage, when known (the stage `None` without a stage
    /// column).
    pub place: Option<(Cow<'a, str>, Option<Cow<'a, str>>)>,
}

/// Whether `line` is the header of a CSV run: comma- (or tab-) separated
/// names among which a query id, a doc id, and a score or a rank.
pub fn is_header(line: &str) -> bool {
    let separator = separator_of(line);
    let names: Vec<&str> = header_names(line, separator).collect();
    line.contains(separator)
        && names.iter().any(|name| QUERY_COLUMNS.contains(name))
        && names.iter().any(|name| DOC_COLUMNS.contains(name))
        && (names.contains(&SCORE_COLUMN) || names.contains(&RANK_COLUMN))
}

/// What separates the names of the header `line`: a tab when it holds one
/// and no comma (BEIR writes its files so), else a comma.
fn separator_of(line: &str) -> char {
    match line.contains('\t') && !line.contains(',') {
        true => '\t',
        false => ',',
    }
}

/// A header's names, without the quotes a writer may put around them.
fn header_names(line: &str, separator: char) -> impl Iterator<Item = &str> {
    line.split(separator).map(|name| {
        let name = name.trim();
        name.strip_prefix('"')
            .and_then(|n| n.strip_suffix('"'))
            .unwrap_or(name)
    })
}

impl CsvRun {
    /// Where each field is, from the header `line`.
    ///
    /// # Errors
    /// A column named twice, a column rgrade does not know, or a query id,
    /// doc id, or score or rank column missing; the message names them.
    pub fn from_header(line: &str) -> Result<Self, String> {
        let separator = separator_of(line);
        let names: Vec<&str> = header_names(line, separator).collect();
        let (mut query, mut doc, mut score, mut rank, mut run, mut stage) =
            (None, None, None, None, None, None);
        for (index, &name) in names.iter().enumerate() {
            if names[..index].contains(&name) {
                return Err(format!("column '{name}' is named twice"));
            }
            let slot = match name {
                _ if QUERY_COLUMNS.contains(&name) => &mut query,
                _ if DOC_COLUMNS.contains(&name) => &mut doc,
                SCORE_COLUMN => &mut score,
                RANK_COLUMN => &mut rank,
                "run" => &mut run,
                "stage" => &mut stage,
                _ if IGNORED_COLUMNS.contains(&name) => continue,
                _ => {
                    let index_hint = if name.is_empty() {
                        " (a pandas index? write the frame with index=False)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "unknown column '{name}' in the CSV run's header{index_hint}; the columns \
                         read are {}, {}, {SCORE_COLUMN}, {RANK_COLUMN}, run and stage, \
                         and {} are ignored (docs/reference.md, \"Logs\")",
                        QUERY_COLUMNS.join(" or "),
                        DOC_COLUMNS.join(" or "),
                        IGNORED_COLUMNS.join(", ")
                    ));
                }
            };
            if let Some(earlier) = slot.replace(index) {
                let what = match DOC_COLUMNS.contains(&name) {
                    true => "the doc id",
                    false => "the query id",
                };
                return Err(format!(
                    "columns '{}' and '{name}' both hold {what}: keep one",
                    names[earlier]
                ));
            }
        }
        let missing = |what: &str| format!("the CSV run's header has no {what} column");
        let query = query.ok_or_else(|| missing("query id ('query_id', 'q_id' or 'query-id')"))?;
        let doc = doc.ok_or_else(|| missing("doc id ('doc_id' or 'corpus-id')"))?;
        let (order, by_score) = match (rank, score) {
            (Some(rank), _) => (rank, false),
            (None, Some(score)) => (score, true),
            (None, None) => return Err(missing("'score' or 'rank'")),
        };
        Ok(CsvRun {
            separator,
            query,
            doc,
            order,
            by_score,
            run,
            stage,
            width: names.len(),
        })
    }

    /// Read a line of the run.
    ///
    /// # Errors
    /// `bad_csv_line` (not as many fields as the header, an open quote),
    /// `missing_query_id`, `bad_field` (an empty run or stage), `bad_result`
    /// (an empty doc id), `bad_score` or `bad_rank`, with what the line
    /// names of its ranking.
    pub fn parse<'a>(&self, line: &'a str) -> Result<CsvLine<'a>, BadCsvLine<'a>> {
        let fields = split(line, self.separator).ok_or_else(|| BadCsvLine {
            invalid: Invalid::new(RejectReason::BadCsvLine, "a quoted field does not close"),
            query_id: None,
            place: None,
        })?;
        let field = |index: usize| fields.get(index).cloned().filter(|f| !f.is_empty());
        let query_id = field(self.query);
        if fields.len() != self.width {
            return Err(BadCsvLine {
                invalid: Invalid::new(
                    RejectReason::BadCsvLine,
                    format!(
                        "{} fields where the header names {}",
                        fields.len(),
                        self.width
                    ),
                ),
                query_id,
                place: None,
            });
        }
        let bad = |reason, detail: String, place| BadCsvLine {
            invalid: Invalid::new(reason, detail),
            query_id: field(self.query),
            place,
        };
        let Some(query_id) = query_id else {
            return Err(bad(
                RejectReason::MissingQueryId,
                "the query id is empty".to_string(),
                None,
            ));
        };
        let empty = |what: &str| bad(RejectReason::BadField, format!("the {what} is empty"), None);
        let run = match self.run {
            Some(index) => field(index).ok_or_else(|| empty("run"))?,
            None => Cow::Borrowed(""),
        };
        let stage = match self.stage {
            Some(index) => Some(field(index).ok_or_else(|| empty("stage"))?),
            None => None,
        };
        let place = Some((run.clone(), stage.clone()));
        let Some(doc_id) = field(self.doc) else {
            return Err(bad(
                RejectReason::BadResult,
                "the doc id is empty".to_string(),
                place,
            ));
        };
        let order = &fields[self.order];
        let key = if self.by_score {
            order
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite())
                .map(RankKey::score)
                .ok_or_else(|| {
                    let detail = format!("score '{order}' is not a finite number");
                    bad(RejectReason::BadScore, detail, place.clone())
                })?
        } else {
            RankKey::whole_rank(whole_text(order), &format!("rank '{order}'"))
                .map_err(|detail| bad(RejectReason::BadRank, detail, place.clone()))?
        };
        Ok(CsvLine {
            query_id,
            doc_id,
            key,
            run,
            stage,
        })
    }
}

/// The fields of a line: split on `separator`, or, when it holds a quote,
/// read by the csv crate's rules (RFC 4180: a doubled quote inside quotes).
/// `None` for a quote that does not close.
fn split(line: &str, separator: char) -> Option<Vec<Cow<'_, str>>> {
    if !line.contains('"') {
        return Some(line.split(separator).map(Cow::Borrowed).collect());
    }
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(separator as u8)
        .has_headers(false)
        .flexible(true)
        .from_reader(line.as_bytes());
    let mut record = csv::StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(true) if !unclosed(line) => Some(
            record
                .iter()
                .map(|field| Cow::Owned(field.to_string()))
                .collect(),
        ),
        _ => None,
    }
}

/// Whether `line` ends inside a quoted field: its quotes are odd in number.
fn unclosed(line: &str) -> bool {
    line.bytes().filter(|&b| b == b'"').count() % 2 == 1
}

/// The lines of a CSV run, read as the header of their block says.
pub struct CsvLines<'c> {
    /// Where the fields are, or why the header does not say.
    run: Result<CsvRun, String>,
    runs: RunNames<'c>,
}

impl<'c> CsvLines<'c> {
    /// The lines of `block`, a CSV run's, named as `runs` says.
    pub fn new(block: &Block, runs: RunNames<'c>) -> Self {
        let run = match &block.header {
            None => Err(
                "a CSV run's first line must be its header, naming query_id (or q_id), \
                 doc_id, and score or rank"
                    .to_string(),
            ),
            Some(header) => CsvRun::from_header(&header.text)
                .map_err(|err| format!("line {}: {err}", header.line)),
        };
        CsvLines { run, runs }
    }
}

impl LineFormat for CsvLines<'_> {
    const AS_TEXT: bool = true;

    fn unreadable(&self) -> Option<String> {
        self.run.as_ref().err().cloned()
    }

    /// A line that cannot be read is one its ranking lost when it names
    /// that ranking (its query, run and stage), one every ranking of its
    /// query may have lost when it names its query alone.
    fn line(&mut self, line: &[u8], text: Option<&str>, origin: Origin, sink: &mut dyn RecordSink) {
        let Ok(run) = &self.run else {
            return;
        };
        let lossy;
        let parsed = match text.or_else(|| std::str::from_utf8(line).ok()) {
            Some(text) => run.parse(text),
            None => {
                lossy = String::from_utf8_lossy(line);
                Err(not_utf8(run.parse(&lossy)))
            }
        };
        let run_of = |run| self.runs.run_of(run, LogsFormat::Csv, origin.input);
        // The key borrows the run and stage from the line's fields, which
        // live in this arm: each arm hands its record over.
        match parsed {
            Ok(parsed) => {
                let result = RunResult {
                    key: EventKey {
                        query_id: parsed.query_id,
                        stage: parsed.stage.as_deref().unwrap_or(DEFAULT_STAGE),
                        run: run_of(&parsed.run),
                    },
                    doc_id: parsed.doc_id,
                    rank: parsed.key,
                };
                deliver(sink, origin, Record::Result(result), line);
            }
            Err(BadCsvLine {
                invalid,
                query_id: None,
                ..
            }) => deliver(sink, origin, Record::Invalid(invalid), line),
            Err(BadCsvLine {
                invalid,
                query_id: Some(query_id),
                place: None,
            }) => deliver(sink, origin, Record::Unplaced { query_id, invalid }, line),
            Err(BadCsvLine {
                invalid,
                query_id: Some(query_id),
                place: Some((run, stage)),
            }) => {
                let key = EventKey {
                    query_id,
                    stage: stage.as_deref().unwrap_or(DEFAULT_STAGE),
                    run: run_of(&run),
                };
                deliver(sink, origin, Record::LostResult { key, invalid }, line);
            }
        }
    }
}

/// A line that is not valid UTF-8, with what its fields name of its
/// ranking where they are valid UTF-8 (`read` is the line read lossily).
fn not_utf8<'l>(read: Result<CsvLine<'l>, BadCsvLine<'l>>) -> BadCsvLine<'l> {
    let readable = |field: &str| !field.contains(char::REPLACEMENT_CHARACTER);
    let (query_id, place) = match read {
        Ok(line) => (Some(line.query_id), Some((line.run, line.stage))),
        Err(bad) => (bad.query_id, bad.place),
    };
    BadCsvLine {
        invalid: Invalid::new(RejectReason::InvalidUtf8, "the line is not valid UTF-8"),
        query_id: query_id.filter(|q| readable(q)),
        place: place.filter(|(run, stage)| readable(run) && stage.as_deref().is_none_or(readable)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_the_fields_and_refuse_what_they_do_not_know() {
        assert!(is_header("q_id,doc_id,score"));
        assert!(is_header("\"query_id\",\"doc_id\",\"rank\""));
        assert!(!is_header("query_id,doc_id,relevance"));
        assert!(!is_header("query_id doc_id score"));
        let run = CsvRun::from_header("run,q_id,Q0,doc_id,score").unwrap();
        assert_eq!(
            (run.query, run.doc, run.order, run.by_score),
            (1, 3, 4, true)
        );
        let ranked = CsvRun::from_header("query_id,doc_id,score,rank,stage").unwrap();
        assert_eq!(
            (ranked.order, ranked.by_score, ranked.stage),
            (3, false, Some(4))
        );
        let err = CsvRun::from_header(",query_id,doc_id,score").unwrap_err();
        assert!(err.contains("index=False"), "{err}");
        let err = CsvRun::from_header("query_id,doc_id,score,position").unwrap_err();
        assert!(err.contains("unknown column 'position'"), "{err}");
        let err = CsvRun::from_header("query_id,q_id,doc_id,score").unwrap_err();
        assert!(err.contains("'query_id' and 'q_id'"), "{err}");
        let err = CsvRun::from_header("query_id,doc_id,score,score").unwrap_err();
        assert!(err.contains("'score' is named twice"), "{err}");
        assert!(is_header("query-id\tcorpus-id\tscore"));
        assert!(!is_header("query-id corpus-id score"));
        let beir = CsvRun::from_header("query-id\tcorpus-id\tscore").unwrap();
        assert_eq!(
            (
                beir.separator,
                beir.query,
                beir.doc,
                beir.order,
                beir.by_score
            ),
            ('\t', 0, 1, 2, true)
        );
        let err = CsvRun::from_header("q_id,doc_id,corpus-id,score").unwrap_err();
        assert!(
            err.contains("'doc_id' and 'corpus-id' both hold the doc id"),
            "{err}"
        );
    }

    #[test]
    fn lines_are_read_as_trec_eval_ranks_them() {
        let run = CsvRun::from_header("q_id,doc_id,score").unwrap();
        let line = run.parse("q1,d1,2.5").unwrap();
        assert_eq!(
            (&*line.query_id, &*line.doc_id, &*line.run),
            ("q1", "d1", "")
        );
        assert_eq!(line.key, RankKey::score(2.5));
        assert_eq!(line.stage, None);
        // A score as trec_eval keeps it: a 32-bit float.
        let close = run.parse("q1,d2,2.5000000001").unwrap();
        assert_eq!(close.key, line.key);
        let quoted = run.parse("\"q, \"\"1\"\"\",d1,1").unwrap();
        assert_eq!(quoted.query_id, "q, \"1\"");
        let nan = run.parse("q1,d3,NaN").unwrap_err();
        assert_eq!(nan.invalid.reason, RejectReason::BadScore);
        assert_eq!(nan.query_id.as_deref(), Some("q1"));
        assert_eq!(nan.place, Some((Cow::Borrowed(""), None)));
        let short = run.parse("q1,d3").unwrap_err();
        assert_eq!(short.invalid.reason, RejectReason::BadCsvLine);
        assert_eq!(short.place, None);
        let open = run.parse("\"q1,d3,1").unwrap_err();
        assert_eq!(open.invalid.reason, RejectReason::BadCsvLine);
        let no_doc = run.parse("q1,,1").unwrap_err();
        assert_eq!(no_doc.invalid.reason, RejectReason::BadResult);
        let ranked = CsvRun::from_header("query_id,doc_id,rank,run,stage").unwrap();
        let line = ranked.parse("q1,d1,2.0,bm25,retrieve").unwrap();
        assert_eq!(line.key, RankKey::rank(2));
        assert_eq!(
            (&*line.run, line.stage.as_deref()),
            ("bm25", Some("retrieve"))
        );
        for (rank, says) in [
            ("0", "not a whole number"),
            ("1.5", "not a whole number"),
            ("-1", "not a whole number"),
            ("x", "not a whole number"),
            ("NaN", "not a whole number"),
            ("4294967296", "too large"),
            ("9007199254740993", "too large"),
            ("9007199254740993.0", "too large"),
            ("1e300", "too large"),
        ] {
            let line = format!("q1,d1,{rank},bm25,final");
            let bad = ranked.parse(&line).unwrap_err();
            assert_eq!(bad.invalid.reason, RejectReason::BadRank, "{rank}");
            assert!(bad.invalid.detail.contains(says), "{}", bad.invalid.detail);
        }
        let line = ranked.parse("q1,d1,4294967295,bm25,final").unwrap();
        assert_eq!(line.key, RankKey::rank(u32::MAX));
        let beir = CsvRun::from_header("query-id\tcorpus-id\tscore").unwrap();
        let line = beir.parse("q1\td, 1\t2.5").unwrap();
        assert_eq!((&*line.doc_id, line.key), ("d, 1", RankKey::score(2.5)));
        let quoted = beir.parse("q1\t\"d\t2\"\t1").unwrap();
        assert_eq!(quoted.doc_id, "d\t2");
        let no_stage = ranked.parse("q1,d1,1,bm25,").unwrap_err();
        assert_eq!(no_stage.invalid.reason, RejectReason::BadField);
        assert!(no_stage.invalid.detail.contains("stage"));
        assert_eq!(no_stage.place, None);
    }
}
