//! A grading from its plan to its outputs: [`Setup`] settles what is
//! known before the logs are read, [`collect`] runs stages 1 to 4 over
//! them, and [`finish`] grades, aggregates and writes (stages 5 and 6),
//! with the diagnostics. [`run`] is the three in a row, after a first pass
//! under the human key when the means are calibrated against one (the
//! logs are then read twice, so standard input cannot be among them, and
//! the second reading must find the bytes of the first); a
//! partial grading ([`super::partial`]) stops after `collect`, and a merge
//! finishes the groupings of several.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use crate::base::failure::{Error, ErrorKind, OfKind, Setting};
use crate::base::measures::{Measure, MEASURE_NAMES};
use crate::base::metrics::Cutoff;
use crate::base::options::{
    JoinBy, LabelsFormat, MissingPolicy, RepeatPolicy, Reviewing, SpanKind,
};
use crate::base::schema::{per_query_header, Counts, Summary};
use crate::base::text::plural;
use crate::base::timestamp::Timestamp;
use crate::grade::aggregate::{self, RowSink};
use crate::grade::calibrate::{require_shared_query, HumanRows, HumanScores};
use crate::grade::capture::LineCounts;
use crate::grade::diagnostics::permissions::DocCollections;
use crate::grade::diagnostics::{self_pooled, stage_loss, stale};
use crate::grade::gather::{gather, Grouping, Reading};
use crate::grade::graded::{Graded, Warning};
use crate::grade::group::Grouper;
use crate::grade::judge::JudgeConfig;
use crate::grade::plan::{Plan, Tables};
use crate::grade::score::{GradeSettings, QueryRow};
use crate::grade::trec::runs::TrecLines;
use crate::grade::units::ChunkLabels;
use crate::io::inputs::{Input, InputStats};
use crate::io::{reread, workers};
use crate::labels::LabelIndex;
use crate::logs::discover::{discover, path_order_doubt, Discovered};
use crate::logs::jsonl::{FieldNames, LogFields};
use crate::logs::otlp::SpanFields;
use crate::logs::record::DEFAULT_STAGE;
use crate::logs::records::RecordOptions;
use crate::output::target::{Destination, Output};
use crate::output::{self, OutputDir, ResultKind};
use crate::run::rows::RowOutputs;
use crate::run::write;

/// Grade the logs `plan` names, writing its outputs if it names a
/// directory, and hand each warning to `warn` as it arises.
///
/// # Errors
/// Anything that leaves nothing graded: a bad plan, unreadable or invalid
/// labels, a missing, empty or corrupt log input, an unwritable output.
pub fn run(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<Graded, Error> {
    Ok(grade(plan, warn)?)
}

/// [`run`], its error marked with its kind where it arose.
fn grade(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<Graded> {
    let started = Instant::now();
    if let Some(destination) = openmetrics_destination(plan) {
        destination.check().of_kind(ErrorKind::Usage)?;
    }
    let setup = Setup::new(plan)?;
    let Some(human) = human_scores(plan, &setup)? else {
        let grouping = collect(plan, &setup, warn)?;
        return finish(plan, setup, grouping, None, started, warn);
    };
    reread::pause_between_readings();
    let grouping = collect(plan, &setup, warn)?;
    let second = (&grouping.input_names[..], &grouping.stats[..]);
    reread::ensure_read_alike(human.read(), second).of_kind(ErrorKind::Logs)?;
    finish(plan, setup, grouping, Some(human.scores), started, warn)
}

/// `--calibrate`'s first pass: the values under the human key, and the
/// logs as that pass read them, for the second to be checked against.
struct HumanPass {
    scores: HumanScores,
    input_names: Vec<String>,
    stats: Vec<InputStats>,
}

impl HumanPass {
    fn read(&self) -> reread::InputsRead<'_> {
        (&self.input_names, &self.stats)
    }
}

/// Where `plan`'s `--openmetrics` goes, if it asks for it: never over its
/// labels, its logs or a file of its output directory.
pub fn openmetrics_destination(plan: &Plan) -> Option<Destination<'_>> {
    let path = plan.openmetrics.as_deref()?;
    Some(Destination {
        path,
        output: Output::OpenMetrics,
        out_dir: plan.out.as_deref(),
        inputs: std::iter::once(&plan.labels)
            .chain(&plan.logs)
            .map(PathBuf::as_path)
            .collect(),
    })
}

