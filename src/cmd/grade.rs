//! `rgrade grade`: read the labels, stream the logs through the pipeline
//! (read → parse and judge on the workers → group → grade → aggregate →
//! write) and report how it went as an exit status.

use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::aggregate::Aggregator;
use crate::capture::{BlockOutcome, BlockWorker, JudgeConfig, LineCounts, Reject};
use crate::cli::{GradeArgs, ProgressWhen};
use crate::group::{GradeSettings, Grouped, Grouper, Status};
use crate::labels::LabelIndex;
use crate::permissions::{DocCollections, Leak, LeakSummary, LEAKS_LISTED};
use crate::read::{self, ChannelSink, Chunk, InlineSink, Input, InputStats};
use crate::record::{LogFields, DEFAULT_STAGE, EXCERPT_BYTES};
use crate::report::{self, Counts, PairAggregates, PerQueryWriter};
use crate::stage_loss::{self, StageLoss};
use crate::stale::{self, StaleLabels};
use crate::trec::TrecLines;

/// Exit status when rejects exceed `--max-rejects` (SPEC §2) or leaks
/// exceed `--max-leaks` (SPEC §8).
const EXIT_CHECK_FAILED: u8 = 1;

/// Grade the logs named in `args`; `command` is the command line as typed,
/// for summary.json.
///
/// # Errors
/// Anything that leaves nothing graded: bad options, unreadable or invalid
/// labels, a missing, empty or corrupt log input, an unwritable output.
pub fn run(args: &GradeArgs, command: Vec<String>) -> Result<ExitCode> {
    let started = Instant::now();
    let ks = cutoffs(args)?;
    let stage_order = stage_order(args)?;
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n.get(),
    );
    // One pool of -j workers for the labels, the logs and the grading.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rgrade-worker-{i}"))
        .build()
        .context("cannot start the worker threads")?;
    let labels =
        pool.install(|| LabelIndex::load(&args.labels, args.labels_format, args.min_rel))?;
    if let Some(dir) = &args.out {
        // Before the logs are read: a typo in -o should not cost a whole run.
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create output directory", dir.display()))?;
    }
    if let Some(corpus) = &args.corpus {
        check_corpus(&labels, corpus, args.out.as_deref())?;
    }
    let doc_collections = args
        .doc_collections
        .as_deref()
        .map(DocCollections::load)
        .transpose()?;
    let inputs = read::discover(&args.logs)?;
    let fields = LogFields::from_args(&args.fields);
    let config = JudgeConfig {
        labels: &labels,
        fields: &fields,
        stages: &args.stages,
        duplicates: args.duplicate_docs,
        doc_collections: doc_collections.as_ref(),
        // A TREC ranking held whole in a block is ranked there, unless a
        // query's lines found in other blocks after all cannot be read again.
        trec: if inputs.iter().all(Input::can_read_again) {
            TrecLines::RankEarly
        } else {
            TrecLines::HoldAll
        },
    };
    let settings = GradeSettings {
        ks,
        missing: args.missing,
        repeats: args.repeats,
    };

    let progress = progress_bar(args.progress, &inputs);
    let Streamed {
        mut grouper,
        mut rejects,
        mut leaks,
        per_input,
        stats,
    } = stream(&inputs, args, &config, &pool, &progress)?;
    progress.finish_and_clear();

    rank_trec_runs(
        &inputs,
        &stats,
        args,
        &config,
        &pool,
        &mut grouper,
        &mut rejects,
    )?;
    let grouped = grouper.finish(args.stages.first().map_or(DEFAULT_STAGE, String::as_str));
    let superseded_records = grouped.superseded_records;
    let stale_labels = pool.install(|| stale::measure(&grouped, &labels));
    let stage_loss = (!stage_order.is_empty())
        .then(|| pool.install(|| stage_loss::measure(&grouped, &labels, &settings, &stage_order)));
    let graded = pool.install(|| grade_pairs(grouped, &labels, &settings, args.out.as_deref()))?;
    rejects.extend(graded.rejects);
    rejects.sort_by(|a, b| {
        a.origin
            .cmp(&b.origin)
            .then_with(|| a.reason.cmp(&b.reason))
    });
    recover_excerpts(&inputs, &mut rejects)?;

    let mut lines = LineCounts::default();
    for counts in &per_input {
        lines += *counts;
    }
    let counts = Counts {
        labeled: labels.queries().len() as u64,
        no_answer: labels
            .queries()
            .iter()
            .filter(|q| q.n_relevant == 0)
            .count() as u64,
        graded: graded.ok_rows,
        records: lines.records,
        blank_lines: lines.blank,
        events: lines.events,
        unlabeled_events: lines.unlabeled,
        other_stage_events: lines.other_stage,
        rejected: rejects.len() as u64,
        repeats: graded.repeats,
        graded_records: graded.graded_records,
        superseded_records,
        records_without_permissions: lines.without_permissions,
        leaked_results: lines.leaked_results,
    };
    let input_names: Vec<String> = inputs.iter().map(Input::name).collect();
    // Blocks finish in any order: the first leaks are the first in input order.
    leaks.sort_by_key(|leak| leak.origin);
    leaks.truncate(LEAKS_LISTED);
    let pairs = graded.aggregates;
    if let Some(dir) = &args.out {
        report::write_aggregates(dir, &labels, &settings, &pairs)?;
        report::write_rejects(dir, &rejects, &input_names)?;
        let facts = RunFacts {
            command,
            threads,
            started,
            inputs: input_summaries(&input_names, &stats, &per_input),
            stale_labels: stale_labels.clone(),
            leaks: leaks
                .iter()
                .map(|leak| LeakSummary {
                    query_id: leak.query_id.clone(),
                    doc_id: leak.doc_id.clone(),
                    collection: leak.collection.clone(),
                    file: input_names[leak.origin.input as usize].clone(),
                    line: leak.origin.line,
                })
                .collect(),
        };
        report::write_summary(
            dir,
            &summary(args, facts, &labels, &settings, counts, &pairs),
        )?;
        match &stage_loss {
            Some(loss) => report::write_stage_loss(dir, &labels, loss)?,
            None => {
                report::remove_stale_output(dir, "stage_loss.csv")?;
                report::remove_stale_output(dir, "stage_loss_per_query.csv")?;
            }
        }
        report::remove_stale_output(dir, MISSING_FROM_CORPUS)?;
    }
    if !args.quiet {
        print_table(&labels, &settings, &pairs, counts, stage_loss.as_ref())?;
    }
    if stale_labels.fraction > stale::WARN_FRACTION {
        eprintln!(
            "rgrade: warning: {} of {} labeled doc ids ({:.0}%) never appeared in any capture of \
             their query (e.g. {}); do the labels and the collection use the same doc ids? \
             --corpus FILE checks the labels against a snapshot",
            stale_labels.unseen,
            stale_labels.labeled,
            100.0 * stale_labels.fraction,
            stale_labels
                .sample
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for stage in stage_loss.iter().flat_map(|loss| &loss.unseen_stages) {
        eprintln!(
            "rgrade: warning: stage {stage} of --stage-order was never graded; \
             evidence loss is measured between the stages that were"
        );
    }
    if counts.events > 0 && counts.events == counts.unlabeled_events {
        eprintln!(
            "rgrade: warning: none of the {} events matched a labeled query_id; check --query-field \
             and that the labels and the logs use the same ids",
            counts.events
        );
    }
    let too_many_leaks = counts.leaked_results > args.max_leaks;
    if let Some(first) = leaks.first().filter(|_| too_many_leaks) {
        eprintln!(
            "rgrade: {} --max-leaks {}; the first is {}:{}: query {} got {} from collection {}",
            exceed(
                counts.leaked_results,
                "result outside the user's allowed collections",
                "results outside the user's allowed collections"
            ),
            args.max_leaks,
            input_names[first.origin.input as usize],
            first.origin.line,
            first.query_id,
            first.doc_id,
            first.collection
        );
    }
    if counts.rejected > args.max_rejects {
        let first = &rejects[0];
        let listed = match &args.out {
            Some(dir) => format!("all are listed in {}", dir.join("rejects.jsonl").display()),
            None => "use -o DIR to list them all in rejects.jsonl".to_string(),
        };
        eprintln!(
            "rgrade: {} --max-rejects {}; the first is {}:{}: {}: {} ({listed})",
            exceed(counts.rejected, "rejected record", "rejected records"),
            args.max_rejects,
            input_names[first.origin.input as usize],
            first.origin.line,
            first.reason,
            first.detail
        );
        return Ok(ExitCode::from(EXIT_CHECK_FAILED));
    }
    if too_many_leaks {
        return Ok(ExitCode::from(EXIT_CHECK_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Print the table on stdout. A reader that closed the pipe early
/// (`rgrade grade ... | head`) is not an error, and must not change the
/// exit status that the rejects decide.
fn print_table(
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
    counts: Counts,
    stage_loss: Option<&StageLoss>,
) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = report::print_table(&mut out, labels, settings, pairs)
        .and_then(|()| match stage_loss {
            Some(loss) => report::print_stage_loss(&mut out, labels, loss),
            None => Ok(()),
        })
        .and_then(|()| {
            if counts.rejected > 0 || counts.unlabeled_events > 0 {
                writeln!(
                    out,
                    "note: {} rejected, {} unlabeled events",
                    counts.rejected, counts.unlabeled_events
                )?;
            }
            if counts.leaked_results > 0 {
                writeln!(
                    out,
                    "leaks: {} outside the user's allowed collections (summary.json lists the first)",
                    report::plural(counts.leaked_results, "result", "results")
                )?;
            }
            Ok(())
        })
        .and_then(|()| out.flush());
    match written {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// "1 rejected record exceeds", "2 rejected records exceed".
fn exceed(n: u64, one: &str, many: &str) -> String {
    let verb = if n == 1 { "exceeds" } else { "exceed" };
    format!("{} {verb}", report::plural(n, one, many))
}

/// Where `--corpus` lists the labeled ids the corpus lacks.
const MISSING_FROM_CORPUS: &str = "labels_missing_from_corpus.txt";

/// Fail, before any log is read, when labeled doc ids are missing from the
/// collection snapshot: a changed id scheme would grade every query 0.
/// With `-o`, all of them are listed in labels_missing_from_corpus.txt.
fn check_corpus(labels: &LabelIndex, corpus: &Path, out: Option<&Path>) -> Result<()> {
    const EXAMPLES: usize = 5;
    let missing = stale::check_corpus(labels, &Input::File(corpus.to_path_buf()))?;
    if missing.ids.is_empty() {
        return Ok(());
    }
    let listed = match out {
        Some(dir) => {
            let path = dir.join(MISSING_FROM_CORPUS);
            let mut text = missing.ids.join("\n");
            text.push('\n');
            std::fs::write(&path, text)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            format!("all are listed in {}", path.display())
        }
        None => "use -o DIR to list them all".to_string(),
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

/// `--stage-order`: empty, or at least two distinct, non-empty stages
/// (spaces around a name are dropped).
fn stage_order(args: &GradeArgs) -> Result<Vec<String>> {
    let order: Vec<String> = args
        .stage_order
        .iter()
        .map(|s| s.trim().to_string())
        .collect();
    if order.iter().any(String::is_empty) {
        bail!(
            "--stage-order has an empty stage name: {:?}",
            args.stage_order.join(",")
        );
    }
    if order.len() == 1 {
        bail!("--stage-order needs at least two stages, in pipeline order (retrieve,rerank,final)");
    }
    let mut seen = HashSet::new();
    if let Some(twice) = order.iter().find(|stage| !seen.insert(stage.as_str())) {
        bail!("stage {twice} is given twice in --stage-order");
    }
    Ok(order)
}

fn cutoffs(args: &GradeArgs) -> Result<Vec<usize>> {
    let mut seen = HashSet::new();
    let mut ks = Vec::with_capacity(args.k.len());
    for k in &args.k {
        if !seen.insert(k.get()) {
            bail!("cutoff {k} is given twice in -k");
        }
        ks.push(k.get());
    }
    Ok(ks)
}

/// A progress bar over the raw bytes of the inputs, on stderr: hidden
/// unless stderr is a terminal (`auto`), or drawn even to a file or pipe
/// (`always`).
fn progress_bar<'a>(
    when: ProgressWhen,
    inputs: impl IntoIterator<Item = &'a Input>,
) -> ProgressBar {
    let target = match when {
        ProgressWhen::Never => return ProgressBar::hidden(),
        ProgressWhen::Auto if !std::io::stderr().is_terminal() => return ProgressBar::hidden(),
        ProgressWhen::Auto => ProgressDrawTarget::stderr(),
        ProgressWhen::Always => ProgressDrawTarget::term_like(Box::new(console::Term::stderr())),
    };
    let total: Option<u64> = inputs.into_iter().map(Input::size).sum();
    let bar = ProgressBar::with_draw_target(total, target);
    let template = "{spinner} {bytes}/{total_bytes} {bytes_per_sec} {wide_bar} {eta}";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// What streaming the logs leaves behind.
struct Streamed {
    grouper: Grouper,
    rejects: Vec<Reject>,
    /// The first leaks of every block.
    leaks: Vec<Leak>,
    /// Line counts of each input.
    per_input: Vec<LineCounts>,
    stats: Vec<InputStats>,
}

/// Block outcomes merged so far.
struct Merged {
    grouper: Grouper,
    rejects: Vec<Reject>,
    leaks: Vec<Leak>,
    per_input: Vec<LineCounts>,
}

impl Merged {
    fn new(args: &GradeArgs, config: &JudgeConfig, n_inputs: usize) -> Self {
        Merged {
            grouper: Grouper::new(args.repeats, config.labels),
            rejects: Vec::new(),
            leaks: Vec::new(),
            per_input: vec![LineCounts::default(); n_inputs],
        }
    }

    fn take(&mut self, mut outcome: BlockOutcome) {
        self.grouper.merge(&mut outcome);
        self.per_input[outcome.input as usize] += outcome.counts;
        self.rejects.append(&mut outcome.rejects);
        self.leaks.append(&mut outcome.leaks);
        // Only the first leaks in input order are listed: keep the list
        // bounded however many blocks leak.
        if self.leaks.len() > 2 * LEAKS_LISTED {
            self.leaks.sort_by_key(|leak| leak.origin);
            self.leaks.truncate(LEAKS_LISTED);
        }
    }

    fn into_streamed(self, stats: Vec<InputStats>) -> Streamed {
        Streamed {
            grouper: self.grouper,
            rejects: self.rejects,
            leaks: self.leaks,
            per_input: self.per_input,
            stats,
        }
    }
}

/// Run the pipeline over every input.
fn stream(
    inputs: &[Input],
    args: &GradeArgs,
    config: &JudgeConfig,
    pool: &rayon::ThreadPool,
    progress: &ProgressBar,
) -> Result<Streamed> {
    let mut merged = Merged::new(args, config, inputs.len());
    let all: Vec<(u32, &Input)> = (0..).zip(inputs).collect();
    let stats = judge_inputs(&all, args, config, pool, &|n| progress.inc(n), |outcome| {
        merged.take(outcome);
    })?;
    Ok(merged.into_streamed(stats))
}

/// Read `inputs` (each with its index among all inputs) and judge their
/// blocks, handing each block's outcome to `take` on this thread. With one
/// thread, this thread reads, parses, judges and takes each block in turn,
/// so `-j 1` uses one core; with more, one reader thread cuts blocks and
/// the worker pool parses and judges them. `on_bytes` hears of raw bytes
/// as they are read.
fn judge_inputs(
    inputs: &[(u32, &Input)],
    args: &GradeArgs,
    config: &JudgeConfig,
    pool: &rayon::ThreadPool,
    on_bytes: &(dyn Fn(u64) + Sync),
    mut take: impl FnMut(BlockOutcome),
) -> Result<Vec<InputStats>> {
    let threads = pool.current_num_threads();
    if threads == 1 {
        let mut worker = BlockWorker::new(config);
        let mut sink = InlineSink::new(|chunk: &Chunk| take(worker.process(chunk)));
        return read::read_inputs(inputs, args.logs_format, &mut sink, on_bytes);
    }
    let (chunk_tx, chunk_rx) = sync_channel::<Chunk>(2 * threads);
    let (outcome_tx, outcome_rx) = sync_channel::<BlockOutcome>(2 * threads);
    let (spent_tx, spent_rx) = read::buffer_pool();
    let stats = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let mut sink = ChannelSink {
                chunks: chunk_tx,
                spent: spent_rx,
            };
            read::read_inputs(inputs, args.logs_format, &mut sink, on_bytes)
        });
        scope.spawn(move || {
            pool.install(|| {
                chunk_rx.into_iter().par_bridge().for_each_init(
                    || (BlockWorker::new(config), spent_tx.clone()),
                    |(worker, spent_tx), chunk| {
                        let outcome = worker.process(&chunk);
                        // The buffer goes back to the reader at once; if the
                        // reader has finished, it is simply freed.
                        let _ = spent_tx.send(chunk.into_buffer());
                        // A send fails only once the merger has stopped, and
                        // then nothing is left to do.
                        let _ = outcome_tx.send(outcome);
                    },
                );
            })
        });
        for outcome in outcome_rx {
            take(outcome);
        }
        reader.join()
    });
    match stats {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Rank the TREC runs read. A (run, query) ranked early in one block whose
/// lines turned out to be in other blocks too is ranked again from a
/// second reading of its files, for its lines alone.
fn rank_trec_runs(
    inputs: &[Input],
    first_reading: &[InputStats],
    args: &GradeArgs,
    config: &JudgeConfig,
    pool: &rayon::ThreadPool,
    grouper: &mut Grouper,
    rejects: &mut Vec<Reject>,
) -> Result<()> {
    let labels = config.labels;
    let split = pool.install(|| grouper.rank_trec_runs(labels, args.duplicate_docs, rejects));
    if split.keys.is_empty() {
        return Ok(());
    }
    let mut queries = vec![false; labels.queries().len()];
    for &(_, query) in &split.keys {
        queries[query as usize] = true;
    }
    let config = JudgeConfig {
        trec: TrecLines::HoldOnly(&queries),
        ..*config
    };
    let again: Vec<(u32, &Input)> = split
        .inputs
        .iter()
        .map(|&index| (index, &inputs[index as usize]))
        .collect();
    let progress = progress_bar(args.progress, again.iter().map(|&(_, input)| input));
    let stats = judge_inputs(
        &again,
        args,
        &config,
        pool,
        &|n| progress.inc(n),
        |outcome| {
            grouper.merge_again(outcome, &split);
        },
    )
    .context(
        "reading TREC runs a second time, for the queries whose lines are in several places",
    )?;
    progress.finish_and_clear();
    for (&(index, input), second) in again.iter().zip(&stats) {
        if second.hash != first_reading[index as usize].hash {
            bail!(
                "{}: changed while it was being graded; grade it again",
                input.name()
            );
        }
    }
    // A second reading ranks nothing early, so nothing is left to read again.
    let split = pool.install(|| grouper.rank_trec_runs(labels, args.duplicate_docs, rejects));
    ensure!(
        split.keys.is_empty(),
        "internal error: {} TREC rankings left unranked after a second reading",
        split.keys.len()
    );
    Ok(())
}

/// What grading every (run, stage) leaves besides per_query.csv.
struct GradedPairs {
    aggregates: Vec<PairAggregates>,
    rejects: Vec<Reject>,
    ok_rows: u64,
    repeats: u64,
    graded_records: u64,
}

/// Grade each (run, stage) a range of queries at a time, writing its rows
/// to per_query.csv (when there is an output directory) and gathering its
/// aggregates, so that rows never pile up in memory.
fn grade_pairs(
    grouped: Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
    out: Option<&Path>,
) -> Result<GradedPairs> {
    const QUERIES_AT_A_TIME: usize = 1 << 14;
    let mut per_query = out
        .map(|dir| PerQueryWriter::create(dir, labels, settings))
        .transpose()?;
    let mut graded = GradedPairs {
        aggregates: Vec::new(),
        rejects: Vec::new(),
        ok_rows: 0,
        repeats: 0,
        graded_records: 0,
    };
    for pair in grouped.pairs {
        let mut aggregator = Aggregator::new(labels, settings);
        let n = pair.n_queries();
        for start in (0..n).step_by(QUERIES_AT_A_TIME) {
            let range = start..n.min(start + QUERIES_AT_A_TIME);
            let chunk = pair.grade(range, &grouped.store, labels, settings);
            // The rows are written while they are counted: the sums run in
            // query order, so the means do not depend on the thread count.
            let (written, ()) = rayon::join(
                || match &mut per_query {
                    Some(writer) => writer.write(&pair.run, &pair.stage, &chunk.rows),
                    None => Ok(()),
                },
                || {
                    for row in &chunk.rows {
                        aggregator.add(row);
                        graded.ok_rows += u64::from(row.status == Status::Ok);
                        graded.repeats += u64::from(row.captures.saturating_sub(1));
                    }
                },
            );
            written?;
            graded.rejects.extend(chunk.rejects);
            graded.graded_records += chunk.graded_records;
        }
        graded.aggregates.push(PairAggregates {
            run: pair.run,
            stage: pair.stage,
            aggregates: aggregator.finish(),
        });
    }
    if let Some(writer) = per_query {
        writer.finish()?;
    }
    Ok(graded)
}

/// Fill in the record excerpt of rejects that were decided after their
/// block was gone (repeated captures, TREC rankings), by reading those
/// inputs again.
fn recover_excerpts(inputs: &[Input], rejects: &mut [Reject]) -> Result<()> {
    let mut wanted: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for reject in rejects.iter().filter(|r| r.excerpt.is_empty()) {
        wanted
            .entry(reject.origin.input)
            .or_default()
            .push(reject.origin.line);
    }
    for (input, mut lines) in wanted {
        lines.sort_unstable();
        lines.dedup();
        let source = &inputs[input as usize];
        let found: BTreeMap<u64, Vec<u8>> = read::excerpts(source, &lines, EXCERPT_BYTES)
            .with_context(|| format!("{}: cannot read again for rejected records", source.name()))?
            .into_iter()
            .collect();
        for reject in rejects
            .iter_mut()
            .filter(|r| r.origin.input == input && r.excerpt.is_empty())
        {
            if let Some(excerpt) = found.get(&reject.origin.line) {
                reject.excerpt.clone_from(excerpt);
            }
        }
    }
    Ok(())
}

/// An option's value as typed on the command line.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// Each input as summary.json describes it.
fn input_summaries(
    names: &[String],
    stats: &[InputStats],
    counts: &[LineCounts],
) -> Vec<report::InputSummary> {
    names
        .iter()
        .zip(stats.iter().zip(counts))
        .map(|(name, (s, counts))| report::InputSummary {
            path: name.clone(),
            bytes: s.bytes,
            decoded_bytes: s.decoded_bytes,
            lines: s.lines,
            records: counts.records,
            rejected: counts.rejected,
            hash: s.hash.clone(),
        })
        .collect()
}

/// Facts about the run itself, for summary.json.
struct RunFacts {
    command: Vec<String>,
    threads: usize,
    started: Instant,
    inputs: Vec<report::InputSummary>,
    stale_labels: StaleLabels,
    leaks: Vec<LeakSummary>,
}

fn summary(
    args: &GradeArgs,
    facts: RunFacts,
    labels: &LabelIndex,
    settings: &GradeSettings,
    counts: Counts,
    pairs: &[PairAggregates],
) -> report::Summary {
    let elapsed = facts.started.elapsed().as_secs_f64();
    let decoded: u64 = facts.inputs.iter().map(|i| i.decoded_bytes).sum();
    report::Summary {
        tool: "rgrade",
        version: env!("CARGO_PKG_VERSION"),
        command: facts.command,
        labels: report::LabelsSummary {
            path: labels.source.path.display().to_string(),
            bytes: labels.source.bytes,
            hash: labels.source.hash.clone(),
            format: labels.source.format,
            queries: labels.queries().len(),
        },
        inputs: facts.inputs,
        settings: report::SettingsSummary {
            k: settings.ks.clone(),
            missing: value_name(args.missing),
            repeats: value_name(args.repeats),
            duplicate_docs: value_name(args.duplicate_docs),
            min_rel: args.min_rel,
            stages: args.stages.clone(),
            threads: facts.threads,
        },
        meta: report::OrderedMap(args.meta.clone()),
        counts,
        overall: pairs
            .iter()
            .filter_map(|p| {
                p.aggregates
                    .first()
                    .map(|overall| report::OverallSummary::new(p, overall, settings))
            })
            .collect(),
        stale_labels: facts.stale_labels,
        leaks: facts.leaks,
        elapsed_seconds: elapsed,
        throughput: report::Throughput {
            mb_per_second: decoded as f64 / 1e6 / elapsed.max(1e-9),
            records_per_second: (counts.records + counts.blank_lines) as f64 / elapsed.max(1e-9),
        },
    }
}
