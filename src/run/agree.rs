//! `rgrade agree` (docs/guide.md, "How far two answer keys agree"),
//! driven: the output directory is claimed, both keys are loaded and
//! [`crate::agree`]d, the logs, if given, are graded under each, and the
//! files are written as one complete set, agreement.json last.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::agree::{agreement, runs_under_both, Agreement, RunsUnderBoth};
use crate::base::failure::{Error, ErrorKind, Message, OfKind, Setting};
use crate::base::metrics::Cutoff;
use crate::base::options::{
    JoinBy, LabelsFormat, LogsFormat, MissingPolicy, RepeatPolicy, ReviewerPolicy, Reviewing,
    RunName,
};
use crate::base::schema::{AgreementLogs, AgreementSummary, REPORT_FILE};
use crate::grade::{Graded, Plan as GradePlan, Warning};
use crate::io::{reread, workers};
use crate::labels::LabelIndex;
use crate::output::{agreement as files, OutputDir, ResultKind};
use crate::report::{self, Sources};
use crate::run::grade::refuse_read_once;
use crate::run::write::labels_summary;

/// Which answer keys to compare, and where to write what was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The first key (any label format, or a compiled key).
    pub key_a: PathBuf,
    /// The second key.
    pub key_b: PathBuf,
    /// The format of both keys (`Auto` decides per key).
    pub labels_format: LabelsFormat,
    /// The lowest grade that counts as relevant, in both keys.
    pub min_rel: i64,
    /// Whose grade counts, in each key, for a (query, document) pair
    /// several of its reviewers judged: two reviewers of one key are
    /// compared by naming the key twice, with one reviewer for each side.
    pub reviewers: [Option<ReviewerPolicy>; 2],
    /// The directory to write the outputs into, if any.
    pub out: Option<PathBuf>,
    /// Worker threads for reading the keys; all cores when `None`.
    pub threads: Option<NonZeroUsize>,
    /// Logs to grade under both keys, if any.
    pub logs: Option<LogsPlan>,
}

/// The logs `agree` grades under each key, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct LogsPlan {
    /// Log files or directories, as `grade` takes them.
    pub logs: Vec<PathBuf>,
    /// Their format.
    pub logs_format: LogsFormat,
    /// The cutoffs.
    pub ks: Vec<Cutoff>,
    /// What a labeled query without a capture scores.
    pub missing: MissingPolicy,
    /// What several captures of one (run, stage, query) mean.
    pub repeats: RepeatPolicy,
    /// What names a TREC run: its tag, or its file (runs written with one
    /// tag stay apart).
    pub run_name: RunName,
}

impl LogsPlan {
    /// Grade `logs` with the command line's defaults.
    pub fn new(logs: Vec<PathBuf>) -> Self {
        LogsPlan {
            logs,
            logs_format: LogsFormat::Auto,
            ks: vec![Cutoff::At(10)],
            missing: MissingPolicy::Fail,
            repeats: RepeatPolicy::Error,
            run_name: RunName::Tag,
        }
    }
}

impl Plan {
    /// Compare `key_a` with `key_b` with the command line's defaults.
    pub fn new(key_a: PathBuf, key_b: PathBuf) -> Self {
        Plan {
            key_a,
            key_b,
            labels_format: LabelsFormat::Auto,
            min_rel: 1,
            reviewers: [None, None],
            out: None,
            threads: None,
            logs: None,
        }
    }
}

/// What `rgrade agree` found: the figures, and agreement.json's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreed {
    /// How far the keys agree.
    pub agreement: Agreement,
    /// agreement.json, whose `outputs` lists the files written (none
    /// without an output directory).
    pub summary: AgreementSummary,
    /// With logs, the runs' means under both keys.
    pub runs: Option<RunsUnderBoth>,
    /// With logs of which every record was rejected under a key, why
    /// (as `grade` says it): nothing was graded, and no figure of the runs
    /// means anything.
    pub every_record_rejected: Option<Message>,
}