/// What every grading settles before the logs are read: how rows are
/// graded, the worker pool, the answer key, and the output directory,
/// claimed.
pub struct Setup {
    settings: GradeSettings,
    stage_order: Vec<String>,
    pool: rayon::ThreadPool,
    labels: LabelIndex,
    out_dir: Option<OutputDir>,
}

impl Setup {
    /// Check `plan`, claim the output directory and load the answer key,
    /// refusing labels the plan's checks refuse.
    ///
    /// # Errors
    /// A bad plan, unreadable or refused labels, an output directory that
    /// cannot be claimed.
    pub fn new(plan: &Plan) -> Result<Self> {
        // The command line cannot ask this; a caller of the library can.
        if plan.calibrate.is_none() && plan.calibrate_reviewers.is_some() {
            return Err(anyhow!(
                "no human key to calibrate against was given, so whose grades count in it \
                 cannot be said: give {} with {}",
                Setting::Calibrate,
                Setting::CalibrateReviewers
            ))
            .of_kind(ErrorKind::Usage);
        }
        Setup::for_key(plan, Setting::Reviewers)
    }

    /// As [`Setup::new`], for a key whose reviewers policy (`plan.reviewers`)
    /// the setting `reviewers_option` sets.
    fn for_key(plan: &Plan, reviewers_option: Setting) -> Result<Self> {
        let reviewing = Reviewing {
            policy: plan.reviewers.as_ref(),
            option: reviewers_option,
        };
        let ks = cutoffs(&plan.ks).of_kind(ErrorKind::Usage)?;
        let measures = asked_measures(&plan.measures).of_kind(ErrorKind::Usage)?;
        let settings = GradeSettings {
            slice_by: slice_fields(&plan.slice_by, &ks, measures.as_deref())
                .of_kind(ErrorKind::Usage)?,
            ks,
            measures,
            missing: plan.missing,
            repeats: plan.repeats,
        };
        let stage_order = stage_order(&plan.stage_order).of_kind(ErrorKind::Usage)?;
        span_stages_named(&plan.span_stages).of_kind(ErrorKind::Usage)?;
        let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
        // Once the plan holds, before anything is read: a run already
        // writing there should not cost this one's work, and an earlier
        // result must not pass for this run's, whatever stops it (labels
        // that do not load included).
        let out_dir = claim(plan.out.as_deref()).of_kind(ErrorKind::Output)?;
        let labels = match &plan.tables.labels {
            Some(table) => LabelIndex::load_table(table, plan.min_rel, plan.join, reviewing, &pool),
            None => LabelIndex::load(
                &plan.labels,
                plan.labels_format,
                plan.min_rel,
                plan.join,
                reviewing,
                &pool,
            ),
        }
        .of_kind(ErrorKind::Labels)?;
        if let Some(version) = &plan.collection_version {
            stale::require_collection_version(&labels, version).of_kind(ErrorKind::Labels)?;
        }
        Ok(Setup {
            settings,
            stage_order,
            pool,
            labels,
            out_dir,
        })
    }

    /// The output directory held, if the plan names one.
    pub fn out_dir(&self) -> Option<&OutputDir> {
        self.out_dir.as_ref()
    }

    /// The answer key.
    pub fn labels(&self) -> &LabelIndex {
        &self.labels
    }
}

/// Claim the output directory `out`, if any, and clear it of results a
/// reader could take for this run's.
fn claim(out: Option<&Path>) -> Result<Option<OutputDir>> {
    let Some(dir) = out else {
        return Ok(None);
    };
    // A shard's captures must not stay beside a full grading's
    // per_query.csv, or the reverse: both are gradings' files.
    OutputDir::claim_for(dir, ResultKind::Grading).map(Some)
}

/// Stages 1 to 4: read, parse, judge and group every capture of the logs
/// `plan` names, handing `warn` what reading them raised.
///
/// # Errors
/// A refused corpus, a missing, empty or corrupt log input.
pub fn collect(plan: &Plan, setup: &Setup, warn: &mut dyn FnMut(Warning)) -> Result<Grouping> {
    if let Some(corpus) = &plan.corpus {
        require_corpus(&setup.labels, corpus, setup.out_dir()).of_kind(ErrorKind::Labels)?;
    }
    read_logs(plan, setup, warn).of_kind(ErrorKind::Logs)
}

