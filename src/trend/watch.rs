//! Every series watched night after night: per (run, stage, grouping set,
//! metric), each night's mean with its 95% interval, and from the end of
//! the baseline on, the evidence of a drop (`crate::base::monitor`).
//!
//! Nights are read one at a time, in order. What is kept across nights is
//! each (run, stage, query)'s baseline per metric (count, mean, spread),
//! and each series' wealth: memory follows the labeled queries, not the
//! number of nights.

use std::collections::BTreeSet;

use anyhow::Result;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::nights::Night;
use crate::base::intervals::{Gathered, MeanInterval};
use crate::base::monitor::{MarginTerms, Wealth};
use crate::base::schema::{metric_columns, Status};
use crate::base::slices::{split_slice_keys, SplitSliceKey};
use crate::compare::graded::Names;
use crate::output::per_query::PerQueryReader;

/// Grouping sets a query belongs to at most: four, and four more within
/// its split.
const MAX_SETS: usize = 8;

/// The variance of a value in [0, 1] at most: a query's baseline spread
/// when nothing shows it (one baseline value, and no query of its (run,
/// stage) with two).
const MAX_VARIANCE: f64 = 0.25;

/// A series' evidence is written as at most this (e^700), so no output
/// holds an infinity.
const MAX_LOG_EVIDENCE: f64 = 700.0;

/// How the nights are watched.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    /// The first nights of each revision that make its baseline (≥ 2).
    pub baseline_nights: usize,
    /// The chance of any false alarm over every series and night.
    pub alpha: f64,
    /// The metric columns watched, by name.
    pub metrics: Vec<String>,
}

/// One grouping set of one (run, stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetKey {
    /// The run, in [`Watched::names`].
    pub run: u32,
    /// The stage, in [`Watched::names`].
    pub stage: u32,
    /// The split and slice.
    pub slice: SplitSliceKey,
}

/// What a watched night found of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tested {
    /// Queries paired with the baseline.
    pub paired: usize,
    /// Their baseline mean.
    pub baseline: f64,
    /// Their mean that night.
    pub mean: f64,
    /// The evidence of a drop so far (the series' wealth).
    pub evidence: f64,
    /// Whether the evidence reached the threshold first this night.
    pub alarm: bool,
}

/// One row of trend.csv.
#[derive(Debug, Clone)]
pub struct SeriesNight {
    /// The night, in [`Watched::nights`].
    pub night: usize,
    /// The grouping set, in [`Watched::sets`].
    pub set: u32,
    /// The metric, in [`WatchSettings::metrics`].
    pub metric: usize,
    /// The night's mean over the set's counted queries, with its interval.
    pub interval: MeanInterval,
    /// On a watched night, the test against the baseline.
    pub tested: Option<Tested>,
}

/// One revision's watch, for alarms.json.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RevisionWatch {
    /// Series with a baseline: the revision's family.
    pub series: usize,
    /// The evidence at which a series of this revision alarms.
    pub threshold: f64,
}

/// Every night read and every series watched.
#[derive(Debug)]
pub struct Watched {
    /// The nights, in order.
    pub nights: Vec<Night>,
    /// Runs, stages, tasks, languages and splits.
    pub names: Names,
    /// Every grouping set seen.
    pub sets: Vec<SetKey>,
    /// trend.csv's rows, night by night, in the order of
    /// [`Watched::sets`] sorted as aggregates.csv sorts them, then metric.
    pub rows: Vec<SeriesNight>,
    /// Per revision (from 1), its family and threshold; `None` for a
    /// revision with no night after its baseline.
    pub revisions: Vec<Option<RevisionWatch>>,
    /// Per night, whether it is one of its revision's baseline nights.
    pub baseline: Vec<bool>,
}

/// One labels revision's series on its watched nights: each a (set,
/// metric) of [`Watched::sets`] and [`WatchSettings::metrics`].
#[derive(Debug, Default, Clone)]
pub struct Coverage {
    /// The series with a row on a watched night.
    pub watched: BTreeSet<(u32, usize)>,
    /// Those tested on at least one of them.
    pub tested: BTreeSet<(u32, usize)>,
}

