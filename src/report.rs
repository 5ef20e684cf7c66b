//! Stage 6, write: per_query.csv, aggregates.csv, rejects.jsonl,
//! summary.json and the stdout table (SPEC §5). Nothing here computes a
//! score; it only lays out what the earlier stages produced.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::aggregate::Aggregate;
use crate::capture::Reject;
use crate::group::{GradeSettings, QueryRow, Status};
use crate::labels::LabelIndex;
use crate::metrics::Metric;
use crate::permissions::LeakSummary;
use crate::stage_loss::StageLoss;
use crate::stale::StaleLabels;

/// The name written for "any" task or language in aggregates.
pub const ANY: &str = "*";

/// A count and its noun: "1 query", "12 queries".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Metric column names, six per cutoff, cutoffs in the order given.
pub fn metric_columns(ks: &[usize]) -> Vec<String> {
    ks.iter()
        .flat_map(|k| Metric::ALL.iter().map(move |m| format!("{}@{k}", m.name())))
        .collect()
}

/// A CSV header: the leading columns, the metric columns, the trailing ones.
fn header(
    leading: &[&str],
    ks: &[usize],
    trailing: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut header: Vec<String> = leading.iter().map(|s| s.to_string()).collect();
    header.extend(metric_columns(ks));
    header.extend(trailing);
    header
}

/// The name of the missing-evidence column: `missing_at_<largest k>`.
pub fn missing_column(ks: &[usize]) -> String {
    format!("missing_at_{}", ks.iter().max().copied().unwrap_or(0))
}

/// The aggregates of one (run, stage).
pub struct PairAggregates {
    /// The run.
    pub run: Box<str>,
    /// The stage.
    pub stage: Box<str>,
    /// Overall, per task, per language, per task × language.
    pub aggregates: Vec<Aggregate>,
}

fn create(dir: &Path, name: &str) -> Result<BufWriter<File>> {
    let path = dir.join(name);
    let file = File::create(&path).with_context(|| format!("{}: cannot create", path.display()))?;
    Ok(BufWriter::with_capacity(1 << 20, file))
}

/// The CSV text of an optional number, as every output of rgrade writes it
/// (see [`NumberCell`]).
pub fn number_text(value: Option<f64>) -> String {
    String::from_utf8_lossy(NumberCell::default().text(value)).into_owned()
}

/// Writes the text of optional numbers for CSV cells: empty when absent,
/// else the shortest text that reads back as the same f64, never with an
/// exponent, as `{}` writes it. Millions of rows make std's float
/// formatting a large share of a run, so whole numbers go through itoa and
/// fractions through zmij, several times faster. The two differ from std
/// only on an exact tie between two shortest texts, which zmij breaks
/// towards the even digit and std upwards. Values zmij would write with
/// an exponent take std's path.
#[derive(Default)]
struct NumberCell {
    whole: itoa::Buffer,
    fraction: zmij::Buffer,
    other: String,
}

impl NumberCell {
    /// Below 2^53 every whole f64 is exactly an integer, and its shortest
    /// text is that integer's.
    const WHOLE_LIMIT: f64 = 9_007_199_254_740_992.0;
    /// zmij writes fractions from here up without an exponent (the other
    /// end, 1e16, is above every f64 fraction).
    const FIXED_FROM: f64 = 1e-5;

    fn text(&mut self, value: Option<f64>) -> &[u8] {
        let Some(v) = value else { return b"" };
        let whole = v as i64;
        if whole as f64 == v && v.abs() < Self::WHOLE_LIMIT && (whole != 0 || v.is_sign_positive())
        {
            self.whole.format(whole).as_bytes()
        } else if v.is_finite() && v.fract() != 0.0 && v.abs() >= Self::FIXED_FROM {
            self.fraction.format_finite(v).as_bytes()
        } else {
            self.other.clear();
            // Writing into a String cannot fail.
            let _ = write!(self.other, "{v}");
            self.other.as_bytes()
        }
    }
}

