//! Acceptance rules (docs/compare.md): checks written before tuning, read from a
//! TOML file, resolved against the paired queries — an unknown metric,
//! query or slice is an error, never a silent pass — and then evaluated to
//! PASS or FAIL with the numbers behind the verdict.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use super::paired::{holm_family_text, Paired, PairedQuery, StagePairs, StatSettings};
use super::warning::Warning;
use crate::base::failure::Setting;
use crate::base::numbers::percentile;
use crate::base::schema::Status;
use crate::base::stats::TIE_EPSILON;
use crate::base::text::{first_few, plural};
use crate::io::decompress::Source;
use crate::io::inputs::Input;

/// The rules file: `[[rule]]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rule: Vec<RuleSpec>,
}

/// One `[[rule]]` as written. Unknown keys are errors, so a misspelt
/// check cannot silently pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    name: String,
    metric: String,
    stage: Option<String>,
    query: Option<String>,
    task: Option<String>,
    language: Option<String>,
    split: Option<String>,
    required: Option<bool>,
    min: Option<f64>,
    max: Option<f64>,
    no_loss: Option<bool>,
    no_significant_loss: Option<bool>,
}

/// What a rule measures.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Measure {
    /// A metric column: the mean over the selected counted queries.
    Metric(usize),
    /// A percentile (0–100) of the selected queries' latencies.
    Latency(f64),
    /// The mean context size of the selected queries.
    ContextTokens,
}

/// What a rule checks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    /// The candidate's value is at least this.
    Min(f64),
    /// The candidate's value is at most this.
    Max(f64),
    /// No selected query scores lower than in the baseline.
    NoLoss,
    /// Not (delta < 0 and Holm-adjusted p < alpha).
    NoSignificantLoss,
}

/// A rule resolved against the paired queries: ready to evaluate.
#[derive(Debug, Clone)]
pub struct Rule {
    name: String,
    metric: String,
    measure: Measure,
    check: Check,
    stage: usize,
    /// Who the rule is about, for messages: "query q1", "required queries".
    selection: String,
    /// The selected queries, as indices into the stage's queries.
    members: Vec<u32>,
}

/// A rule's verdict, as gate.json holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleOutcome {
    /// The rule's name.
    pub name: String,
    /// Whether the candidate passed.
    pub passed: bool,
    /// The metric checked.
    pub metric: String,
    /// The measured value: the candidate's mean or percentile (`min`,
    /// `max`), the number of losing queries (`no_loss`), or the mean delta
    /// (`no_significant_loss`, which fails when it is below 0 with a
    /// Holm-adjusted p under alpha).
    pub value: f64,
    /// The limit it was held to: `min`, `max`, or 0.
    pub limit: f64,
    /// The numbers behind the verdict, in words.
    pub detail: String,
}

/// gate.json: every rule's verdict, and whether all passed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gate {
    /// All rules passed.
    pub passed: bool,
    /// The verdicts, in file order.
    pub rules: Vec<RuleOutcome>,
}

/// Losing queries named in a no_loss verdict.
const LOSERS_SHOWN: usize = 5;

/// What a rule is evaluated with: the metrics compared (the Holm family)
/// and the statistics' settings.
#[derive(Debug, Clone, Copy)]
pub struct RuleContext<'a> {
    /// The metrics compared, as indices into [`Paired::metrics`].
    pub compared_metrics: &'a [usize],
    /// Permutations, resamples and seed.
    pub settings: StatSettings,
    /// The significance level of `no_significant_loss`.
    pub alpha: f64,
}

impl RuleContext<'_> {
    /// The Holm family of a rule on `metric`: it and the metrics compared
    /// (those with equal per-query deltas over the rule's queries count
    /// once). For a grouping set this is the adjustment of comparison.csv.
    fn family(&self, metric: usize) -> Vec<usize> {
        std::iter::once(metric)
            .chain(
                self.compared_metrics
                    .iter()
                    .copied()
                    .filter(|&m| m != metric),
            )
            .collect()
    }
}