impl Watched {
    /// Per labels revision (from 1), which series its watched nights had
    /// and which of them were tested.
    pub fn coverage(&self) -> Vec<Coverage> {
        let mut coverage = vec![Coverage::default(); self.revisions.len()];
        for row in self.rows.iter().filter(|row| !self.baseline[row.night]) {
            let revision = &mut coverage[self.nights[row.night].revision as usize - 1];
            revision.watched.insert((row.set, row.metric));
            if row.tested.is_some() {
                revision.tested.insert((row.set, row.metric));
            }
        }
        coverage
    }
}

/// What a trend found.
#[derive(Debug)]
pub struct Trended {
    /// How the nights were watched.
    pub settings: WatchSettings,
    /// Every night and series.
    pub watched: Watched,
}

impl Trended {
    /// Whether any series alarmed.
    pub fn alarmed(&self) -> bool {
        (self.watched.rows.iter()).any(|row| row.tested.is_some_and(|t| t.alarm))
    }
}

/// A (run, stage, query)'s baseline value of one metric (Welford's).
#[derive(Debug, Clone, Copy, Default)]
struct Baseline {
    count: u32,
    mean: f64,
    squares: f64,
}

impl Baseline {
    fn add(&mut self, value: f64) {
        self.count += 1;
        let delta = value - self.mean;
        self.mean += delta / f64::from(self.count);
        self.squares += delta * (value - self.mean);
    }

    /// The sample variance, when there are two values or more.
    fn variance(&self) -> Option<f64> {
        (self.count >= 2).then(|| self.squares / f64::from(self.count - 1))
    }
}

/// One night's row of one (run, stage, query).
struct Row {
    /// Its (run, stage, query) baseline, in [`Watch::baselines`].
    key: usize,
    /// Its grouping sets.
    sets: [u32; MAX_SETS],
    n_sets: usize,
}

/// The state carried from night to night.
struct Watch<'a> {
    settings: &'a WatchSettings,
    revisions: usize,
    names: Names,
    sets: Vec<SetKey>,
    set_ids: HashMap<SetKey, u32>,
    /// Per (run, stage), each query's key.
    query_ids: HashMap<(u32, u32), HashMap<Box<str>, usize>>,
    /// Per (run, stage, query) key, one baseline per metric.
    baselines: Vec<Baseline>,
    /// Each key's (run, stage).
    key_pairs: Vec<(u32, u32)>,
    /// Per (run, stage, metric): the mean variance of the queries with
    /// two baseline values or more, for those with one.
    pooled: HashMap<(u32, u32, usize), f64>,
    /// Per series (set × metric), whether its revision's baseline nights
    /// gave it a value.
    in_baseline: Vec<bool>,
    /// Per series, its watch once the baseline is complete; `None` for a
    /// series without baseline values.
    series: Vec<Option<SeriesWatch>>,
    revision: Option<RevisionWatch>,
    rows: Vec<SeriesNight>,
}

/// One series' watch past its baseline.
#[derive(Debug, Clone, Copy, Default)]
struct SeriesWatch {
    wealth: Wealth,
    alarmed: bool,
    /// The margin of the last set of paired queries, and which set it was.
    margin: Option<(PairedSet, f64)>,
    /// Distinct sets of paired queries a margin was found for.
    margins: u32,
}

/// Which queries a night paired with the baseline, told apart by their
/// count and two order-free sums of hashes of their keys: while a series
/// pairs the same queries night after night (every labeled query under
/// `--missing fail`), its baseline margin is one event, found once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PairedSet {
    count: usize,
    sums: [u64; 2],
}

impl PairedSet {
    fn add(&mut self, key: usize) {
        self.count += 1;
        for (seed, sum) in (1..).zip(&mut self.sums) {
            let hash = xxhash_rust::xxh3::xxh3_64_with_seed(&key.to_le_bytes(), seed);
            *sum = sum.wrapping_add(hash);
        }
    }
}