/// [`collect`] but for the corpus check.
fn read_logs(plan: &Plan, setup: &Setup, warn: &mut dyn FnMut(Warning)) -> Result<Grouping> {
    let Setup { labels, pool, .. } = setup;
    let doc_collections = plan
        .doc_collections
        .as_deref()
        .map(DocCollections::load)
        .transpose()?;
    let Discovered {
        mut inputs,
        skipped,
        partitions,
    } = discover(&plan.logs, plan.out.as_deref())?;
    // Without a time field, repeats follow input order: path order.
    let by_path = plan.fields.time.is_none()
        && matches!(plan.repeats, RepeatPolicy::First | RepeatPolicy::Last);
    let path_order = by_path
        .then(|| path_order_doubt(&inputs, &partitions))
        .flatten();
    inputs.extend(plan.tables.logs.iter().cloned().map(Input::Table));
    if let Some(lines) = &plan.tables.lines {
        inputs.extend((0..lines.inputs().len()).map(|i| Input::Lines(Arc::clone(lines), i)));
    }
    if inputs.is_empty() {
        bail!("no log input: name log files or directories, or hand over a table");
    }
    let file_runs: Vec<String> = inputs.iter().map(Input::run_name).collect();
    let input_names: Vec<String> = inputs.iter().map(Input::name).collect();
    let names = FieldNames {
        slices: plan.slice_by.clone(),
        ..plan.fields.clone()
    };
    let fields = LogFields::new(&names);
    let spans = SpanFields::new(&names, &plan.span_stages, plan.join);
    let config = JudgeConfig {
        labels,
        records: RecordOptions {
            fields: &fields,
            spans: &spans,
            run_name: plan.run_name,
            file_runs: &file_runs,
            partitions: &partitions,
        },
        stages: &plan.stages,
        duplicates: plan.duplicate_docs,
        doc_collections: doc_collections.as_ref(),
        // A TREC ranking held whole in a block is ranked there, unless a
        // query's lines found in other blocks after all cannot be read again.
        trec: if inputs.iter().all(Input::can_read_again) {
            TrecLines::RankEarly
        } else {
            TrecLines::HoldAll
        },
        input_names: &input_names,
        pool_depth: plan.pool_depth(&setup.settings.ks),
        doc_of: plan.doc_of.as_ref(),
    };
    let reading = Reading {
        format: plan.logs_format,
        progress: plan.progress.as_deref(),
        fields: &names,
        bad_files: plan.bad_files,
    };
    let grouper = || Grouper::new(plan.repeats, labels);
    let mut grouping = gather(&inputs, reading, &config, grouper, pool)?;
    grouping.path_order = path_order;
    if !skipped.is_empty() {
        warn(Warning::NotRuns(skipped));
    }
    for (name, stats) in input_names.iter().zip(&grouping.stats) {
        if let Some(doubt) = &stats.format_doubt {
            warn(Warning::FormatDoubt {
                input: name.clone(),
                doubt: doubt.clone(),
            });
        }
    }
    Ok(grouping)
}

