//! `rgrade trend` (docs/trend.md): a series of nightly gradings read in
//! the order of the time each stands for, every (run, stage, grouping set,
//! metric) followed across them, and alarms raised where a series dropped
//! below its baseline nights, valid however many nights are watched.
//!
//! - [`nights`] orders the gradings and numbers their labels revisions;
//! - [`watch`] follows every series and bets against "no drop"
//!   (`crate::base::monitor`);
//! - [`output`] writes trend.csv, alarms.json and the stdout report.

pub mod nights;
pub mod output;
pub mod watch;

use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{ensure, Result};

use crate::base::schema::metric_columns;
use crate::base::text::plural;
pub use watch::Trended;
use watch::WatchSettings;

/// What `rgrade trend` is asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The nights' grade output directories, in any order.
    pub nights: Vec<PathBuf>,
    /// The output directory; `None` writes nothing.
    pub out: Option<PathBuf>,
    /// The first nights of each labels revision that make its baseline.
    pub baseline_nights: usize,
    /// The chance of any false alarm, over every series and night.
    pub alpha: f64,
    /// The metric columns watched; empty for every metric column of the
    /// nights' cutoffs.
    pub metrics: Vec<String>,
    /// Watch nights graded with other labels or settings, each revision
    /// apart, rather than refuse them.
    pub allow_label_changes: bool,
    /// The command line as typed, for alarms.json.
    pub command: Vec<String>,
    /// Worker threads; `None` means all cores.
    pub threads: Option<NonZeroUsize>,
    /// Also write each series' last mean, evidence and alarm in the
    /// OpenMetrics text format to this file.
    pub openmetrics: Option<PathBuf>,
}

/// Baseline nights unless told otherwise: a week.
pub const DEFAULT_BASELINE_NIGHTS: usize = 7;

impl Plan {
    /// Watch `nights` as `rgrade trend NIGHTS...` does with no other
    /// option: a week of baseline, α = 0.05, every metric.
    pub fn new(nights: Vec<PathBuf>) -> Self {
        Plan {
            nights,
            out: None,
            baseline_nights: DEFAULT_BASELINE_NIGHTS,
            alpha: 0.05,
            metrics: Vec::new(),
            allow_label_changes: false,
            command: Vec::new(),
            threads: None,
            openmetrics: None,
        }
    }

    /// Refuse options no trend can be watched with, before anything is
    /// read.
    ///
    /// # Errors
    /// No night, a baseline of fewer than 2 nights, an alpha outside (0, 1).
    pub fn check(&self) -> Result<()> {
        ensure!(
            !self.nights.is_empty(),
            "name at least one night's grade output"
        );
        ensure!(
            self.baseline_nights >= 2,
            "--baseline {}: the baseline takes at least 2 nights (their spread bounds its error)",
            self.baseline_nights
        );
        ensure!(
            self.alpha > 0.0 && self.alpha < 1.0,
            "--alpha {}: must lie strictly between 0 and 1",
            self.alpha
        );
        Ok(())
    }
}

/// What a trend tells the user to look at, though it went on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A labels revision with no night past its baseline: nothing in it
    /// was tested.
    Unwatched {
        /// The revision.
        revision: u32,
        /// Its nights.
        nights: usize,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Unwatched { revision, nights } => write!(
                f,
                "labels revision {revision} has {}, none past its baseline: nothing in it was \
                 tested (--baseline sets how many nights the baseline takes)",
                plural(*nights as u64, "night", "nights")
            ),
        }
    }
}

/// Read the nights `plan` names and watch every series.
///
/// # Errors
/// Bad options ([`Plan::check`]); a night that is no complete grade output, records no
/// time, or was graded unlike the others (unless allowed); a metric no
/// night has.
pub fn trend(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<Trended> {
    plan.check()?;
    let nights = nights::order(&plan.nights, plan.allow_label_changes)?;
    let metrics = if plan.metrics.is_empty() {
        metric_columns(&nights[0].facts.ks)
    } else {
        plan.metrics.clone()
    };
    let settings = WatchSettings {
        baseline_nights: plan.baseline_nights,
        alpha: plan.alpha,
        metrics,
    };
    let watched = watch::watch(nights, &settings)?;
    for (r, revision) in watched.revisions.iter().enumerate() {
        if revision.is_none() {
            let revision = r as u32 + 1;
            let nights = watched
                .nights
                .iter()
                .filter(|n| n.revision == revision)
                .count();
            warn(Warning::Unwatched { revision, nights });
        }
    }
    Ok(Trended { settings, watched })
}
