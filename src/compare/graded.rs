//! One side of a comparison as `grade --out` left it: the rows of one run
//! in per_query.csv, and the facts of summary.json that decide whether two
//! gradings can be compared at all (same labels, same cutoffs).

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use hashbrown::HashMap;

use crate::base::failure::Setting;
use crate::base::metrics::Cutoff;
use crate::base::options::ReviewerPolicy;
use crate::base::schema::{
    judged_columns, judged_cutoffs, metric_names, OutputFile, Status, Summary, PER_QUERY_FILE,
    SUMMARY_FILE,
};
use crate::io::location::Location;
use crate::output::complete::{self, ReadBack};
use crate::output::per_query::PerQueryReader;

/// The settings in summary.json that make two gradings comparable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradingFacts {
    /// The labels' content hash (their file's, in results written before
    /// summary.json recorded one).
    pub labels_hash: String,
    /// `--reviewers`: whose grades counted where several reviewers
    /// judged a pair.
    pub reviewers: Option<ReviewerPolicy>,
    /// `--doc-of`: how results were mapped to documents, if they were.
    pub doc_of: Option<String>,
    /// Cutoffs, in the order given.
    pub ks: Vec<Cutoff>,
    /// `--measures`: the measures asked for by name, as their columns are
    /// named; `None` for the default metrics.
    pub measures: Option<Vec<String>>,
    /// `--min-rel`: which grades count as relevant.
    pub min_rel: i64,
    /// `--missing`: whether uncaptured queries count in the means.
    pub missing_counts: bool,
}

/// A setting in which two gradings differ, so that their means are not
/// comparable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// The labels' content.
    Labels,
    /// `--reviewers`.
    Reviewers,
    /// `--unit` and `--doc-of`.
    Unit,
    /// The cutoffs.
    Cutoffs,
    /// `--measures`.
    Measures,
    /// `--min-rel`.
    MinRel,
    /// `--missing`.
    Missing,
}

impl Difference {
    /// The setting, as alarms.json records it: `labels`, `reviewers`,
    /// `unit`, `cutoffs`, `measures`, `min_rel` or `missing`.
    pub fn code(self) -> &'static str {
        match self {
            Difference::Labels => "labels",
            Difference::Reviewers => "reviewers",
            Difference::Unit => "unit",
            Difference::Cutoffs => "cutoffs",
            Difference::Measures => "measures",
            Difference::MinRel => "min_rel",
            Difference::Missing => "missing",
        }
    }

    /// The setting, as a message names it.
    pub fn name(self) -> String {
        match self {
            Difference::Labels => "labels (their content hashes differ)".to_string(),
            Difference::Reviewers => Setting::Reviewers.to_string(),
            Difference::Unit => format!("{}/{}", Setting::Unit, Setting::DocOf),
            Difference::Cutoffs => "cutoffs".to_string(),
            Difference::Measures => Setting::Measures.to_string(),
            Difference::MinRel => Setting::MinRel.to_string(),
            Difference::Missing => Setting::Missing.to_string(),
        }
    }
}

impl GradingFacts {
    /// The first setting in which these facts and `other` differ: the one
    /// list of what makes two gradings comparable, which compare and trend
    /// both check.
    pub fn difference(&self, other: &GradingFacts) -> Option<Difference> {
        // Reviewers counted differently make the judgments differ too: name
        // the cause.
        [
            (self.reviewers != other.reviewers, Difference::Reviewers),
            (self.labels_hash != other.labels_hash, Difference::Labels),
            (self.doc_of != other.doc_of, Difference::Unit),
            (self.ks != other.ks, Difference::Cutoffs),
            (self.measures != other.measures, Difference::Measures),
            (self.min_rel != other.min_rel, Difference::MinRel),
            (
                self.missing_counts != other.missing_counts,
                Difference::Missing,
            ),
        ]
        .into_iter()
        .find_map(|(differs, difference)| differs.then_some(difference))
    }
}