/// Stages 5 and 6, with the diagnostics: grade and aggregate the captures
/// `grouping` holds (calibrated against `human`, when given), write the
/// outputs if `plan` names a directory, and hand `warn` what grading found.
///
/// # Errors
/// No record of any stage `--stage` names was read; an output cannot be
/// written.
pub fn finish(
    plan: &Plan,
    setup: Setup,
    grouping: Grouping,
    human: Option<HumanScores>,
    started: Instant,
    warn: &mut dyn FnMut(Warning),
) -> Result<Graded> {
    let Setup {
        settings,
        stage_order,
        pool,
        labels,
        out_dir,
    } = setup;
    let Grouping {
        mut grouped,
        rejects,
        leaks,
        input_names,
        stats,
        per_input,
        stages_seen,
        unread_pooled,
        fused_runs,
        path_order,
    } = grouping;
    no_record_read(&per_input).of_kind(ErrorKind::Logs)?;
    let unseen_stages = unseen_stages(plan, &stages_seen).of_kind(ErrorKind::Logs)?;
    let default_stage = plan.stages.first().map_or(DEFAULT_STAGE, String::as_str);
    grouped.add_a_pair_if_none(default_stage, &labels);

    // The diagnostics and the review queue, before grading consumes the groups.
    let stale_labels = pool.install(|| stale::measure(&grouped, &labels));
    let review_queue = match (&out_dir, plan.pool_depth(&settings.ks)) {
        (Some(held), Some(_)) => {
            if unread_pooled > 0 {
                warn(Warning::RunsNotPooled {
                    documents: unread_pooled,
                });
            }
            let dir = held.dir();
            let write =
                || output::review_queue::write_review_queue(dir, &grouped, &labels, &settings);
            Some(pool.install(write).of_kind(ErrorKind::Output)?)
        }
        _ => None,
    };
    let stage_loss = (!stage_order.is_empty())
        .then(|| pool.install(|| stage_loss::measure(&grouped, &labels, &settings, &stage_order)));

    // Stage 5: grade and aggregate; per_query.csv is written (and the rows
    // kept, when asked) as rows are graded.
    let superseded_records = grouped.superseded_records;
    let repeats_in_path_order = path_order.filter(|_| superseded_records > 0);
    if let Some(doubt) = &repeats_in_path_order {
        warn(Warning::PathOrder(doubt.clone()));
    }
    let dir = out_dir.as_ref().map(OutputDir::dir);
    let mut rows =
        RowOutputs::create(dir, plan.keep_rows, &labels, &settings).of_kind(ErrorKind::Output)?;
    let sink = rows.any().then_some(&mut rows as &mut dyn RowSink);
    let graded = pool
        .install(|| aggregate::grade_pairs(grouped, &labels, &settings, sink, human.as_ref()))
        .of_kind(ErrorKind::Output)?;
    let rows = rows.finish().of_kind(ErrorKind::Output)?;
    let chunk_labels = (plan.doc_of.as_ref()).and_then(|doc_of| ChunkLabels::find(doc_of, &labels));
    let counts = tally(
        &labels,
        &per_input,
        &graded,
        rejects.len(),
        superseded_records,
        chunk_labels.as_ref(),
    );
    let self_pooled = self_pooled::measure(&labels, graded.aggregates.iter().map(|p| &*p.run));
    let mostly_missing = output::summary::mostly_missing(&output::summary::overall_rows(
        &graded.aggregates,
        &settings,
    ));
    let mut graded = Graded {
        mostly_missing,
        repeats_in_path_order,
        calibrated_against: human,
        self_pooled,
        input_names,
        input_stats: stats,
        labels,
        settings,
        pairs: graded.aggregates,
        counts,
        stage_loss,
        rejects,
        leaks,
        as_of: plan.as_of.unwrap_or_else(Timestamp::now),
        per_query: rows.table,
        openmetrics_failure: None,
        summary: Summary::default(),
    };

    // Stage 6: write.
    let run = write::RunFacts {
        plan,
        threads: pool.current_num_threads(),
        started,
        stats: &graded.input_stats,
        per_input: &per_input,
        stale_labels: &stale_labels,
    };
    let mut summary = write::summarize(&graded, &run);
    if let (Some((per_query, figures)), Some(held)) = (rows.files, &out_dir) {
        let staged = write::Written {
            per_query,
            review_queue,
        };
        write::outputs(held, &graded, &mut summary, &run, staged, &figures)
            .of_kind(ErrorKind::Output)?;
    }
    graded.summary = summary;
    // The outputs are in place: a failed export is the caller's to say,
    // beside the grading it does not undo.
    if let Some(destination) = openmetrics_destination(plan) {
        let families = output::openmetrics::grading_families(&graded);
        graded.openmetrics_failure = (output::openmetrics::write(&destination, &families))
            .of_kind(ErrorKind::Output)
            .err()
            .map(Error::from);
    }

    let human = graded.calibrated_against.as_ref().map(|human| &human.key);
    for labels in std::iter::once(&graded.labels).chain(human) {
        if let Some(key) = (labels.source.compiled.as_ref()).filter(|k| k.labels_changed.is_some())
        {
            warn(Warning::OutdatedKey {
                key: key.path.clone(),
                labels: labels.source.path.clone(),
            });
        }
    }
    for (run, inputs) in fused_runs {
        let files = inputs
            .iter()
            .map(|&i| graded.input_names[i as usize].clone());
        warn(Warning::FusedRun {
            run,
            files: files.collect(),
        });
    }
    for stage in unseen_stages {
        warn(Warning::StageNotRead(stage));
    }
    if stale_labels.look_stale() {
        warn(Warning::StaleLabels(stale_labels));
    }
    for missing in &graded.mostly_missing {
        warn(Warning::MostlyMissing {
            missing: missing.clone(),
            scored_zero: graded.settings.missing == MissingPolicy::Fail,
        });
    }
    for pooled in &graded.self_pooled {
        warn(Warning::SelfPooled(pooled.clone()));
    }
    for stage in graded.stage_loss.iter().flat_map(|l| &l.unseen_stages) {
        warn(Warning::StageNotGraded(stage.clone()));
    }
    if counts.empty_spans > 0 {
        warn(Warning::EmptySpans {
            spans: counts.empty_spans,
        });
    }
    if counts.unmapped_ids > 0 {
        warn(Warning::UnmappedIds {
            ids: counts.unmapped_ids,
        });
    }
    if let Some(chunks) = chunk_labels {
        warn(Warning::ChunkLabels(chunks));
    }
    if counts.events > 0 && counts.events == counts.unlabeled_events {
        warn(Warning::NoLabeledEvents {
            events: counts.events,
        });
    }
    Ok(graded)
}

