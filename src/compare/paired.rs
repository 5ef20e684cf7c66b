//! Both sides paired: the two runs' queries matched by (stage, query_id), with each
//! metric's scores held as one flat column per side, so that a slice's
//! deltas are a gather over contiguous memory and the statistics run over
//! plain `f64` slices.

use std::path::PathBuf;

use anyhow::{bail, ensure, Result};
use hashbrown::HashMap;
use rayon::prelude::*;

use super::graded::{Difference, GradedRun, Names};
use crate::base::failure::Setting;
use crate::base::metrics::Cutoff;
use crate::base::options::ReviewerPolicy;
use crate::base::power::{self, POWER};
use crate::base::schema::{metric_names, OutputFile, Status};
use crate::base::slices::{split_slice_keys, split_slice_order, SplitSliceKey, NO_SLICE};
use crate::base::stats::{self, NoInterval, WinsTiesLosses};
use crate::base::text::plural;
use crate::output::complete::ReadBack;

/// One side's view of a paired query, besides its scores.
#[derive(Debug, Clone, Copy)]
pub struct SideFacts {
    /// How the query was graded.
    pub status: Status,
    /// Mean latency of its graded captures.
    pub latency_ms: Option<f64>,
    /// Mean context size of its graded captures.
    pub context_tokens: Option<f64>,
    /// Where its row starts in its per_query.csv.
    pub offset: u64,
}

/// A labeled query of one stage, graded by both runs.
#[derive(Debug, Clone)]
pub struct PairedQuery {
    /// The query.
    pub query_id: Box<str>,
    /// The task, in [`Paired::names`].
    pub task: u32,
    /// The language, in [`Paired::names`].
    pub language: u32,
    /// The held-out split, in [`Paired::names`].
    pub split: u32,
    /// A regression case a change must not lose.
    pub required: bool,
    /// Whether the query counts in the means: it has a relevant document,
    /// and (under `--missing skip`, where logs cover part of the labels)
    /// both runs captured it.
    pub counted: bool,
    /// The baseline's status, latency and context.
    pub baseline: SideFacts,
    /// The candidate's status, latency and context.
    pub candidate: SideFacts,
}

/// The paired queries of one stage, sorted by query_id (byte order).
#[derive(Debug)]
pub struct StagePairs {
    /// The stage.
    pub stage: String,
    /// The queries, sorted by query_id.
    pub queries: Vec<PairedQuery>,
    /// Metric-major: metric `m` of query `i` is at `m * queries.len() + i`.
    baseline: Vec<f64>,
    candidate: Vec<f64>,
}

impl StagePairs {
    /// The baseline's scores of metric `metric`, one per query.
    pub fn baseline(&self, metric: usize) -> &[f64] {
        let n = self.queries.len();
        &self.baseline[metric * n..(metric + 1) * n]
    }

    /// The candidate's scores of metric `metric`, one per query.
    pub fn candidate(&self, metric: usize) -> &[f64] {
        let n = self.queries.len();
        &self.candidate[metric * n..(metric + 1) * n]
    }

    /// Candidate minus baseline in `metric` for each query of `members`.
    pub fn deltas(&self, metric: usize, members: &[u32]) -> Vec<f64> {
        let (base, cand) = (self.baseline(metric), self.candidate(metric));
        members
            .iter()
            .map(|&i| cand[i as usize] - base[i as usize])
            .collect()
    }

    /// The grouping sets over the counted queries: overall, each task,
    /// each language, each task × language, each group sorted by name;
    /// then the same within each split when the labels name splits. Sets
    /// without a counted query are left out.
    pub fn grouping_sets(&self, names: &Names) -> Vec<GroupingSet> {
        let none = names.get(NO_SLICE);
        let has_splits = self.queries.iter().any(|q| Some(q.split) != none);
        let mut sets: HashMap<SplitSliceKey, Vec<u32>> = HashMap::new();
        for (i, q) in self.queries.iter().enumerate() {
            if !q.counted {
                continue;
            }
            let split = has_splits.then_some(q.split);
            for key in split_slice_keys(q.task, q.language, split) {
                sets.entry(key).or_default().push(i as u32);
            }
        }
        let mut sets: Vec<GroupingSet> = sets
            .into_iter()
            .map(|((split, (task, language)), members)| GroupingSet {
                split,
                task,
                language,
                members,
            })
            .collect();
        let name = |slice: u32| names.name(slice);
        sets.sort_by_cached_key(|set| split_slice_order(set.key(), name));
        sets
    }

