//! The evidence a change lost, and the figures of both sides that
//! comparison.csv has no room for: what comparison.json holds besides the
//! list of outputs.
//!
//! For the queries that lost most on the first metric, the relevant ids
//! the baseline had in its deepest cutoff's top k and the candidate has
//! not. Each side's per_query.csv is read again for the cells of those
//! few rows, found by the offsets kept when it was first read, so that a
//! comparison of a million queries holds no lists of ids; the second
//! reading must find the bytes its summary.json lists, as the first did.

use anyhow::{ensure, Result};
use hashbrown::HashMap;

use super::paired::{Origin, Paired, SideFacts, StagePairs};

use crate::base::numbers::percentile;
use crate::base::schema::{QueryLoss, SideFigures, StageSides};
use crate::base::stats::TIE_EPSILON;
use crate::output::per_query::PerQueryReader;

/// Queries listed per stage among the biggest losses.
pub const LOSSES_LISTED: usize = 10;

/// Per stage, the [`LOSSES_LISTED`] queries whose `metric` dropped most,
/// worst first (ties by query_id), with the evidence each lost and gained.
///
/// # Errors
/// A per_query.csv cannot be read again, or has changed since.
pub fn biggest_losses(paired: &Paired, metric: usize) -> Result<Vec<QueryLoss>> {
    let mut losses = Vec::new();
    for pairs in &paired.stages {
        let (base, cand) = (pairs.baseline(metric), pairs.candidate(metric));
        let delta = |i: usize| cand[i] - base[i];
        let mut losers: Vec<usize> = (0..pairs.queries.len())
            .filter(|&i| pairs.queries[i].counted && delta(i) < -TIE_EPSILON)
            .collect();
        losers.sort_by(|&a, &b| {
            delta(a)
                .total_cmp(&delta(b))
                .then_with(|| pairs.queries[a].query_id.cmp(&pairs.queries[b].query_id))
        });
        losers.truncate(LOSSES_LISTED);
        let offsets = |side: fn(&super::paired::PairedQuery) -> &SideFacts| -> Vec<u64> {
            losers
                .iter()
                .map(|&i| side(&pairs.queries[i]).offset)
                .collect()
        };
        let missed = |side: &Origin, offsets: &[u64]| missed_cells(side, paired, offsets);
        let base_missed = missed(&paired.baseline, &offsets(|q| &q.baseline))?;
        let cand_missed = missed(&paired.candidate, &offsets(|q| &q.candidate))?;
        for ((&i, base_missed), cand_missed) in losers.iter().zip(base_missed).zip(cand_missed) {
            let q = &pairs.queries[i];
            losses.push(QueryLoss {
                stage: pairs.stage.clone(),
                query_id: q.query_id.to_string(),
                task: paired.names.name(q.task).to_string(),
                language: paired.names.name(q.language).to_string(),
                metric: paired.metrics[metric].clone(),
                baseline: base[i],
                candidate: cand[i],
                lost: except(&cand_missed, &base_missed),
                gained: except(&base_missed, &cand_missed),
            });
        }
    }
    Ok(losses)
}

/// The ids of `ids` that `other` lacks, in their order.
fn except(ids: &[String], other: &[String]) -> Vec<String> {
    ids.iter()
        .filter(|id| !other.contains(id))
        .cloned()
        .collect()
}

/// The missing-evidence cells of the rows of `side`'s per_query.csv,
/// graded as `paired` says, that start at `offsets`, each split into its
/// ids, in the order of `offsets`. The whole file is read again, so that
/// its bytes are checked to be the ones its summary.json lists: a file
/// graded again since the first reading is refused, never mixed in.
fn missed_cells(side: &Origin, paired: &Paired, offsets: &[u64]) -> Result<Vec<Vec<String>>> {
    if offsets.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: HashMap<u64, usize> = offsets.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    let mut cells = vec![None; offsets.len()];
    let asked = paired.measures.as_deref();
    let mut reader = PerQueryReader::open_as_listed(&side.path, &paired.ks, asked, &side.listed)?;
    while let Some(row) = reader.next_row()? {
        if let Some(&i) = wanted.get(&row.offset) {
            cells[i] = Some(match row.missed {
                "" => Vec::new(),
                ids => ids.split('|').map(str::to_string).collect(),
            });
        }
    }
    ensure!(
        cells.iter().all(Option::is_some),
        "{}: changed since it was read",
        side.path.display()
    );
    Ok(cells.into_iter().flatten().collect())
}

/// Both sides' latency percentiles and mean context size over every paired
/// query of a stage, as aggregates.csv computes them.
pub fn stage_sides(pairs: &StagePairs) -> StageSides {
    StageSides {
        stage: pairs.stage.clone(),
        queries: pairs.queries.len() as u64,
        counted: pairs.queries.iter().filter(|q| q.counted).count() as u64,
        baseline: side_figures(pairs.queries.iter().map(|q| &q.baseline)),
        candidate: side_figures(pairs.queries.iter().map(|q| &q.candidate)),
    }
}

fn side_figures<'a>(sides: impl Iterator<Item = &'a SideFacts> + Clone) -> SideFigures {
    let mut latencies: Vec<f64> = sides.clone().filter_map(|s| s.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let contexts: Vec<f64> = sides.filter_map(|s| s.context_tokens).collect();
    SideFigures {
        latency_p50_ms: percentile(&latencies, 50.0),
        latency_p95_ms: percentile(&latencies, 95.0),
        latency_p99_ms: percentile(&latencies, 99.0),
        context_tokens_mean: crate::base::numbers::mean(contexts),
    }
}
