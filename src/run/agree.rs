//! `rgrade agree` (docs/guide.md, "How far two answer keys agree"),
//! driven: the output directory is claimed, both keys are loaded and
//! [`crate::agree`]d, the logs, if given, are graded under each, and the
//! files are written as one complete set, agreement.json last.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

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

/// Which answer keys to compare, and where to write what was found: the
/// command line's `rgrade agree` options, as plain values. As
/// [`crate::GradePlan`], the one place an option is defined: the command
/// line's arguments and Python's keyword arguments are read into it by
/// name, an option left out keeping [`Plan::new`]'s default, and
/// [`Plan::check`] holds its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default = "Plan::unset", deny_unknown_fields)]
pub struct Plan {
    /// The first key (any label format, or a compiled key).
    pub key_a: PathBuf,
    /// The second key.
    pub key_b: PathBuf,
    /// The format of both keys (`Auto` decides per key).
    pub labels_format: LabelsFormat,
    /// The lowest grade that counts as relevant, in both keys.
    pub min_rel: i64,
    /// Whose grade counts, in both keys, for a (query, document) pair
    /// several of its reviewers judged.
    pub reviewers: Option<ReviewerPolicy>,
    /// `reviewers` for the first key only, instead: two reviewers of one
    /// key are compared by naming the key twice, with one reviewer for
    /// each side.
    pub reviewers_a: Option<ReviewerPolicy>,
    /// `reviewers` for the second key only, instead.
    pub reviewers_b: Option<ReviewerPolicy>,
    /// The directory to write the outputs into, if any.
    pub out: Option<PathBuf>,
    /// Worker threads for reading the keys; all cores when `None`.
    pub threads: Option<NonZeroUsize>,
    /// Logs to grade under both keys, as `grade` takes them; empty for
    /// none.
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
    pub logs: Vec<PathBuf>,
    /// The logs' format. This and the options below say how the logs are
    /// graded: each left `None` is graded as [`GradePlan::new`] sets it,
    /// and each given without logs is refused.
    pub logs_format: Option<LogsFormat>,
    /// The cutoffs. Read under the name the command line and Python give
    /// it, too.
    #[serde(
        alias = "k",
        deserialize_with = "crate::base::options::maybe_one_or_many"
    )]
    pub ks: Option<Vec<Cutoff>>,
    /// What a labeled query without a capture scores.
    pub missing: Option<MissingPolicy>,
    /// What several captures of one (run, stage, query) mean.
    pub repeats: Option<RepeatPolicy>,
    /// What names a TREC run: its tag, or its file (runs written with one
    /// tag stay apart).
    pub run_name: Option<RunName>,
}

impl Plan {
    /// Compare `key_a` with `key_b` as `rgrade agree KEY_A KEY_B` does
    /// with no other option: a caller sets the fields it wants otherwise.
    pub fn new(key_a: PathBuf, key_b: PathBuf) -> Self {
        Plan {
            key_a,
            key_b,
            labels_format: LabelsFormat::Auto,
            min_rel: 1,
            reviewers: None,
            reviewers_a: None,
            reviewers_b: None,
            out: None,
            threads: None,
            logs: Vec::new(),
            logs_format: None,
            ks: None,
            missing: None,
            repeats: None,
            run_name: None,
        }
    }

    /// The plan of no keys, whose other options a deserialized plan keeps
    /// when it is not given them.
    fn unset() -> Self {
        Plan::new(PathBuf::new(), PathBuf::new())
    }

    /// Refuse options no agreement can be found with, before anything is
    /// read.
    ///
    /// # Errors
    /// A lowest relevant grade below 1, a policy for both keys and one for
    /// a key, an option of the logs without logs.
    pub fn check(&self) -> Result<()> {
        anyhow::ensure!(
            self.min_rel >= 1,
            "{}: expected a grade of at least 1",
            Setting::MinRel.given(self.min_rel)
        );
        let sides = [
            (Setting::ReviewersA, &self.reviewers_a),
            (Setting::ReviewersB, &self.reviewers_b),
        ];
        if let (Some((side, _)), Some(_)) = (
            sides.iter().find(|(_, policy)| policy.is_some()),
            &self.reviewers,
        ) {
            anyhow::bail!(
                "{side}: give {} (both keys) or {} and {}, not both",
                Setting::Reviewers,
                Setting::ReviewersA,
                Setting::ReviewersB
            );
        }
        let of_the_logs = [
            (Setting::K, self.ks.is_some()),
            (Setting::LogsFormat, self.logs_format.is_some()),
            (Setting::Missing, self.missing.is_some()),
            (Setting::Repeats, self.repeats.is_some()),
            (Setting::RunName, self.run_name.is_some()),
        ];
        if let (true, Some((option, _))) = (
            self.logs.is_empty(),
            of_the_logs.iter().find(|(_, given)| *given),
        ) {
            anyhow::bail!(
                "{option} says how the logs are graded, and no {} were given: give {} or \
                 leave {option} out",
                Setting::Logs,
                Setting::Logs
            );
        }
        Ok(())
    }

