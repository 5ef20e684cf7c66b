//! Calibration against a human key (`grade --calibrate HUMAN`): the metric
//! values each (run, stage) scored under the human key, kept by the graded
//! (judge's) key's query so that aggregation can pair them with the judge's
//! values ([`crate::base::ppi`]).

use std::path::Path;

use anyhow::{ensure, Result};
use hashbrown::HashMap;

use crate::grade::score::{GradeSettings, QueryRow};
use crate::labels::{LabelIndex, QueryIdx};

/// One (run, stage)'s values under the human key, by the graded key's
/// query: `None` for a query the human key finds no answer for.
pub type PairScores = HashMap<QueryIdx, Option<Box<[f64]>>>;

/// Each (run, stage)'s values under the human key.
type ScoresByPair = HashMap<(Box<str>, Box<str>), PairScores>;

/// The human key and what every (run, stage) scored under it.
pub struct HumanScores {
    /// The human key.
    pub key: LabelIndex,
    /// The human key's queries the graded key labels too.
    pub shared_queries: u64,
    /// Of those, the ones the human key finds no relevant document for
    /// and the graded key does: the judge's answers there are its errors,
    /// which calibration corrects like any other.
    pub no_answer_by_humans: u64,
    pairs: ScoresByPair,
}

impl HumanScores {
    /// What `kept` holds, graded under the human key `key`, whose queries
    /// meet the graded key `graded`'s by query id.
    pub fn new(key: LabelIndex, graded: &LabelIndex, kept: KeptScores) -> Self {
        let mut shared_queries = 0;
        let mut no_answer_by_humans = 0;
        for (q, human) in key.queries().iter().enumerate() {
            let Some(judged) = graded.find_query(key.query_id(q as QueryIdx).as_bytes()) else {
                continue;
            };
            shared_queries += 1;
            let answered = graded.queries()[judged as usize].has_answer();
            no_answer_by_humans += u64::from(!human.has_answer() && answered);
        }
        HumanScores {
            key,
            shared_queries,
            no_answer_by_humans,
            pairs: kept.0,
        }
    }

    /// The values of (run, stage), if it was graded under the human key.
    pub fn pair(&self, run: &str, stage: &str) -> Option<&PairScores> {
        let key: (Box<str>, Box<str>) = (run.into(), stage.into());
        self.pairs.get(&key)
    }
}

/// Refuse a human key (at `path`) that labels none of the graded key's
/// queries: a calibration over no shared query has no result, and keys of
/// the same queries whose ids are written differently look just like this.
///
/// # Errors
/// No query in common.
pub fn require_shared_query(key: &LabelIndex, graded: &LabelIndex, path: &Path) -> Result<()> {
    let shared = (0..key.queries().len() as QueryIdx)
        .any(|q| graded.find_query(key.query_id(q).as_bytes()).is_some());
    ensure!(
        shared,
        "{}: labels none of the queries of {}, so nothing can be calibrated \
         (are the query ids written the same way in both?)",
        crate::base::failure::Setting::Calibrate.given(path.display()),
        crate::base::failure::Setting::Labels
    );
    Ok(())
}

/// Rows graded under the human key, kept as they come.
pub struct HumanRows<'a> {
    key: &'a LabelIndex,
    graded: &'a LabelIndex,
    settings: &'a GradeSettings,
    pairs: ScoresByPair,
}

impl<'a> HumanRows<'a> {
    /// None yet, of rows graded under `key` with `settings`, to be paired
    /// with the graded key `graded`'s queries by query id.
    pub fn new(key: &'a LabelIndex, graded: &'a LabelIndex, settings: &'a GradeSettings) -> Self {
        HumanRows {
            key,
            graded,
            settings,
            pairs: HashMap::new(),
        }
    }

    /// Keep the values of `rows` of (run, stage) that would count in the
    /// means if answered and whose query the graded key labels: `None`
    /// for a query the human key finds no answer for.
    pub fn keep(&mut self, run: &str, stage: &str, rows: &[QueryRow]) {
        let pair = (self.pairs).entry((run.into(), stage.into())).or_default();
        for row in rows {
            if !self.settings.counts_if_answered(row) {
                continue;
            }
            let counted = self.settings.counts_in_means(row.status);
            if let Some(q) = self
                .graded
                .find_query(self.key.query_id(row.query).as_bytes())
            {
                pair.insert(q, row.scores.clone().filter(|_| counted));
            }
        }
    }

    /// The values kept.
    pub fn finish(self) -> KeptScores {
        KeptScores(self.pairs)
    }
}

/// The values [`HumanRows`] kept, for [`HumanScores::new`].
pub struct KeptScores(ScoresByPair);
