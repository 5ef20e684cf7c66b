//! Stages 1 to 4 driven together: every block of every input is read,
//! parsed and judged on the workers, and its outcome merged into the
//! grouper on one thread. Then the TREC rankings are ranked, reading again
//! the runs whose queries turned out to be split over several blocks, and
//! the lines of the unjudged documents they pooled for review.

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use crate::base::failure::Setting;
use crate::base::options::{BadFiles, LogsFormat};
use crate::grade::capture::{LineCounts, Reject};
use crate::grade::diagnostics::permissions::{Leak, LEAKS_LISTED};
use crate::grade::group::{Grouped, Grouper};
use crate::grade::judge::{BlockOutcome, BlockWorker, JudgeConfig};
use crate::grade::rejects;
use crate::grade::trec::runs::TrecLines;
use crate::io::inputs::{Damaged, Input, InputStats};
use crate::io::progress::{Progress, Silent};
use crate::io::reread;
use crate::io::workers::for_each_block;
use crate::logs;
use crate::logs::jsonl::FieldNames;
use crate::logs::parquet::ColumnNames;
use crate::logs::record::{Invalid, Origin, RejectReason};
use crate::logs::seen::{self, FieldsSeen};

/// How the inputs are read.
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    /// The logs' format, or `Auto` to decide per input.
    pub format: LogsFormat,
    /// Told how the reading goes; `None` tells no one.
    pub progress: Option<&'a dyn Progress>,
    /// The field flags as given: the columns of Parquet logs.
    pub fields: &'a FieldNames,
    /// What an input that cannot be read to its end does.
    pub bad_files: BadFiles,
}

/// What stages 1 to 4 leave for the rest: every capture grouped by (run,
/// stage, query), and the facts of the logs read. A partial grading is
/// one of these on disk (`crate::run::partial`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Grouping {
    /// The captures of every (run, stage), sorted by run then stage.
    pub grouped: Grouped,
    /// Every rejected record, in input order, with its first bytes.
    pub rejects: Vec<Reject>,
    /// The first leaks, in input order (at most [`LEAKS_LISTED`]).
    pub leaks: Vec<Leak>,
    /// Each input's name.
    pub input_names: Vec<String>,
    /// What the reader learned of each input.
    pub stats: Vec<InputStats>,
    /// Line counts of each input.
    pub per_input: Vec<LineCounts>,
    /// For each stage `--stage` names, whether any record had it.
    pub stages_seen: Vec<bool>,
    /// Documents pooled for review from run lines that cannot be read
    /// again (stdin, Parquet rows): the review queue leaves them out.
    pub unread_pooled: u64,
    /// The runs whose TREC rankings dropped copies of documents found in
    /// another input, each with those inputs.
    pub fused_runs: Vec<(String, Vec<u32>)>,
    /// Why the inputs' path order, which decided repeats without a time
    /// field, may not be time order (Hive partitions), if it may not.
    pub path_order: Option<String>,
}

/// The logs as they are gathered, block by block.
struct Gathered {
    grouper: Grouper,
    rejects: Vec<Reject>,
    leaks: Vec<Leak>,
    per_input: Vec<LineCounts>,
    stats: Vec<InputStats>,
    stages_seen: Vec<bool>,
    /// Which fields each input's records had.
    seen: Vec<FieldsSeen>,
}

impl Gathered {
    fn take(&mut self, mut outcome: BlockOutcome) {
        self.grouper.merge(&mut outcome);
        self.per_input[outcome.input as usize] += outcome.counts;
        self.seen[outcome.input as usize].merge(&outcome.seen);
        self.rejects.append(&mut outcome.rejects);
        self.leaks.append(&mut outcome.leaks);
        for (seen, in_block) in self.stages_seen.iter_mut().zip(&outcome.stages_seen) {
            *seen |= in_block;
        }
        // Only the first leaks in input order are listed: keep the list
        // bounded however many blocks leak.
        if self.leaks.len() > 2 * LEAKS_LISTED {
            self.keep_first_leaks();
        }
    }

