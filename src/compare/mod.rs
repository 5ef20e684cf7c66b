//! `rgrade compare` (docs/compare.md): one change at a time. Two grade outputs are
//! [`graded`] (read back), [`paired`] by (stage, query_id), compared per
//! grouping set and metric with paired statistics, checked against the
//! user's acceptance [`rules`], and written by [`output`]; [`evidence`]
//! finds what the biggest losses lost, and the report page is drawn by
//! [`crate::report::compare`].

pub mod evidence;
pub mod graded;
pub mod output;
pub mod paired;
pub mod rules;
pub mod slices;
pub mod stats;

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::failure::{ErrorKind, OfKind};

use crate::grade::workers;
use crate::output::schema::{
    CompareSettings, ComparedRun, ComparisonSummary, COMPARE_FILES, REPORT_FILE, SUMMARY_FILE,
};
use crate::output::staged;
use crate::output::{refuse_other_result, remove_stale_output, OutputDir};
use crate::report::{self, Sources};
use graded::Side;
use paired::{Paired, StatSettings};
use rules::{Gate, RuleContext};
use slices::{compare_slices, SliceComparison};

/// Coverage of the bootstrap interval of the mean delta.
const CONFIDENCE: f64 = 0.95;

/// Everything one comparison needs: the command line's `rgrade compare`
/// options, as plain values.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The current system: a grade output directory or its per_query.csv.
    pub baseline: PathBuf,
    /// The proposed change, likewise.
    pub candidate: PathBuf,
    /// The run to take from the baseline (needed when it holds several).
    pub baseline_run: Option<String>,
    /// The run to take from the candidate (needed when it holds several).
    pub candidate_run: Option<String>,
    /// The acceptance rules (TOML), if any.
    pub rules: Option<PathBuf>,
    /// The output directory; `None` writes nothing.
    pub out: Option<PathBuf>,
    /// The metric columns to compare; empty means all.
    pub metrics: Vec<String>,
    /// Sign-flip permutations of the randomization test.
    pub permutations: usize,
    /// Resamples of the bootstrap interval.
    pub bootstrap: usize,
    /// Seed of the permutations and resamples.
    pub seed: u64,
    /// Significance level of the marks and of `no_significant_loss`.
    pub alpha: f64,
    /// Worker threads; `None` means all cores.
    pub threads: Option<NonZeroUsize>,
}

/// What a comparison found.
pub struct Compared {
    /// Both sides, paired by (stage, query).
    pub paired: Paired,
    /// Every grouping set of every stage, compared.
    pub comparisons: Vec<SliceComparison>,
    /// The rules' verdicts, when rules were given.
    pub gate: Option<Gate>,
    /// The significance level the marks use.
    pub alpha: f64,
}

impl Compared {
    /// Write the stdout report: the overall table, the slices and the
    /// rules; with `rules_only`, the rules' verdicts alone.
    ///
    /// # Errors
    /// Writing to `out` fails (a closed pipe among others).
    pub fn print(&self, out: &mut impl Write, rules_only: bool) -> io::Result<()> {
        match (&self.gate, rules_only) {
            (Some(gate), true) => output::print_rules(out, gate),
            (None, true) => Ok(()),
            (gate, false) => output::print_report(
                out,
                self.alpha,
                &self.paired,
                &self.comparisons,
                gate.as_ref(),
            ),
        }
    }

    /// Whether no rule failed (true without rules).
    pub fn passed(&self) -> bool {
        self.gate.as_ref().is_none_or(|gate| gate.passed)
    }
}

/// Compare the two grade outputs `plan` names, writing the outputs if it
/// names a directory, and hand each warning to `warn` as it arises.
///
/// # Errors
/// Anything that leaves nothing compared: unreadable or incomparable
/// inputs, an unknown run, metric or rule target, an unwritable output.
pub fn run(plan: &Plan, warn: &mut (dyn FnMut(String) + Send)) -> Result<Compared> {
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    pool.install(|| compare(plan, warn))
        .of_kind(ErrorKind::Comparison)
}