/// Latency and context measures a rule may name besides metric columns.
const AGGREGATE_MEASURES: [(&str, Measure); 4] = [
    ("latency_p50_ms", Measure::Latency(50.0)),
    ("latency_p95_ms", Measure::Latency(95.0)),
    ("latency_p99_ms", Measure::Latency(99.0)),
    ("context_tokens_mean", Measure::ContextTokens),
];

/// Read the rules of `path` and resolve each against `paired`.
///
/// # Errors
/// The file cannot be read or is not valid TOML for rules, or a rule names
/// an unknown metric, stage, query, task, language or split, selects no query, or
/// does not say exactly one check.
pub fn load(path: &Path, paired: &Paired, context: &RuleContext) -> Result<Vec<Rule>> {
    let input = Input::at(path)?;
    let name = input.name();
    let mut text = String::new();
    Source::open(&input)
        .and_then(|mut source| source.read_to_string(&mut text))
        .with_context(|| format!("{name}: cannot read"))?;
    let file: RulesFile =
        toml::from_str(&text).with_context(|| format!("{name}: not a valid rules file"))?;
    ensure!(!file.rule.is_empty(), "{name}: no [[rule]] found");
    file.rule
        .into_iter()
        .map(|spec| {
            let rule = spec.name.clone();
            resolve(spec, paired, context).with_context(|| format!("{name}: rule '{rule}'"))
        })
        .collect()
}

fn resolve(spec: RuleSpec, paired: &Paired, context: &RuleContext) -> Result<Rule> {
    let measure = match paired.metric(&spec.metric) {
        Some(metric) => Measure::Metric(metric),
        None => match AGGREGATE_MEASURES
            .iter()
            .find(|(name, _)| *name == spec.metric)
        {
            Some(&(_, measure)) => measure,
            None => {
                let known: Vec<&str> = paired
                    .metrics
                    .iter()
                    .map(String::as_str)
                    .chain(AGGREGATE_MEASURES.iter().map(|(name, _)| *name))
                    .collect();
                bail!(
                    "unknown metric '{}' (known: {})",
                    spec.metric,
                    known.join(", ")
                );
            }
        },
    };
    let check = check_of(&spec)?;
    let stage = stage_of(spec.stage.as_deref(), paired)?;
    let pairs = &paired.stages[stage];
    let (selection, members) = select(&spec, pairs, paired)?;
    let rule = Rule {
        name: spec.name,
        metric: spec.metric,
        measure,
        check,
        stage,
        selection,
        members,
    };
    // Fail now rather than after the statistics: a rule that cannot be
    // measured on this data is a mistake in the rule.
    if let Check::NoLoss | Check::NoSignificantLoss = check {
        rule.per_query_metric()?;
    }
    if check == Check::NoSignificantLoss {
        // With too few permutations no p-value can get under alpha, and
        // the rule could never fail.
        let family = rule.family_size(pairs, context)?;
        // Holm's adjustment multiplies by at most the family's size, and
        // caps at 1.
        let smallest = (family as f64 / (context.settings.permutations + 1) as f64).min(1.0);
        ensure!(
            smallest < context.alpha,
            "with {} and {} in the Holm family the smallest adjusted p-value is \
             {smallest:.4}, not below alpha {}: the rule could never fail; raise {}",
            Setting::Permutations.given(context.settings.permutations),
            plural(family as u64, "hypothesis", "hypotheses"),
            context.alpha,
            Setting::Permutations
        );
    }
    rule.candidate_value(pairs, &rule.measured_members(pairs)?)?;
    Ok(rule)
}