    /// Decide the empty capture spans, counting the ones set aside as
    /// records of no search event, and the others as empty rankings.
    fn take_empty_spans(&mut self) {
        for (input, nested) in self.grouper.take_empty_spans() {
            let counts = &mut self.per_input[input as usize];
            if nested {
                counts.other_records += 1;
                counts.nested_spans += 1;
            } else {
                counts.empty_spans += 1;
            }
        }
    }

    /// Blocks finish in any order: the first leaks are the first in input order.
    fn keep_first_leaks(&mut self) {
        self.leaks.sort_by_key(|leak| leak.origin);
        self.leaks.truncate(LEAKS_LISTED);
    }
}

/// Judge every block of `inputs` and group the captures (in a grouper
/// `new_grouper` makes), then rank the TREC runs, read the ids of the
/// documents they pooled, and read the records rejected after their
/// blocks were gone again for their excerpts. Under `BadFiles::Skip`, an
/// input found damaged is skipped, and the logs gathered again without
/// it, so that nothing of it is graded: each skipped input is one
/// `bad_file` reject.
///
/// # Errors
/// An input cannot be read (and is not skipped), or changed before it
/// was read again.
pub fn gather(
    inputs: &[Input],
    reading: Reading<'_>,
    config: &JudgeConfig,
    new_grouper: impl Fn() -> Grouper,
    pool: &rayon::ThreadPool,
) -> Result<Grouping> {
    let mut skipped = Vec::new();
    loop {
        let gathered = gather_skipping(inputs, &skipped, reading, config, new_grouper(), pool);
        let err = match (gathered, reading.bad_files) {
            (Err(err), BadFiles::Skip) => err,
            (gathered, _) => return gathered,
        };
        // Found under the contexts that name the input, as anyhow finds one.
        match err.downcast_ref::<Damaged>().map(|damaged| damaged.input) {
            Some(_) if !inputs.iter().all(Input::can_read_again) => {
                return Err(err.context(format!(
                    "{} reads the logs again without a damaged input, and standard input or \
                     a pipe can be read only once",
                    Setting::BadFiles.given("skip")
                )))
            }
            Some(input) => skipped.push((input, format!("{err:#}"))),
            None => return Err(err),
        }
    }
}

/// [`gather`], with the inputs `skipped` (each with why) left unread.
fn gather_skipping(
    inputs: &[Input],
    skipped: &[(u32, String)],
    reading: Reading<'_>,
    config: &JudgeConfig,
    grouper: Grouper,
    pool: &rayon::ThreadPool,
) -> Result<Grouping> {
    let mut gathered = Gathered {
        grouper,
        rejects: Vec::new(),
        leaks: Vec::new(),
        per_input: vec![LineCounts::default(); inputs.len()],
        stats: Vec::new(),
        stages_seen: vec![false; config.stages.len()],
        seen: vec![FieldsSeen::default(); inputs.len()],
    };
    let is_skipped = |index: u32| skipped.iter().any(|(input, _)| *input == index);
    let read: Vec<(u32, &Input)> = (0..).zip(inputs).filter(|(i, _)| !is_skipped(*i)).collect();
    let mut stats = judge_inputs(&read, reading, config, pool, |outcome| {
        gathered.take(outcome);
    })?
    .into_iter();
    // Each skipped input in its place, as one rejected record.
    for index in 0..inputs.len() as u32 {
        let why = skipped.iter().find(|(input, _)| *input == index);
        gathered.stats.push(match why {
            Some((_, why)) => {
                let counts = &mut gathered.per_input[index as usize];
                (counts.records, counts.rejected) = (1, 1);
                let invalid = Invalid::new(RejectReason::BadFile, why.clone());
                gathered
                    .rejects
                    .push(Reject::new(Origin::line(index, 0), invalid, b""));
                InputStats::skipped(why.clone())
            }
            None => stats
                .next()
                .context("internal error: an input read left no stats")?,
        });
    }
    // With no record read at all, there is nothing to check against:
    // nothing is graded, and the caller says so.
    let read_a_record = (gathered.per_input.iter().zip(&gathered.stats))
        .any(|(counts, stats)| counts.records > 0 && stats.skipped.is_none());
    if read_a_record {
        seen::refuse_unmatched(&reading.fields.given(), &gathered.seen)?;
    }
    gathered.keep_first_leaks();
    gathered.take_empty_spans();
    rank_trec_runs(inputs, reading, config, pool, &mut gathered)?;
    let Gathered {
        mut grouper,
        mut rejects,
        leaks,
        per_input,
        stats,
        stages_seen,
        ..
    } = gathered;
    let unread_pooled = grouper.read_pooled_run_ids(inputs, &stats)?;
    let fused_runs = (grouper.fused_runs().into_iter())
        .map(|(run, inputs)| (run.to_string(), inputs))
        .collect();
    let (grouped, mut repeats) = grouper.finish(config.labels);
    rejects.append(&mut repeats);
    rejects::finish(inputs, &stats, &mut rejects)?;
    Ok(Grouping {
        grouped,
        rejects,
        leaks,
        input_names: inputs.iter().map(Input::name).collect(),
        stats,
        per_input,
        stages_seen,
        unread_pooled,
        fused_runs,
        path_order: None,
    })
}

