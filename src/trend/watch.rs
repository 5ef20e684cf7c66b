//! Every series watched night after night: per (run, stage, grouping set,
//! metric), each night's mean with its 95% interval, and from the end of
//! the baseline on, each night's test of a drop (`crate::base::monitor`).
//!
//! Nights are read one at a time, in order. What is kept across nights is
//! each (run, stage, query)'s baseline mean per metric, and which grouping
//! sets hold the same queries: memory follows the labeled queries, not the
//! number of nights.

use std::collections::BTreeSet;

use anyhow::Result;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::nights::Night;
use crate::base::intervals::{Gathered, MeanInterval};
use crate::base::monitor::{night_level, revision_alpha, Drops};
use crate::base::schema::{metric_names, Status};
use crate::base::slices::{split_slice_keys, SplitSliceKey};
use crate::compare::graded::Names;
use crate::output::per_query::PerQueryReader;

/// Grouping sets a query belongs to at most: four, and four more within
/// its split.
const MAX_SETS: usize = 8;

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
    /// The one-sided p-value of "no drop" that night.
    pub p_value: f64,
    /// The p-value at or under which the series alarms that night.
    pub level: f64,
    /// Whether the series alarmed, the first night of its revision it did.
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
    /// The grouping set the series is tested as, in [`Watched::sets`]: on
    /// a watched night, the first in aggregates.csv's order of the sets
    /// that held the same queries over the baseline; else the set itself.
    pub tested_as: u32,
}

impl SeriesNight {
    /// Whether this row is its series' own, not a repeat of a grouping
    /// set that holds the same queries.
    pub fn is_distinct(&self) -> bool {
        self.tested_as == self.set
    }
}

/// One revision's watch, for alarms.json.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RevisionWatch {
    /// Distinct series with a baseline: the revision's family. Grouping
    /// sets that hold the same queries (with no task or language in the
    /// labels, the overall set and the `(none)` slices) are one series.
    pub series: usize,
    /// The revision's share of alpha, spent over its watched nights.
    pub alpha: f64,
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
    /// Per revision (from 1), its family and share of alpha; `None` for a
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
        let watched = |row: &&SeriesNight| !self.baseline[row.night] && row.is_distinct();
        for row in self.rows.iter().filter(watched) {
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
    pub(crate) settings: WatchSettings,
    /// Every night and series.
    pub(crate) watched: Watched,
    /// Why `--openmetrics` could not be written, after every other output
    /// was: the alarms stand, and the caller says the export failed.
    pub openmetrics_failure: Option<crate::base::failure::Error>,
}

impl Trended {
    /// Whether any series alarmed.
    pub fn alarmed(&self) -> bool {
        (self.watched.rows.iter()).any(|row| row.tested.is_some_and(|t| t.alarm))
    }
}

/// One night's row of one (run, stage, query).
struct Row {
    /// Its (run, stage, query) key, in [`Watch::baselines`].
    key: usize,
    /// Its grouping sets.
    sets: [u32; MAX_SETS],
    n_sets: usize,
}

/// The state carried from night to night.
struct Watch<'a> {
    settings: &'a WatchSettings,
    names: Names,
    sets: Vec<SetKey>,
    set_ids: HashMap<SetKey, u32>,
    /// Per (run, stage), each query's key.
    query_ids: HashMap<(u32, u32), HashMap<Box<str>, usize>>,
    /// Per (run, stage, query) key and metric, its baseline values'
    /// count and mean.
    baselines: Vec<(u32, f64)>,
    /// Per set, the keys of the queries the baseline nights put in it,
    /// each once.
    members: Vec<Vec<usize>>,
    /// Per key, whether its sets are in `members` already.
    placed: Vec<bool>,
    /// Per set, the set it is tested as (see [`SeriesNight::tested_as`]).
    tested_as: Vec<u32>,
    /// Per series (set × metric), whether its revision's baseline nights
    /// gave it a value.
    in_baseline: Vec<bool>,
    /// Per series, whether it alarmed in this revision.
    alarmed: Vec<bool>,
    /// The revision being read, from 1.
    revision: u32,
    /// Its watched nights so far.
    watched_nights: u32,
    watch: Option<RevisionWatch>,
    rows: Vec<SeriesNight>,
}

