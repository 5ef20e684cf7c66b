//! Stage 6 driven: every output of a grading into its directory, through
//! [`crate::output`]'s writers, and summary.json's facts about the run.

use std::time::Instant;

use anyhow::Result;

use crate::base::options::Choice;
use crate::base::ppi::{CONFIDENCE, MIN_HUMAN_QUERIES};
use crate::base::schema::{
    CalibrationSummary, CollectionVersion, CompiledKeySummary, InputSummary, LabelsSummary,
    LeakSummary, OrderedMap, SettingsSummary, StaleLabels, Summary, Throughput, REPORT_FILE,
};
use crate::grade::capture::LineCounts;
use crate::grade::graded::Graded;
use crate::grade::plan::Plan;
use crate::io::inputs::InputStats;
use crate::io::location::redact_command;
use crate::labels::LabelIndex;
use crate::output::staged::Staged;
use crate::output::{aggregates, attribution, rejects, stage_loss, summary, OutputDir};
use crate::report::collect::PairFigures;
use crate::report::{self, Sources};

/// Outputs staged before the others, while the groups were at hand.
pub struct Written {
    /// per_query.csv, written as rows were graded.
    pub per_query: Staged,
    /// review_queue.csv, with `--review-queue`.
    pub review_queue: Option<Staged>,
}

/// Facts about the run itself, for summary.json.
pub struct RunFacts<'a> {
    /// What was asked.
    pub plan: &'a Plan,
    /// Worker threads used.
    pub threads: usize,
    /// When the run started.
    pub started: Instant,
    /// What the reader learned of each input.
    pub stats: &'a [InputStats],
    /// Line counts of each input.
    pub per_input: &'a [LineCounts],
    /// The stale-label check.
    pub stale_labels: &'a StaleLabels,
}

/// Write aggregates.csv, rejects.jsonl, attribution.csv and the
/// stage-loss files into the directory `held` claims, beside per_query.csv
/// and review_queue.csv (staged before), remove the outputs of an earlier
/// run that this one does not write, draw
/// report.html from them and the `figures` of per_query.csv's rows, then
/// move the complete set into place, `summary` last as summary.json,
/// listing every other file but the report.
///
/// # Errors
/// A file cannot be written, moved or removed.
pub fn outputs(
    held: &OutputDir,
    graded: &Graded,
    summary: &mut Summary,
    run: &RunFacts,
    written: Written,
    figures: &[PairFigures],
) -> Result<()> {
    let dir = held.dir();
    let mut files = vec![
        written.per_query,
        aggregates::write_aggregates(
            dir,
            &graded.labels,
            &graded.settings,
            &graded.pairs,
            graded.calibrated_against.is_some(),
        )?,
        rejects::write_rejects(dir, &graded.rejects, &graded.input_names)?,
    ];
    // Optional outputs an earlier run left were removed when the
    // directory was claimed.
    if graded.has_answers() {
        files.push(attribution::write_attribution(
            dir,
            &graded.labels,
            &graded.pairs,
        )?);
    }
    files.extend(written.review_queue);
    if let Some(loss) = &graded.stage_loss {
        files.extend(stage_loss::write_stage_loss(dir, &graded.labels, loss)?);
    }
    summary.outputs = files.iter().map(|file| file.listed().clone()).collect();
    let page = report::grade::page(summary, figures, &Sources::staged(&files))?;
    files.push(report::stage_page(dir, REPORT_FILE, &page)?);
    // The clock stops at the last output drawn.
    stop_clock(summary, run);
    files.push(summary::write_summary(dir, summary)?);
    held.commit(files)
}

