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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{bail, ensure, Result};
use serde::{Deserialize, Serialize};

use crate::base::failure::{spelled_by_each_front_end, Setting};
use crate::base::metrics::{Cutoff, Metric};
use crate::base::schema::metric_names;
use crate::base::text::plural;
use crate::io::location::shown;
use crate::io::reread;
use nights::Night;
pub use watch::Trended;
use watch::{SeriesNight, WatchSettings, Watched};

/// What `rgrade trend` is asked to do. As [`crate::GradePlan`], the one
/// place an option is defined: the command line's arguments and Python's
/// keyword arguments are read into it by name, an option left out keeping
/// [`Plan::new`]'s default, and [`Plan::check`] holds its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default = "Plan::unset", deny_unknown_fields)]
pub struct Plan {
    /// The nights' grade output directories, in any order.
    pub nights: Vec<PathBuf>,
    /// The output directory; `None` writes nothing.
    pub out: Option<PathBuf>,
    /// The first nights of each labels revision that make its baseline
    /// (the option `baseline`).
    #[serde(rename = "baseline")]
    pub baseline_nights: usize,
    /// The chance of any false alarm, over every series and night.
    pub alpha: f64,
    /// The metric columns watched; empty for every metric column of the
    /// nights' cutoffs.
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
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

    /// The plan of no nights, whose other options a deserialized plan
    /// keeps when it is not given them.
    fn unset() -> Self {
        Plan::new(Vec::new())
    }

    /// Refuse options no trend can be watched with, before anything is
    /// read.
    ///
    /// # Errors
    /// No night, a baseline of fewer than 2 nights, an alpha outside (0,
    /// 1), a metric that is none of the quality metrics at a cutoff.
    pub fn check(&self) -> Result<()> {
        ensure!(
            !self.nights.is_empty(),
            "name at least one night's grade output"
        );
        ensure!(
            self.baseline_nights >= 2,
            "{}: the baseline takes at least 2 nights (their spread bounds its error)",
            Setting::Baseline.given(self.baseline_nights)
        );
        ensure!(
            self.alpha > 0.0 && self.alpha < 1.0,
            "{}: must lie strictly between 0 and 1",
            Setting::Alpha.given(self.alpha)
        );
        let watched: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
        for metric in &self.metrics {
            let (name, cutoff) = metric.split_once('@').unwrap_or((metric, ""));
            if name == "judged" {
                bail!(
                    "{}: judged@k measures how much of a ranking the labels \
                     cover, not the retriever; trend watches {}",
                    Setting::Metrics.given(metric),
                    watched.join(", ")
                );
            }
            let canonical = cutoff.parse::<Cutoff>().map(|k| k.to_string());
            ensure!(
                watched.contains(&name) && canonical.is_ok_and(|k| k == cutoff),
                "{}: not a metric; trend watches {} at a cutoff (recall@10)",
                Setting::Metrics.given(metric),
                watched.join(", ")
            );
        }
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
    /// Metric columns some nights have and others lack (graded at other
    /// cutoffs): they are not watched.
    Unshared {
        /// The metrics left out.
        metrics: Vec<String>,
    },
    /// Series with rows on watched nights but never tested: no query of
    /// theirs was graded on a watched night and the baseline nights both.
    Untested {
        /// How many series.
        series: usize,
        /// The first, named.
        first: String,
    },
    /// A (run, stage) with no rows at all on some nights: its series skip
    /// them.
    Absent {
        /// The run.
        run: String,
        /// The stage.
        stage: String,
        /// The nights without it.
        nights: usize,
        /// All nights.
        of: usize,
        /// The first night without it.
        first: String,
    },
}

spelled_by_each_front_end!(Warning);

impl Warning {
    /// The warning, each setting it names as a mark.
    fn write_marked(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Warning::Unwatched { revision, nights } => write!(
                f,
                "labels revision {revision} has {}, none past its baseline: nothing in it was \
                 tested ({} sets how many nights the baseline takes)",
                plural(*nights as u64, "night", "nights"),
                Setting::Baseline
            ),
            Warning::Unshared { metrics } => write!(
                f,
                "{} not watched: some nights were graded at other cutoffs, so they cannot be \
                 followed across all the nights",
                metrics.join(", ")
            ),
            Warning::Untested { series, first } => write!(
                f,
                "{} never tested: no query graded on a watched night was graded on the \
                 baseline nights too (a task, language or run that came later, or other \
                 queries); the first: {first}",
                plural(*series as u64, "series was", "series were"),
            ),
            Warning::Absent {
                run,
                stage,
                nights,
                of,
                first,
            } => write!(
                f,
                "run {} stage {stage} has no rows on {nights} of {of} nights (the first: \
                 {first}): its series skip them",
                output::run_name(run)
            ),
        }
    }
}