/// CSV rows as the csv crate writes them (comma-separated, `\n` after each
/// row, fields quoted only where needed), built straight into bytes for
/// the millions of rows of per_query.csv. Numbers never need quoting and
/// most text does not, so only text holding a comma, quote or line end
/// goes through the csv crate to be quoted.
struct CsvRows {
    bytes: Vec<u8>,
    cell: NumberCell,
    row_started: bool,
}

impl CsvRows {
    fn with_capacity(bytes: usize) -> Self {
        CsvRows {
            bytes: Vec::with_capacity(bytes),
            cell: NumberCell::default(),
            row_started: false,
        }
    }

    fn delimit(&mut self) {
        if self.row_started {
            self.bytes.push(b',');
        }
        self.row_started = true;
    }

    fn number(&mut self, value: Option<f64>) {
        self.delimit();
        self.bytes.extend_from_slice(self.cell.text(value));
    }

    fn text(&mut self, text: &str) -> Result<()> {
        self.delimit();
        if text
            .bytes()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
        {
            // The closing quote comes with the end of the record, whose
            // line end is then taken back.
            let mut quoting = csv::Writer::from_writer(&mut self.bytes);
            quoting.write_field(text)?;
            quoting.write_record(None::<&[u8]>)?;
            quoting.flush()?;
            drop(quoting);
            self.bytes.pop();
        } else {
            self.bytes.extend_from_slice(text.as_bytes());
        }
        Ok(())
    }

    fn end_row(&mut self) {
        self.bytes.push(b'\n');
        self.row_started = false;
    }
}

/// Writes per_query.csv, one row per (run, stage, labeled query), as the
/// rows are graded. Rows are formatted on the worker threads a piece at a
/// time, then written in order.
pub struct PerQueryWriter<'a> {
    file: BufWriter<File>,
    labels: &'a LabelIndex,
    n_scores: usize,
}

impl<'a> PerQueryWriter<'a> {
    /// Rows formatted as one piece of work.
    const ROWS_AT_A_TIME: usize = 1 << 11;

    /// Create the file in `dir` and write its header.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(dir: &Path, labels: &'a LabelIndex, settings: &GradeSettings) -> Result<Self> {
        let mut wtr = csv::Writer::from_writer(create(dir, "per_query.csv")?);
        let leading = [
            "run",
            "stage",
            "query_id",
            "task",
            "language",
            "required",
            "status",
            "n_relevant",
            "n_results",
            "first_rel_rank",
            "captures",
            "latency_ms",
            "context_tokens",
        ];
        let trailing = [missing_column(&settings.ks), "unauthorized".to_string()];
        let header = header(&leading, &settings.ks, trailing);
        wtr.write_record(&header)?;
        let file = wtr.into_inner().map_err(|err| err.into_error())?;
        Ok(PerQueryWriter {
            file,
            labels,
            n_scores: settings.n_scores(),
        })
    }

    /// Write the rows of one (run, stage), in the order given, formatting
    /// them on the current rayon pool.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        let pieces: Vec<Vec<u8>> = rows
            .par_chunks(Self::ROWS_AT_A_TIME)
            .map(|rows| self.format(run, stage, rows))
            .collect::<Result<_>>()?;
        for piece in pieces {
            self.file
                .write_all(&piece)
                .context("per_query.csv: cannot write")?;
        }
        Ok(())
    }

    /// The CSV text of `rows`.
    fn format(&self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<Vec<u8>> {
        let labels = self.labels;
        let mut csv = CsvRows::with_capacity(rows.len() * (96 + 12 * self.n_scores));
        let mut missed = String::new();
        for row in rows {
            let q = &labels.queries()[row.query as usize];
            csv.text(run)?;
            csv.text(stage)?;
            csv.text(labels.query_id(row.query))?;
            csv.text(labels.slice_name(q.task))?;
            csv.text(labels.slice_name(q.language))?;
            csv.text(if q.required { "true" } else { "false" })?;
            csv.text(row.status.name())?;
            csv.number(Some(f64::from(q.n_relevant)));
            csv.number(row.n_results);
            csv.number(row.first_rel_rank.map(f64::from));
            csv.number(Some(f64::from(row.captures)));
            csv.number(row.latency_ms);
            csv.number(row.context_tokens);
            for i in 0..self.n_scores {
                csv.number(row.scores.as_ref().map(|s| s[i]));
            }
            missed.clear();
            for (n, &doc) in row.missed.iter().enumerate() {
                if n > 0 {
                    missed.push('|');
                }
                missed.push_str(labels.doc_id(doc));
            }
            csv.text(&missed)?;
            csv.number(row.unauthorized);
            csv.end_row();
        }
        Ok(csv.bytes)
    }

    /// Flush the file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(mut self) -> Result<()> {
        self.file.flush().context("per_query.csv: cannot write")
    }
}