    /// Mean, interval, wins / ties / losses and p-values of each metric of
    /// `metrics` over `members` (non-empty), Holm-adjusted across the
    /// distinct hypotheses among them: metrics whose per-query deltas are
    /// equal over `members` are counted once.
    pub fn changes(
        &self,
        members: &[u32],
        metrics: &[usize],
        settings: &StatSettings,
    ) -> Vec<MetricChange> {
        let (deltas, same_as) = self.hypotheses(members, metrics);
        let family = stats::distinct_count(&same_as);
        let mut changes: Vec<MetricChange> = metrics
            .par_iter()
            .zip(&deltas)
            .map(|(&metric, deltas)| self.change(metric, members, deltas, settings))
            .collect();
        let p_values: Vec<f64> = changes.iter().map(|c| c.p_value).collect();
        let adjusted = stats::holm_distinct(&p_values, &same_as);
        for (i, (change, p_holm)) in changes.iter_mut().zip(adjusted).enumerate() {
            change.p_holm = p_holm;
            change.holm_family = family;
            change.repeats = (same_as[i] != i).then(|| metrics[same_as[i]]);
        }
        changes
    }

    /// The number of distinct hypotheses among `metrics` over `members`:
    /// the size of the Holm family [`StagePairs::changes`] adjusts over.
    pub fn distinct_hypotheses(&self, members: &[u32], metrics: &[usize]) -> usize {
        stats::distinct_count(&self.hypotheses(members, metrics).1)
    }

    /// Each metric's deltas over `members`, and for each the first metric
    /// (a position in `metrics`) with equal deltas.
    fn hypotheses(&self, members: &[u32], metrics: &[usize]) -> (Vec<Vec<f64>>, Vec<usize>) {
        let deltas: Vec<Vec<f64>> = metrics
            .iter()
            .map(|&metric| self.deltas(metric, members))
            .collect();
        let same_as = stats::first_equal(&deltas);
        (deltas, same_as)
    }

    fn change(
        &self,
        metric: usize,
        members: &[u32],
        deltas: &[f64],
        settings: &StatSettings,
    ) -> MetricChange {
        let mean = |scores: &[f64]| {
            members.iter().map(|&i| scores[i as usize]).sum::<f64>() / members.len() as f64
        };
        let (baseline, candidate) = (mean(self.baseline(metric)), mean(self.candidate(metric)));
        // Scores lie in [0, 1], so a mean delta lies in [-1, 1] whatever
        // the interval's arithmetic says.
        let ci = stats::mean_delta_interval(deltas, settings.confidence)
            .map(|(low, high)| (low.max(-1.0), high.min(1.0)));
        let spread = power::spread(deltas);
        MetricChange {
            metric,
            queries: members.len(),
            baseline,
            candidate,
            delta: candidate - baseline,
            ci,
            counts: stats::wins_ties_losses(deltas),
            p_value: stats::paired_randomization_p_value(
                deltas,
                settings.permutations,
                settings.seed,
            ),
            p_holm: f64::NAN,
            holm_family: 0,
            repeats: None,
            mde: power::minimum_detectable_effect(spread, members.len(), settings.alpha, POWER),
            queries_for_mde: (settings.mde)
                .and_then(|effect| power::queries_to_detect(effect, spread, settings.alpha, POWER)),
        }
    }
}

/// A grouping set of one stage: `None` means any split, task or language.
#[derive(Debug, Clone)]
pub struct GroupingSet {
    /// The split, or any.
    pub split: Option<u32>,
    /// The task, or any.
    pub task: Option<u32>,
    /// The language, or any.
    pub language: Option<u32>,
    /// The counted queries in the set, as indices into
    /// [`StagePairs::queries`], ascending.
    pub members: Vec<u32>,
}

impl GroupingSet {
    /// The set's split, task and language.
    pub fn key(&self) -> SplitSliceKey {
        (self.split, (self.task, self.language))
    }
}

/// How the statistics are computed.
#[derive(Debug, Clone, Copy)]
pub struct StatSettings {
    /// Sign-flip permutations of the randomization test.
    pub permutations: usize,
    /// Coverage of the interval (0.95).
    pub confidence: f64,
    /// Seed of the permutations, so every run gives the same numbers.
    pub seed: u64,
    /// The two-sided level the power figures are for.
    pub alpha: f64,
    /// `--mde D`: the change to find the queries needed for.
    pub mde: Option<f64>,
}

