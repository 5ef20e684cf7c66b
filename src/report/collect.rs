//! What the grade page draws of each (run, stage), gathered one per_query.csv
//! row at a time. The rows come from the grader's memory while it writes
//! per_query.csv, or from the file when `rgrade report` draws the page
//! again; both hand them over in file order, so both draw the same page.
//!
//! Memory is one (run, stage)'s counted metric values at a time (8 bytes
//! per metric per query); what is kept of a finished (run, stage) is a few
//! hundred numbers and a short list of queries.

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::base::intervals::{Gathered, MeanInterval};
use crate::base::metrics::Cutoff;
use crate::base::schema::{metric_names, Headline, Status};
use crate::compare::graded::Names;

/// Slices shown per kind (task, language, task × language, split): the largest.
pub const SLICES_SHOWN: usize = 12;
/// Queries listed as the worst of a (run, stage).
pub const WORST_SHOWN: usize = 10;
/// Bars of a latency or context histogram.
const HISTOGRAM_BARS: usize = 32;

/// One row of per_query.csv, as the page reads it.
pub trait PerQueryRow {
    /// The query.
    fn query_id(&self) -> &str;
    /// Its task.
    fn task(&self) -> &str;
    /// Its language.
    fn language(&self) -> &str;
    /// Its held-out split.
    fn split(&self) -> &str;
    /// How it was graded.
    fn status(&self) -> Status;
    /// Relevant documents in its labels.
    fn n_relevant(&self) -> u32;
    /// Rank of its first relevant result, at any depth.
    fn first_rel_rank(&self) -> Option<u32>;
    /// Latency of its graded captures.
    fn latency_ms(&self) -> Option<f64>;
    /// Context size of its graded captures.
    fn context_tokens(&self) -> Option<f64>;
    /// Every metric column, when the query counts in the means.
    fn scores(&self) -> Option<&[f64]>;
    /// The relevant ids missing from the deepest cutoff's top k, joined
    /// by `|` as per_query.csv writes them. Asked only of the few queries
    /// the page lists.
    fn missed(&self) -> String;
}

/// The bins of the first relevant rank: each rank to 10, then ranges.
pub const RANK_BINS: [(u32, u32); 15] = [
    (1, 1),
    (2, 2),
    (3, 3),
    (4, 4),
    (5, 5),
    (6, 6),
    (7, 7),
    (8, 8),
    (9, 9),
    (10, 10),
    (11, 20),
    (21, 50),
    (51, 100),
    (101, 1000),
    (1001, u32::MAX),
];

/// A grouping set shown on the page, with its means and intervals.
#[derive(Debug, Clone)]
pub struct SliceFigure {
    /// The task, `None` for any.
    pub task: Option<String>,
    /// The language, `None` for any.
    pub language: Option<String>,
    /// The split, `None` for any.
    pub split: Option<String>,
    /// Queries counted in its means.
    pub counted: usize,
    /// The headline metrics ([`Headline`]), in column order (`None` when
    /// no query counts).
    pub intervals: Vec<Option<MeanInterval>>,
}

/// A list of slices of one kind, the largest [`SLICES_SHOWN`].
#[derive(Debug, Clone, Default)]
pub struct SliceList {
    /// The slices shown, by name.
    pub shown: Vec<SliceFigure>,
    /// Slices of this kind left out.
    pub hidden: usize,
}

/// A query among the worst of its (run, stage).
#[derive(Debug, Clone, PartialEq)]
pub struct WorstQuery {
    /// The query.
    pub query_id: String,
    /// Its task.
    pub task: String,
    /// Its language.
    pub language: String,
    /// Relevant documents in its labels.
    pub n_relevant: u32,
    /// Rank of its first relevant result.
    pub first_rel_rank: Option<u32>,
    /// Its first two headline metrics (recall and rr at the deepest
    /// cutoff, by default), or the one there is.
    pub lowest: Vec<f64>,
    /// The relevant ids it missed.
    pub missed: Vec<String>,
}

/// A histogram over a log scale: `bars` counts between `edges`, and the
/// values a log scale cannot show apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogHistogram {
    /// `bars.len() + 1` ascending edges.
    pub edges: Vec<f64>,
    /// Values per bar.
    pub bars: Vec<u64>,
    /// Values at or below zero, or more than [`DECADES`] decades below
    /// the largest: not drawn.
    pub below: u64,
}