/// Write aggregates.csv: one row per (run, stage, grouping set).
///
/// # Errors
/// The file cannot be created or written.
pub fn write_aggregates(
    dir: &Path,
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
) -> Result<()> {
    let mut wtr = csv::Writer::from_writer(create(dir, "aggregates.csv")?);
    let leading = [
        "run",
        "stage",
        "task",
        "language",
        "queries",
        "ok",
        "missing",
        "invalid",
        "no_answer",
    ];
    let trailing = [
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "context_tokens_mean",
        "leaks",
    ];
    let header = header(&leading, &settings.ks, trailing.map(String::from));
    wtr.write_record(&header)?;
    let mut cell = NumberCell::default();
    for PairAggregates {
        run,
        stage,
        aggregates,
    } in pairs
    {
        for agg in aggregates {
            wtr.write_field(&**run)?;
            wtr.write_field(&**stage)?;
            wtr.write_field(agg.task.map_or(ANY, |t| labels.slice_name(t)))?;
            wtr.write_field(agg.language.map_or(ANY, |l| labels.slice_name(l)))?;
            wtr.write_field(cell.text(Some(agg.queries as f64)))?;
            for status in [
                Status::Ok,
                Status::Missing,
                Status::Invalid,
                Status::NoAnswer,
            ] {
                wtr.write_field(cell.text(Some(agg.status_count(status) as f64)))?;
            }
            let means = agg.means();
            for i in 0..settings.n_scores() {
                wtr.write_field(cell.text(means.as_ref().map(|m| m[i])))?;
            }
            for p in [50.0, 95.0, 99.0] {
                wtr.write_field(cell.text(agg.latency_percentile(p)))?;
            }
            wtr.write_field(cell.text(agg.context_tokens_mean()))?;
            wtr.write_field(cell.text(Some(agg.leaks as f64)))?;
            wtr.write_record(None::<&[u8]>)?;
        }
    }
    wtr.flush().context("aggregates.csv: cannot write")?;
    Ok(())
}

/// One line of rejects.jsonl.
#[derive(Serialize)]
struct RejectLine<'a> {
    file: &'a str,
    line: u64,
    reason: &'static str,
    detail: &'a str,
    record: String,
}

/// Write rejects.jsonl, one object per rejected record, in input order.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_rejects(dir: &Path, rejects: &[Reject], input_names: &[String]) -> Result<()> {
    let mut out = create(dir, "rejects.jsonl")?;
    for reject in rejects {
        let line = RejectLine {
            file: &input_names[reject.origin.input as usize],
            line: reject.origin.line,
            reason: reject.reason.code(),
            detail: &reject.detail,
            record: String::from_utf8_lossy(&reject.excerpt).into_owned(),
        };
        serde_json::to_writer(&mut out, &line).context("rejects.jsonl: cannot write")?;
        out.write_all(b"\n")?;
    }
    out.flush().context("rejects.jsonl: cannot write")?;
    Ok(())
}