/// One metric's change over a set of queries.
#[derive(Debug, Clone)]
pub struct MetricChange {
    /// The metric, as an index into [`Paired::metrics`].
    pub metric: usize,
    /// Queries compared.
    pub queries: usize,
    /// The baseline's mean.
    pub baseline: f64,
    /// The candidate's mean.
    pub candidate: f64,
    /// Candidate minus baseline.
    pub delta: f64,
    /// Interval of the mean delta, or why none is valid.
    pub ci: Result<(f64, f64), NoInterval>,
    /// Queries improved, unchanged and hurt.
    pub counts: WinsTiesLosses,
    /// Two-sided paired randomization p-value.
    pub p_value: f64,
    /// `p_value` after the Holm adjustment across the distinct hypotheses
    /// among the metrics compared.
    pub p_holm: f64,
    /// The Holm family's size: the metrics compared, those with equal
    /// per-query deltas counted once.
    pub holm_family: usize,
    /// The metric (an index into [`Paired::metrics`]) compared before this
    /// one whose per-query deltas equal this one's, if any: they test one
    /// hypothesis.
    pub repeats: Option<usize>,
    /// The smallest change a paired t-test of these queries detects with
    /// 80% power, from the spread of their differences.
    pub mde: Option<f64>,
    /// The queries such a test needs to detect `--mde`, if asked.
    pub queries_for_mde: Option<u64>,
}

/// The Holm family of one grouping set's `changes` in words, naming the
/// metrics counted once because their per-query deltas equal another's:
/// "Holm family of 4 metrics", "Holm family of 3 (4 metrics; rr@100
/// equals rr@10 query by query)".
pub fn holm_family_text(changes: &[MetricChange], names: &[String]) -> String {
    let family = changes.first().map_or(0, |c| c.holm_family);
    let repeats: Vec<String> = changes
        .iter()
        .filter_map(|c| {
            c.repeats
                .map(|first| format!("{} equals {}", names[c.metric], names[first]))
        })
        .collect();
    if repeats.is_empty() {
        return format!(
            "Holm family of {}",
            plural(family as u64, "metric", "metrics")
        );
    }
    format!(
        "Holm family of {family} ({}; {} query by query)",
        plural(changes.len() as u64, "metric", "metrics"),
        repeats.join(", ")
    )
}

/// Where one side of the comparison came from.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The run's name.
    pub run: String,
    /// The per_query.csv read.
    pub path: PathBuf,
    /// The result it is in, as named.
    pub source: ReadBack,
    /// Its entry in its summary.json, which a second reading must match.
    pub listed: OutputFile,
}

/// Both runs' queries, paired per stage.
#[derive(Debug)]
pub struct Paired {
    /// xxh3-128 of the labels both runs were graded with.
    pub labels_hash: String,
    /// The cutoffs both were graded at, in the order given.
    pub ks: Vec<Cutoff>,
    /// The measures both were graded with by name, if any.
    pub measures: Option<Vec<String>>,
    /// The baseline run.
    pub baseline: Origin,
    /// The candidate run.
    pub candidate: Origin,
    /// Every metric column both sides hold, in per_query.csv order: the
    /// quality metrics, then judged@k.
    pub metrics: Vec<String>,
    /// How many of `metrics` are quality metrics (the six per cutoff).
    pub quality_metrics: usize,
    /// The stages both runs graded, sorted by name.
    pub stages: Vec<StagePairs>,
    /// Stages graded by one run only, with the run that has them: they
    /// cannot be compared, and the user is told.
    pub unpaired_stages: Vec<(String, &'static str)>,
    /// Task and language names.
    pub names: Names,
}

impl Paired {
    /// The deepest cutoff both were graded at: the one whose missing
    /// evidence per_query.csv lists.
    pub fn deepest(&self) -> Cutoff {
        self.ks.iter().max().copied().unwrap_or(Cutoff::At(0))
    }

    /// The index of a metric column, if both sides have it.
    pub fn metric(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m == name)
    }
}