fn check_of(spec: &RuleSpec) -> Result<Check> {
    for (key, limit) in [("min", spec.min), ("max", spec.max)] {
        if let Some(limit) = limit.filter(|limit| !limit.is_finite()) {
            bail!("{key} = {limit} is not a finite number: no value could be held to it");
        }
    }
    let mut checks = Vec::new();
    checks.extend(spec.min.map(Check::Min));
    checks.extend(spec.max.map(Check::Max));
    for (flag, check, key) in [
        (spec.no_loss, Check::NoLoss, "no_loss"),
        (
            spec.no_significant_loss,
            Check::NoSignificantLoss,
            "no_significant_loss",
        ),
    ] {
        match flag {
            Some(true) => checks.push(check),
            Some(false) => bail!("{key} = false checks nothing: remove it or set it to true"),
            None => {}
        }
    }
    match checks[..] {
        [check] => Ok(check),
        [] => {
            bail!("says no check: give one of min, max, no_loss = true, no_significant_loss = true")
        }
        _ => bail!("gives several checks: write one rule per check"),
    }
}

/// The stage a rule is about: the one named, else the only stage compared,
/// else `final`.
fn stage_of(named: Option<&str>, paired: &Paired) -> Result<usize> {
    let position = |name: &str| paired.stages.iter().position(|s| s.stage == name);
    let compared = || {
        let names: Vec<&str> = paired.stages.iter().map(|s| s.stage.as_str()).collect();
        names.join(", ")
    };
    match named {
        Some(name) => position(name)
            .with_context(|| format!("unknown stage '{name}' (compared: {})", compared())),
        None if paired.stages.len() == 1 => Ok(0),
        None => position("final").with_context(|| {
            format!(
                "several stages were compared ({}): name one with stage = \"...\"",
                compared()
            )
        }),
    }
}

/// The queries a rule selects (every selector given must match) and a
/// description for messages.
fn select(spec: &RuleSpec, pairs: &StagePairs, paired: &Paired) -> Result<(String, Vec<u32>)> {
    let mut parts = Vec::new();
    if let Some(query) = &spec.query {
        ensure!(
            pairs.queries.iter().any(|q| *q.query_id == **query),
            "unknown query '{query}' in stage {}",
            pairs.stage
        );
        parts.push(format!("query {query}"));
    }
    let mut slice_id =
        |value: &Option<String>, what: &str, of: fn(&PairedQuery) -> u32| -> Result<Option<u32>> {
            let Some(value) = value else { return Ok(None) };
            let id = paired
                .names
                .get(value)
                .filter(|&id| pairs.queries.iter().any(|q| of(q) == id));
            let id =
                id.with_context(|| format!("unknown {what} '{value}' in stage {}", pairs.stage))?;
            parts.push(format!("{what} {value}"));
            Ok(Some(id))
        };
    let task = slice_id(&spec.task, "task", |q| q.task)?;
    let language = slice_id(&spec.language, "language", |q| q.language)?;
    let split = slice_id(&spec.split, "split", |q| q.split)?;
    match spec.required {
        Some(true) => parts.push("required queries".into()),
        Some(false) => parts.push("queries not required".into()),
        None => {}
    }
    let members: Vec<u32> = pairs
        .queries
        .iter()
        .enumerate()
        .filter(|(_, q)| {
            spec.query.as_deref().is_none_or(|id| *q.query_id == *id)
                && task.is_none_or(|t| q.task == t)
                && language.is_none_or(|l| q.language == l)
                && split.is_none_or(|s| q.split == s)
                && spec.required.is_none_or(|r| q.required == r)
        })
        .map(|(i, _)| i as u32)
        .collect();
    if parts.is_empty() {
        parts.push("all queries".into());
    }
    let selection = format!("{}, stage {}", parts.join(", "), pairs.stage);
    ensure!(!members.is_empty(), "selects no query ({selection})");
    Ok((selection, members))
}