/// Key-value pairs serialized as a JSON object, keeping their order.
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Write summary.json.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_summary(dir: &Path, summary: &impl Serialize) -> Result<()> {
    let mut out = create(dir, "summary.json")?;
    serde_json::to_writer_pretty(&mut out, summary).context("summary.json: cannot write")?;
    out.write_all(b"\n")?;
    out.flush().context("summary.json: cannot write")?;
    Ok(())
}

/// Print the table of means per (run, stage), overall then per task and
/// per language, rounded to 3 decimals.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_table(
    out: &mut impl Write,
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
) -> io::Result<()> {
    let metrics = metric_columns(&settings.ks);
    for PairAggregates {
        run,
        stage,
        aggregates,
    } in pairs
    {
        let run = if run.is_empty() { "(unnamed)" } else { run };
        writeln!(out, "run {run}  stage {stage}")?;
        // Task × language rows stay in aggregates.csv: on a terminal they
        // would bury the overall, per-task and per-language rows.
        let (slices, shown): (Vec<String>, Vec<&Aggregate>) = aggregates
            .iter()
            .filter_map(|agg| {
                let name = match (agg.task, agg.language) {
                    (None, None) => "all".to_string(),
                    (Some(t), None) => format!("task={}", labels.slice_name(t)),
                    (None, Some(l)) => format!("language={}", labels.slice_name(l)),
                    (Some(_), Some(_)) => return None,
                };
                Some((name, agg))
            })
            .unzip();
        let width = slices.iter().map(String::len).max().unwrap_or(0).max(5);
        write!(
            out,
            "  {:<width$} {:>7} {:>7} {:>7} {:>7} {:>9}",
            "slice", "queries", "ok", "missing", "invalid", "no_answer"
        )?;
        for name in &metrics {
            write!(
                out,
                " {:>name_width$}",
                name,
                name_width = name.len().max(5)
            )?;
        }
        writeln!(out)?;
        for (slice, agg) in slices.iter().zip(shown) {
            write!(
                out,
                "  {slice:<width$} {:>7} {:>7} {:>7} {:>7} {:>9}",
                agg.queries,
                agg.status_count(Status::Ok),
                agg.status_count(Status::Missing),
                agg.status_count(Status::Invalid),
                agg.status_count(Status::NoAnswer)
            )?;
            let means = agg.means();
            for (i, name) in metrics.iter().enumerate() {
                let w = name.len().max(5);
                match &means {
                    Some(m) => write!(out, " {:>w$.3}", m[i])?,
                    None => write!(out, " {:>w$}", "-")?,
                }
            }
            writeln!(out)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Remove `name` from `dir` if an earlier run left it there: an output
/// this run does not write must not pass for one of its results (an old
/// gate.json read by a CI job, say).
///
/// # Errors
/// The file exists and cannot be removed.
pub fn remove_stale_output(dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err)
            .with_context(|| format!("{}: cannot remove an earlier run's output", path.display())),
        _ => Ok(()),
    }
}

/// stage_loss.csv (totals per run, transition and grouping set) and
/// stage_loss_per_query.csv (the lost ids of every query and transition).
///
/// # Errors
/// A file cannot be written.
pub fn write_stage_loss(dir: &Path, labels: &LabelIndex, loss: &StageLoss) -> Result<()> {
    let slice = |s: Option<u32>| s.map_or(ANY, |s| labels.slice_name(s));
    let mut totals = csv::Writer::from_writer(create(dir, "stage_loss.csv")?);
    totals.write_record([
        "run",
        "task",
        "language",
        "from_stage",
        "to_stage",
        "relevant_found",
        "lost",
        "lost_rate",
    ])?;
    let mut per_query = csv::Writer::from_writer(create(dir, "stage_loss_per_query.csv")?);
    per_query.write_record([
        "run",
        "query_id",
        "task",
        "language",
        "from_stage",
        "to_stage",
        "relevant_found",
        "lost",
        "lost_ids",
    ])?;
    for step in &loss.transitions {
        for set in &step.totals {
            let rate = number_text(set.lost_rate());
            totals.write_record([
                &*step.run,
                slice(set.task),
                slice(set.language),
                &step.from,
                &step.to,
                &set.relevant_found.to_string(),
                &set.lost.to_string(),
                &rate,
            ])?;
        }
        for query in &step.queries {
            let q = &labels.queries()[query.query as usize];
            let lost_ids: Vec<&str> = query.lost.iter().map(|&d| labels.doc_id(d)).collect();
            per_query.write_record([
                &*step.run,
                labels.query_id(query.query),
                labels.slice_name(q.task),
                labels.slice_name(q.language),
                &step.from,
                &step.to,
                &query.relevant_found.to_string(),
                &query.lost.len().to_string(),
                &lost_ids.join("|"),
            ])?;
        }
    }
    totals.flush().context("stage_loss.csv: cannot write")?;
    per_query
        .flush()
        .context("stage_loss_per_query.csv: cannot write")
}

/// The "evidence lost between stages" table: per run and transition, the
/// totals overall and per task.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_stage_loss(
    out: &mut impl Write,
    labels: &LabelIndex,
    loss: &StageLoss,
) -> io::Result<()> {
    if loss.transitions.is_empty() {
        return writeln!(
            out,
            "evidence lost between stages: no run graded two stages of --stage-order"
        );
    }
    writeln!(
        out,
        "evidence lost between stages (relevant documents found, then dropped)"
    )?;
    writeln!(
        out,
        "  {:<16} {:<24} {:<20} {:>14} {:>8} {:>9}",
        "run", "from -> to", "slice", "relevant_found", "lost", "lost_rate"
    )?;
    for step in &loss.transitions {
        let run = if step.run.is_empty() {
            "(unnamed)"
        } else {
            &step.run
        };
        let transition = format!("{} -> {}", step.from, step.to);
        for set in step.totals.iter().filter(|s| s.language.is_none()) {
            let slice = match set.task {
                None => "all".to_string(),
                Some(task) => format!("task={}", labels.slice_name(task)),
            };
            let rate = set
                .lost_rate()
                .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
            writeln!(
                out,
                "  {run:<16} {transition:<24} {slice:<20} {:>14} {:>8} {rate:>9}",
                set.relevant_found, set.lost
            )?;
        }
    }
    writeln!(out)
}