/// Decades a log histogram spans at most: a picture of latencies from a
/// nanosecond to an hour says nothing a narrower one does not.
pub const DECADES: f64 = 9.0;

/// What the page draws of one (run, stage).
#[derive(Debug, Clone)]
pub struct PairFigures {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// Overall, over every counted query: every metric column.
    pub overall: Vec<Option<MeanInterval>>,
    /// By task, by language, by task × language and by split.
    pub slices: [SliceList; 4],
    /// Queries with status ok per [`RANK_BINS`] bin, then those whose
    /// captures held no relevant document.
    pub first_ranks: Vec<u64>,
    /// Latency of the captured queries.
    pub latency: LogHistogram,
    /// Context size of the captured queries.
    pub context: LogHistogram,
    /// The worst graded queries, worst first.
    pub worst: Vec<WorstQuery>,
}

/// Gathers the figures of every (run, stage), one row at a time.
pub struct Collector {
    n_scores: usize,
    /// The metrics the page leads with.
    headline: Headline,
    pairs: Vec<PairFigures>,
    current: Option<PairRows>,
}

/// The rows of the (run, stage) being read.
struct PairRows {
    run: String,
    stage: String,
    names: Names,
    /// (task, language, split) of each counted row.
    slices: Vec<SliceOf>,
    /// Row-major metric columns of the counted rows.
    values: Vec<f64>,
    first_ranks: Vec<u64>,
    latencies: Vec<f64>,
    contexts: Vec<f64>,
    worst: Vec<WorstQuery>,
}

impl Collector {
    /// Nothing read yet, for a grading at cutoffs `ks` of the measures
    /// `asked` by name, if any.
    pub fn new(ks: &[Cutoff], asked: Option<&[String]>) -> Self {
        Collector {
            n_scores: metric_names(ks, asked).len(),
            headline: Headline::of(ks, asked),
            pairs: Vec::new(),
            current: None,
        }
    }

    /// Start the rows of (run, stage), about `rows` of them, finishing the
    /// one before.
    pub fn begin_pair(&mut self, run: &str, stage: &str, rows: usize) {
        self.finish_pair();
        self.current = Some(PairRows {
            run: run.to_string(),
            stage: stage.to_string(),
            names: Names::default(),
            slices: Vec::with_capacity(rows),
            values: Vec::with_capacity(rows * self.n_scores),
            first_ranks: vec![0; RANK_BINS.len() + 1],
            latencies: Vec::new(),
            contexts: Vec::new(),
            worst: Vec::new(),
        });
    }

    /// Whether the rows being read are those of (run, stage).
    pub fn is_pair(&self, run: &str, stage: &str) -> bool {
        self.current
            .as_ref()
            .is_some_and(|p| p.run == run && p.stage == stage)
    }

    /// Read one row of the current (run, stage).
    ///
    /// # Panics
    /// No pair begun: a caller's bug.
    pub fn add(&mut self, row: &impl PerQueryRow) {
        let headline = &self.headline;
        let pair = self.current.as_mut().expect("a pair is begun first");
        pair.latencies.extend(row.latency_ms());
        pair.contexts.extend(row.context_tokens());
        let Some(scores) = row.scores() else { return };
        let slice = (
            pair.names.intern(row.task()),
            pair.names.intern(row.language()),
            pair.names.intern(row.split()),
        );
        pair.slices.push(slice);
        pair.values.extend_from_slice(scores);
        if row.status() != Status::Ok {
            return;
        }
        let bin = match row.first_rel_rank() {
            Some(rank) => RANK_BINS.partition_point(|&(_, last)| last < rank),
            None => RANK_BINS.len(),
        };
        pair.first_ranks[bin] += 1;
        let lowest = headline.of_row(scores);
        let lowest = &lowest[..lowest.len().min(2)];
        let worse = |q: &WorstQuery| lowest < &q.lowest[..];
        if pair.worst.len() < WORST_SHOWN || pair.worst.last().is_some_and(worse) {
            // Rows come in query order, so a query that only ties the
            // last kept one stays out: the list is the same however read.
            let at = pair.worst.partition_point(|q| !worse(q));
            pair.worst.insert(
                at,
                WorstQuery {
                    query_id: row.query_id().to_string(),
                    task: row.task().to_string(),
                    language: row.language().to_string(),
                    n_relevant: row.n_relevant(),
                    first_rel_rank: row.first_rel_rank(),
                    lowest: lowest.to_vec(),
                    missed: match row.missed().as_str() {
                        "" => Vec::new(),
                        ids => ids.split('|').map(str::to_string).collect(),
                    },
                },
            );
            pair.worst.truncate(WORST_SHOWN);
        }
    }