/// Pair the queries of the two runs by (stage, query_id), over the metric
/// columns both hold.
///
/// # Errors
/// The two were graded with different labels, cutoffs, measures,
/// `--min-rel` or `--missing`, share no stage, or a stage's queries differ.
pub fn pair(baseline: GradedRun, candidate: GradedRun) -> Result<Paired> {
    check_comparable(&baseline, &candidate)?;
    // Both sides hold the quality metrics of their (equal) cutoffs; a
    // grading by an older rgrade lacks judged@k, which is then left out.
    let quality_metrics =
        metric_names(&baseline.facts.ks, baseline.facts.measures.as_deref()).len();
    let n_metrics = if baseline.metrics == candidate.metrics {
        baseline.metrics.len()
    } else {
        quality_metrics
    };
    let base_stages = stage_rows(&baseline);
    let mut cand_stages = stage_rows(&candidate);
    let mut stage_names: Vec<(String, u32)> = base_stages
        .keys()
        .map(|&id| (baseline.names.name(id).to_string(), id))
        .collect();
    stage_names.sort_unstable();

    let mut stages = Vec::new();
    let mut unpaired_stages = Vec::new();
    for (name, base_id) in stage_names {
        let cand_rows = candidate
            .names
            .get(&name)
            .and_then(|id| cand_stages.remove(&id));
        let Some(cand_rows) = cand_rows else {
            unpaired_stages.push((name, "baseline"));
            continue;
        };
        let base_rows = &base_stages[&base_id];
        stages.push(pair_stage(
            &name, &baseline, base_rows, &candidate, &cand_rows, n_metrics,
        )?);
    }
    let mut candidate_only: Vec<String> = cand_stages
        .into_keys()
        .map(|id| candidate.names.name(id).to_string())
        .collect();
    candidate_only.sort_unstable();
    unpaired_stages.extend(candidate_only.into_iter().map(|s| (s, "candidate")));
    ensure!(
        !stages.is_empty(),
        "{} and {} share no stage: nothing to compare",
        baseline.path.display(),
        candidate.path.display()
    );
    let origin = |run: &GradedRun| Origin {
        run: run.run.clone(),
        path: run.path.clone(),
        source: run.source.clone(),
        listed: run.listed.clone(),
    };
    Ok(Paired {
        labels_hash: baseline.facts.labels_hash.clone(),
        ks: baseline.facts.ks.clone(),
        measures: baseline.facts.measures.clone(),
        baseline: origin(&baseline),
        candidate: origin(&candidate),
        quality_metrics,
        metrics: baseline.metrics[..n_metrics].to_vec(),
        stages,
        unpaired_stages,
        names: baseline.names,
    })
}

/// The rows of each stage of a run.
fn stage_rows(run: &GradedRun) -> HashMap<u32, Vec<usize>> {
    let mut stages: HashMap<u32, Vec<usize>> = HashMap::new();
    for (row, q) in run.queries.iter().enumerate() {
        stages.entry(q.stage).or_default().push(row);
    }
    stages
}

/// Two gradings are comparable only on the same frozen questions, labels
/// and cutoffs.
fn check_comparable(baseline: &GradedRun, candidate: &GradedRun) -> Result<()> {
    let (b, c) = (&baseline.facts, &candidate.facts);
    let Some(difference) = b.difference(c) else {
        return Ok(());
    };
    let both = format!(
        "{} and {}",
        baseline.path.display(),
        candidate.path.display()
    );
    let policy = |p: &Option<ReviewerPolicy>| match p {
        Some(policy) => Setting::Reviewers.given(policy).to_string(),
        None => format!("no {}", Setting::Reviewers),
    };
    let unit = |doc_of: &Option<String>| match doc_of {
        Some(pattern) => format!(
            "{} {}",
            Setting::Unit.given("doc"),
            Setting::DocOf.given(format!("{pattern:?}"))
        ),
        None => "results as they are".to_string(),
    };
    bail!(match difference {
        Difference::Labels => format!(
            "{both} were graded with different labels (hash {} vs {}): compare needs the same \
             answer key",
            b.labels_hash, c.labels_hash
        ),
        Difference::Reviewers => format!(
            "{both} were graded with the labels' reviewers counted differently ({} vs {}): \
             compare needs the same answer key",
            policy(&b.reviewers),
            policy(&c.reviewers)
        ),
        Difference::Unit => format!(
            "{both} graded different units ({} vs {}): compare needs the same",
            unit(&b.doc_of),
            unit(&c.doc_of)
        ),
        Difference::Cutoffs => format!(
            "{both} were graded at different cutoffs ({} vs {}): regrade one with the \
             other's {}",
            Setting::K.given(cutoff_list(&b.ks)),
            Setting::K.given(cutoff_list(&c.ks)),
            Setting::K
        ),
        Difference::Measures => format!(
            "{both} were graded with different {} ({} vs {}): regrade one with the other's",
            Setting::Measures,
            measure_list(&b.measures),
            measure_list(&c.measures)
        ),
        Difference::MinRel => format!(
            "{both} were graded with different {} ({} vs {})",
            Setting::MinRel,
            b.min_rel,
            c.min_rel
        ),
        Difference::Missing => format!(
            "{both} were graded with different {} policies",
            Setting::Missing
        ),
    })
}

