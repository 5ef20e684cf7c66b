//! The agree page: how far two answer keys agree, drawn from
//! agreement.json, agreement_slices.csv and agreement.csv, and with logs
//! from agreement_runs.csv and agreement_tau.csv.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use maud::{html, Markup};

use super::page::{self, cell, count};
use super::sources::Sources;
use crate::base::schema::{
    AgreementSummary, AGREEMENT, AGREEMENT_FILE, AGREEMENT_RUNS, AGREEMENT_RUNS_FILE,
    AGREEMENT_SLICES, AGREEMENT_SLICES_FILE, AGREEMENT_TAU, AGREEMENT_TAU_FILE,
};
use crate::base::slices::{repeating, ANY};
use crate::base::text::plural;
use crate::output::cells::read_number;

/// The disagreements the page lists; agreement.csv holds them all.
const DISAGREEMENTS_SHOWN: usize = 20;

/// The page of an agreement whose files `sources` finds.
///
/// # Errors
/// A file cannot be read, or does not hold what `rgrade agree` writes.
pub fn page(summary: &AgreementSummary, sources: &Sources) -> Result<String> {
    let slices = read_rows(sources.require(AGREEMENT_SLICES_FILE)?, &AGREEMENT_SLICES)?;
    let pairs = read_rows(sources.require(AGREEMENT_FILE)?, &AGREEMENT)?;
    let runs = match (
        sources.path(AGREEMENT_RUNS_FILE),
        sources.path(AGREEMENT_TAU_FILE),
    ) {
        (Some(means), Some(taus)) => Some(runs_section(
            &read_rows(means, &AGREEMENT_RUNS)?,
            &read_rows(taus, &AGREEMENT_TAU)?,
        )?),
        _ => None,
    };
    let key = |k: &crate::base::schema::LabelsSummary| {
        html! { code { (k.path) } " (" (k.format) ", " (count(k.queries as u64)) " queries)" }
    };
    let lede = html! {
        "Key A " (key(&summary.key_a)) " against key B " (key(&summary.key_b))
        ", on the (query, document) pairs both judge; a grade counts as relevant from "
        (summary.min_rel) " up."
    };
    let body = html! {
        @for (side, labels) in [("A", &summary.key_a), ("B", &summary.key_b)] {
            @if let Some(reviewers) = &labels.reviewers {
                p { "Reviewers of key " (side) ": " (page::reviewers(reviewers)) }
            }
        }
        (counts_section(summary))
        (matrix_section(summary))
        (slices_section(&slices)?)
        (disagreements_section(&pairs)?)
        @if let Some(runs) = runs { (runs) }
    };
    Ok(page::document("rgrade agree report", lede, body))
}

/// The rows of the CSV file at `path`, whose header must be `columns`.
fn read_rows(path: &Path, columns: &[&str]) -> Result<Vec<Vec<String>>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    ensure!(
        reader.headers()?.iter().eq(columns.iter().copied()),
        "{}: not the columns rgrade agree writes",
        path.display()
    );
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("{}: cannot read", path.display()))?;
        rows.push(record.iter().map(str::to_string).collect());
    }
    Ok(rows)
}

/// A number cell of a row read back.
fn number(text: &str) -> Result<Markup> {
    Ok(cell(read_number(text).map_err(anyhow::Error::msg)?))
}

fn counts_section(summary: &AgreementSummary) -> Markup {
    let kappa = |k: Option<f64>| k.map_or("undefined".to_string(), |k| format!("{k:.3}"));
    html! {
        section {
            h2 { "Agreement" }
            table {
                tr { th { "" } th.n { "both" } th.n { "A only" } th.n { "B only" } }
                tr { th { "labeled queries" } td.n { (count(summary.overlap.queries_both)) }
                     td.n { (count(summary.overlap.queries_a_only)) } td.n { (count(summary.overlap.queries_b_only)) } }
                tr { th { "judged pairs" } td.n { (count(summary.overlap.pairs_both)) }
                     td.n { (count(summary.overlap.pairs_a_only)) } td.n { (count(summary.overlap.pairs_b_only)) } }
            }
            p {
                "Cohen's kappa on relevant or not: " b { (kappa(summary.relevance_kappa)) }
                "; on grades: " b { (kappa(summary.grade_kappa)) } " linear-weighted, "
                b { (kappa(summary.grade_kappa_unweighted)) } " unweighted, "
                b { (kappa(summary.grade_kappa_quadratic)) } " quadratic-weighted; Krippendorff's alpha on grades as ordered: "
                b { (kappa(summary.grade_alpha_ordinal)) }
                ". 1 is full agreement, 0 what chance gives; undefined when both keys always give one and the same answer."
            }
        }
    }
}

fn matrix_section(summary: &AgreementSummary) -> Markup {
    html! {
        section {
            h2 { "Grades of the pairs both judge" }
            p.note { "Key A's grade by row, key B's by column." }
            table {
                tr { th { "A \\ B" } @for grade in &summary.grades { th.n { (grade) } } }
                @for (grade, row) in summary.grades.iter().zip(&summary.confusion) {
                    tr { th { (grade) } @for n in row { td.n { (count(*n)) } } }
                }
            }
        }
    }
}