    /// The figures of every (run, stage), in the order read.
    pub fn finish(mut self) -> Vec<PairFigures> {
        self.finish_pair();
        self.pairs
    }

    fn finish_pair(&mut self) {
        let Some(pair) = self.current.take() else {
            return;
        };
        self.pairs.push(pair.figures(self.n_scores, &self.headline));
    }
}

impl PairRows {
    fn figures(self, n_scores: usize, headline: &Headline) -> PairFigures {
        let rows = self.slices.len();
        let mut overall = vec![Gathered::expecting(rows); n_scores];
        for row in self.values.chunks_exact(n_scores) {
            for (gathered, &value) in overall.iter_mut().zip(row) {
                gathered.add(value);
            }
        }
        let slices = self.slice_lists(n_scores, headline);
        PairFigures {
            overall: overall.par_iter().map(Gathered::interval).collect(),
            slices,
            first_ranks: self.first_ranks,
            latency: LogHistogram::of(self.latencies),
            context: LogHistogram::of(self.contexts),
            worst: self.worst,
            run: self.run,
            stage: self.stage,
        }
    }

    /// For each kind of slice, the largest, by name, with the intervals
    /// of the headline metrics: two passes over the rows, one to size
    /// every slice and one to gather the values of those shown.
    fn slice_lists(&self, n_scores: usize, headline: &Headline) -> [SliceList; 4] {
        let kinds = [
            SliceKind::Task,
            SliceKind::Language,
            SliceKind::Both,
            SliceKind::Split,
        ];
        let mut sizes: [HashMap<SliceOf, usize>; 4] = Default::default();
        for &slice in &self.slices {
            for (sizes, kind) in sizes.iter_mut().zip(kinds) {
                *sizes.entry(kind.key(slice)).or_default() += 1;
            }
        }
        let names = &self.names;
        let name = |id: u32| (id != u32::MAX).then(|| names.name(id).to_string());
        let chosen = sizes.map(|sizes| {
            let mut by_size: Vec<(SliceOf, usize)> = sizes.into_iter().collect();
            by_size.sort_by(|(a, na), (b, nb)| {
                let names = |s: &SliceOf| (name(s.0), name(s.1), name(s.2));
                nb.cmp(na).then_with(|| names(a).cmp(&names(b)))
            });
            let hidden = by_size.len().saturating_sub(SLICES_SHOWN);
            by_size.truncate(SLICES_SHOWN);
            (by_size, hidden)
        });
        let places: Vec<HashMap<SliceOf, usize>> = chosen
            .iter()
            .map(|(shown, _)| {
                shown
                    .iter()
                    .enumerate()
                    .map(|(i, (key, _))| (*key, i))
                    .collect()
            })
            .collect();
        let mut gathered: Vec<Vec<Vec<Gathered>>> = chosen
            .iter()
            .map(|(shown, _)| {
                let metrics = |&(_, size): &(SliceOf, usize)| {
                    vec![Gathered::expecting(size); headline.names.len()]
                };
                shown.iter().map(metrics).collect()
            })
            .collect();
        for (row, &slice) in self.slices.iter().enumerate() {
            let values = headline.of_row(&self.values[row * n_scores..][..n_scores]);
            for (k, kind) in kinds.iter().enumerate() {
                if let Some(&i) = places[k].get(&kind.key(slice)) {
                    for (g, &value) in gathered[k][i].iter_mut().zip(values) {
                        g.add(value);
                    }
                }
            }
        }
        let mut lists = chosen
            .into_iter()
            .zip(gathered)
            .map(|((shown, hidden), gathered)| {
                let mut shown: Vec<SliceFigure> = shown
                    .into_par_iter()
                    .zip(gathered)
                    .map(|((key, counted), metrics)| SliceFigure {
                        task: name(key.0),
                        language: name(key.1),
                        split: name(key.2),
                        counted,
                        intervals: metrics.iter().map(Gathered::interval).collect(),
                    })
                    .collect();
                shown.sort_by(|a, b| {
                    (&a.task, &a.language, &a.split).cmp(&(&b.task, &b.language, &b.split))
                });
                SliceList { shown, hidden }
            });
        [(); 4].map(|()| lists.next().unwrap_or_default())
    }
}