fn pair_stage<'a>(
    stage: &str,
    baseline: &'a GradedRun,
    base_rows: &[usize],
    candidate: &'a GradedRun,
    cand_rows: &[usize],
    n_metrics: usize,
) -> Result<StagePairs> {
    let by_id = |run: &'a GradedRun, rows: &[usize]| -> Result<HashMap<&'a str, usize>> {
        let mut by_id = HashMap::with_capacity(rows.len());
        for &row in rows {
            let id = &*run.queries[row].query_id;
            if by_id.insert(id, row).is_some() {
                bail!(
                    "{}: stage {stage}: query {id} has two rows",
                    run.path.display()
                );
            }
        }
        Ok(by_id)
    };
    by_id(baseline, base_rows)?;
    let cand_by_id = by_id(candidate, cand_rows)?;
    let mut rows: Vec<(usize, usize)> = Vec::with_capacity(base_rows.len());
    for &b in base_rows {
        let bq = &baseline.queries[b];
        let Some(&c) = cand_by_id.get(&*bq.query_id) else {
            bail!(
                "stage {stage}: query {} is in {} but not in {}: were both graded with the same labels?",
                bq.query_id,
                baseline.path.display(),
                candidate.path.display()
            );
        };
        let cq = &candidate.queries[c];
        let cand_names = &candidate.names;
        ensure!(
            baseline.names.name(bq.task) == cand_names.name(cq.task)
                && baseline.names.name(bq.language) == cand_names.name(cq.language)
                && baseline.names.name(bq.split) == cand_names.name(cq.split)
                && bq.required == cq.required,
            "stage {stage}: query {} has a different task, language, split or required flag in {} and {}",
            bq.query_id,
            baseline.path.display(),
            candidate.path.display()
        );
        rows.push((b, c));
    }
    ensure!(
        cand_rows.len() == base_rows.len(),
        "stage {stage}: {} has {} queries, {} has {}: were both graded with the same labels?",
        baseline.path.display(),
        base_rows.len(),
        candidate.path.display(),
        cand_rows.len()
    );
    rows.sort_unstable_by(|a, b| {
        baseline.queries[a.0]
            .query_id
            .cmp(&baseline.queries[b.0].query_id)
    });

    let side = |q: &super::graded::GradedQuery| SideFacts {
        status: q.status,
        latency_ms: q.latency_ms,
        context_tokens: q.context_tokens,
        offset: q.offset,
    };
    let queries = rows
        .iter()
        .map(|&(b, c)| {
            let (bq, cq) = (&baseline.queries[b], &candidate.queries[c]);
            let captured_by_both = bq.status != Status::Missing && cq.status != Status::Missing;
            PairedQuery {
                query_id: bq.query_id.clone(),
                task: bq.task,
                language: bq.language,
                split: bq.split,
                required: bq.required,
                counted: bq.status != Status::NoAnswer
                    && (baseline.facts.missing_counts || captured_by_both),
                baseline: side(bq),
                candidate: side(cq),
            }
        })
        .collect();
    let columns = |run: &GradedRun, pick: fn(&(usize, usize)) -> usize| {
        (0..n_metrics)
            .flat_map(|metric| rows.iter().map(move |r| run.score(pick(r), metric)))
            .collect()
    };
    Ok(StagePairs {
        stage: stage.to_string(),
        queries,
        baseline: columns(baseline, |r| r.0),
        candidate: columns(candidate, |r| r.1),
    })
}

/// The measures a grading asked for by name, as a message lists them:
/// the default metrics when it asked for none.
fn measure_list(measures: &Option<Vec<String>>) -> String {
    match measures {
        Some(names) => names.join(","),
        None => "the default metrics".to_string(),
    }
}

