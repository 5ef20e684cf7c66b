//! `rgrade compare` (docs/compare.md): one change at a time. Two grade outputs are
//! [`graded`] (read back), [`paired`] by (stage, query_id), compared per
//! grouping set and metric with paired statistics and checked against the
//! user's acceptance [`rules`]; [`output`] writes what it found and
//! [`evidence`] finds what the biggest losses lost. `crate::run::compare`
//! drives it and has the report page drawn.

pub mod evidence;
pub mod graded;
pub mod output;
pub mod paired;
pub mod rules;
pub mod slices;
pub mod warning;

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};

use crate::base::failure::Setting;
use graded::Side;
use paired::{Paired, StatSettings};
use rules::{Gate, RuleContext};
use slices::{compare_slices, SliceComparison};
pub use warning::Warning;

/// Coverage of the interval of the mean delta.
const CONFIDENCE: f64 = 0.95;

/// Everything one comparison needs: the command line's `rgrade compare`
/// options, as plain values. As [`crate::GradePlan`], the one place an
/// option is defined: the command line's arguments and Python's keyword
/// arguments are read into it by name, an option left out keeping
/// [`Plan::new`]'s default, and [`Plan::check`] holds its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default = "Plan::unset", deny_unknown_fields)]
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
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
    pub metrics: Vec<String>,
    /// Sign-flip permutations of the randomization test.
    pub permutations: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// Significance level of the marks and of `no_significant_loss`, and
    /// the level the power figures are for.
    pub alpha: f64,
    /// `--mde D`: find the queries each set needs to detect a change of D.
    pub mde: Option<f64>,
    /// Worker threads; `None` means all cores.
    pub threads: Option<NonZeroUsize>,
}

impl Plan {
    /// Compare `candidate` with `baseline` as `rgrade compare BASELINE
    /// CANDIDATE` does with no other option (every quality metric, 10,000
    /// permutations, seed 0, alpha 0.05, all cores),
    /// writing nothing: a caller sets the fields it wants otherwise.
    pub fn new(baseline: PathBuf, candidate: PathBuf) -> Self {
        Plan {
            baseline,
            candidate,
            baseline_run: None,
            candidate_run: None,
            rules: None,
            out: None,
            metrics: Vec::new(),
            permutations: 10_000,
            seed: 0,
            alpha: 0.05,
            mde: None,
            threads: None,
        }
    }

    /// The plan of no gradings, whose other options a deserialized plan
    /// keeps when it is not given them.
    fn unset() -> Self {
        Plan::new(PathBuf::new(), PathBuf::new())
    }

    /// Refuse options no comparison can be drawn with, before anything is
    /// read.
    ///
    /// # Errors
    /// No permutation, a level outside (0, 1), a change to detect outside
    /// (0, 1].
    pub fn check(&self) -> Result<()> {
        ensure!(
            self.permutations >= 1,
            "{} must be at least 1",
            Setting::Permutations
        );
        ensure!(
            self.alpha > 0.0 && self.alpha < 1.0,
            "{}: expected a level between 0 and 1",
            Setting::Alpha.given(self.alpha)
        );
        if let Some(effect) = self.mde {
            ensure!(
                effect > 0.0 && effect <= 1.0,
                "{}: expected a change of a metric's mean, above 0 and at most 1",
                Setting::Mde.given(effect)
            );
        }
        Ok(())
    }
}

/// What a comparison found.
pub struct Compared {
    /// Both sides, paired by (stage, query).
    pub(crate) paired: Paired,
    /// Every grouping set of every stage, compared.
    pub(crate) comparisons: Vec<SliceComparison>,
    /// The rules' verdicts, when rules were given.
    pub(crate) gate: Option<Gate>,
    /// The significance level the marks use.
    pub(crate) alpha: f64,
    /// The metrics compared, as indexes into the paired metrics.
    pub(crate) metrics: Vec<usize>,
    /// How the statistics were drawn.
    pub(crate) settings: StatSettings,
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

/// Compare the two grade outputs `plan` names, handing each warning to
/// `warn` as it arises; nothing is written.
///
/// # Errors
/// Anything that leaves nothing compared: unreadable or incomparable
/// inputs, an unknown run, metric or rule target.
pub fn compare(plan: &Plan, warn: &mut (dyn FnMut(Warning) + Send)) -> Result<Compared> {
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
        warn(Warning::StageOnOneSide {
            stage: stage.clone(),
            side,
        });
    }
    let metrics = chosen_metrics(&paired, &plan.metrics)?;
    let settings = StatSettings {
        permutations: plan.permutations,
        confidence: CONFIDENCE,
        seed: plan.seed,
        alpha: plan.alpha,
        mde: plan.mde,
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

    Ok(Compared {
        paired,
        comparisons,
        gate,
        alpha: plan.alpha,
        metrics,
        settings,
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
                "{}: unknown metric '{name}' (known: {})",
                crate::base::failure::Setting::Metrics,
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