fn compare(plan: &Plan, warn: &mut (dyn FnMut(String) + Send)) -> Result<Compared> {
    let out_dir = plan.out.as_deref().map(claim).transpose()?;
    let (baseline, candidate) = rayon::join(
        || graded::load(&plan.baseline, plan.baseline_run.as_deref(), Side::Baseline),
        || {
            graded::load(
                &plan.candidate,
                plan.candidate_run.as_deref(),
                Side::Candidate,
            )
        },
    );
    let paired = paired::pair(baseline?, candidate?)?;
    for (stage, side) in &paired.unpaired_stages {
        warn(format!(
            "stage {stage} was graded in the {side} only; it is left out"
        ));
    }
    let metrics = chosen_metrics(&paired, &plan.metrics)?;
    let settings = StatSettings {
        permutations: plan.permutations,
        bootstrap: plan.bootstrap,
        confidence: CONFIDENCE,
        seed: plan.seed,
    };
    let context = RuleContext {
        compared_metrics: &metrics,
        settings,
        alpha: plan.alpha,
    };
    // Rules are resolved before any statistic: a mistake in them should
    // not cost a long run.
    let rules = match &plan.rules {
        Some(path) => rules::load(path, &paired, &context)?,
        None => Vec::new(),
    };
    for warning in rules
        .iter()
        .filter_map(|r| r.cannot_fail(&paired, &context))
    {
        warn(warning);
    }
    let comparisons = compare_slices(&paired, &metrics, &settings);
    let gate = match plan.rules {
        Some(_) => {
            let outcomes = rules
                .iter()
                .map(|rule| rule.evaluate(&paired, &context))
                .collect::<Result<Vec<_>>>()?;
            Some(Gate {
                passed: outcomes.iter().all(|o| o.passed),
                rules: outcomes,
            })
        }
        None => None,
    };

    if let (Some(dir), Some(held)) = (&plan.out, &out_dir) {
        let mut files = vec![
            output::write_comparison(dir, &paired, &comparisons)?,
            output::write_per_query_delta(dir, &paired, &metrics)?,
        ];
        if let Some(gate) = &gate {
            files.push(output::write_gate(dir, gate)?);
        }
        let summary = summarize(plan, &paired, &metrics, &settings, &files)?;
        let page = report::compare::page(&summary, &Sources::staged(&files))?;
        files.push(report::stage_page(dir, REPORT_FILE, &page)?);
        // The complete set moves into place at once, comparison.json last.
        files.push(output::write_comparison_summary(dir, &summary)?);
        held.commit(files)?;
    }
    Ok(Compared {
        paired,
        comparisons,
        gate,
        alpha: plan.alpha,
    })
}

/// Claim the output directory `dir` before anything is read: a run already
/// writing there must not cost this one's work, and an earlier
/// comparison's files must not pass for this one's while it runs, nor if
/// it fails.
fn claim(dir: &Path) -> Result<OutputDir> {
    let claimed = OutputDir::claim(dir)?;
    refuse_other_result(dir, SUMMARY_FILE, "a grade output")?;
    for name in COMPARE_FILES {
        remove_stale_output(dir, name)?;
    }
    Ok(claimed)
}

/// comparison.json's contents: what was compared, how, the figures of
/// both sides, the biggest losses with their evidence, and `files`.
///
/// # Errors
/// A per_query.csv cannot be read again for the evidence.
fn summarize(
    plan: &Plan,
    paired: &Paired,
    metrics: &[usize],
    settings: &StatSettings,
    files: &[staged::Staged],
) -> Result<ComparisonSummary> {
    let side = |origin: &paired::Origin| ComparedRun {
        path: origin.path.display().to_string(),
        run: origin.run.clone(),
    };
    Ok(ComparisonSummary {
        tool: "rgrade".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        baseline: side(&paired.baseline),
        candidate: side(&paired.candidate),
        labels_hash: paired.labels_hash.clone(),
        settings: CompareSettings {
            metrics: metrics.iter().map(|&m| paired.metrics[m].clone()).collect(),
            permutations: settings.permutations,
            bootstrap: settings.bootstrap,
            seed: settings.seed,
            alpha: plan.alpha,
            confidence: settings.confidence,
        },
        stages: paired.stages.iter().map(evidence::stage_sides).collect(),
        evidence_cutoff: paired.deepest.to_string(),
        biggest_losses: evidence::biggest_losses(paired, metrics[0])?,
        outputs: files.iter().map(|f| f.listed().clone()).collect(),
    })
}

/// The metric columns to compare: those named (each once, in the order
/// first named), else every quality metric. judged@k is compared only
/// when named: it measures the labels' coverage, not the retriever.
fn chosen_metrics(paired: &Paired, names: &[String]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok((0..paired.quality_metrics).collect());
    }
    let mut chosen = Vec::new();
    for name in names {
        let metric = paired.metric(name).with_context(|| {
            format!(
                "--metrics: unknown metric '{name}' (known: {})",
                paired.metrics.join(", ")
            )
        })?;
        // Named twice, a metric would count twice in the Holm family.
        if !chosen.contains(&metric) {
            chosen.push(metric);
        }
    }
    Ok(chosen)
}
