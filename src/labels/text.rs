//! TREC qrels and CSV or TSV labels: one judgment a line. Qrels are read
//! in blocks on the workers ([`super::blocks`]), CSV and TSV through the
//! csv crate.

use std::io::BufRead;

use anyhow::anyhow;

use super::blocks::too_long;
use super::build::NOT_NAMED;
use super::build::{whole_grade, Attributes, Builder, LineError, POOL_SEPARATOR};
use super::columns::{Column, Columns};
use crate::base::whole::whole_text;
use crate::io::blocks::{lines, Block, MAX_LINE};
use crate::io::json::JsonParser;

/// Read the TREC qrels of one block (`query_id iteration doc_id grade`,
/// whitespace separated) into `part`, which is empty. A query's lines may
/// go on in other blocks: the parts are joined by query id.
pub(super) fn parse_qrels_block(
    _parser: &mut JsonParser,
    block: &Block,
    part: &mut Builder,
) -> Result<(), LineError> {
    part.reserve(block.bytes.len());
    for (line, bytes) in (block.first_line as usize..).zip(lines(&block.bytes)) {
        let fail = |err: anyhow::Error| (Some(line), err);
        if bytes.len() > MAX_LINE {
            return Err(fail(too_long()));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| fail(anyhow!("not valid UTF-8")))?;
        let mut fields = text.split_ascii_whitespace();
        let mut next = || fields.next();
        let (query, doc, grade) = match (next(), next(), next(), next(), next()) {
            (None, ..) => continue,
            (Some(query), Some(_iteration), Some(doc), Some(grade), None) => (query, doc, grade),
            _ => {
                let found = text.split_ascii_whitespace().count();
                return Err(fail(anyhow!(
                    "expected 4 fields 'query_id iteration doc_id grade', found {found}"
                )));
            }
        };
        let grade = whole_grade(whole_text(grade), || format!("grade '{grade}'")).map_err(fail)?;
        let q = part.declare(query, line).map_err(fail)?;
        part.judge(q, doc, grade, NOT_NAMED, line).map_err(fail)?;
    }
    Ok(())
}

/// What separates the fields of tabular labels, and what their messages
/// call them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Separated {
    byte: u8,
    name: &'static str,
}

impl Separated {
    /// Comma-separated labels.
    pub(super) const CSV: Separated = Separated {
        byte: b',',
        name: "CSV",
    };
    /// Tab-separated labels, as BEIR's `qrels/test.tsv` (`query-id`,
    /// `corpus-id`, `score`).
    pub(super) const TSV: Separated = Separated {
        byte: b'\t',
        name: "TSV",
    };

    /// Whether `line` is the header of labels separated so: names of labels
    /// columns only, a query id's and a doc id's among them.
    pub(super) fn is_header(self, line: &str) -> bool {
        let names = line.split(char::from(self.byte)).map(str::trim);
        Columns::find(names).is_ok_and(|columns| {
            columns.get(Column::QueryId).is_some() && columns.get(Column::DocId).is_some()
        })
    }
}

/// Read CSV or TSV labels (as `separated` says): a header holding query_id
/// and doc_id, under their own names or another tool's.
pub(super) fn read_separated(
    source: &mut impl BufRead,
    builder: &mut Builder,
    separated: Separated,
) -> Result<(), LineError> {
    let kind = separated.name;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(separated.byte)
        .trim(csv::Trim::All)
        .from_reader(source);
    let headers = reader
        .headers()
        .map_err(|err| (Some(1), anyhow!("cannot read the {kind} header: {err}")))?
        .clone();
    // A column named twice, or one not known, would leave what counts to
    // chance: both are refused.
    let columns = Columns::find(headers.iter())
        .map_err(|err| (Some(1), anyhow!("the {kind} header: {err}")))?;
    let (Some(query_col), Some(doc_col)) =
        (columns.get(Column::QueryId), columns.get(Column::DocId))
    else {
        let found = headers.iter().collect::<Vec<_>>().join(",");
        return Err((
            Some(1),
            anyhow!(
                "the {kind} header needs query_id (or q_id, query-id) and doc_id (or corpus-id) \
                 columns, found: {found}"
            ),
        ));
    };
    let (grade_col, required_col) = (columns.get(Column::Grade), columns.get(Column::Required));
    let attribute_cols = [
        Column::Task,
        Column::Language,
        Column::Split,
        Column::CollectionVersion,
    ]
    .map(|kind| columns.get(kind));
    let query_text_col = columns.get(Column::Query);
    let reviewer_col = columns.get(Column::Reviewer);
    let (source_col, pooled_col) = (columns.get(Column::Source), columns.get(Column::PooledFrom));
    if builder.keep_query_texts && query_text_col.is_none() {
        return Err((
            Some(1),
            anyhow!(
                "no 'query' column: {} matches captures by a label's query text",
                crate::base::failure::Setting::Join.given("text")
            ),
        ));
    }
    for record in reader.records() {
        let record = record.map_err(|err| {
            let line = err.position().map(|p| p.line() as usize);
            (line, anyhow!("bad {kind} record: {err}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let fail = |err: anyhow::Error| (Some(line), err);
        let field = |col: Option<usize>| col.and_then(|c| record.get(c)).filter(|v| !v.is_empty());
        let query = field(Some(query_col)).ok_or_else(|| fail(anyhow!("empty query_id")))?;
        let q = builder.declare(query, line).map_err(fail)?;
        let required = match field(required_col) {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") => true,
            Some(other) => {
                return Err(fail(anyhow!(
                    "required must be true or false, found '{other}'"
                )))
            }
        };
        let [task, language, split, collection_version] = attribute_cols.map(field);
        let attributes = Attributes {
            task,
            language,
            split,
            collection_version,
            required,
        };
        builder.set_attributes(q, &attributes, line).map_err(fail)?;
        if let Some(text) = field(query_text_col) {
            builder.set_query_text(q, text).map_err(fail)?;
        }
        let reviewer = builder.row_reviewer(q, reviewer_col.is_some(), field(reviewer_col));
        let pooled_from = field(pooled_col).unwrap_or_default().split(POOL_SEPARATOR);
        let judgments = usize::from(field(Some(doc_col)).is_some());
        builder.set_provenance(q, field(source_col), pooled_from, judgments);
        // A row without a doc id declares the query only: a no-answer query.
        if let Some(doc) = field(Some(doc_col)) {
            // Without a grade column every row is relevant; with one, a
            // row must say its grade.
            let column = grade_col.and_then(|c| headers.get(c)).unwrap_or_default();
            let grade = match (grade_col, field(grade_col)) {
                (None, _) => 1,
                (Some(_), None) => {
                    return Err(fail(anyhow!("no {column} for doc '{doc}'")));
                }
                (Some(_), Some(g)) => {
                    whole_grade(whole_text(g), || format!("{column} '{g}'")).map_err(fail)?
                }
            };
            builder.judge(q, doc, grade, reviewer, line).map_err(fail)?;
        }
    }
    Ok(())
}
