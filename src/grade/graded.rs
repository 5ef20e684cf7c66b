//! What a grading found, for the caller to show and judge: the answer key,
//! the aggregates, the counts, the rejects and leaks, and the warnings
//! raised along the way.

use std::fmt;
use std::path::PathBuf;

use crate::base::failure::{spelled_by_each_front_end, Setting};
use crate::base::schema::{Counts, MostlyMissing, SelfPooled, StaleLabels, Summary};
use crate::base::text::{first_few, plural};
use crate::base::timestamp::Timestamp;
use crate::grade::aggregate::PairAggregates;
use crate::grade::calibrate::HumanScores;
use crate::grade::capture::Reject;
use crate::grade::diagnostics::permissions::Leak;
use crate::grade::diagnostics::stage_loss::StageLoss;
use crate::grade::score::GradeSettings;
use crate::grade::units::ChunkLabels;
use crate::io::inputs::InputStats;
use crate::io::reread::InputsRead;
use crate::io::tables::ArrowTable;
use crate::labels::LabelIndex;
use crate::logs::record::Origin;

/// What a grading found, for the caller to show and judge.
pub struct Graded {
    /// The answer key.
    pub(crate) labels: LabelIndex,
    /// How rows were graded.
    pub(crate) settings: GradeSettings,
    /// The aggregates of every (run, stage).
    pub(crate) pairs: Vec<PairAggregates>,
    /// summary.json's counts.
    pub counts: Counts,
    /// The evidence each stage dropped, with a stage order.
    pub(crate) stage_loss: Option<StageLoss>,
    /// Every rejected record, in input order.
    pub(crate) rejects: Vec<Reject>,
    /// The first results outside their user's allowed collections, in input order.
    pub(crate) leaks: Vec<Leak>,
    /// The graded runs that alone were pooled for some labels.
    pub self_pooled: Vec<SelfPooled>,
    /// The (run, stage)s most of whose labeled queries no record captured.
    pub mostly_missing: Vec<MostlyMissing>,
    /// Why the path order that decided repeats (no time field) may not
    /// be time order, when repeats were decided by it.
    pub repeats_in_path_order: Option<String>,
    /// The human key the means were calibrated against, with its values.
    pub(crate) calibrated_against: Option<HumanScores>,
    /// Each input's name, by input index.
    pub input_names: Vec<String>,
    /// What reading each input taught (its size, its content hash), by
    /// input index.
    pub(crate) input_stats: Vec<InputStats>,
    /// The time the grading stands for (`--as-of`, else when it ran).
    pub as_of: Timestamp,
    /// per_query.csv's rows, with its columns and values, when the plan
    /// asked to keep them ([`crate::grade::Plan::keep_rows`]): texts as
    /// strings, counts and ranks as 64-bit integers, measurements and
    /// metrics as doubles, flags as booleans, empty numbers and flags as
    /// nulls (empty text stays empty text).
    pub per_query: Option<ArrowTable>,
    /// Why `--openmetrics` could not be written, after every other output
    /// was: the grading stands, and its caller says the export failed.
    pub openmetrics_failure: Option<crate::base::failure::Error>,
    /// summary.json's document: what the grading wrote there, or, with no
    /// output directory, would have written (listing no output).
    pub summary: Summary,
}

impl Graded {
    /// The inputs as this grading read them.
    pub(crate) fn inputs_read(&self) -> InputsRead<'_> {
        (&self.input_names, &self.input_stats)
    }

    /// The file a record came from.
    pub(crate) fn input_name(&self, origin: Origin) -> &str {
        &self.input_names[origin.input as usize]
    }

    /// Whether any graded capture said whether its answer was acceptable.
    pub fn has_answers(&self) -> bool {
        (self.pairs.iter()).any(|pair| {
            pair.aggregates
                .first()
                .is_some_and(|all| all.attribution.answered > 0)
        })
    }
}