/// summary.json: what was graded, from what, and how it went.
#[derive(Serialize)]
pub struct Summary {
    /// Always "rgrade".
    pub tool: &'static str,
    /// rgrade's version.
    pub version: &'static str,
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The answer key.
    pub labels: LabelsSummary,
    /// Each log input, in the order read.
    pub inputs: Vec<InputSummary>,
    /// The settings that shape the grades.
    pub settings: SettingsSummary,
    /// `--meta KEY=VALUE` facts, in the order given.
    pub meta: OrderedMap<String>,
    /// Record and query counts.
    pub counts: Counts,
    /// The overall row of every (run, stage).
    pub overall: Vec<OverallSummary>,
    /// Labeled documents no capture of their query returned.
    pub stale_labels: StaleLabels,
    /// The first results outside their user's allowed collections.
    pub leaks: Vec<LeakSummary>,
    /// Wall-clock seconds from start to the last output.
    pub elapsed_seconds: f64,
    /// Speed of the whole run.
    pub throughput: Throughput,
}

/// The answer key in summary.json.
#[derive(Serialize)]
pub struct LabelsSummary {
    /// The path as given.
    pub path: String,
    /// File size.
    pub bytes: u64,
    /// xxh3-128 of the file's bytes: `compare` checks two grades used the same labels.
    pub hash: String,
    /// The format read.
    pub format: &'static str,
    /// Labeled queries.
    pub queries: usize,
}