/// Read `inputs` (each with its index among all inputs) and judge their
/// blocks on the pool, handing each block's outcome to `take` on this
/// thread, telling the reading's progress as it goes.
fn judge_inputs(
    inputs: &[(u32, &Input)],
    reading: Reading<'_>,
    config: &JudgeConfig,
    pool: &rayon::ThreadPool,
    mut take: impl FnMut(BlockOutcome),
) -> Result<Vec<InputStats>> {
    let progress = reading.progress.unwrap_or(&Silent);
    progress.started(inputs.iter().map(|&(_, input)| input.size()).sum());
    let on_bytes = |n| progress.read(n);
    let columns = ColumnNames {
        fields: reading.fields,
        spans: config.records.spans,
        partitions: config.records.partitions,
    };
    // A row group that cannot be decoded, or a CSV run's header that
    // cannot be read, stops the run.
    let mut failed = None;
    let stats = for_each_block(
        pool,
        |sink| logs::read::read_inputs(inputs, reading.format, columns, sink, &on_bytes),
        || BlockWorker::new(config),
        BlockWorker::process,
        |_, mut outcome| {
            if let Some(err) = outcome.failed.take() {
                failed = Some((outcome.input, err, outcome.damaged));
                return false;
            }
            progress.judged(outcome.counts.records);
            take(outcome);
            true
        },
    );
    progress.finished();
    if let Some((input, err, damaged)) = failed {
        let name = inputs
            .iter()
            .find(|(i, _)| *i == input)
            .map(|(_, input)| input.name());
        let message = format!("{}: {err}", name.unwrap_or_default());
        if damaged {
            return Err(Damaged { input, message }.into());
        }
        bail!("{message}");
    }
    stats
}

/// Rank the TREC runs read. A (run, query) ranked early in one block whose
/// lines turned out to be in other blocks too is ranked again from a
/// second reading of its files, for its lines alone.
fn rank_trec_runs(
    inputs: &[Input],
    reading: Reading<'_>,
    config: &JudgeConfig,
    pool: &rayon::ThreadPool,
    gathered: &mut Gathered,
) -> Result<()> {
    let labels = config.labels;
    let Gathered {
        grouper,
        rejects,
        stats: first_reading,
        ..
    } = gathered;
    let split = pool.install(|| grouper.rank_trec_runs(labels, config.rank_rules(), rejects));
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
    let stats = judge_inputs(&again, reading, &config, pool, |outcome| {
        grouper.merge_again(outcome, &split);
    })
    .context(
        "reading TREC runs a second time, for the queries whose lines are in several places",
    )?;
    for (&(index, input), second) in again.iter().zip(&stats) {
        reread::ensure_unchanged(input, &first_reading[index as usize], &second.hash)?;
    }
    // A second reading ranks nothing early, so nothing is left to read again.
    let split = pool.install(|| grouper.rank_trec_runs(labels, config.rank_rules(), rejects));
    ensure!(
        split.keys.is_empty(),
        "internal error: {} TREC rankings left unranked after a second reading",
        split.keys.len()
    );
    Ok(())
}