/// Refuse, before anything is read, a log input of `logs` (with the
/// output directory `out` left out of the walk) that can be read only
/// once, standard input or a pipe: `reads_twice` says what reads the logs
/// twice.
///
/// # Errors
/// Such an input (a usage error), or logs that cannot be found.
pub fn refuse_read_once(logs: &[PathBuf], out: Option<&Path>, reads_twice: &str) -> Result<()> {
    let once = (discover(logs, out)
        .of_kind(ErrorKind::Logs)?
        .inputs
        .into_iter())
    .find(|input| !input.can_read_again());
    let Some(input) = once else {
        return Ok(());
    };
    let name = match input.name().as_str() {
        "-" => "standard input".to_string(),
        name => name.to_string(),
    };
    Err(anyhow!(
        "{reads_twice}, and {name} can be read only once: save it to a file first"
    ))
    .of_kind(ErrorKind::Usage)
}

/// `--calibrate HUMAN`, its first pass: grade the logs of `plan` under its
/// human key, if it names one, and keep what each (run, stage) scored under
/// it by the query of `setup`'s (the judge's) key.
///
/// # Errors
/// Standard input among the logs; the human key cannot be read or is
/// refused; a log cannot be read.
fn human_scores(plan: &Plan, setup: &Setup) -> Result<Option<HumanPass>> {
    let Some(key) = &plan.calibrate else {
        return Ok(None);
    };
    let reads_twice = format!(
        "{} reads the logs twice (under the human key, then the judge's)",
        Setting::Calibrate
    );
    refuse_read_once(&plan.logs, plan.out.as_deref(), &reads_twice)?;
    if let Some(stream) = plan.tables.logs.iter().find(|t| !t.can_read_again()) {
        return Err(anyhow!(
            "{reads_twice}, and {} is a stream of record batches, read only once: \
             hand over a table, or the files the stream reads",
            stream.name()
        ))
        .of_kind(ErrorKind::Usage);
    }
    if plan.join == JoinBy::Text {
        return Err(anyhow!(
            "{} pairs the two keys' queries by query_id, so it cannot grade with \
             {}: give the captures query ids",
            Setting::Calibrate,
            Setting::Join.given("text")
        ))
        .of_kind(ErrorKind::Usage);
    }
    // The same logs, read as the grading reads them, under the human key;
    // nothing written, nothing drawn, no warning said twice.
    let human = Plan {
        labels: key.clone(),
        labels_format: LabelsFormat::Auto,
        reviewers: plan.calibrate_reviewers.clone(),
        calibrate: None,
        calibrate_reviewers: None,
        out: None,
        review_queue: false,
        stage_order: Vec::new(),
        corpus: None,
        progress: None,
        keep_rows: false,
        tables: Tables {
            labels: None,
            ..plan.tables.clone()
        },
        ..plan.clone()
    };
    let human_setup = Setup::for_key(&human, Setting::CalibrateReviewers)?;
    require_shared_query(&human_setup.labels, &setup.labels, key).of_kind(ErrorKind::Labels)?;
    let grouping = collect(&human, &human_setup, &mut |_| {})?;
    let Setup {
        settings,
        pool,
        labels: key,
        ..
    } = human_setup;
    let Grouping {
        grouped,
        input_names,
        stats,
        ..
    } = grouping;
    let mut rows = HumanRows::new(&key, &setup.labels, &settings);
    let grade = || aggregate::grade_pairs(grouped, &key, &settings, Some(&mut rows), None);
    pool.install(grade).of_kind(ErrorKind::Logs)?;
    let kept = rows.finish();
    Ok(Some(HumanPass {
        scores: HumanScores::new(key, &setup.labels, kept),
        input_names,
        stats,
    }))
}