    /// Each key's reviewers policy: its side's, else the one for both.
    fn reviewers(&self) -> [Option<&ReviewerPolicy>; 2] {
        [&self.reviewers_a, &self.reviewers_b].map(|side| side.as_ref().or(self.reviewers.as_ref()))
    }

    /// The grading of the logs, if any, under either key: the options of
    /// the logs given, [`GradePlan::new`]'s for the others, and the keys'
    /// own format, lowest relevant grade and threads.
    fn grading(&self) -> Option<GradePlan> {
        if self.logs.is_empty() {
            return None;
        }
        let defaults = GradePlan::new(PathBuf::new(), self.logs.clone());
        Some(GradePlan {
            labels_format: self.labels_format,
            min_rel: self.min_rel,
            logs_format: self.logs_format.unwrap_or(defaults.logs_format),
            ks: self.ks.clone().unwrap_or_else(|| defaults.ks.clone()),
            missing: self.missing.unwrap_or(defaults.missing),
            repeats: self.repeats.unwrap_or(defaults.repeats),
            run_name: self.run_name.unwrap_or(defaults.run_name),
            threads: self.threads,
            ..defaults
        })
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
    plan.check().of_kind(ErrorKind::Usage)?;
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    let grading = plan.grading();
    if let Some(grading) = &grading {
        let reads_twice = "agree reads the logs once under each key";
        refuse_read_once(&grading.logs, plan.out.as_deref(), reads_twice)?;
    }
    // Claimed before anything is read, as `grade -o` claims its directory.
    let claim = |dir| OutputDir::claim_for(dir, ResultKind::Agreement);
    let out_dir = (plan.out.as_deref().map(claim).transpose()).of_kind(ErrorKind::Output)?;
    // Each key's policy is named by the option of its side, which
    // `--reviewers` sets for both.
    let load = |path: &Path, reviewers: Option<&ReviewerPolicy>, option| {
        let (format, min_rel) = (plan.labels_format, plan.min_rel);
        let reviewing = Reviewing {
            policy: reviewers,
            option,
        };
        LabelIndex::load(path, format, min_rel, JoinBy::Id, reviewing, &pool)
            .of_kind(ErrorKind::Labels)
    };
    let [reviewers_a, reviewers_b] = plan.reviewers();
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
    let runs = match &grading {
        Some(grading) => {
            // What both gradings say of the same logs is said once.
            let mut said = Vec::new();
            let graded_a = grade_under(grading, &plan.key_a, reviewers_a, &mut |warning| {
                said.push(warning.clone());
                warn(warning);
            })?;
            reread::pause_between_readings();
            let graded_b = grade_under(grading, &plan.key_b, reviewers_b, &mut |warning| {
                if !said.contains(&warning) {
                    warn(warning);
                }
            })?;
            // Each key's means must be of the same logs.
            reread::ensure_read_alike(graded_a.inputs_read(), graded_b.inputs_read())
                .of_kind(ErrorKind::Logs)?;
            summary.logs = Some(logs_summary(grading, &graded_a, &graded_b));
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
    if let Some(held) = out_dir {
        write(&held, &agreement, runs.as_ref(), &mut summary).of_kind(ErrorKind::Output)?;
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

/// The logs `grading` names graded under `key`, as `grade` grades them,
/// with no output directory.
fn grade_under(
    grading: &GradePlan,
    key: &Path,
    reviewers: Option<&ReviewerPolicy>,
    warn: &mut dyn FnMut(Warning),
) -> Result<Graded, Error> {
    let grading = GradePlan {
        labels: key.to_path_buf(),
        reviewers: reviewers.cloned(),
        ..grading.clone()
    };
    crate::run::grade::run(&grading, warn)
}

/// agreement.json's facts of the logs graded under both keys.
fn logs_summary(logs: &GradePlan, a: &Graded, b: &Graded) -> AgreementLogs {
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

/// Write every output into the directory `held` claims, agreement.json
/// last and listing the others.
fn write(
    held: &OutputDir,
    agreement: &Agreement,
    runs: Option<&RunsUnderBoth>,
    summary: &mut AgreementSummary,
) -> Result<()> {
    let dir = held.dir();
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
        grade_kappa_unweighted: overall.and_then(|s| s.grade_kappa_unweighted),
        grade_kappa_quadratic: overall.and_then(|s| s.grade_kappa_quadratic),
        grade_alpha_ordinal: overall.and_then(|s| s.grade_alpha_ordinal),
        logs: None,
        outputs: Vec::new(),
    }
}