/// Compare the two keys `plan` names, grade its logs under each if it
/// names any (handing `warn` each grading's warnings), and write the
/// outputs if it names a directory.
///
/// # Errors
/// A key that does not load, logs that cannot be graded, an output that
/// cannot be written.
pub fn run(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<Agreed, Error> {
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    if let Some(logs) = &plan.logs {
        let reads_twice = "agree reads the logs once under each key";
        refuse_read_once(&logs.logs, plan.out.as_deref(), reads_twice)?;
    }
    // Claimed before anything is read, as `grade -o` claims its directory.
    let claim = |dir| OutputDir::claim_for(dir, ResultKind::Agreement);
    let out_dir = (plan.out.as_deref().map(claim).transpose()).of_kind(ErrorKind::Output)?;
    // Each key's policy is named by the option of its side, which
    // `--reviewers` sets for both.
    let load = |path: &Path, reviewers: &Option<ReviewerPolicy>, option| {
        let (format, min_rel) = (plan.labels_format, plan.min_rel);
        let reviewing = Reviewing {
            policy: reviewers.as_ref(),
            option,
        };
        LabelIndex::load(path, format, min_rel, JoinBy::Id, reviewing, &pool)
            .of_kind(ErrorKind::Labels)
    };
    let [reviewers_a, reviewers_b] = &plan.reviewers;
    let (a, b) = (
        load(&plan.key_a, reviewers_a, Setting::ReviewersA)?,
        load(&plan.key_b, reviewers_b, Setting::ReviewersB)?,
    );
    let agreement = agreement(&a, &b);
    no_query_in_common(plan, &agreement).of_kind(ErrorKind::Labels)?;
    let mut summary = summarize(&a, &b, plan.min_rel, &agreement);
    // Each grading below loads its key again: these are no longer needed.
    drop((a, b));
    let mut every_record_rejected = None;
    let runs = match &plan.logs {
        Some(logs) => {
            // What both gradings say of the same logs is said once.
            let mut said = Vec::new();
            let graded_a = grade_under(plan, &plan.key_a, reviewers_a, logs, &mut |warning| {
                said.push(warning.clone());
                warn(warning);
            })?;
            reread::pause_between_readings();
            let graded_b = grade_under(plan, &plan.key_b, reviewers_b, logs, &mut |warning| {
                if !said.contains(&warning) {
                    warn(warning);
                }
            })?;
            // Each key's means must be of the same logs.
            reread::ensure_read_alike(graded_a.inputs_read(), graded_b.inputs_read())
                .of_kind(ErrorKind::Logs)?;
            summary.logs = Some(logs_summary(logs, &graded_a, &graded_b));
            every_record_rejected = [(&plan.key_a, &graded_a), (&plan.key_b, &graded_b)]
                .into_iter()
                .find_map(|(key, graded)| {
                    let why = graded.every_record_rejected()?;
                    Some(Message::new(format!(
                        "the logs graded under {}: {} (rgrade grade --labels {} -o DIR \
                         lists them all in rejects.jsonl)",
                        key.display(),
                        why.marked(),
                        key.display()
                    )))
                });
            Some(runs_under_both(&graded_a, &graded_b))
        }
        None => None,
    };
    if let (Some(dir), Some(held)) = (&plan.out, out_dir) {
        write(dir, &held, &agreement, runs.as_ref(), &mut summary).of_kind(ErrorKind::Output)?;
    }
    Ok(Agreed {
        agreement,
        summary,
        runs,
        every_record_rejected,
    })
}

/// Refuse keys that label no query in common: every figure would be
/// empty, and keys of the same queries whose ids are written differently
/// look just like this.
fn no_query_in_common(plan: &Plan, agreement: &Agreement) -> Result<()> {
    anyhow::ensure!(
        agreement.overlap.queries_both > 0,
        "{} and {} label no query in common: nothing to compare (are the query ids written \
         the same way in both?)",
        plan.key_a.display(),
        plan.key_b.display()
    );
    Ok(())
}

/// The logs of `logs` graded under `key`, as `grade` grades them, with
/// no output directory.
fn grade_under(
    plan: &Plan,
    key: &Path,
    reviewers: &Option<ReviewerPolicy>,
    logs: &LogsPlan,
    warn: &mut dyn FnMut(Warning),
) -> Result<Graded, Error> {
    let grading = GradePlan {
        labels_format: plan.labels_format,
        min_rel: plan.min_rel,
        reviewers: reviewers.clone(),
        logs_format: logs.logs_format,
        ks: logs.ks.clone(),
        missing: logs.missing,
        repeats: logs.repeats,
        run_name: logs.run_name,
        threads: plan.threads,
        ..GradePlan::new(key.to_path_buf(), logs.logs.clone())
    };
    crate::run::grade::run(&grading, warn)
}

/// agreement.json's facts of the logs graded under both keys.
fn logs_summary(logs: &LogsPlan, a: &Graded, b: &Graded) -> AgreementLogs {
    let mut runs: Vec<&str> = (a.pairs.iter().chain(&b.pairs))
        .map(|pair| &*pair.run)
        .collect();
    runs.sort_unstable();
    runs.dedup();
    AgreementLogs {
        inputs: a.input_names.clone(),
        k: logs.ks.clone(),
        runs: runs.len() as u64,
        graded_a: a.counts.graded,
        graded_b: b.counts.graded,
        rejected_a: a.counts.rejected,
        rejected_b: b.counts.rejected,
    }
}

/// Write every output into `dir`, which `held` claims, agreement.json
/// last and listing the others.
fn write(
    dir: &Path,
    held: &OutputDir,
    agreement: &Agreement,
    runs: Option<&RunsUnderBoth>,
    summary: &mut AgreementSummary,
) -> Result<()> {
    let mut staged = vec![
        files::write_disagreements(dir, agreement)?,
        files::write_slices(dir, agreement)?,
    ];
    if let Some(runs) = runs {
        staged.extend(files::write_runs(dir, runs)?);
    }
    summary.outputs = staged.iter().map(|f| f.listed().clone()).collect();
    let page = report::agree::page(summary, &Sources::staged(&staged))?;
    staged.push(report::stage_page(dir, REPORT_FILE, &page)?);
    staged.push(files::write_summary(dir, summary)?);
    held.commit(staged)
}

/// agreement.json's contents, before the logs and the files written are known.
fn summarize(
    a: &LabelIndex,
    b: &LabelIndex,
    min_rel: i64,
    agreement: &Agreement,
) -> AgreementSummary {
    let overall = agreement.slices.first();
    AgreementSummary {
        tool: "rgrade".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        key_a: labels_summary(a),
        key_b: labels_summary(b),
        min_rel,
        overlap: agreement.overlap,
        grades: agreement.grades.clone(),
        confusion: agreement.confusion.clone(),
        relevance_kappa: overall.and_then(|s| s.relevance_kappa),
        grade_kappa: overall.and_then(|s| s.grade_kappa),
        logs: None,
        outputs: Vec::new(),
    }
}
