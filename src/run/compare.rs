//! `rgrade compare` (docs/compare.md), driven: the output directory is
//! claimed, the two gradings are [`crate::compare`]d, and the comparison's
//! files and page are written as one complete set.

use anyhow::Result;

use crate::base::failure::{Error, ErrorKind, OfKind};
use crate::base::schema::{CompareSettings, ComparedRun, ComparisonSummary, REPORT_FILE};
use crate::compare::paired::{self, Paired, StatSettings};
use crate::compare::{compare, evidence, output, Compared, Plan, Warning};
use crate::io::{reread, workers};
use crate::output::{staged, OutputDir, ResultKind};
use crate::report::{self, Sources};

/// Compare the two grade outputs `plan` names, writing the outputs if it
/// names a directory, and hand each warning to `warn` as it arises.
///
/// # Errors
/// Anything that leaves nothing compared: unreadable or incomparable
/// inputs, an unknown run, metric or rule target, an unwritable output.
pub fn run(plan: &Plan, warn: &mut (dyn FnMut(Warning) + Send)) -> Result<Compared, Error> {
    plan.check().of_kind(ErrorKind::Usage)?;
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    pool.install(|| {
        // Claimed before anything is read: a run already writing there
        // must not cost this one's work, and an earlier comparison's files
        // must not pass for this one's while it runs, nor if it fails.
        let claim = |dir| OutputDir::claim_for(dir, ResultKind::Comparison);
        let out_dir = plan.out.as_deref().map(claim).transpose()?;
        let compared = compare(plan, warn)?;
        if let Some(held) = out_dir {
            // The evidence reads both per_query.csv files again.
            reread::pause_between_readings();
            write(held, plan, &compared)?;
        }
        Ok(compared)
    })
    .of_kind(ErrorKind::Comparison)
    .map_err(Error::from)
}

/// Write every output of `compared` into the directory `held` claims: the
/// complete set moves into place at once, comparison.json last.
fn write(held: OutputDir, plan: &Plan, compared: &Compared) -> Result<()> {
    let dir = held.dir();
    let Compared {
        paired,
        comparisons,
        gate,
        metrics,
        settings,
        ..
    } = compared;
    let mut files = vec![
        output::write_comparison(dir, paired, comparisons)?,
        output::write_per_query_delta(dir, paired, metrics)?,
    ];
    if let Some(gate) = gate {
        files.push(output::write_gate(dir, gate)?);
    }
    let summary = summarize(plan, paired, metrics, settings, &files)?;
    let page = report::compare::page(&summary, &Sources::staged(&files))?;
    files.push(report::stage_page(dir, REPORT_FILE, &page)?);
    files.push(output::write_comparison_summary(dir, &summary)?);
    held.commit(files)
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
        path: origin.source.shown(&origin.path),
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
            seed: settings.seed,
            alpha: plan.alpha,
            confidence: settings.confidence,
            mde: plan.mde,
        },
        stages: paired.stages.iter().map(evidence::stage_sides).collect(),
        evidence_cutoff: paired.deepest().to_string(),
        biggest_losses: evidence::biggest_losses(paired, metrics[0])?,
        outputs: files.iter().map(|f| f.listed().clone()).collect(),
    })
}