impl Rule {
    /// The selected queries a metric rule measures: those counted in the
    /// means. Latency and context rules measure every selected query, as
    /// aggregates.csv does.
    fn measured_members(&self, pairs: &StagePairs) -> Result<Vec<u32>> {
        if !matches!(self.measure, Measure::Metric(_)) {
            return Ok(self.members.clone());
        }
        let counted: Vec<u32> = self
            .members
            .iter()
            .copied()
            .filter(|&i| pairs.queries[i as usize].counted)
            .collect();
        let dropped_count = if self.check == Check::NoLoss {
            self.dropped_by_candidate(pairs).len()
        } else {
            0
        };
        ensure!(
            !counted.is_empty() || dropped_count > 0,
            "selects no query that counts in the means ({}): none has a relevant document, \
             or (under {}) none was captured by both runs",
            self.selection,
            Setting::Missing.given("skip")
        );
        Ok(counted)
    }

    /// Selected queries with relevant documents that the baseline captured
    /// and the candidate did not: under `--missing skip` they are in no
    /// mean, but a regression gate must not let them pass unseen.
    fn dropped_by_candidate(&self, pairs: &StagePairs) -> Vec<u32> {
        self.members
            .iter()
            .copied()
            .filter(|&i| {
                let q = &pairs.queries[i as usize];
                !q.counted
                    && !matches!(q.baseline.status, Status::NoAnswer | Status::Missing)
                    && q.candidate.status == Status::Missing
            })
            .collect()
    }

    /// Why a `no_significant_loss` rule cannot fail on this selection,
    /// if so: with n queries no sign-flip p-value is below 2^(1-n).
    pub fn cannot_fail(&self, paired: &Paired, context: &RuleContext) -> Option<Warning> {
        if self.check != Check::NoSignificantLoss {
            return None;
        }
        let pairs = &paired.stages[self.stage];
        let n = self.measured_members(pairs).ok()?.len();
        let family = self.family_size(pairs, context).ok()?;
        let smallest = (family as f64 * 2f64.powi(1 - n.min(1024) as i32)).min(1.0);
        (smallest >= context.alpha).then(|| Warning::RuleCannotFail {
            rule: self.name.clone(),
            queries: n,
            hypotheses: family,
            alpha: context.alpha,
        })
    }

    /// The size of a per-query rule's Holm family over the queries it
    /// measures: its metric and the metrics compared, equal per-query
    /// deltas counted once.
    fn family_size(&self, pairs: &StagePairs, context: &RuleContext) -> Result<usize> {
        let family = context.family(self.per_query_metric()?);
        Ok(pairs.distinct_hypotheses(&self.measured_members(pairs)?, &family))
    }

    /// The metric a per-query check compares.
    fn per_query_metric(&self) -> Result<usize> {
        match self.measure {
            Measure::Metric(metric) => Ok(metric),
            Measure::Latency(_) | Measure::ContextTokens => bail!(
                "no_loss and no_significant_loss compare per-query scores; use min or max for {}",
                self.metric
            ),
        }
    }

    /// The candidate's value over `members`: a metric's mean, a latency
    /// percentile or the mean context size.
    fn candidate_value(&self, pairs: &StagePairs, members: &[u32]) -> Result<f64> {
        let selected = members
            .iter()
            .map(|&i| &pairs.queries[i as usize].candidate);
        let value = match self.measure {
            Measure::Metric(metric) => {
                let scores = pairs.candidate(metric);
                let sum: f64 = members.iter().map(|&i| scores[i as usize]).sum();
                Some(sum / members.len() as f64)
            }
            Measure::Latency(p) => {
                let mut latencies: Vec<f64> = selected.filter_map(|s| s.latency_ms).collect();
                latencies.sort_by(f64::total_cmp);
                percentile(&latencies, p)
            }
            Measure::ContextTokens => {
                let sizes: Vec<f64> = selected.filter_map(|s| s.context_tokens).collect();
                (!sizes.is_empty()).then(|| sizes.iter().sum::<f64>() / sizes.len() as f64)
            }
        };
        value.with_context(|| {
            format!(
                "the candidate recorded no {} for {}",
                self.metric, self.selection
            )
        })
    }