/// Read `nights` in order and watch every series of `settings.metrics`.
///
/// # Errors
/// A per_query.csv cannot be read, or lacks a metric watched.
pub fn watch(nights: Vec<Night>, settings: &WatchSettings) -> Result<Watched> {
    let revisions = nights.last().map_or(0, |n| n.revision as usize);
    let mut watch = Watch {
        settings,
        names: Names::default(),
        sets: Vec::new(),
        set_ids: HashMap::new(),
        query_ids: HashMap::new(),
        baselines: Vec::new(),
        members: Vec::new(),
        placed: Vec::new(),
        tested_as: Vec::new(),
        in_baseline: Vec::new(),
        alarmed: Vec::new(),
        revision: 0,
        watched_nights: 0,
        watch: None,
        rows: Vec::new(),
    };
    let mut watches = vec![None; revisions];
    let mut baseline = Vec::with_capacity(nights.len());
    let mut in_revision = 0;
    for (index, night) in nights.iter().enumerate() {
        let first_of_revision = index == 0 || nights[index - 1].revision != night.revision;
        if first_of_revision {
            watch.start_revision(night.revision);
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
            watches[night.revision as usize - 1] = watch.watch;
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

    /// A new revision: baselines, family and alarms start again.
    fn start_revision(&mut self, revision: u32) {
        self.query_ids.clear();
        self.baselines.clear();
        self.members.clear();
        self.placed.clear();
        self.tested_as.clear();
        self.in_baseline.clear();
        self.alarmed.clear();
        self.revision = revision;
        self.watched_nights = 0;
        self.watch = None;
    }

    /// The rows of `night` with a value for each watched metric (NaN
    /// where the query does not count in the means), row-major.
    fn read(&mut self, night: &Night) -> Result<(Vec<Row>, Vec<f64>)> {
        let (ks, asked) = (&night.facts.ks, night.facts.measures.as_deref());
        let columns = metric_names(ks, asked);
        // Checked when the nights were ordered, it may have been graded
        // again since: only the bytes checked are read.
        let path = &night.per_query;
        let mut reader = PerQueryReader::open_as_listed(path, ks, asked, &night.per_query_listed)?;
        let picked = (self.settings.metrics.iter())
            .map(|metric| {
                let found = columns.iter().position(|c| c == metric);
                found.ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: {} has no such metric; it was graded at cutoffs {}, \
                         which give {}",
                        crate::base::failure::Setting::Metrics.given(metric),
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
        // Every trend watches at least one metric.
        let metrics = self.settings.metrics.len();
        let key = self.baselines.len() / metrics;
        queries.insert(query.into(), key);
        self.baselines.resize((key + 1) * metrics, (0, 0.0));
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
        self.members.resize(self.sets.len(), Vec::new());
        self.placed.resize(self.baselines.len() / metrics, false);
        for (row, values) in rows.iter().zip(values.chunks(metrics)) {
            if !std::mem::replace(&mut self.placed[row.key], true) {
                for &set in &row.sets[..row.n_sets] {
                    self.members[set as usize].push(row.key);
                }
            }
            for (m, &value) in values.iter().enumerate() {
                if !value.is_nan() {
                    let (count, mean) = &mut self.baselines[row.key * metrics + m];
                    *count += 1;
                    *mean += (value - *mean) / f64::from(*count);
                    for &set in &row.sets[..row.n_sets] {
                        self.in_baseline[set as usize * metrics + m] = true;
                    }
                }
            }
        }
    }

    /// The baseline is complete: find the sets that hold the same queries,
    /// and fix the revision's family of distinct series and its share of
    /// alpha.
    fn end_baseline(&mut self) {
        let metrics = self.metrics();
        let order = set_order(&self.sets, &self.names);
        let mut by_order: Vec<usize> = (0..self.sets.len()).collect();
        by_order.sort_by_key(|&set| order[set]);
        let mut first_with: HashMap<Vec<usize>, u32> = HashMap::new();
        self.tested_as = vec![0; self.sets.len()];
        for set in by_order {
            // Keys are of one (run, stage) each, so equal members are
            // sets of one (run, stage).
            let mut members = std::mem::take(&mut self.members[set]);
            members.sort_unstable();
            let first = *first_with.entry(members).or_insert(set as u32);
            self.tested_as[set] = first;
        }
        self.members.clear();
        self.placed.clear();
        let distinct = |s: &usize| self.tested_as[s / metrics] as usize == s / metrics;
        let series = (0..self.sets.len() * metrics)
            .filter(|s| self.in_baseline.get(*s).copied().unwrap_or(false))
            .filter(distinct)
            .count();
        self.watch = (series > 0).then(|| RevisionWatch {
            series,
            alpha: revision_alpha(self.settings.alpha, self.revision),
        });
    }

    /// Test a watched night: per distinct series, the paired queries'
    /// drops below their baseline means, tested at the night's level.
    /// Returns each series' test, copied to the sets that repeat it.
    fn test(&mut self, rows: &[Row], values: &[f64]) -> Vec<Option<Tested>> {
        let metrics = self.metrics();
        let series = self.sets.len() * metrics;
        self.alarmed.resize(series, false);
        let Some(watch) = self.watch else {
            return vec![None; series];
        };
        self.watched_nights += 1;
        // A set first seen on a watched night is tested as itself (and,
        // with no baseline, not tested at all).
        let known = self.tested_as.len() as u32;
        self.tested_as.extend(known..self.sets.len() as u32);
        let level = night_level(watch.alpha, self.watched_nights, watch.series);
        let mut drops = vec![(Drops::default(), 0.0f64, 0.0f64); series];
        for (row, values) in rows.iter().zip(values.chunks(metrics)) {
            for (m, &value) in values.iter().enumerate() {
                let (count, baseline) = self.baselines[row.key * metrics + m];
                if value.is_nan() || count == 0 {
                    continue;
                }
                for &set in &row.sets[..row.n_sets] {
                    if self.tested_as[set as usize] != set {
                        continue;
                    }
                    let (drops, baselines, night) = &mut drops[set as usize * metrics + m];
                    drops.add(baseline - value);
                    *baselines += baseline;
                    *night += value;
                }
            }
        }
        let mut tested: Vec<Option<Tested>> = (0..series)
            .map(|s| {
                let (drops, baselines, night) = &drops[s];
                let in_family = self.in_baseline.get(s).copied().unwrap_or(false);
                let p_value = drops.p_value().filter(|_| in_family)?;
                let alarm = !self.alarmed[s] && p_value <= level;
                self.alarmed[s] |= alarm;
                let paired = drops.count() as f64;
                Some(Tested {
                    paired: drops.count() as usize,
                    baseline: baselines / paired,
                    mean: night / paired,
                    p_value,
                    level,
                    alarm,
                })
            })
            .collect();
        for s in 0..series {
            let first = self.tested_as[s / metrics] as usize;
            if first != s / metrics {
                tested[s] = tested[first * metrics + s % metrics];
            }
        }
        tested
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
            let set = (s / metrics) as u32;
            let tested_as = match &tested {
                Some(_) => self.tested_as[set as usize],
                None => set,
            };
            self.rows.push(SeriesNight {
                night,
                set,
                metric: s % metrics,
                interval,
                tested: tested.as_ref().and_then(|t| t.get(s).copied().flatten()),
                tested_as,
            });
        }
    }
}
