//! `rgrade compare`: read two grade outputs, pair their queries, compare
//! every grouping set and metric, check the acceptance rules, write the
//! outputs and report the verdict as an exit status.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::CompareArgs;
use crate::compare::compare_slices;
use crate::compare::graded::{self, Side};
use crate::compare::output;
use crate::compare::paired::{self, Paired, StatSettings};
use crate::compare::rules::{self, Gate, RuleContext};
use crate::report;

/// Exit status when an acceptance rule fails (SPEC §2).
const EXIT_RULE_FAILED: u8 = 1;
/// Coverage of the bootstrap interval of the mean delta.
const CONFIDENCE: f64 = 0.95;

/// Compare the two grade outputs named in `args`.
///
/// # Errors
/// Anything that leaves nothing compared: unreadable or incomparable
/// inputs, an unknown run, metric or rule target, an unwritable output.
pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(threads) = args.threads {
        pool = pool.num_threads(threads.get());
    }
    let pool = pool.build().context("cannot start the worker threads")?;
    pool.install(|| compare(args))
}

fn compare(args: &CompareArgs) -> Result<ExitCode> {
    let (baseline, candidate) = rayon::join(
        || graded::load(&args.baseline, args.baseline_run.as_deref(), Side::Baseline),
        || {
            graded::load(
                &args.candidate,
                args.candidate_run.as_deref(),
                Side::Candidate,
            )
        },
    );
    let (baseline, candidate) = (baseline?, candidate?);
    let paired = paired::pair(baseline, candidate)?;
    for (stage, side) in &paired.unpaired_stages {
        eprintln!("rgrade: warning: stage {stage} was graded in the {side} only; it is left out");
    }
    let metrics = chosen_metrics(&paired, &args.metrics)?;
    let settings = StatSettings {
        permutations: args.permutations,
        bootstrap: args.bootstrap,
        confidence: CONFIDENCE,
        seed: args.seed,
    };
    let context = RuleContext {
        compared_metrics: &metrics,
        settings,
        alpha: args.alpha,
    };
    // Rules are resolved before any statistic: a mistake in them should
    // not cost a long run.
    let rules = match &args.rules {
        Some(path) => rules::load(path, &paired, &context)?,
        None => Vec::new(),
    };
    for warning in rules
        .iter()
        .filter_map(|r| r.cannot_fail(&paired, &context))
    {
        eprintln!("rgrade: warning: {warning}");
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create output directory", dir.display()))?;
    }

    let comparisons = compare_slices(&paired, &metrics, &settings);
    let gate = match args.rules {
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

    if let Some(dir) = &args.out {
        output::write_comparison(dir, &paired, &comparisons)?;
        output::write_per_query_delta(dir, &paired, &metrics)?;
        match &gate {
            Some(gate) => output::write_gate(dir, gate)?,
            None => report::remove_stale_output(dir, "gate.json")?,
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let printed = match (&gate, args.quiet) {
        (Some(gate), true) => output::print_rules(&mut out, gate),
        (None, true) => Ok(()),
        (gate, false) => {
            output::print_report(&mut out, args.alpha, &paired, &comparisons, gate.as_ref())
        }
    }
    .and_then(|()| out.flush());
    // A reader that closed the pipe early must not turn a failed gate
    // into success: the verdict decides the exit status.
    match printed {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(match gate {
        Some(gate) if !gate.passed => ExitCode::from(EXIT_RULE_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// The metric columns to compare: those named (each once, in the order
/// first named), else all.
fn chosen_metrics(paired: &Paired, names: &[String]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok((0..paired.metrics.len()).collect());
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
