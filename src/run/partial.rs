//! Partial gradings: logs partitioned by query id, graded a shard at a
//! time and merged into what one machine grading them all would write.
//!
//! `grade --partial -o SHARD` runs stages 1 to 4 over its logs and writes
//! the [`Grouping`] they leave (every capture, reject, leak and line count)
//! as SHARD/captures.postcard.zst, with SHARD/partial.json last as its marker.
//! `rgrade merge` puts the groupings of every shard together, input
//! indices following each other in the order the shards are given (or,
//! for shards of lines handed over, parts of the same inputs, whose
//! records interleave in input order), and
//! grades them as `grade` does ([`super::grade::finish`]): every output, the
//! missing queries, the percentiles, stage loss, stale labels and leaks
//! come from the same code over the same captures. Shards may be cut by
//! query or by time: a (run, stage, query) captured in several shards is
//! resolved across them by the repeat policy, as within one (each capture
//! carries its time and its place in input order, which follows the shards
//! as given); under `--repeats error` it is an error naming the query and
//! both shards, since each shard kept its captures without seeing the
//! other's.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use crate::base::failure::{Error, ErrorKind, OfKind, Setting};
use crate::base::options::RepeatPolicy;
use crate::base::schema::{
    PartialSummary, PARTIAL_CAPTURES_FILE, PARTIAL_FORMAT, PARTIAL_SUMMARY_FILE,
};
use crate::base::timestamp::Timestamp;
use crate::grade::diagnostics::permissions::LEAKS_LISTED;
use crate::grade::gather::Grouping;
use crate::grade::graded::{Graded, Warning};
use crate::grade::plan::{Plan, Tables};
use crate::io::location::{redact_command, shown};
use crate::labels::{LabelIndex, QueryIdx};
use crate::output::complete::{read_partial, ReadBack};
use crate::output::staged::{self, stage};
use crate::output::target::{Destination, Output};
use crate::output::OutputDir;
use crate::run::grade::{collect, finish, Setup};
use crate::run::write::{input_summaries, labels_summary};

/// The captures file's contents.
#[derive(Serialize, Deserialize)]
struct PartialFile {
    /// The plan the shard was graded with, as JSON (a self-describing
    /// form, as its cutoffs need); `merge` grades with it.
    plan: String,
    /// The answer key's hash of its judgments ([`LabelIndex::content_hash`]).
    labels_hash: String,
    grouping: Grouping,
}