/// A row's (task, language, split), as names of its (run, stage);
/// `u32::MAX` stands for any.
type SliceOf = (u32, u32, u32);

/// Which grouping sets a slice list holds.
#[derive(Debug, Clone, Copy)]
enum SliceKind {
    Task,
    Language,
    Both,
    Split,
}

impl SliceKind {
    /// The grouping set of `kind` a row of (task, language, split) is in.
    fn key(self, (task, language, split): SliceOf) -> SliceOf {
        const ANY: u32 = u32::MAX;
        match self {
            SliceKind::Task => (task, ANY, ANY),
            SliceKind::Language => (ANY, language, ANY),
            SliceKind::Both => (task, language, ANY),
            SliceKind::Split => (ANY, ANY, split),
        }
    }
}

impl LogHistogram {
    /// [`HISTOGRAM_BARS`] bars of equal width on a log scale from the
    /// smallest positive value (at most [`DECADES`] below the largest) to
    /// the largest.
    fn of(values: Vec<f64>) -> Self {
        let Some(max) = values
            .iter()
            .copied()
            .filter(|&v| v > 0.0)
            .max_by(f64::total_cmp)
        else {
            return LogHistogram {
                below: values.len() as u64,
                ..LogHistogram::default()
            };
        };
        let floor = max / 10f64.powf(DECADES);
        let positive: Vec<f64> = values
            .iter()
            .copied()
            .filter(|&v| v >= floor && v > 0.0)
            .collect();
        let below = (values.len() - positive.len()) as u64;
        let min = positive
            .iter()
            .copied()
            .min_by(f64::total_cmp)
            .unwrap_or(max);
        let (low, high) = (min.ln(), max.ln());
        let bars = if high > low { HISTOGRAM_BARS } else { 1 };
        let width = (high - low) / bars as f64;
        let mut edges: Vec<f64> = (0..=bars).map(|i| (low + width * i as f64).exp()).collect();
        // The ends are the values themselves, not their round trip
        // through a logarithm.
        edges[0] = min;
        edges[bars] = max;
        let mut counts = vec![0; bars];
        for v in positive {
            let bar = if width > 0.0 {
                ((v.ln() - low) / width) as usize
            } else {
                0
            };
            counts[bar.min(bars - 1)] += 1;
        }
        LogHistogram {
            edges,
            bars: counts,
            below,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::slices::NO_SLICE;

    struct Row {
        id: &'static str,
        task: &'static str,
        status: Status,
        rank: Option<u32>,
        latency: Option<f64>,
        scores: Option<Vec<f64>>,
    }

    impl PerQueryRow for Row {
        fn query_id(&self) -> &str {
            self.id
        }
        fn task(&self) -> &str {
            self.task
        }
        fn language(&self) -> &str {
            "en"
        }
        fn split(&self) -> &str {
            NO_SLICE
        }
        fn status(&self) -> Status {
            self.status
        }
        fn n_relevant(&self) -> u32 {
            2
        }
        fn first_rel_rank(&self) -> Option<u32> {
            self.rank
        }
        fn latency_ms(&self) -> Option<f64> {
            self.latency
        }
        fn context_tokens(&self) -> Option<f64> {
            None
        }
        fn scores(&self) -> Option<&[f64]> {
            self.scores.as_deref()
        }
        fn missed(&self) -> String {
            format!("{}-doc", self.id)
        }
    }

    /// A row at k = 3 whose recall and rr are given, the rest 0.
    fn row(id: &'static str, task: &'static str, recall: f64, rr: f64, rank: Option<u32>) -> Row {
        Row {
            id,
            task,
            status: Status::Ok,
            rank,
            latency: Some(10.0),
            scores: Some(vec![recall, rr, 0.0, 0.0, 0.0, 0.0]),
        }
    }

    #[test]
    fn the_seed_example_has_its_hand_computed_figures() {
        let mut collector = Collector::new(&[Cutoff::At(3)], None);
        collector.begin_pair("", "final", 4);
        collector.add(&row("q_export", "export", 1.0, 1.0, Some(1)));
        collector.add(&row("q_reset", "account", 1.0, 0.5, Some(2)));
        collector.add(&row("q_sharing", "permissions", 0.5, 0.5, Some(2)));
        collector.add(&Row {
            status: Status::NoAnswer,
            scores: None,
            latency: None,
            ..row("q_none", "chitchat", 0.0, 0.0, None)
        });
        let pairs = collector.finish();
        assert_eq!(pairs.len(), 1);
        let pair = &pairs[0];
        let recall = pair.overall[0].unwrap();
        assert!((recall.mean - 2.5 / 3.0).abs() < 1e-12);
        assert_eq!(recall.n, 3);
        assert!((pair.overall[1].unwrap().mean - 2.0 / 3.0).abs() < 1e-12);
        // Ranks 1, 2, 2; nothing unfound.
        assert_eq!(&pair.first_ranks[..3], &[1, 2, 0]);
        assert_eq!(pair.first_ranks[RANK_BINS.len()], 0);
        // Worst first: q_sharing (recall 0.5), then q_reset (rr 0.5).
        let worst: Vec<&str> = pair.worst.iter().map(|q| q.query_id.as_str()).collect();
        assert_eq!(worst, ["q_sharing", "q_reset", "q_export"]);
        assert_eq!(pair.worst[0].missed, ["q_sharing-doc"]);
        // Three tasks with a counted query; chitchat has none.
        let tasks: Vec<_> = pair.slices[0]
            .shown
            .iter()
            .map(|s| s.task.clone())
            .collect();
        assert_eq!(
            tasks,
            [
                Some("account".into()),
                Some("export".into()),
                Some("permissions".into())
            ]
        );
        assert_eq!(pair.latency.bars, [3]);
    }

    #[test]
    fn ties_keep_the_first_queries_read() {
        let mut collector = Collector::new(&[Cutoff::At(3)], None);
        collector.begin_pair("run", "final", 0);
        let ids: Vec<&'static str> = (0..WORST_SHOWN + 5)
            .map(|i| &*Box::leak(format!("q{i:02}").into_boxed_str()))
            .collect();
        for id in &ids {
            collector.add(&row(id, "t", 0.0, 0.0, None));
        }
        let pair = &collector.finish()[0];
        let worst: Vec<&str> = pair.worst.iter().map(|q| q.query_id.as_str()).collect();
        assert_eq!(worst, ids[..WORST_SHOWN]);
        assert_eq!(pair.first_ranks[RANK_BINS.len()], (WORST_SHOWN + 5) as u64);
    }

    #[test]
    fn ranks_fall_in_their_bins() {
        let mut collector = Collector::new(&[Cutoff::At(3)], None);
        collector.begin_pair("run", "final", 0);
        for (id, rank) in [("a", 10), ("b", 11), ("c", 20), ("d", 21), ("e", 5000)] {
            collector.add(&row(id, "t", 1.0, 1.0, Some(rank)));
        }
        let ranks = &collector.finish()[0].first_ranks;
        assert_eq!(ranks[9], 1);
        assert_eq!(ranks[10], 2);
        assert_eq!(ranks[11], 1);
        assert_eq!(ranks[14], 1);
    }

    #[test]
    fn a_log_histogram_spans_its_values() {
        let hist = LogHistogram::of(vec![0.0, 1.0, 10.0, 100.0, 1000.0, -3.0, 1e-7]);
        assert_eq!(hist.below, 3);
        assert_eq!(hist.bars.len(), HISTOGRAM_BARS);
        assert_eq!(hist.bars.iter().sum::<u64>(), 4);
        assert_eq!((hist.edges[0], hist.edges[HISTOGRAM_BARS]), (1.0, 1000.0));
        assert_eq!(hist.bars[HISTOGRAM_BARS - 1], 1);
        assert_eq!(LogHistogram::of(vec![5.0, 5.0]).bars, [2]);
        assert_eq!(LogHistogram::of(Vec::new()), LogHistogram::default());
        let wide = LogHistogram::of(vec![1e-300, 1e300, f64::MAX]);
        assert_eq!((wide.below, wide.bars.iter().sum::<u64>()), (1, 2));
    }
}