/// Read `nights` in order and watch every series of `settings.metrics`.
///
/// # Errors
/// A per_query.csv cannot be read, or lacks a metric watched.
pub fn watch(nights: Vec<Night>, settings: &WatchSettings) -> Result<Watched> {
    let revisions = nights.last().map_or(0, |n| n.revision as usize);
    let mut watch = Watch {
        settings,
        revisions,
        names: Names::default(),
        sets: Vec::new(),
        set_ids: HashMap::new(),
        query_ids: HashMap::new(),
        baselines: Vec::new(),
        key_pairs: Vec::new(),
        pooled: HashMap::new(),
        in_baseline: Vec::new(),
        series: Vec::new(),
        revision: None,
        rows: Vec::new(),
    };
    let mut watches = vec![None; revisions];
    let mut baseline = Vec::with_capacity(nights.len());
    let mut in_revision = 0;
    for (index, night) in nights.iter().enumerate() {
        let first_of_revision = index == 0 || nights[index - 1].revision != night.revision;
        if first_of_revision {
            watch.start_revision();
            in_revision = 0;
        }
        in_revision += 1;
        let (rows, values) = watch.read(night)?;
        baseline.push(in_revision <= settings.baseline_nights);
        if in_revision <= settings.baseline_nights {
            watch.add_baseline(&rows, &values);
            watch.night_rows(index, &rows, &values, None);
            if in_revision == settings.baseline_nights {
                watch.end_baseline();
            }
        } else {
            // A revision has a family once a night past its baseline is
            // watched.
            watches[night.revision as usize - 1] = watch.revision;
            let tested = watch.test(&rows, &values);
            watch.night_rows(index, &rows, &values, Some(tested));
        }
    }
    let Watch {
        names,
        sets,
        mut rows,
        ..
    } = watch;
    let order = set_order(&sets, &names);
    rows.sort_by_key(|row| (row.night, order[row.set as usize], row.metric));
    Ok(Watched {
        nights,
        names,
        sets,
        rows,
        revisions: watches,
        baseline,
    })
}

/// Each set's place in aggregates.csv's order: run, stage, then split and
/// slice as [`crate::base::slices::split_slice_order`] sorts them.
fn set_order(sets: &[SetKey], names: &Names) -> Vec<usize> {
    let name = |id: u32| names.name(id);
    let mut sorted: Vec<usize> = (0..sets.len()).collect();
    sorted.sort_by_key(|&i| {
        let set = sets[i];
        (
            name(set.run),
            name(set.stage),
            crate::base::slices::split_slice_order(set.slice, name),
        )
    });
    let mut order = vec![0; sets.len()];
    for (place, &i) in sorted.iter().enumerate() {
        order[i] = place;
    }
    order
}