/// Small repeated strings (stages, tasks, languages, splits) stored once.
#[derive(Debug, Default)]
pub struct Names {
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Names {
    /// The id of `name`, adding it if new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The id of `name`, if it was seen.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name behind an id.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// One row of per_query.csv.
#[derive(Debug, Clone)]
pub struct GradedQuery {
    /// The stage, in [`GradedRun::names`].
    pub stage: u32,
    /// The query.
    pub query_id: Box<str>,
    /// The task, in [`GradedRun::names`].
    pub task: u32,
    /// The language, in [`GradedRun::names`].
    pub language: u32,
    /// The held-out split, in [`GradedRun::names`].
    pub split: u32,
    /// A regression case a change must not lose.
    pub required: bool,
    /// How the query was graded.
    pub status: Status,
    /// Mean latency of its graded captures.
    pub latency_ms: Option<f64>,
    /// Mean context size of its graded captures.
    pub context_tokens: Option<f64>,
    /// Where its row starts in per_query.csv: the few rows whose evidence
    /// is shown are read again from there.
    pub offset: u64,
}

/// The rows of one run of a grade output.
#[derive(Debug)]
pub struct GradedRun {
    /// The per_query.csv read.
    pub path: PathBuf,
    /// The result it is in, as named (kept while a copy of it is read).
    pub source: ReadBack,
    /// Its entry in its summary.json: what was read, and what a second
    /// reading must find again.
    pub listed: OutputFile,
    /// The run's name.
    pub run: String,
    /// The facts of summary.json.
    pub facts: GradingFacts,
    /// Metric column names, in file order.
    pub metrics: Vec<String>,
    /// The rows, in file order.
    pub queries: Vec<GradedQuery>,
    /// Row-major scores, `metrics.len()` per row; an empty cell (a query
    /// with no score, such as `no_answer`) reads as 0.
    pub scores: Vec<f64>,
    /// Stage, task, language and split names.
    pub names: Names,
}

impl GradedRun {
    /// The score of row `row` in metric column `metric`.
    pub fn score(&self, row: usize, metric: usize) -> f64 {
        self.scores[row * self.metrics.len() + metric]
    }
}

/// Which side of the comparison a path is: named in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The current system.
    Baseline,
    /// The proposed change.
    Candidate,
}

impl Side {
    /// "baseline" or "candidate".
    pub fn name(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        }
    }
}

/// Read the rows of one run from a grade output: `path` is the `--out`
/// directory or its per_query.csv (summary.json must sit beside it). With
/// `run` unset, the file must hold exactly one run.
///
/// # Errors
/// Missing or malformed files, an unknown run, or several runs when none
/// was picked; each message names the file (and line).
pub fn load(path: &Path, run: Option<&str>, side: Side) -> Result<GradedRun> {
    let source = ReadBack::open(path)?;
    let (per_query, summary) = locate(source.path())?;
    let parsed = complete::read_summary(&summary)?;
    let facts = facts_of(&parsed, &summary, &per_query)?;
    let listed = listed(&parsed, &summary, &per_query)?.clone();
    let asked = facts.measures.as_deref();
    let mut reader = PerQueryReader::open_as_listed(&per_query, &facts.ks, asked, &listed)?;
    let mut metrics = metric_names(&facts.ks, asked);
    if reader.has_judged() {
        metrics.extend(judged_columns(judged_cutoffs(&facts.ks, asked)));
    }
    let mut graded = GradedRun {
        path: per_query.clone(),
        source,
        listed,
        run: run.unwrap_or_default().to_string(),
        facts,
        metrics,
        queries: Vec::new(),
        scores: Vec::new(),
        names: Names::default(),
    };
    let quality = metric_names(&graded.facts.ks, graded.facts.measures.as_deref()).len();
    let width = graded.metrics.len();
    let mut picked = run.is_some();
    let mut other_runs: Vec<String> = Vec::new();
    while let Some(row) = reader.next_row()? {
        if !picked {
            graded.run = row.run.to_string();
            picked = true;
        }
        if row.run != graded.run {
            if !other_runs.iter().any(|r| r == row.run) {
                other_runs.push(row.run.to_string());
            }
            continue;
        }
        // A row without scores (a query such as no_answer) reads as 0s.
        for (cells, columns) in [(row.metrics, quality), (row.judged, width - quality)] {
            let start = graded.scores.len();
            graded.scores.extend(cells.into_iter().flatten());
            graded.scores.resize(start + columns, 0.0);
        }
        let query = GradedQuery {
            stage: graded.names.intern(row.stage),
            query_id: row.query_id.into(),
            task: graded.names.intern(row.task),
            language: graded.names.intern(row.language),
            split: graded.names.intern(row.split),
            required: row.required,
            status: row.status,
            latency_ms: row.latency_ms,
            context_tokens: row.context_tokens,
            offset: row.offset,
        };
        graded.queries.push(query);
    }
    let quoted = |runs: &[String]| {
        let quoted: Vec<String> = runs.iter().map(|r| format!("'{r}'")).collect();
        quoted.join(", ")
    };
    if graded.queries.is_empty() {
        bail!(
            "{}: no rows of run '{}' (runs found: {})",
            per_query.display(),
            graded.run,
            quoted(&other_runs)
        );
    }
    if run.is_none() && !other_runs.is_empty() {
        other_runs.insert(0, graded.run.clone());
        bail!(
            "{}: holds several runs ({}); pick one with --{}-run",
            per_query.display(),
            quoted(&other_runs),
            side.name()
        );
    }
    Ok(graded)
}