impl RowSink for HumanRows<'_> {
    fn begin_pair(&mut self, _run: &str, _stage: &str, _rows: usize) {}

    fn rows(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        self.keep(run, stage, rows);
        Ok(())
    }
}

/// Fail, before any log is read, when labeled doc ids are missing from the
/// collection snapshot `corpus`: a changed id scheme would grade every
/// query 0. With an output directory, all of them are listed there in
/// labels_missing_from_corpus.txt.
///
/// # Errors
/// The corpus cannot be read, or lacks labeled ids.
pub fn require_corpus(labels: &LabelIndex, corpus: &Path, out: Option<&OutputDir>) -> Result<()> {
    const EXAMPLES: usize = 5;
    let missing = stale::check_corpus(labels, &Input::at(corpus)?)?;
    if missing.ids.is_empty() {
        return Ok(());
    }
    let listed = match out {
        Some(held) => {
            let path = output::corpus::write_missing(held, &missing.ids)?;
            format!("all are listed in {path}")
        }
        None => format!("use {} to list them all", Setting::Out.given("DIR")),
    };
    let examples: Vec<&str> = missing
        .ids
        .iter()
        .take(EXAMPLES)
        .map(String::as_str)
        .collect();
    bail!(
        "{}: {} of {} labeled doc ids are not in the corpus (e.g. {}); {listed}. \
         Were the labels made for another snapshot or id scheme?",
        corpus.display(),
        missing.ids.len(),
        missing.labeled,
        examples.join(", ")
    )
}

/// summary.json's counts: the labels (and those of their ids that look
/// like chunks), the line counts of every input, and what grading left.
fn tally(
    labels: &LabelIndex,
    per_input: &[LineCounts],
    graded: &aggregate::GradedPairs,
    rejected: usize,
    superseded_records: u64,
    chunk_labels: Option<&ChunkLabels>,
) -> Counts {
    let mut lines = LineCounts::default();
    for counts in per_input {
        lines += *counts;
    }
    Counts {
        labeled: labels.queries().len() as u64,
        no_answer: labels.queries().iter().filter(|q| !q.has_answer()).count() as u64,
        graded: graded.ok_rows,
        records: lines.records,
        blank_lines: lines.blank,
        header_lines: lines.header,
        events: lines.events,
        unlabeled_events: lines.unlabeled,
        other_stage_events: lines.other_stage,
        other_records: lines.other_records,
        nested_spans: lines.nested_spans,
        empty_spans: lines.empty_spans,
        rejected: rejected as u64,
        repeats: graded.repeats,
        graded_records: graded.graded_records,
        superseded_records,
        records_without_permissions: lines.without_permissions,
        leaked_results: lines.leaked_results,
        later_chunks: lines.later_chunks,
        unmapped_ids: lines.unmapped_ids,
        labeled_chunk_ids: chunk_labels.map_or(0, |chunks| chunks.ids),
    }
}

/// Refuse a grading whose inputs (`per_input`, each one's counts) hold no
/// record at all: an empty file is an input like any other (the part
/// Spark writes for an empty partition), but when every input is one,
/// nothing was graded, and a table of `missing` queries would pass for a
/// night without traffic.
fn no_record_read(per_input: &[LineCounts]) -> Result<()> {
    if per_input.iter().any(|counts| counts.records > 0) {
        return Ok(());
    }
    bail!(
        "no log input holds a record ({} read, each empty or blank), so nothing was graded",
        plural(per_input.len() as u64, "input", "inputs")
    )
}

/// The stages `--stage` names that no record had. When no record had any
/// of them, nothing can be graded: an error, not a table of `missing`.
fn unseen_stages(plan: &Plan, seen: &[bool]) -> Result<Vec<String>> {
    // A stage named twice is marked at its first place.
    let read: HashSet<&str> = plan
        .stages
        .iter()
        .zip(seen)
        .filter(|(_, &seen)| seen)
        .map(|(stage, _)| stage.as_str())
        .collect();
    let mut unseen: Vec<String> = Vec::new();
    for stage in &plan.stages {
        if !read.contains(stage.as_str()) && !unseen.contains(stage) {
            unseen.push(stage.clone());
        }
    }
    if !plan.stages.is_empty() && read.is_empty() {
        bail!(
            "no record of stage {} was read, so nothing was graded; check the name \
             (records name their stage in the '{}' field; TREC runs are stage {DEFAULT_STAGE}; \
             spans are stage retrieve or rerank unless {} renames them)",
            unseen.join(", "),
            plan.fields.stage.as_deref().unwrap_or(FieldNames::STAGE),
            Setting::SpanStages
        );
    }
    Ok(unseen)
}