fn slices_section(rows: &[Vec<String>]) -> Result<Markup> {
    // Each set of queries once, as stdout shows them.
    let sets: Vec<([&str; 3], u64)> = (rows.iter())
        .map(|row| Ok(([ANY, row[0].as_str(), row[1].as_str()], row[2].parse()?)))
        .collect::<Result<_>>()?;
    let repeats = repeating(&sets);
    let shown: Vec<&Vec<String>> = (rows.iter().zip(repeats))
        .filter(|(_, repeats)| !repeats)
        .map(|(row, _)| row)
        .collect();
    let repeated = rows.len() - shown.len();
    let rows = shown;
    let mut cells = Vec::with_capacity(rows.len());
    for row in &rows {
        let kappas: Vec<Markup> = row[6..11]
            .iter()
            .map(|text| number(text))
            .collect::<Result<_>>()?;
        cells.push(kappas);
    }
    Ok(html! {
        section {
            h2 { "Per task and language" }
            @if repeated > 0 {
                p.note { "Shown once, as the broader set of the same queries: "
                    (plural(repeated as u64, "set", "sets")) " (" code { (AGREEMENT_SLICES_FILE) }
                    " lists every set)." }
            }
            table {
                tr { th { "task" } th { "language" } th.n { "queries" } th.n { "pairs" }
                     th.n { "same grade" } th.n { "same relevance" } th.n { "kappa, relevance" }
                     th.n { "kappa, grades (linear)" } th.n { "unweighted" } th.n { "quadratic" } th.n { "alpha, ordinal" } }
                @for (row, kappas) in rows.iter().zip(cells) {
                    tr {
                        td { (row[0]) } td { (row[1]) }
                        @for n in &row[2..6] { td.n { (n) } }
                        @for kappa in kappas { (kappa) }
                    }
                }
            }
        }
    })
}

fn disagreements_section(rows: &[Vec<String>]) -> Result<Markup> {
    let shown = &rows[..rows.len().min(DISAGREEMENTS_SHOWN)];
    let shifts = (shown.iter())
        .map(|row| number(&row[8]))
        .collect::<Result<Vec<_>>>()?;
    Ok(html! {
        section {
            h2 { "Pairs graded differently" }
            @if rows.is_empty() {
                p { "None: the keys grade every pair both judge alike." }
            } @else {
                p.note { "From the queries whose recall the keys can move most (recall shift: the largest difference in recall between the keys that any ranking shows)." }
                table {
                    tr { th { "query" } th { "document" } th { "task" } th { "language" }
                         th.n { "grade A" } th.n { "grade B" } th.n { "recall shift" } }
                    @for (row, shift) in shown.iter().zip(shifts) {
                        tr { td { code { (row[0]) } } td { code { (row[1]) } } td { (row[2]) } td { (row[3]) }
                             td.n { (row[4]) } td.n { (row[5]) } (shift) }
                    }
                }
                @if rows.len() > DISAGREEMENTS_SHOWN {
                    p.note { (count((rows.len() - DISAGREEMENTS_SHOWN) as u64)) " more in " code { (AGREEMENT_FILE) } "." }
                }
            }
        }
    })
}

/// A metric's row of agreement_tau.csv, and its tau as a cell.
type TauColumn<'a> = (&'a Vec<String>, Markup);

/// Over all queries, per stage and metric, how alike the keys order the
/// runs, and each run's mean under A and B: a table per stage and cutoff,
/// a row per run and a column per metric, so that the page stays as wide
/// however many runs there are (a column per run scrolled sideways by
/// nine) and however many cutoffs were graded.
fn runs_section(means: &[Vec<String>], taus: &[Vec<String>]) -> Result<Markup> {
    let overall = |row: &&Vec<String>, task: usize| row[task] == ANY && row[task + 1] == ANY;
    // The overall means by (run, stage, metric).
    let mut by_run = HashMap::new();
    for m in means.iter().filter(|m| overall(m, 2)) {
        let side = |i: usize| read_number(&m[i]).map_err(anyhow::Error::msg);
        by_run.insert((&*m[0], &*m[1], &*m[4]), (side(5)?, side(6)?));
    }
    let mut runs: Vec<&str> = means.iter().map(|m| m[0].as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    // The (stage, cutoff) tables in file order, each with its metrics'
    // rows of agreement_tau.csv and their taus.
    let mut tables: Vec<((&str, &str), Vec<TauColumn>)> = Vec::new();
    for tau in taus.iter().filter(|t| overall(t, 1)) {
        let cutoff = tau[3].rsplit_once('@').map_or("", |(_, k)| k);
        let table = (tau[0].as_str(), cutoff);
        let column = (tau, number(&tau[5])?);
        match tables.iter_mut().find(|(t, _)| *t == table) {
            Some((_, columns)) => columns.push(column),
            None => tables.push((table, vec![column])),
        }
    }
    let both = |side: Option<&(Option<f64>, Option<f64>)>| {
        let (a, b) = side.copied().unwrap_or((None, None));
        let text = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
        format!("{} / {}", text(a), text(b))
    };
    Ok(html! {
        section {
            h2 { "The runs under both keys" }
            p.note { "Over all queries, per stage and cutoff: each run's mean under A / B, and Kendall's tau between the two keys' orderings of the runs." }
            @for ((stage, cutoff), columns) in &tables {
                h3 { "stage " (stage) @if !cutoff.is_empty() { ", top " (cutoff) } }
                table {
                    tr { th { "run" } @for (tau, _) in columns { th.n { (tau[3]) } } }
                    @for run in &runs {
                        tr { td { (run) }
                             @for (tau, _) in columns { td.n { (both(by_run.get(&(*run, *stage, tau[3].as_str())))) } } }
                    }
                    tr { th { "runs ordered" } @for (tau, _) in columns { td.n { (tau[4]) } } }
                    tr { th { "Kendall's tau" } @for (_, tau) in columns { (tau) } }
                }
            }
        }
    })
}