/// per_query.csv and summary.json for a directory or a per_query.csv path.
pub fn locate(path: &Path) -> Result<(PathBuf, PathBuf)> {
    Location::local_only(path, "a result read back")?;
    let per_query = if path.is_dir() {
        path.join(PER_QUERY_FILE)
    } else {
        path.to_path_buf()
    };
    ensure!(
        per_query.is_file(),
        "{}: not found (expected the output directory of a grading, or its per_query.csv)",
        per_query.display()
    );
    let summary = per_query.with_file_name(SUMMARY_FILE);
    ensure!(
        summary.is_file(),
        "{}: not found beside {} (needed to check both sides used the same labels and cutoffs)",
        summary.display(),
        per_query.display()
    );
    Ok((per_query, summary))
}

/// `per_query` as `parsed`, the summary.json at `summary`, lists it.
///
/// # Errors
/// It is not listed.
pub fn listed<'a>(parsed: &'a Summary, summary: &Path, per_query: &Path) -> Result<&'a OutputFile> {
    let name = per_query.file_name().map(|n| n.to_string_lossy());
    let found =
        (parsed.outputs.iter()).find(|listed| Some(listed.name.as_str()) == name.as_deref());
    found.with_context(|| {
        format!(
            "{}: not listed in {}: not a complete grade output",
            per_query.display(),
            summary.display()
        )
    })
}

/// The facts of `parsed`, the summary.json at `summary`, once it is seen
/// to list `per_query`.
///
/// # Errors
/// `per_query` is not listed, or a setting is out of range.
pub fn facts_of(parsed: &Summary, summary: &Path, per_query: &Path) -> Result<GradingFacts> {
    listed(parsed, summary, per_query)?;
    // Compared as if unsliced, its log-field slices would be dropped
    // without a word: refused instead, naming the option.
    if !parsed.settings.slice_by.is_empty() {
        bail!(
            "{}: graded with {} {}: compare and trend do not read slices by log fields; \
             grade these logs again without it to compare them",
            summary.display(),
            Setting::SliceBy,
            parsed.settings.slice_by.join(",")
        );
    }
    let ks = &parsed.settings.k;
    if ks.is_empty() || ks.contains(&Cutoff::At(0)) {
        bail!(
            "{}: settings.k must list cutoffs of at least 1",
            summary.display()
        );
    }
    let missing_counts = match parsed.settings.missing.as_str() {
        "fail" => true,
        "skip" => false,
        other => bail!("{}: unknown missing policy '{other}'", summary.display()),
    };
    Ok(GradingFacts {
        labels_hash: match parsed.labels.content_hash.as_str() {
            "" => parsed.labels.hash.clone(),
            content => content.to_string(),
        },
        reviewers: (parsed.labels.reviewers.as_ref()).and_then(|r| r.policy.clone()),
        doc_of: parsed.settings.doc_of.clone(),
        ks: parsed.settings.k.clone(),
        measures: parsed.settings.measures.clone(),
        min_rel: parsed.settings.min_rel,
        missing_counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fact_makes_a_difference() {
        let facts = GradingFacts {
            labels_hash: "a".into(),
            reviewers: None,
            doc_of: None,
            ks: vec![Cutoff::At(10)],
            measures: None,
            min_rel: 1,
            missing_counts: true,
        };
        assert_eq!(facts.difference(&facts.clone()), None);
        type Change = fn(&mut GradingFacts);
        let changed: [(Change, Difference); 7] = [
            (|f| f.labels_hash = "b".into(), Difference::Labels),
            (
                |f| f.reviewers = Some(ReviewerPolicy::Majority),
                Difference::Reviewers,
            ),
            (|f| f.doc_of = Some("#.*".into()), Difference::Unit),
            (|f| f.ks = vec![Cutoff::At(5)], Difference::Cutoffs),
            (
                |f| f.measures = Some(vec!["bpref".into()]),
                Difference::Measures,
            ),
            (|f| f.min_rel = 2, Difference::MinRel),
            (|f| f.missing_counts = false, Difference::Missing),
        ];
        for (change, difference) in changed {
            let mut other = facts.clone();
            change(&mut other);
            assert_ne!(other, facts);
            assert_eq!(facts.difference(&other), Some(difference));
        }
    }
}