/// Read the nights `plan` names and watch every series; `plan` was
/// checked ([`Plan::check`]) before anything was claimed.
///
/// # Errors
/// A night that is no complete grade output, records no time, or was
/// graded unlike the others (unless allowed); a metric no night has.
pub fn trend(plan: &Plan, warn: &mut dyn FnMut(Warning)) -> Result<Trended> {
    let nights = nights::order(&plan.nights, plan.allow_label_changes)?;
    reread::pause_between_readings();
    let metrics = if plan.metrics.is_empty() {
        shared_metrics(&nights, warn)?
    } else {
        // Named twice, a metric would count twice in the family.
        each_once(&plan.metrics)
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
    untested(&watched, &settings, warn);
    absent(&watched, warn);
    Ok(Trended {
        settings,
        watched,
        openmetrics_failure: None,
    })
}

/// The metric columns every night has, in the order nights first have
/// them; those only some have are warned of.
///
/// # Errors
/// Nights that share no metric column.
fn shared_metrics(nights: &[Night], warn: &mut dyn FnMut(Warning)) -> Result<Vec<String>> {
    let of_night: Vec<Vec<String>> = (nights.iter())
        .map(|night| metric_names(&night.facts.ks, night.facts.measures.as_deref()))
        .collect();
    let every = |metric: &String| of_night.iter().all(|columns| columns.contains(metric));
    let (shared, unshared): (Vec<String>, Vec<String>) = each_once(of_night.iter().flatten())
        .into_iter()
        .partition(every);
    ensure!(
        !shared.is_empty(),
        "the nights share no cutoff, so no metric can be followed across them"
    );
    if !unshared.is_empty() {
        warn(Warning::Unshared { metrics: unshared });
    }
    Ok(shared)
}

/// `names`, each once, in the order first given.
fn each_once<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut once: Vec<String> = Vec::new();
    for name in names {
        if !once.contains(name) {
            once.push(name.clone());
        }
    }
    once
}

/// Warn of the series that had rows on watched nights but were never
/// tested: no query of theirs was graded both on a watched night and on
/// the baseline nights.
fn untested(watched: &Watched, settings: &WatchSettings, warn: &mut dyn FnMut(Warning)) {
    let coverage = watched.coverage();
    // A grouping set that repeats another's queries is tested as that one.
    let untested = |row: &&SeriesNight| {
        let revision = &coverage[watched.nights[row.night].revision as usize - 1];
        !watched.baseline[row.night]
            && row.is_distinct()
            && !revision.tested.contains(&(row.set, row.metric))
    };
    let Some(row) = watched.rows.iter().find(untested) else {
        return;
    };
    let [run, stage, task, language, split] =
        output::set_names(watched, watched.sets[row.set as usize]);
    let series = (coverage.iter())
        .map(|c| c.watched.difference(&c.tested).count())
        .sum();
    warn(Warning::Untested {
        series,
        first: format!(
            "run {} stage {stage} task={task} language={language}{} {}",
            output::run_name(run),
            output::split_name(split),
            settings.metrics[row.metric]
        ),
    });
}

/// Warn of each (run, stage) that some nights have no rows of.
fn absent(watched: &Watched, warn: &mut dyn FnMut(Warning)) {
    let mut on_nights: BTreeMap<(&str, &str), BTreeSet<usize>> = BTreeMap::new();
    for row in &watched.rows {
        let [run, stage, ..] = output::set_names(watched, watched.sets[row.set as usize]);
        on_nights.entry((run, stage)).or_default().insert(row.night);
    }
    let of = watched.nights.len();
    for ((run, stage), nights) in on_nights {
        if let Some(missing) = (0..of).find(|night| !nights.contains(night)) {
            warn(Warning::Absent {
                run: run.to_string(),
                stage: stage.to_string(),
                nights: of - nights.len(),
                of,
                first: shown(&watched.nights[missing].given),
            });
        }
    }
}
