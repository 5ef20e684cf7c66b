//! The columns of tabular labels (CSV, Parquet, Arrow tables), listed
//! once, so every reader takes the same names and refuses the same others.
//!
//! A column rgrade does not know is refused rather than ignored: a grade
//! kept under another name (ir_measures' `relevance`) read as absent would
//! make every judged row relevant, a plausible and wrong result.

/// What a labels column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Column {
    QueryId,
    DocId,
    Grade,
    Task,
    Language,
    Required,
    Query,
    Split,
    CollectionVersion,
    Reviewer,
    Source,
    PooledFrom,
}

/// How many kinds of column there are: the size of [`Columns`].
const KINDS: usize = 12;

impl Column {
    const ALL: [Column; KINDS] = [
        Column::QueryId,
        Column::DocId,
        Column::Grade,
        Column::Task,
        Column::Language,
        Column::Required,
        Column::Query,
        Column::Split,
        Column::CollectionVersion,
        Column::Reviewer,
        Column::Source,
        Column::PooledFrom,
    ];
}

/// Every name a labels table may give a column, with what it holds. The
/// query id, the doc id and the grade go by the names other tools write
/// them under: `q_id` (ranx), `query-id` (BEIR); `corpus-id` (BEIR);
/// `relevance` (ir_measures), `score` (ranx, BEIR), `rel`.
const NAMES: [(&str, Column); 18] = [
    ("query_id", Column::QueryId),
    ("q_id", Column::QueryId),
    ("query-id", Column::QueryId),
    ("doc_id", Column::DocId),
    ("corpus-id", Column::DocId),
    ("grade", Column::Grade),
    ("relevance", Column::Grade),
    ("score", Column::Grade),
    ("rel", Column::Grade),
    ("task", Column::Task),
    ("language", Column::Language),
    ("required", Column::Required),
    ("query", Column::Query),
    ("split", Column::Split),
    ("collection_version", Column::CollectionVersion),
    ("reviewer", Column::Reviewer),
    ("source", Column::Source),
    ("pooled_from", Column::PooledFrom),
];

/// Columns read as nothing: qrels' `iteration` (unused, as in TREC
/// qrels), a reviewer's `note`, and the index pandas writes into Parquet.
fn ignored(name: &str) -> bool {
    matches!(name, "iteration" | "note")
        || (name.starts_with("__index_level_") && name.ends_with("__"))
}

/// Where a header keeps each kind of column.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Columns([Option<usize>; KINDS]);

impl Columns {
    /// Find every column of `header` (names in order).
    ///
    /// # Errors
    /// A name given twice, a column rgrade does not know, or two grade
    /// columns; the message names them.
    pub fn find<'h>(header: impl IntoIterator<Item = &'h str>) -> Result<Self, String> {
        let mut columns = Columns::default();
        let mut names: Vec<&str> = Vec::new();
        for (index, name) in header.into_iter().enumerate() {
            if names.contains(&name) {
                return Err(format!("column '{name}' is named twice"));
            }
            names.push(name);
            if ignored(name) {
                continue;
            }
            let Some(&(_, kind)) = NAMES.iter().find(|(known, _)| *known == name) else {
                return Err(format!(
                    "unknown labels column '{name}'{}; the columns read are {}, and {} are ignored \
                     (docs/reference.md, \"Labels\")",
                    if name.is_empty() {
                        " (a pandas index? write the frame with index=False)"
                    } else {
                        ""
                    },
                    NAMES.map(|(name, _)| name).join(", "),
                    "iteration, note"
                ));
            };
            let slot = &mut columns.0[kind as usize];
            if let Some(earlier) = *slot {
                // Only the ids and the grade go by several names.
                let what = match kind {
                    Column::QueryId => "the query id",
                    Column::DocId => "the doc id",
                    _ => "the grade",
                };
                return Err(format!(
                    "columns '{}' and '{name}' both hold {what}: keep one",
                    names[earlier]
                ));
            }
            *slot = Some(index);
        }
        Ok(columns)
    }

    /// The index of the column of `kind`, if the header has one.
    pub fn get(&self, kind: Column) -> Option<usize> {
        self.0[kind as usize]
    }

    /// Every kind of column the header has, with its index.
    pub fn present(&self) -> impl Iterator<Item = (Column, usize)> + '_ {
        Column::ALL
            .into_iter()
            .filter_map(|kind| Some((kind, self.get(kind)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grade_goes_by_the_names_other_tools_give_it() {
        for name in ["grade", "relevance", "score", "rel"] {
            let columns = Columns::find(["query_id", "doc_id", name]).unwrap();
            assert_eq!(columns.get(Column::Grade), Some(2), "{name}");
        }
        let columns = Columns::find(["query_id", "iteration", "doc_id", "note"]).unwrap();
        assert_eq!(columns.get(Column::DocId), Some(2));
        assert_eq!(columns.get(Column::Grade), None);
        let pandas = Columns::find(["query_id", "doc_id", "__index_level_0__"]).unwrap();
        assert_eq!(pandas.present().count(), 2);
    }

    #[test]
    fn unknown_doubled_and_rival_columns_are_refused() {
        let err = Columns::find(["query_id", "doc_id", "judgement"]).unwrap_err();
        assert!(err.contains("unknown labels column 'judgement'"), "{err}");
        assert!(
            err.contains("relevance"),
            "the message lists the names: {err}"
        );
        let err = Columns::find(["", "query_id", "doc_id"]).unwrap_err();
        assert!(err.contains("index=False"), "{err}");
        let err = Columns::find(["query_id", "q_id", "doc_id"]).unwrap_err();
        assert!(
            err.contains("'query_id' and 'q_id' both hold the query id"),
            "{err}"
        );
        let ranx = Columns::find(["q_id", "doc_id", "score"]).unwrap();
        assert_eq!(ranx.get(Column::QueryId), Some(0));
        let beir = Columns::find(["query-id", "corpus-id", "score"]).unwrap();
        assert_eq!(
            [Column::QueryId, Column::DocId, Column::Grade].map(|kind| beir.get(kind)),
            [Some(0), Some(1), Some(2)]
        );
        let err = Columns::find(["query_id", "doc_id", "corpus-id"]).unwrap_err();
        assert!(
            err.contains("'doc_id' and 'corpus-id' both hold the doc id"),
            "{err}"
        );
        let err = Columns::find(["query_id", "doc_id", "grade", "relevance"]).unwrap_err();
        assert!(
            err.contains("'grade' and 'relevance' both hold the grade"),
            "{err}"
        );
        let err = Columns::find(["query_id", "doc_id", "doc_id"]).unwrap_err();
        assert!(err.contains("column 'doc_id' is named twice"), "{err}");
    }
}