impl Watch<'_> {
    fn metrics(&self) -> usize {
        self.settings.metrics.len()
    }

    /// A new revision: baselines, wealth and family start again.
    fn start_revision(&mut self) {
        self.query_ids.clear();
        self.baselines.clear();
        self.key_pairs.clear();
        self.pooled.clear();
        self.in_baseline.clear();
        self.series.clear();
        self.revision = None;
    }

    /// The rows of `night` with a value for each watched metric (NaN
    /// where the query does not count in the means), row-major.
    fn read(&mut self, night: &Night) -> Result<(Vec<Row>, Vec<f64>)> {
        let columns = metric_columns(&night.facts.ks);
        let mut reader = PerQueryReader::open(&night.per_query, &night.facts.ks)?;
        let picked = (self.settings.metrics.iter())
            .map(|metric| {
                let found = columns.iter().position(|c| c == metric);
                found.ok_or_else(|| {
                    anyhow::anyhow!(
                        "--metrics {metric}: {} has no such metric; it was graded at cutoffs {}, \
                         which give {}",
                        night.per_query.display(),
                        (night.facts.ks.iter())
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                        columns.join(", ")
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let (mut rows, mut values) = (Vec::new(), Vec::new());
        while let Some(row) = reader.next_row()? {
            let run = self.names.intern(row.run);
            let stage = self.names.intern(row.stage);
            let (task, language) = (self.names.intern(row.task), self.names.intern(row.language));
            let split =
                (row.split != crate::base::slices::NO_SLICE).then(|| self.names.intern(row.split));
            let key = self.query_key(run, stage, row.query_id);
            let mut sets = [0; MAX_SETS];
            let mut n_sets = 0;
            for slice in split_slice_keys(task, language, split) {
                sets[n_sets] = self.set_id(SetKey { run, stage, slice });
                n_sets += 1;
            }
            let counted = row.status != Status::NoAnswer;
            match row.metrics.filter(|_| counted) {
                Some(cells) => values.extend(picked.iter().map(|&c| cells[c])),
                None => values.extend(picked.iter().map(|_| f64::NAN)),
            }
            rows.push(Row { key, sets, n_sets });
        }
        Ok((rows, values))
    }

    fn query_key(&mut self, run: u32, stage: u32, query: &str) -> usize {
        let queries = self.query_ids.entry((run, stage)).or_default();
        if let Some(&key) = queries.get(query) {
            return key;
        }
        let key = self.key_pairs.len();
        queries.insert(query.into(), key);
        self.key_pairs.push((run, stage));
        let metrics = self.settings.metrics.len();
        self.baselines
            .resize((key + 1) * metrics, Baseline::default());
        key
    }

    fn set_id(&mut self, set: SetKey) -> u32 {
        if let Some(&id) = self.set_ids.get(&set) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.sets.push(set);
        self.set_ids.insert(set, id);
        id
    }

    fn add_baseline(&mut self, rows: &[Row], values: &[f64]) {
        let metrics = self.metrics();
        self.in_baseline.resize(self.sets.len() * metrics, false);
        for (row, values) in rows.iter().zip(values.chunks(metrics)) {
            for (m, &value) in values.iter().enumerate() {
                if !value.is_nan() {
                    self.baselines[row.key * metrics + m].add(value);
                    for &set in &row.sets[..row.n_sets] {
                        self.in_baseline[set as usize * metrics + m] = true;
                    }
                }
            }
        }
    }

    /// The baseline is complete: pool the spread of each (run, stage,
    /// metric), start every series with a baseline at no wealth, and fix
    /// the revision's family and threshold.
    fn end_baseline(&mut self) {
        let metrics = self.metrics();
        let mut pooled: HashMap<(u32, u32, usize), (f64, u64)> = HashMap::new();
        for (key, &(run, stage)) in self.key_pairs.iter().enumerate() {
            for m in 0..metrics {
                if let Some(variance) = self.baselines[key * metrics + m].variance() {
                    let entry = pooled.entry((run, stage, m)).or_default();
                    entry.0 += variance;
                    entry.1 += 1;
                }
            }
        }
        self.pooled = (pooled.into_iter())
            .map(|(key, (sum, n))| (key, sum / n as f64))
            .collect();
        self.series = (self.in_baseline.iter())
            .map(|&seen| seen.then(SeriesWatch::default))
            .collect();
        self.revision = None;
        let series = self.in_baseline.iter().filter(|&&seen| seen).count();
        if series > 0 {
            // Bonferroni over the revisions and their series; half of each
            // series' share for its baseline margins, half for its wealth.
            let family = (self.revisions * series) as f64;
            self.revision = Some(RevisionWatch {
                series,
                threshold: 2.0 * family / self.settings.alpha,
            });
        }
    }

    /// Test a watched night: per series, the margin its paired queries'
    /// baseline may be off by, then each pair's difference bet against.
    /// Returns each series' test.
    fn test(&mut self, rows: &[Row], values: &[f64]) -> Vec<Option<Tested>> {
        let metrics = self.metrics();
        let series = self.sets.len() * metrics;
        self.series.resize(series, None);
        let Some(revision) = self.revision else {
            return vec![None; series];
        };
        // Half of each series' share of alpha for its baseline margins.
        let margin_alpha = 1.0 / revision.threshold;

        let mut terms = vec![(MarginTerms::default(), PairedSet::default()); series];
        let mut sums = vec![(0usize, 0.0f64, 0.0f64); series];
        self.for_each_pair(rows, values, |s, (key, baseline, variance), value| {
            terms[s].0.add(baseline.count, variance);
            terms[s].1.add(key);
            let sum = &mut sums[s];
            sum.0 += 1;
            sum.1 += baseline.mean;
            sum.2 += value;
        });
        let margins: Vec<f64> = (self.series.iter_mut().zip(&terms))
            .map(|(watch, (terms, set))| {
                let Some(watch) = watch else { return 0.0 };
                match watch.margin {
                    Some((last, margin)) if last == *set => margin,
                    _ => {
                        // The k-th distinct set spends 1 / (k (k + 1)) of
                        // the margins' share.
                        watch.margins += 1;
                        let k = f64::from(watch.margins);
                        let margin = terms.margin(margin_alpha / (k * (k + 1.0)));
                        watch.margin = Some((*set, margin));
                        margin
                    }
                }
            })
            .collect();
        let mut bets: Vec<_> = (self.series.iter())
            .map(|w| w.as_ref().map(|watch| watch.wealth.night()))
            .collect();
        self.for_each_pair(rows, values, |s, (_, baseline, _), value| {
            if let Some(night) = &mut bets[s] {
                night.add(value - baseline.mean + margins[s]);
            }
        });
        let threshold = revision.threshold.ln();
        (0..series)
            .map(|s| {
                let watch = self.series[s].as_mut()?;
                let night = bets[s].as_ref()?;
                watch.wealth = watch.wealth.after(night);
                let wealth = watch.wealth;
                let alarm = !watch.alarmed && wealth.log_wealth >= threshold;
                watch.alarmed |= alarm;
                let (paired, baseline, mean) = sums[s];
                (paired > 0).then(|| Tested {
                    paired,
                    baseline: baseline / paired as f64,
                    mean: mean / paired as f64,
                    evidence: wealth.log_wealth.min(MAX_LOG_EVIDENCE).exp(),
                    alarm,
                })
            })
            .collect()
    }

    /// Call `f(series, (key, baseline, variance), value)` for every
    /// counted value of a query with a baseline, once per grouping set it
    /// is in.
    fn for_each_pair(
        &self,
        rows: &[Row],
        values: &[f64],
        mut f: impl FnMut(usize, (usize, &Baseline, f64), f64),
    ) {
        let metrics = self.metrics();
        for (row, values) in rows.iter().zip(values.chunks(metrics)) {
            let (run, stage) = self.key_pairs[row.key];
            for (m, &value) in values.iter().enumerate() {
                let baseline = &self.baselines[row.key * metrics + m];
                if value.is_nan() || baseline.count == 0 {
                    continue;
                }
                let variance = baseline.variance().unwrap_or_else(|| {
                    let pooled = self.pooled.get(&(run, stage, m));
                    pooled.copied().unwrap_or(MAX_VARIANCE)
                });
                for &s in &row.sets[..row.n_sets] {
                    f(
                        s as usize * metrics + m,
                        (row.key, baseline, variance),
                        value,
                    );
                }
            }
        }
    }

    /// trend.csv's rows of one night: every series' mean and interval,
    /// and its test when the night is watched.
    fn night_rows(
        &mut self,
        night: usize,
        rows: &[Row],
        values: &[f64],
        tested: Option<Vec<Option<Tested>>>,
    ) {
        let metrics = self.metrics();
        let series = self.sets.len() * metrics;
        let mut counts = vec![0usize; series];
        let each_value = |f: &mut dyn FnMut(usize, f64)| {
            for (row, values) in rows.iter().zip(values.chunks(metrics)) {
                for (m, &value) in values.iter().enumerate() {
                    if !value.is_nan() {
                        for &s in &row.sets[..row.n_sets] {
                            f(s as usize * metrics + m, value);
                        }
                    }
                }
            }
        };
        each_value(&mut |s, _| counts[s] += 1);
        let mut gathered: Vec<Gathered> = counts.iter().map(|&n| Gathered::expecting(n)).collect();
        each_value(&mut |s, value| gathered[s].add(value));
        // Small sets are bootstrapped: the one costly step, on the workers.
        let intervals: Vec<Option<MeanInterval>> =
            gathered.par_iter().map(Gathered::interval).collect();
        for (s, interval) in intervals.into_iter().enumerate() {
            let Some(interval) = interval else {
                continue;
            };
            self.rows.push(SeriesNight {
                night,
                set: (s / metrics) as u32,
                metric: s % metrics,
                interval,
                tested: tested.as_ref().and_then(|t| t.get(s).copied().flatten()),
            });
        }
    }
}