/// Something the user should look at, though grading went on.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// `.txt` and `.tsv` files of a log directory that hold no run, skipped.
    NotRuns(Vec<PathBuf>),
    /// A TREC run whose ranking dropped copies of documents found in other
    /// files under `duplicate_docs` dedupe: runs sharing a tag, fused.
    FusedRun {
        /// The run.
        run: String,
        /// The files whose copies met.
        files: Vec<String>,
    },
    /// A log whose first line fit no format, or not the one asked for.
    FormatDoubt {
        /// The log's name.
        input: String,
        /// How it was read, and what its first line looked like.
        doubt: String,
    },
    /// Most captured queries returned no document their labels judge.
    StaleLabels(StaleLabels),
    /// A stage of the stage order was never graded.
    StageNotGraded(String),
    /// A stage of `stages` that no record had.
    StageNotRead(String),
    /// `review_queue` with runs whose lines cannot be read again for
    /// the ids of the documents they pooled.
    RunsNotPooled {
        /// Pooled documents left out of the queue.
        documents: u64,
    },
    /// Retrieval or rerank spans that held no document, graded as empty
    /// rankings.
    EmptySpans {
        /// How many.
        spans: u64,
    },
    /// No event matched a labeled query.
    NoLabeledEvents {
        /// Valid events read.
        events: u64,
    },
    /// A graded run that alone was pooled for some labeled queries.
    SelfPooled(SelfPooled),
    /// A (run, stage) most of whose labeled queries no record captured.
    MostlyMissing {
        /// The (run, stage) and its counts.
        missing: MostlyMissing,
        /// Whether each missing query scores 0 in the means (`missing` fail).
        scored_zero: bool,
    },
    /// Under `unit` doc, result ids in which `doc_of` found no document.
    UnmappedIds {
        /// How many.
        ids: u64,
    },
    /// A compiled key whose labels file has changed since it was compiled:
    /// the grading used the labels as the key holds them.
    OutdatedKey {
        /// The key.
        key: PathBuf,
        /// The labels file it was compiled from.
        labels: PathBuf,
    },
    /// Under `unit` doc, labeled ids in which `doc_of` finds a document.
    ChunkLabels(ChunkLabels),
    /// Repeats decided by input order, the path order of Hive partitions,
    /// which is not time order (the example says why).
    PathOrder(String),
}

spelled_by_each_front_end!(Warning);

