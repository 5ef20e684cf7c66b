//! per_query.csv read back, row by row, into the page's [`Collector`]:
//! how `rgrade report` draws a grading it did not just make.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};

use super::collect::{Collector, PerQueryRow};
use crate::base::metrics::Cutoff;
use crate::base::schema::{
    metric_columns, missing_column, Status, CONTEXT_TOKENS, LANGUAGE, LATENCY_MS, QUERY_ID, RUN,
    SPLIT, STAGE, STATUS, TASK,
};
use crate::output::cells::{read_measure, read_metric};

/// The columns read, in the order [`CsvRow`] keeps them.
const COLUMNS: [&str; 11] = [
    RUN,
    STAGE,
    QUERY_ID,
    TASK,
    LANGUAGE,
    STATUS,
    "n_relevant",
    "first_rel_rank",
    LATENCY_MS,
    CONTEXT_TOKENS,
    SPLIT,
];

/// Feed every row of the per_query.csv at `path`, graded at cutoffs `ks`,
/// to `collector`.
///
/// # Errors
/// The file cannot be read, lacks a column, holds a cell that is not as
/// rgrade writes it, or is not sorted by (run, stage).
pub fn read(path: &Path, ks: &[Cutoff], collector: &mut Collector) -> Result<()> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let header = reader.headers()?.clone();
    let position = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("{}: no column {name}", path.display()))
    };
    let columns: Vec<usize> = COLUMNS.iter().map(|c| position(c)).collect::<Result<_>>()?;
    let metrics: Vec<usize> = metric_columns(ks)
        .iter()
        .map(|c| position(c))
        .collect::<Result<_>>()?;
    let missed = position(&missing_column(ks))?;
    let mut record = csv::StringRecord::new();
    let mut row = CsvRow::default();
    let mut seen = Vec::<(String, String)>::new();
    while reader
        .read_record(&mut record)
        .with_context(|| format!("{}: cannot read", path.display()))?
    {
        let line = record.position().map_or(0, |p| p.line());
        row.fill(&record, &header, &columns, &metrics, missed)
            .with_context(|| format!("{}:{line}", path.display()))?;
        let (run, stage) = (&record[columns[0]], &record[columns[1]]);
        if !collector.is_pair(run, stage) {
            if seen.iter().any(|(r, s)| r == run && s == stage) {
                bail!(
                    "{}:{line}: rows of run '{run}', stage '{stage}' are not together: \
                     not a per_query.csv written by rgrade",
                    path.display()
                );
            }
            seen.push((run.to_string(), stage.to_string()));
            collector.begin_pair(run, stage, 0);
        }
        collector.add(&row);
    }
    Ok(())
}

/// One row of per_query.csv, parsed.
#[derive(Default)]
struct CsvRow {
    text: [String; 4],
    split: String,
    status: Option<Status>,
    n_relevant: u32,
    first_rel_rank: Option<u32>,
    latency_ms: Option<f64>,
    context_tokens: Option<f64>,
    scores: Vec<f64>,
    has_scores: bool,
    missed: String,
}

impl CsvRow {
    fn fill(
        &mut self,
        record: &csv::StringRecord,
        header: &csv::StringRecord,
        columns: &[usize],
        metrics: &[usize],
        missed: usize,
    ) -> Result<()> {
        for (text, &at) in self.text.iter_mut().zip(&columns[2..6]) {
            text.clear();
            text.push_str(&record[at]);
        }
        let status = &record[columns[5]];
        self.status =
            Some(Status::from_name(status).with_context(|| format!("unknown status '{status}'"))?);
        self.n_relevant = parse(&record[columns[6]])?.unwrap_or(0);
        self.first_rel_rank = parse(&record[columns[7]])?;
        // Ranks start at 1, and a query graded ok has a relevant document.
        if self.first_rel_rank == Some(0) {
            bail!("'0' is not a rank in column first_rel_rank");
        }
        if self.status == Some(Status::Ok) && self.n_relevant == 0 {
            bail!("a query graded ok with no relevant document (n_relevant 0)");
        }
        // Cells as compare reads them: a number no output of rgrade holds
        // (NaN, inf, a negative latency, a metric beyond [0, 1]) is
        // refused, never drawn.
        let cell = |at: usize, read: fn(&str) -> Result<Option<f64>, String>| {
            read(&record[at]).map_err(|err| anyhow!("{err} in column {}", &header[at]))
        };
        self.latency_ms = cell(columns[8], read_measure)?;
        self.context_tokens = cell(columns[9], read_measure)?;
        self.split.clear();
        self.split.push_str(&record[columns[10]]);
        self.scores.clear();
        for &at in metrics {
            self.scores.extend(cell(at, read_metric)?);
        }
        self.has_scores = match self.scores.len() {
            0 => false,
            n if n == metrics.len() => true,
            _ => bail!("some metric cells are empty and some not"),
        };
        self.missed.clear();
        self.missed.push_str(&record[missed]);
        Ok(())
    }
}

/// An optional number cell.
fn parse<T: std::str::FromStr>(cell: &str) -> Result<Option<T>> {
    match cell {
        "" => Ok(None),
        _ => match cell.parse() {
            Ok(value) => Ok(Some(value)),
            Err(_) => bail!("'{cell}' is not a number"),
        },
    }
}

impl PerQueryRow for CsvRow {
    fn query_id(&self) -> &str {
        &self.text[0]
    }
    fn task(&self) -> &str {
        &self.text[1]
    }
    fn language(&self) -> &str {
        &self.text[2]
    }
    fn split(&self) -> &str {
        &self.split
    }
    fn status(&self) -> Status {
        self.status.unwrap_or(Status::Missing)
    }
    fn n_relevant(&self) -> u32 {
        self.n_relevant
    }
    fn first_rel_rank(&self) -> Option<u32> {
        self.first_rel_rank
    }
    fn latency_ms(&self) -> Option<f64> {
        self.latency_ms
    }
    fn context_tokens(&self) -> Option<f64> {
        self.context_tokens
    }
    fn scores(&self) -> Option<&[f64]> {
        self.has_scores.then_some(&self.scores[..])
    }
    fn missed(&self) -> String {
        self.missed.clone()
    }
}