/// Stages 1 to 4 of the logs `plan` names, written into its output
/// directory as a partial grading for [`merge`], and handing each
/// warning to `warn` as it arises.
///
/// # Errors
/// As [`super::run()`]; `plan` names no output directory.
pub fn grade(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<PartialSummary, Error> {
    Ok(grade_shard(plan, warn)?)
}

/// [`grade`], its error marked with its kind where it arose.
fn grade_shard(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<PartialSummary> {
    if plan.out.is_none() {
        bail!("a partial grading needs an output directory (-o DIR)");
    }
    if plan.calibrate.is_some() {
        return Err(anyhow::anyhow!(
            "{} cannot grade a shard ({}): calibrate a grading of all the logs",
            Setting::Calibrate,
            Setting::Partial
        ))
        .of_kind(ErrorKind::Usage);
    }
    if plan.openmetrics.is_some() {
        return Err(anyhow::anyhow!(
            "{} cannot be written for a shard ({}): a shard has no means; \
             rgrade merge --openmetrics writes them",
            Setting::Openmetrics,
            Setting::Partial
        ))
        .of_kind(ErrorKind::Usage);
    }
    let setup = Setup::new(plan)?;
    let grouping = collect(plan, &setup, warn)?;
    let held = setup
        .out_dir()
        .context("the output directory was not claimed")?;
    write(held, plan, setup.labels(), grouping).of_kind(ErrorKind::Output)
}

/// Write `grouping`, what stages 1 to 4 of `plan` left, into the
/// directory `held` claims as a partial grading: its captures, then
/// partial.json.
///
/// # Errors
/// A file cannot be written or moved into place.
fn write(
    held: &OutputDir,
    plan: &Plan,
    labels: &LabelIndex,
    mut grouping: Grouping,
) -> Result<PartialSummary> {
    grouping.grouped = grouping.grouped.in_slot_order();
    let mut summary = PartialSummary {
        tool: "rgrade".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        format: PARTIAL_FORMAT,
        command: redact_command(&plan.command),
        labels: labels_summary(labels),
        inputs: input_summaries(&grouping.input_names, &grouping.stats, &grouping.per_input),
        captured_queries: grouping.grouped.captured_queries().len() as u64,
        rejected: grouping.rejects.len() as u64,
        outputs: Vec::new(),
    };
    let dir = held.dir();
    let file = PartialFile {
        plan: serde_json::to_string(&run_aside(plan))?,
        labels_hash: summary.labels.content_hash.clone(),
        grouping,
    };
    let out = zstd::Encoder::new(stage(dir, PARTIAL_CAPTURES_FILE)?, 1)?;
    let captures = staged::finish(postcard::to_io(&file, out)?.finish()?)?;
    summary.outputs.push(captures.listed().clone());
    let mut out = stage(dir, PARTIAL_SUMMARY_FILE)?;
    serde_json::to_writer_pretty(&mut out, &summary)?;
    out.write_all(b"\n")?;
    held.commit(vec![captures, staged::finish(out)?])?;
    Ok(summary)
}

/// What `rgrade merge` is asked to do. As [`crate::GradePlan`], the one
/// place an option is defined: the command line's arguments and Python's
/// keyword arguments are read into it by name, an option left out keeping
/// [`MergePlan::new`]'s default.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default = "MergePlan::unset", deny_unknown_fields)]
pub struct MergePlan {
    /// The answer key every shard was graded with.
    pub labels: PathBuf,
    /// The answer key as a table, read instead of the file `labels`
    /// names (which then only names it): never part of a plan written down.
    #[serde(skip)]
    pub labels_table: Option<crate::io::tables::ArrowTable>,
    /// The partial gradings, in input order.
    pub shards: Vec<PathBuf>,
    /// The output directory.
    pub out: PathBuf,
    /// Worker threads; `None` means all cores.
    pub threads: Option<std::num::NonZeroUsize>,
    /// The command line as typed, for summary.json.
    pub command: Vec<String>,
    /// The time the merged grading stands for; `None` is the `--as-of`
    /// its shards were graded with, else when it runs.
    pub as_of: Option<Timestamp>,
    /// Also write the means and counts in the OpenMetrics text format here.
    pub openmetrics: Option<PathBuf>,
    /// Keep per_query.csv's rows in memory, as [`Graded::per_query`]:
    /// how the rows are read, so never part of a plan written down.
    #[serde(skip)]
    pub keep_rows: bool,
}

impl MergePlan {
    /// Merge `shards`, graded against `labels`, into `out`, as `rgrade merge
    /// --labels LABELS -o OUT SHARD...` does with no other option: a caller
    /// sets the fields it wants otherwise.
    pub fn new(labels: PathBuf, shards: Vec<PathBuf>, out: PathBuf) -> Self {
        MergePlan {
            labels,
            labels_table: None,
            shards,
            out,
            threads: None,
            command: Vec::new(),
            as_of: None,
            openmetrics: None,
            keep_rows: false,
        }
    }

    /// The plan of no shards, whose other options a deserialized plan
    /// keeps when it is not given them.
    fn unset() -> Self {
        MergePlan::new(PathBuf::new(), Vec::new(), PathBuf::new())
    }
}

/// Merge the partial gradings `merge` names and grade them as one, writing
/// every output into its directory, and hand each warning to `warn`.
///
/// # Errors
/// A shard that is not a complete partial grading of this version, shards
/// graded with other labels or options, a (run, stage, query) captured in
/// two shards under `--repeats error`, an output that cannot be written.
pub fn merge(merge: &MergePlan, warn: &mut dyn FnMut(Warning)) -> Result<Graded, Error> {
    let started = Instant::now();
    if let Some(path) = &merge.openmetrics {
        let destination = Destination {
            path,
            output: Output::OpenMetrics,
            out_dir: Some(&merge.out),
            inputs: std::iter::once(&merge.labels)
                .chain(&merge.shards)
                .map(PathBuf::as_path)
                .collect(),
        };
        destination.check().of_kind(ErrorKind::Usage)?;
    }
    let (plan, setup, grouping) = gather_shards(merge).of_kind(ErrorKind::Shards)?;
    let plan = Plan {
        keep_rows: merge.keep_rows,
        ..plan
    };
    Ok(finish(&plan, setup, grouping, None, started, warn)?)
}

/// The shards `merge` names, read and put together, with the plan they
/// were graded with and its setup.
fn gather_shards(merge: &MergePlan) -> Result<(Plan, Setup, Grouping)> {
    let same_dir = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(shard) = merge.shards.iter().find(|s| same_dir(s, &merge.out)) {
        bail!(
            "{}: the output directory is one of the shards; merge into another",
            shown(shard)
        );
    }
    let mut seen = std::collections::HashSet::new();
    for shard in &merge.shards {
        if shard.canonicalize().is_ok_and(|dir| !seen.insert(dir)) {
            bail!(
                "{}: shard is given twice (its queries would be merged twice)",
                shown(shard)
            );
        }
    }
    let first = merge
        .shards
        .first()
        .context("rgrade merge needs at least one partial grading")?;
    let first_shard = read_shard(first)?;
    let as_of = merged_as_of(merge.as_of, first_shard.plan.as_of, first)?;
    let plan = Plan {
        labels: merge.labels.clone(),
        logs: Vec::new(),
        out: Some(merge.out.clone()),
        threads: merge.threads,
        progress: None,
        command: merge.command.clone(),
        as_of,
        openmetrics: merge.openmetrics.clone(),
        // The shards checked their logs' ids against it.
        corpus: None,
        tables: Tables {
            labels: merge.labels_table.clone(),
            ..Tables::default()
        },
        ..first_shard.plan.clone()
    };
    let first_shard_as_of = first_shard.plan.as_of;
    let mut first_shard = Some(first_shard);
    let setup = Setup::new(&plan)?;
    let mut merged = Merged {
        repeats: plan.repeats,
        owners: HashMap::new(),
        inputs: HashMap::new(),
        grouping: None,
    };
    let stages = plan.stages.len();
    // Hashed once: each shard's is checked against it.
    let labels_hash = setup.labels().content_hash();
    for (index, path) in (0..).zip(&merge.shards) {
        let shard = match first_shard.take() {
            Some(shard) => shard,
            None => read_shard(path)?,
        };
        check_labels(path, &shard, setup.labels(), &labels_hash)?;
        ensure!(
            shard.plan.as_of == first_shard_as_of,
            "{}: graded {}, {}: graded {}; a merged grading stands for one time, so grade \
             every shard with the same {}",
            shown(path),
            as_of_option(shard.plan.as_of),
            shown(first),
            as_of_option(first_shard_as_of),
            Setting::AsOf
        );
        ensure!(
            same_grading(&shard.plan, &plan)?,
            "{}: graded with other options than {} (cutoffs, policies, stages or fields); \
             grade every shard with the same options",
            shown(path),
            shown(first)
        );
        let labels = setup.labels();
        merged.add(index, path, shard.grouping, &merge.shards, labels, stages)?;
    }
    let grouping = merged.grouping.context("no shard was merged")?;
    Ok((plan, setup, grouping))
}

/// The time a merge stands for: the `--as-of` its shards were graded
/// with (`first` names one), else the merge's own, else (`None`) when it
/// runs. A nightly job grading its shards `--as-of` the night they hold
/// merges them into that night.
///
/// # Errors
/// The merge and the shards name different times.
fn merged_as_of(
    merge: Option<Timestamp>,
    shards: Option<Timestamp>,
    first: &Path,
) -> Result<Option<Timestamp>> {
    match (merge, shards) {
        (Some(merge), Some(shards)) if merge != shards => bail!(
            "{}, but {} was graded {}: leave {} to the shards, or grade them again",
            Setting::AsOf.given(merge),
            first.display(),
            Setting::AsOf.given(shards),
            Setting::AsOf
        ),
        (merge, shards) => Ok(shards.or(merge)),
    }
}

/// How a shard was graded as to `--as-of`, for messages.
fn as_of_option(as_of: Option<Timestamp>) -> String {
    match as_of {
        Some(as_of) => Setting::AsOf.given(as_of).to_string(),
        None => format!("without {}", Setting::AsOf),
    }
}

/// Read the partial grading `given` (a directory, or a prefix of object
/// storage), checked against its partial.json.
fn read_shard(given: &Path) -> Result<Shard> {
    let read = ReadBack::open(given)?;
    let dir = read.path();
    let summary = read_partial(&dir.join(PARTIAL_SUMMARY_FILE))?;
    ensure!(
        summary.version == env!("CARGO_PKG_VERSION") && summary.format == PARTIAL_FORMAT,
        "{}: a partial grading of rgrade {} (captures format {}), not of this rgrade ({}, \
         format {PARTIAL_FORMAT}); grade the shard again",
        shown(given),
        summary.version,
        summary.format,
        env!("CARGO_PKG_VERSION")
    );
    let path = dir.join(PARTIAL_CAPTURES_FILE);
    let not_captures = || format!("{}: not a partial grading's captures", path.display());
    let file = File::open(&path).with_context(|| format!("{}: cannot open", path.display()))?;
    let bytes = zstd::decode_all(BufReader::new(file)).with_context(not_captures)?;
    let file: PartialFile = postcard::from_bytes(&bytes).with_context(not_captures)?;
    let plan = serde_json::from_str(&file.plan).with_context(not_captures)?;
    Ok(Shard {
        plan,
        labels_hash: file.labels_hash,
        grouping: file.grouping,
    })
}

/// A partial grading read back.
struct Shard {
    plan: Plan,
    labels_hash: String,
    grouping: Grouping,
}

/// Fail unless the shard at `dir` was graded with `labels`, whose
/// content hash is `labels_hash`.
fn check_labels(dir: &Path, shard: &Shard, labels: &LabelIndex, labels_hash: &str) -> Result<()> {
    ensure!(
        shard.labels_hash == labels_hash,
        "{}: graded with other labels than {} (their content hashes differ)",
        shown(dir),
        labels.source.given_path().display()
    );
    Ok(())
}

/// `plan` without what belongs to the run rather than to the grading
/// (where it wrote, its threads and progress, its command line): what a
/// partial grading stores, so that the same logs graded the same way give
/// the same bytes.
fn run_aside(plan: &Plan) -> Plan {
    Plan {
        out: None,
        threads: None,
        progress: None,
        command: Vec::new(),
        ..plan.clone()
    }
}

/// Whether `shard` grades as `merged` does: the same plan but for what
/// each shard has of its own (its logs, output, threads, command, time).
fn same_grading(shard: &Plan, merged: &Plan) -> Result<bool> {
    let own = |plan: &Plan| Plan {
        labels: PathBuf::new(),
        logs: Vec::new(),
        as_of: None,
        openmetrics: None,
        corpus: None,
        ..run_aside(plan)
    };
    Ok(serde_json::to_value(own(shard))? == serde_json::to_value(own(merged))?)
}

/// The shards merged so far; under `--repeats error`, which of them
/// captured each (run, stage, query); which graded each whole input,
/// known by its content (hash and size): one file reached by two paths,
/// links or names is one input.
struct Merged {
    repeats: RepeatPolicy,
    owners: HashMap<(Box<str>, Box<str>, QueryIdx), u32>,
    inputs: HashMap<(String, u64), (u32, String)>,
    grouping: Option<Grouping>,
}

impl Merged {
    /// Take in shard number `index`, read from `dir` (`shards` names them all).
    fn add(
        &mut self,
        index: u32,
        dir: &Path,
        grouping: Grouping,
        shards: &[PathBuf],
        labels: &LabelIndex,
        stages: usize,
    ) -> Result<()> {
        ensure!(
            grouping.fits(labels, stages),
            "{}: its captures do not fit the labels; grade the shard again",
            shown(dir)
        );
        // A retried task graded the same input again: even where it holds
        // no labeled capture, its records, rejects and unlabeled events
        // would be counted twice.
        let whole = (grouping.input_names.iter().zip(&grouping.stats)).filter(|(_, s)| !s.part);
        for (name, stats) in whole {
            let key = (stats.hash.clone(), stats.bytes);
            if let Some((earlier, earlier_name)) = self.inputs.get(&key) {
                bail!(
                    "{name} was graded by two shards, {} and {} (as {earlier_name} there): \
                     merge each input's grading once",
                    shown(dir),
                    shown(&shards[*earlier as usize]),
                );
            }
            self.inputs.insert(key, (index, name.clone()));
        }
        if self.repeats == RepeatPolicy::Error {
            for pair in &grouping.grouped.pairs {
                let touched = (0..pair.n_queries() as QueryIdx).filter(|&q| pair.touched(q));
                for query in touched {
                    let key = (pair.run.clone(), pair.stage.clone(), query);
                    if let Some(&earlier) = self.owners.get(&key) {
                        bail!(
                            "run '{}', stage '{}', query_id '{}' was captured in two shards, \
                             {} and {} ({}): grade with {} or {} to keep one capture by \
                             time, or {} to average them, or partition the logs by query id",
                            pair.run,
                            pair.stage,
                            labels.query_id(query),
                            shown(&shards[earlier as usize]),
                            shown(dir),
                            Setting::Repeats.given("error"),
                            Setting::Repeats.given("first"),
                            Setting::Repeats.given("last"),
                            Setting::Repeats.given("mean"),
                        );
                    }
                    self.owners.insert(key, index);
                }
            }
        }
        match &mut self.grouping {
            None => self.grouping = Some(grouping),
            Some(merged) => merged.absorb(grouping, self.repeats),
        }
        Ok(())
    }
}

impl Grouping {
    /// Whether this grouping, read from a partial grading, can be one of
    /// `labels` with `stages` stages named: every index in range.
    fn fits(&self, labels: &LabelIndex, stages: usize) -> bool {
        let inputs = self.input_names.len();
        self.grouped.fits(labels, inputs)
            && self.stats.len() == inputs
            && self.per_input.len() == inputs
            && self.stages_seen.len() == stages
            && self
                .rejects
                .iter()
                .all(|r| (r.origin.input as usize) < inputs)
            && self
                .leaks
                .iter()
                .all(|l| (l.origin.input as usize) < inputs)
            && (self.fused_runs.iter()).all(|(_, i)| i.iter().all(|&i| (i as usize) < inputs))
    }

    /// Whether `other` read parts of the very inputs this grouping read
    /// parts of (lines handed over, partitioned by query id), rather than
    /// inputs of its own.
    fn shares_inputs(&self, other: &Grouping) -> bool {
        let parts = |g: &Grouping| g.stats.iter().all(|s| s.part);
        self.input_names == other.input_names && parts(self) && parts(other)
    }

    /// Take in `other`: parts of the same inputs, or inputs that follow
    /// ours; a (run, stage, query) both captured is resolved by `repeats`.
    fn absorb(&mut self, other: Grouping, repeats: RepeatPolicy) {
        let shared = self.shares_inputs(&other);
        let offset = if shared {
            0
        } else {
            self.input_names.len() as u32
        };
        self.grouped.absorb(other.grouped, offset, repeats);
        self.rejects
            .extend(other.rejects.into_iter().map(|mut reject| {
                reject.origin.input += offset;
                reject
            }));
        self.leaks.extend(other.leaks.into_iter().map(|mut leak| {
            leak.origin.input += offset;
            leak
        }));
        if shared {
            // Records of one input from two shards interleave: put them in
            // input order, as one grading would.
            self.rejects
                .sort_by_key(|reject| (reject.origin, reject.reason));
            self.leaks.sort_by_key(|leak| leak.origin);
            for (ours, theirs) in self.stats.iter_mut().zip(other.stats) {
                ours.bytes += theirs.bytes;
                ours.decoded_bytes += theirs.decoded_bytes;
                ours.lines += theirs.lines;
            }
            for (ours, theirs) in self.per_input.iter_mut().zip(other.per_input) {
                *ours += theirs;
            }
        } else {
            // Each grouping's records are in input order, and other's inputs
            // come after ours: appended, they stay in input order.
            self.input_names.extend(other.input_names);
            self.stats.extend(other.stats);
            self.per_input.extend(other.per_input);
        }
        self.leaks.truncate(LEAKS_LISTED);
        for (seen, theirs) in self.stages_seen.iter_mut().zip(other.stages_seen) {
            *seen |= theirs;
        }
        self.unread_pooled += other.unread_pooled;
        self.path_order = self.path_order.take().or(other.path_order);
        for (run, inputs) in other.fused_runs {
            let inputs = inputs.into_iter().map(|input| input + offset);
            match self.fused_runs.iter_mut().find(|(ours, _)| *ours == run) {
                Some((_, ours)) => {
                    ours.extend(inputs);
                    ours.sort_unstable();
                    ours.dedup();
                }
                None => self.fused_runs.push((run, inputs.collect())),
            }
        }
    }
}