/// One log input in summary.json.
#[derive(Serialize)]
pub struct InputSummary {
    /// The path as given or found (`-` for stdin).
    pub path: String,
    /// Bytes read (compressed size for compressed input).
    pub bytes: u64,
    /// Bytes after decompression.
    pub decoded_bytes: u64,
    /// Lines, blank ones included.
    pub lines: u64,
    /// Non-blank lines: the records.
    pub records: u64,
    /// Records rejected while reading this input (rejects decided later,
    /// such as repeated captures, are only in the total).
    pub rejected: u64,
    /// xxh3-128 of the bytes read, in hex.
    pub hash: String,
}

/// The grading settings in summary.json.
#[derive(Serialize)]
pub struct SettingsSummary {
    /// Cutoffs, in the order given.
    pub k: Vec<usize>,
    /// `--missing`.
    pub missing: String,
    /// `--repeats`.
    pub repeats: String,
    /// `--duplicate-docs`.
    pub duplicate_docs: String,
    /// `--min-rel`.
    pub min_rel: i64,
    /// `--stage`, empty for all.
    pub stages: Vec<String>,
    /// Worker threads used.
    pub threads: usize,
}

/// Counts in summary.json. For every log,
/// `records = graded_records + superseded_records + unlabeled_events +
/// other_stage_events + rejected`.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Labeled queries.
    pub labeled: u64,
    /// Labeled queries without a relevant document.
    pub no_answer: u64,
    /// (run, stage, query) rows with status ok.
    pub graded: u64,
    /// Non-blank input lines.
    pub records: u64,
    /// Blank input lines, skipped.
    pub blank_lines: u64,
    /// Valid records (a TREC line, or a JSONL search event).
    pub events: u64,
    /// Valid records of queries without a label.
    pub unlabeled_events: u64,
    /// Valid records of stages left out by `--stage`.
    pub other_stage_events: u64,
    /// Records in rejects.jsonl.
    pub rejected: u64,
    /// Captures beyond the first of a (run, stage, query).
    pub repeats: u64,
    /// Records behind the graded captures.
    pub graded_records: u64,
    /// Records set aside by `--repeats first|last`.
    pub superseded_records: u64,
    /// Valid records of graded stages that named no allowed collections.
    pub records_without_permissions: u64,
    /// Results outside their user's allowed collections.
    pub leaked_results: u64,
}

/// The overall row of one (run, stage) in summary.json.
#[derive(Serialize)]
pub struct OverallSummary {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// Labeled queries.
    pub queries: u64,
    /// Status ok.
    pub ok: u64,
    /// Status missing.
    pub missing: u64,
    /// Status invalid.
    pub invalid: u64,
    /// Status no_answer.
    pub no_answer: u64,
    /// Metric means by column name (null when no query counts).
    pub metrics: OrderedMap<Option<f64>>,
}

impl OverallSummary {
    /// The summary of an overall aggregate.
    pub fn new(pair: &PairAggregates, overall: &Aggregate, settings: &GradeSettings) -> Self {
        let means = overall.means();
        let metrics = metric_columns(&settings.ks)
            .into_iter()
            .enumerate()
            .map(|(i, name)| (name, means.as_ref().map(|m| m[i])))
            .collect();
        OverallSummary {
            run: pair.run.to_string(),
            stage: pair.stage.to_string(),
            queries: overall.queries,
            ok: overall.status_count(Status::Ok),
            missing: overall.status_count(Status::Missing),
            invalid: overall.status_count(Status::Invalid),
            no_answer: overall.status_count(Status::NoAnswer),
            metrics: OrderedMap(metrics),
        }
    }
}

/// Throughput in summary.json.
#[derive(Serialize)]
pub struct Throughput {
    /// Decompressed log megabytes (10^6 bytes) per second.
    pub mb_per_second: f64,
    /// Input records per second.
    pub records_per_second: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell_text(value: f64) -> String {
        String::from_utf8(NumberCell::default().text(Some(value)).to_vec()).unwrap()
    }

