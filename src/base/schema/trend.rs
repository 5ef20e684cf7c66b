//! alarms.json, the summary `rgrade trend` writes last.
//!
//! trend.csv's columns sit with every other file's, in the parent module.

use serde::{Deserialize, Serialize};

use super::listed::OutputFile;
use crate::base::text::plural;
use crate::base::timestamp::Timestamp;

/// alarms.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendSummary {
    /// Always "rgrade".
    pub tool: String,
    /// rgrade's version.
    pub version: String,
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The nights, in the order of their `as_of`.
    pub nights: Vec<TrendNight>,
    /// How the nights were watched.
    pub settings: TrendSettings,
    /// Each labels revision, and the family its series make.
    pub revisions: Vec<TrendRevision>,
    /// Every alarm, by night, then in trend.csv's order.
    pub alarms: Vec<Alarm>,
    /// Every other output, as written.
    pub outputs: Vec<OutputFile>,
}

impl TrendSummary {
    /// Why nothing was tested, when nothing was: no night past the
    /// baseline, or no watched night's query paired with one. Stdout,
    /// the page and Python's repr all say it in place of "no alarm".
    pub fn nothing_tested(&self) -> Option<String> {
        if self.revisions.iter().any(|r| r.tested > 0) {
            return None;
        }
        let baseline = self.settings.baseline_nights;
        Some(if self.nights.iter().all(|night| night.baseline) {
            format!(
                "nothing tested yet: no night past a baseline of {}",
                plural(baseline as u64, "night", "nights")
            )
        } else {
            "nothing tested: no query of the watched nights was graded on the baseline nights"
                .to_string()
        })
    }
}

/// One night in alarms.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendNight {
    /// Its grade output directory, as given.
    pub night: String,
    /// The time its grading stands for.
    pub as_of: Timestamp,
    /// Its labels revision: 1, then one more at each night graded with
    /// other labels or settings than the night before.
    pub revision: u32,
    /// Whether it is one of its revision's baseline nights.
    pub baseline: bool,
}

/// How the nights were watched, in alarms.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendSettings {
    /// The first nights of each revision that make its baseline.
    pub baseline_nights: usize,
    /// The chance of any false alarm over every series and night.
    pub alpha: f64,
    /// The metrics watched.
    pub metrics: Vec<String>,
}

/// One labels revision in alarms.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendRevision {
    /// Its number, from 1.
    pub revision: u32,
    /// The content hash of its labels.
    pub labels_hash: String,
    /// What its nights were graded with unlike the revision before
    /// (`labels`, `reviewers`, `unit`, `cutoffs`, `min_rel` or `missing`,
    /// the first that differs); absent for the first revision.
    pub changed: Option<String>,
    /// Its nights.
    pub nights: usize,
    /// The distinct series watched past its baseline: (run, stage,
    /// grouping set, metric) with baseline values, a grouping set that
    /// holds the same queries as another counted once; the family its
    /// share of `alpha` is split over.
    pub series: usize,
    /// Of those, the series tested on at least one night: paired with
    /// their baseline by a query graded on both.
    pub tested: usize,
    /// Its share of the settings' alpha, `alpha / (r (r + 1))` for the
    /// r-th revision; its t-th watched night spends `1 / (t (t + 1))` of
    /// it, over its series. Absent when no night was watched.
    pub alpha: Option<f64>,
    /// The grouping sets that held the same queries as an earlier one
    /// (in aggregates.csv's order) over the baseline nights, and so are
    /// tested, and alarm, as that one.
    pub repeated_sets: Vec<RepeatedSet>,
}

/// A grouping set of one (run, stage): its task, language and split,
/// `*` for any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupingSet {
    /// The task.
    pub task: String,
    /// The language.
    pub language: String,
    /// The split.
    pub split: String,
}

/// A grouping set tested as another that holds the same queries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatedSet {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// The set.
    pub set: GroupingSet,
    /// The set it repeats.
    pub same_as: GroupingSet,
}

/// A series whose p-value reached its night's level, on the first night
/// of its revision it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// The task, `*` for any.
    pub task: String,
    /// The language, `*` for any.
    pub language: String,
    /// The split, `*` for any.
    pub split: String,
    /// The metric.
    pub metric: String,
    /// The night that alarmed.
    pub night: String,
    /// Its time.
    pub as_of: Timestamp,
    /// Queries of the set paired with the baseline that night.
    pub paired: usize,
    /// Their baseline mean.
    pub baseline: f64,
    /// Their mean that night.
    pub mean: f64,
    /// `baseline − mean`: how far the set dropped.
    pub drop: f64,
    /// The one-sided p-value of "no drop" that night.
    pub p_value: f64,
    /// The p-value at or under which the series alarmed that night.
    pub level: f64,
    /// The other grouping sets of the run and stage that hold the same
    /// queries, and so alarmed with it.
    pub also: Vec<GroupingSet>,
}