    /// PASS or FAIL, with the numbers behind it.
    ///
    /// # Errors
    /// Only what [`load`] already checked: a rule that cannot be measured.
    pub fn evaluate(&self, paired: &Paired, context: &RuleContext) -> Result<RuleOutcome> {
        let pairs = &paired.stages[self.stage];
        let members = self.measured_members(pairs)?;
        let outcome = |passed: bool, value: f64, limit: f64, detail: String| RuleOutcome {
            name: self.name.clone(),
            passed,
            metric: self.metric.clone(),
            value,
            limit,
            detail,
        };
        let value = self.candidate_value(pairs, &members)?;
        let (metric_name, selection) = (&self.metric, &self.selection);
        // Latency and context are measured over the queries that have one.
        let measured = members
            .iter()
            .map(|&i| &pairs.queries[i as usize].candidate)
            .filter(|c| match self.measure {
                Measure::Metric(_) => true,
                Measure::Latency(_) => c.latency_ms.is_some(),
                Measure::ContextTokens => c.context_tokens.is_some(),
            })
            .count();
        let who = format!("{} ({selection})", count_queries(measured));
        Ok(match self.check {
            Check::Min(limit) => outcome(
                value >= limit,
                value,
                limit,
                format!("candidate {metric_name} {value:.4}, needs >= {limit}; {who}"),
            ),
            Check::Max(limit) => outcome(
                value <= limit,
                value,
                limit,
                format!("candidate {metric_name} {value:.4}, needs <= {limit}; {who}"),
            ),
            Check::NoLoss => {
                let metric = self.per_query_metric()?;
                let (base, cand) = (pairs.baseline(metric), pairs.candidate(metric));
                let mut losers: Vec<u32> = members
                    .iter()
                    .copied()
                    .filter(|&i| cand[i as usize] - base[i as usize] < -TIE_EPSILON)
                    .collect();
                losers.sort_by(|&a, &b| {
                    let delta = |i: u32| cand[i as usize] - base[i as usize];
                    delta(a).total_cmp(&delta(b))
                });
                let mut detail = format!("{} of {who} lost on {metric_name}", losers.len());
                if !losers.is_empty() {
                    let shown = losers.iter().map(|&i| {
                        let i = i as usize;
                        let id = &pairs.queries[i].query_id;
                        format!("{id} {:.4} -> {:.4}", base[i], cand[i])
                    });
                    let _ = write!(detail, ": {}", first_few(shown, LOSERS_SHOWN));
                }
                let dropped = self.dropped_by_candidate(pairs);
                if !dropped.is_empty() {
                    let ids = dropped
                        .iter()
                        .map(|&i| pairs.queries[i as usize].query_id.to_string());
                    let _ = write!(
                        detail,
                        "; {} not captured by the candidate: {}",
                        count_queries(dropped.len()),
                        first_few(ids, LOSERS_SHOWN)
                    );
                }
                let lost = losers.len() + dropped.len();
                outcome(lost == 0, lost as f64, 0.0, detail)
            }
            Check::NoSignificantLoss => {
                let metric = self.per_query_metric()?;
                let family = context.family(metric);
                let changes = pairs.changes(&members, &family, &context.settings);
                let change = &changes[0];
                let alpha = context.alpha;
                let significant_loss = change.delta < 0.0 && change.p_holm < alpha;
                let interval = match change.ci {
                    Ok((low, high)) => format!("95% CI {low:+.4} to {high:+.4}"),
                    Err(reason) => format!("no 95% CI: {reason}"),
                };
                outcome(
                    !significant_loss,
                    change.delta,
                    0.0,
                    format!(
                        "{metric_name} delta {:+.4} ({interval}), Holm p {:.4} (p {:.4}, {}), alpha {alpha}; {who}",
                        change.delta,
                        change.p_holm,
                        change.p_value,
                        holm_family_text(&changes, &paired.metrics)
                    ),
                )
            }
        })
    }
}

/// "1 query", "12 queries".
fn count_queries(n: usize) -> String {
    plural(n as u64, "query", "queries")
}