/// summary.json's contents, listing no output yet.
pub fn summarize(graded: &Graded, run: &RunFacts) -> Summary {
    let plan = run.plan;
    let labels = &graded.labels;
    let settings = &graded.settings;
    let counts = graded.counts;
    let mut summary = Summary {
        tool: "rgrade".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: redact_command(&plan.command),
        as_of: Some(graded.as_of),
        labels: labels_summary(labels),
        inputs: input_summaries(&graded.input_names, run.stats, run.per_input),
        settings: SettingsSummary {
            k: settings.ks.clone(),
            measures: settings.asked(),
            missing: plan.missing.name().to_string(),
            repeats: plan.repeats.name().to_string(),
            duplicate_docs: plan.duplicate_docs.name().to_string(),
            min_rel: plan.min_rel,
            stages: plan.stages.clone(),
            threads: run.threads,
            collection_version: plan.collection_version.clone(),
            pool_depth: plan.pool_depth(&settings.ks),
            doc_of: plan.doc_of.as_ref().map(ToString::to_string),
            slice_by: settings.slice_by.clone(),
        },
        meta: OrderedMap(plan.meta.clone()),
        counts,
        overall: summary::overall_rows(&graded.pairs, settings),
        stale_labels: run.stale_labels.clone(),
        self_pooled: graded.self_pooled.clone(),
        mostly_missing: graded.mostly_missing.clone(),
        repeats_in_path_order: graded.repeats_in_path_order.clone(),
        calibration: (graded.calibrated_against.as_ref()).map(|human| CalibrationSummary {
            labels: labels_summary(&human.key),
            shared_queries: human.shared_queries,
            no_answer_by_humans: human.no_answer_by_humans,
            min_queries: MIN_HUMAN_QUERIES,
            level: CONFIDENCE,
        }),
        leaks: graded
            .leaks
            .iter()
            .map(|leak| LeakSummary {
                query_id: leak.query_id.clone(),
                doc_id: leak.doc_id.clone(),
                collection: leak.collection.clone(),
                file: graded.input_name(leak.origin).to_string(),
                line: leak.origin.line,
            })
            .collect(),
        outputs: Vec::new(),
        elapsed_seconds: 0.0,
        throughput: Throughput::default(),
    };
    stop_clock(&mut summary, run);
    summary
}

/// summary.json's (and partial.json's) facts of the answer key.
pub fn labels_summary(labels: &LabelIndex) -> LabelsSummary {
    LabelsSummary {
        path: labels.source.path.display().to_string(),
        bytes: labels.source.bytes,
        hash: labels.source.hash.clone(),
        content_hash: labels.content_hash(),
        format: labels.source.format.to_string(),
        queries: labels.queries().len(),
        collection_versions: labels
            .collection_versions()
            .into_iter()
            .map(|(version, queries)| CollectionVersion {
                version: version.to_string(),
                queries,
            })
            .collect(),
        compiled_key: (labels.source.compiled.as_ref()).map(|key| CompiledKeySummary {
            path: key.path.display().to_string(),
            bytes: key.bytes,
            hash: key.hash.clone(),
            labels_changed: key.labels_changed.clone(),
        }),
        reviewers: (labels.reviewers()).map(|r| r.summary(labels.min_rel())),
        sources: labels.sources().to_vec(),
        pooled_queries: labels.pooled_queries(),
    }
}

/// summary.json's (and partial.json's) facts of each input: its name,
/// what the reader learned of it, and its line counts.
pub fn input_summaries(
    names: &[String],
    stats: &[InputStats],
    per_input: &[LineCounts],
) -> Vec<InputSummary> {
    (names.iter().zip(stats.iter().zip(per_input)))
        .map(|(name, (s, counts))| InputSummary {
            path: name.clone(),
            bytes: s.bytes,
            decoded_bytes: s.decoded_bytes,
            lines: s.lines,
            records: counts.records,
            rejected: counts.rejected,
            hash: s.hash.clone(),
            skipped: s.skipped.clone(),
        })
        .collect()
}

/// Set `summary`'s seconds since the run started, and the speed they give.
pub fn stop_clock(summary: &mut Summary, run: &RunFacts) {
    let elapsed = run.started.elapsed().as_secs_f64();
    let decoded: u64 = run.stats.iter().map(|s| s.decoded_bytes).sum();
    let records = summary.counts.records + summary.counts.blank_lines;
    summary.elapsed_seconds = elapsed;
    summary.throughput = Throughput {
        mb_per_second: decoded as f64 / 1e6 / elapsed.max(1e-9),
        records_per_second: records as f64 / elapsed.max(1e-9),
    };
}