impl Warning {
    /// The warning, each setting it names as a mark.
    fn write_marked(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Warning::NotRuns(paths) => write!(
                f,
                "skipped {} with no TREC, MS MARCO or CSV run: {}",
                plural(paths.len() as u64, "file", "files"),
                first_few(paths.iter().map(|p| p.display().to_string()), 5)
            ),
            Warning::SelfPooled(pooled) => write!(
                f,
                "run '{}' is the only run the judging pools of {} came from ({:.1}% of the \
                 queries whose labels name their pool): it defined its own answer key there; \
                 documents only other runs return were never judged and count as not \
                 relevant, so comparisons with those runs favour it",
                pooled.run,
                plural(pooled.queries, "labeled query", "labeled queries"),
                100.0 * pooled.share
            ),
            Warning::MostlyMissing {
                missing,
                scored_zero,
            } => {
                match missing.run.as_str() {
                    "" => f.write_str("unnamed run")?,
                    run => write!(f, "run '{run}'")?,
                }
                write!(
                    f,
                    ", stage '{}': {} of {} labeled queries ({:.1}%) have no capture",
                    missing.stage,
                    missing.missing,
                    missing.queries,
                    100.0 * missing.share
                )?;
                if *scored_zero {
                    f.write_str(" and score 0 in every mean")?;
                }
                f.write_str(
                    " (summary.json's mostly_missing): do the labels cover more than these logs \
                     (several years of qrels against one year's run, say), or does the logs' \
                     query-id field not match the labels' ids?",
                )?;
                if *scored_zero {
                    write!(
                        f,
                        " Where the logs cover only part of the key, {} grades only the \
                         queries they hold",
                        Setting::Missing.given("skip")
                    )?;
                }
                Ok(())
            }
            Warning::UnmappedIds { ids } => write!(
                f,
                "{} found no document in {} of the graded captures' results: each was \
                 graded as a document of its own (summary.json's counts.unmapped_ids); check \
                 the pattern if that was not meant",
                Setting::DocOf,
                plural(*ids, "id", "ids")
            ),
            Warning::ChunkLabels(chunks) => write!(
                f,
                "{} finds a document in {} of {} labeled ids (e.g. '{}'; summary.json's \
                 counts.labeled_chunk_ids): the labels look made per chunk, and only results \
                 are mapped to documents, so no result matches those labels and their queries \
                 score 0; label documents, or grade chunks without {}",
                Setting::DocOf,
                chunks.ids,
                chunks.of,
                chunks.example,
                Setting::Unit.given("doc")
            ),
            Warning::FormatDoubt { input, doubt } => write!(f, "{input}: {doubt}"),
            Warning::PathOrder(doubt) => write!(
                f,
                "{} kept captures by input order, the logs' path order, which in these \
                 Hive partitions is not time order ({doubt}; summary.json's \
                 repeats_in_path_order): name the capture time with {}",
                Setting::Repeats,
                Setting::TimeField.given("FIELD")
            ),
            Warning::FusedRun { run, files } => write!(
                f,
                "run '{run}': {} dropped copies of documents that {} also list ({}): do \
                 several runs share this tag? {} keeps them apart",
                Setting::DuplicateDocs.given("dedupe"),
                plural(files.len() as u64, "file", "files"),
                first_few(files.iter().cloned(), 5),
                Setting::RunName.given("file")
            ),
            Warning::StaleLabels(stale) => {
                write!(
                    f,
                    "{} of {} captured queries returned no judged document at any depth",
                    stale.queries_without_judged_results, stale.queries_captured,
                )?;
                if !stale.sample.is_empty() {
                    let examples: Vec<&str> =
                        stale.sample.iter().take(3).map(String::as_str).collect();
                    write!(f, " (labeled ids never returned: {})", examples.join(", "))?;
                }
                write!(
                    f,
                    ": were the labels made for another chunking or collection version? \
                     {} checks the labels against a snapshot",
                    Setting::Corpus.given("FILE")
                )
            }
            Warning::StageNotGraded(stage) => write!(
                f,
                "stage {stage} of {} was never graded; \
                 evidence loss is measured between the stages that were",
                Setting::StageOrder
            ),
            Warning::StageNotRead(stage) => {
                write!(
                    f,
                    "no record of {} was read; check the name",
                    Setting::Stages.given(stage)
                )
            }
            Warning::RunsNotPooled { documents } => write!(
                f,
                "review_queue.csv leaves out {} that runs from standard input, a pipe or \
                 one-result-a-row Parquet ranked: a ranking of run lines keeps no unjudged id, and these lines \
                 cannot be read again for it; grade such runs from files to pool them",
                plural(*documents, "document", "documents")
            ),
            Warning::EmptySpans { spans } => write!(
                f,
                "{} held no document and {}; if the instrumentation records the \
                 documents elsewhere, {} names where",
                plural(*spans, "retrieval or rerank span", "retrieval or rerank spans"),
                if *spans == 1 {
                    "was graded as an empty ranking"
                } else {
                    "were graded as empty rankings"
                },
                Setting::DocField
            ),
            Warning::NoLabeledEvents { events } => write!(
                f,
                "none of the {events} events matched a labeled query_id; check {} \
                 and that the labels and the logs use the same ids",
                Setting::QueryField
            ),
            Warning::OutdatedKey { key, labels } => write!(
                f,
                "{}: {} has changed since this key was compiled from it, so these grades are \
                 those of its labels as they were (summary.json's labels.compiled_key.\
                 labels_changed); run `rgrade index` again to grade the labels as they are now",
                key.display(),
                labels.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_spelled_by_each_front_end_and_shown_in_the_plans_names() {
        let warning = Warning::StageNotRead("nosuch".to_string());
        let flag = |setting: Setting, value: Option<&str>| {
            format!("--{} {}", setting.name(), value.unwrap_or_default())
        };
        assert_eq!(
            warning.spelled(flag),
            "no record of --stages nosuch was read; check the name"
        );
        assert_eq!(
            warning.to_string(),
            "no record of `stages` nosuch was read; check the name"
        );
    }
}
