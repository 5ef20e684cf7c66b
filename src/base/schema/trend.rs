//! The outputs of `rgrade trend`: trend.csv's columns and alarms.json.

use serde::{Deserialize, Serialize};

use super::{OutputFile, LANGUAGE, REPORT_FILE, RUN, SPLIT, STAGE, TASK};
use crate::base::timestamp::Timestamp;

/// trend.csv: one row per (night, run, stage, grouping set, metric).
pub const TREND_FILE: &str = "trend.csv";
/// alarms.json: the nights read, how they were watched, the alarms and
/// every other file; written last, so a directory without it holds no
/// complete trend.
pub const ALARMS_FILE: &str = "alarms.json";

/// Every file `rgrade trend` may leave in its directory, alarms.json
/// (which marks it complete) first.
pub const TREND_FILES: [&str; 3] = [ALARMS_FILE, REPORT_FILE, TREND_FILE];

/// trend.csv's columns, in order.
pub const TREND: [&str; 18] = [
    "as_of", "night", "revision", RUN, STAGE, TASK, LANGUAGE, SPLIT, "metric", "queries", "mean",
    "ci_low", "ci_high", "role", "paired", "drop", "evidence", "alarm",
];

/// A night's part in its series (trend.csv's `role`).
pub const BASELINE_ROLE: &str = "baseline";
/// A night tested against the baseline.
pub const WATCHED_ROLE: &str = "watched";

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
    /// Its nights.
    pub nights: usize,
    /// The series watched past its baseline: (run, stage, grouping set,
    /// metric) with baseline values; its share of the family `alpha`
    /// holds for.
    pub series: usize,
    /// The evidence at which a series of it alarms:
    /// `2 × revisions × series / alpha`; absent when no night was watched.
    pub threshold: Option<f64>,
}

/// A series whose evidence reached the threshold, on the first night it did.
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
    /// The evidence reached.
    pub evidence: f64,
}