/// Cutoffs as `-k` takes them: `3,5,all`.
fn cutoff_list(ks: &[Cutoff]) -> String {
    let ks: Vec<String> = ks.iter().map(Cutoff::to_string).collect();
    ks.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::graded::{GradedQuery, GradingFacts};

    /// A run of one stage: (query, task, status, recall@1) per row.
    fn run(name: &str, rows: &[(&str, &str, Status, f64)], missing_counts: bool) -> GradedRun {
        let mut names = Names::default();
        let stage = names.intern("final");
        let language = names.intern("en");
        let queries = rows
            .iter()
            .map(|&(id, task, status, _)| GradedQuery {
                stage,
                query_id: id.into(),
                task: names.intern(task),
                language,
                split: names.intern(NO_SLICE),
                required: false,
                status,
                latency_ms: None,
                context_tokens: None,
                offset: 0,
            })
            .collect();
        GradedRun {
            path: format!("{name}/per_query.csv").into(),
            source: ReadBack::local(name.into()),
            listed: OutputFile {
                name: "per_query.csv".into(),
                bytes: 0,
                hash: String::new(),
            },
            run: name.into(),
            facts: GradingFacts {
                labels_hash: "h".into(),
                reviewers: None,
                doc_of: None,
                ks: vec![Cutoff::At(1)],
                measures: None,
                min_rel: 1,
                missing_counts,
            },
            metrics: vec!["recall@1".into()],
            queries,
            scores: rows.iter().map(|r| r.3).collect(),
            names,
        }
    }

    #[test]
    fn pairs_by_query_id_and_counts_as_grade_does() {
        use Status::*;
        let base = run(
            "base",
            &[
                ("q3", "b", Ok, 1.0),
                ("q1", "a", Ok, 0.0),
                ("q2", "a", Missing, 0.0),
                ("q4", "b", NoAnswer, 0.0),
                ("q5", "b", Missing, 0.0),
            ],
            false,
        );
        let cand = run(
            "cand",
            &[
                ("q1", "a", Ok, 1.0),
                ("q2", "a", Ok, 1.0),
                ("q3", "b", Invalid, 0.0),
                ("q4", "b", NoAnswer, 0.0),
                ("q5", "b", Missing, 0.0),
            ],
            false,
        );
        let paired = pair(base, cand).unwrap();
        let stage = &paired.stages[0];
        let ids: Vec<&str> = stage.queries.iter().map(|q| &*q.query_id).collect();
        assert_eq!(ids, ["q1", "q2", "q3", "q4", "q5"]);
        // Under --missing skip, q2 and q5 (not captured by both) and q4
        // (no answer) are in no mean; q3, invalid in the candidate, is.
        let counted: Vec<bool> = stage.queries.iter().map(|q| q.counted).collect();
        assert_eq!(counted, [true, false, true, false, false]);
        assert_eq!(stage.deltas(0, &[0, 2]), [1.0, -1.0]);

        let sets = stage.grouping_sets(&paired.names);
        let described: Vec<(Option<&str>, Vec<u32>)> = sets
            .iter()
            .filter(|s| s.split.is_none() && s.language.is_none())
            .map(|s| (s.task.map(|t| paired.names.name(t)), s.members.clone()))
            .collect();
        assert_eq!(
            described,
            [
                (None, vec![0, 2]),
                (Some("a"), vec![0]),
                (Some("b"), vec![2])
            ]
        );
        let settings = StatSettings {
            permutations: 100,
            confidence: 0.95,
            seed: 0,
            alpha: 0.05,
            mde: None,
        };
        let change = &stage.changes(&[0, 1, 2], &[0], &settings)[0];
        assert_eq!((change.baseline, change.candidate), (1.0 / 3.0, 2.0 / 3.0));
        assert_eq!(
            (change.counts.wins, change.counts.ties, change.counts.losses),
            (2, 0, 1)
        );
    }

    #[test]
    fn refuses_different_labels_cutoffs_and_queries() {
        let rows = [("q1", "a", Status::Ok, 1.0)];
        let mut other = run("cand", &rows, true);
        other.facts.labels_hash = "other".into();
        let err = pair(run("base", &rows, true), other).unwrap_err();
        assert!(err.to_string().contains("different labels"), "{err}");

        let mut other = run("cand", &rows, true);
        other.facts.ks = vec![Cutoff::At(3)];
        let err = pair(run("base", &rows, true), other).unwrap_err();
        assert!(err.to_string().contains("different cutoffs"), "{err}");

        let other = run("cand", &[("q9", "a", Status::Ok, 1.0)], true);
        let err = pair(run("base", &rows, true), other).unwrap_err();
        assert!(err.to_string().contains("query q1"), "{err}");
    }
}