/// The cutoffs, checked: each at least 1, none twice.
fn cutoffs(ks: &[Cutoff]) -> Result<Vec<Cutoff>> {
    if ks.is_empty() {
        bail!("no cutoff given: {} needs at least one", Setting::K);
    }
    let mut seen = HashSet::new();
    for &k in ks {
        if k == Cutoff::At(0) {
            bail!("cutoffs must be at least 1, got 0");
        }
        if !seen.insert(k) {
            bail!("cutoff {k} is given twice in {}", Setting::K);
        }
    }
    Ok(ks.to_vec())
}

/// The measures asked for by name, read; `None` when none were (the
/// default metrics).
fn asked_measures(names: &[String]) -> Result<Option<Vec<Measure>>> {
    if names.is_empty() {
        return Ok(None);
    }
    let measures = Measure::parse_list(names).map_err(|problem| {
        anyhow!(
            "{} {}: {problem}; rgrade knows {MEASURE_NAMES}",
            Setting::Measures,
            names.join(",")
        )
    })?;
    Ok(Some(measures))
}

/// The log fields to slice by, each named once and by a name that is no
/// other column of per_query.csv (whose column it becomes).
fn slice_fields(
    fields: &[String],
    ks: &[Cutoff],
    measures: Option<&[Measure]>,
) -> Result<Vec<String>> {
    let asked: Option<Vec<String>> = measures.map(|m| m.iter().map(ToString::to_string).collect());
    let columns = per_query_header(ks, asked.as_deref());
    let mut seen = HashSet::new();
    for field in fields {
        if field.is_empty() {
            bail!("{} names an empty field", Setting::SliceBy);
        }
        if columns.contains(field) {
            bail!(
                "{} {field}: per_query.csv already has a column '{field}'; a field to slice by \
                 is written as a column of its own name, so name it as a JSON pointer \
                 ('/{field}') or slice by another field",
                Setting::SliceBy
            );
        }
        if !seen.insert(field.as_str()) {
            bail!("field {field} is given twice in {}", Setting::SliceBy);
        }
    }
    Ok(fields.to_vec())
}

/// The stage order: empty, or at least two distinct, non-empty stages
/// (spaces around a name are dropped).
/// A span kind renamed to no stage would grade its captures under an
/// empty stage name: refused, whichever front end built the plan.
fn span_stages_named(span_stages: &[(SpanKind, String)]) -> Result<()> {
    match span_stages
        .iter()
        .find(|(_, stage)| stage.trim().is_empty())
    {
        Some((kind, _)) => bail!(
            "{} gives span kind {} no stage name",
            Setting::SpanStages,
            kind.name()
        ),
        None => Ok(()),
    }
}

fn stage_order(stages: &[String]) -> Result<Vec<String>> {
    let order: Vec<String> = stages.iter().map(|s| s.trim().to_string()).collect();
    if order.iter().any(String::is_empty) {
        bail!(
            "{} has an empty stage name: {:?}",
            Setting::StageOrder,
            stages.join(",")
        );
    }
    if order.len() == 1 {
        bail!(
            "{} needs at least two stages, in pipeline order (retrieve,rerank,final)",
            Setting::StageOrder
        );
    }
    let mut seen = HashSet::new();
    if let Some(twice) = order.iter().find(|stage| !seen.insert(stage.as_str())) {
        bail!("stage {twice} is given twice in {}", Setting::StageOrder);
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_kind_renamed_to_no_stage_is_refused() {
        let named = [(SpanKind::Retriever, "retrieve".to_string())];
        assert!(span_stages_named(&named).is_ok());
        let blank = [named[0].clone(), (SpanKind::Reranker, " ".to_string())];
        let err = span_stages_named(&blank).unwrap_err();
        let message = crate::base::failure::spell_settings(&err.to_string(), |setting, _| {
            setting.name().to_string()
        });
        assert_eq!(
            message,
            "span_stages gives span kind RERANKER no stage name"
        );
    }
}