    /// A cell reads back as the value and is as short as std's text; where
    /// the two differ (an exact tie), only the last digit does, by one.
    fn check_cell(value: f64) -> Result<(), String> {
        let (cell, std) = (cell_text(value), format!("{value}"));
        if cell == std {
            return Ok(());
        }
        let reads_back = cell.parse::<f64>().map(f64::to_bits) == Ok(value.to_bits());
        let (cell_last, std_last) = (cell.as_bytes().last(), std.as_bytes().last());
        let last_digit_apart = cell.len() == std.len()
            && cell[..cell.len() - 1] == std[..std.len() - 1]
            && cell_last
                .zip(std_last)
                .is_some_and(|(c, s)| c.abs_diff(*s) == 1);
        if reads_back && last_digit_apart {
            Ok(())
        } else {
            Err(format!("{value:e}: cell {cell}, std {std}"))
        }
    }

    #[test]
    fn cells_write_what_std_writes_at_every_boundary() {
        let cases = [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.5,
            0.1,
            1.0 / 3.0,
            2.0 / 3.0,
            0.2943107231069255,
            87.8,
            1e-5,
            9.999999999999999e-6,
            1.5e-7,
            1e15,
            9007199254740991.0,
            9007199254740992.0,
            1e16,
            1e300,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for value in cases {
            assert_eq!(cell_text(value), format!("{value}"), "{value:e}");
        }
        assert_eq!(NumberCell::default().text(None), b"");
    }

    #[test]
    fn a_tie_goes_to_the_even_digit() {
        // 268140455654867.625 lies exactly between the two shortest texts.
        let value = 268_140_455_654_867.0 + 0.625;
        assert_eq!(format!("{value}"), "268140455654867.63");
        assert_eq!(cell_text(value), "268140455654867.62");
    }

    proptest! {
        /// Rows built by hand read exactly as the csv crate writes them.
        #[test]
        fn csv_rows_match_the_csv_crate(
            rows in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        "[a-z,\"\r\n |#-]{0,6}".prop_map(Ok),
                        prop::option::of(any::<f64>()).prop_map(Err),
                    ],
                    // A row of one empty field is quoted; per_query.csv
                    // rows have twenty fields and more.
                    2..6,
                ),
                1..4,
            ),
        ) {
            let mut ours = CsvRows::with_capacity(0);
            let mut theirs = csv::WriterBuilder::new().flexible(true).from_writer(Vec::new());
            for row in &rows {
                for field in row {
                    match field {
                        Ok(text) => {
                            ours.text(text).unwrap();
                            theirs.write_field(text).unwrap();
                        }
                        Err(number) => {
                            ours.number(*number);
                            let text = NumberCell::default().text(*number).to_vec();
                            theirs.write_field(text).unwrap();
                        }
                    }
                }
                ours.end_row();
                theirs.write_record(None::<&[u8]>).unwrap();
            }
            let theirs = theirs.into_inner().unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&ours.bytes), String::from_utf8_lossy(&theirs));
        }

        #[test]
        fn cells_match_std_for_any_f64(bits in any::<u64>()) {
            check_cell(f64::from_bits(bits)).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn cells_match_std_for_fractions_zmij_writes(value in 1e-5..4.5e15f64) {
            check_cell(value).map_err(TestCaseError::fail)?;
            check_cell(-value).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn cells_write_what_std_writes_for_metric_like_values(
            num in 0u32..2000, den in 1u32..2000, rank in 1u32..2000,
        ) {
            for value in [
                f64::from(num) / f64::from(den),
                f64::from(num) / f64::from(rank + 1).log2(),
                f64::from(num) * 0.1,
            ] {
                prop_assert_eq!(cell_text(value), format!("{value}"));
            }
        }
    }
}
