//! Several reviewers in one key: each (query, document) pair's grades
//! combined into the one that counts (`--reviewers`), and what each
//! reviewer labeled and how far they agree, for summary.json
//! (docs/guide.md, "Several reviewers in one key").

use std::collections::{BTreeMap, BTreeSet};

use anyhow::anyhow;
use rayon::prelude::*;

use super::build::{sorted_by_id, Builder, LineError, RawDoc};
use super::index::Reviewers;
use crate::base::kappa::{fleiss_kappa, krippendorff_alpha_ordinal};
use crate::base::options::{ReviewerPolicy, Reviewing};
use crate::base::schema::{ReviewerSummary, ReviewersSummary};
use crate::base::slices::NO_SLICE;

impl Reviewers {
    /// The reviewers as summary.json reports them, relevance at `min_rel`.
    pub fn summary(&self, min_rel: i64) -> ReviewersSummary {
        let grades: Vec<i64> = (self.votes.iter())
            .flat_map(|(given, _)| given.iter().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let tally = |category: &dyn Fn(i64) -> usize, categories: usize| {
            (self.votes.iter())
                .map(|(given, pairs)| {
                    let mut counts = vec![0; categories];
                    for &grade in given {
                        counts[category(grade)] += 1;
                    }
                    (counts, *pairs)
                })
                .collect::<Vec<(Vec<u64>, u64)>>()
        };
        let place = |grade: i64| grades.binary_search(&grade).unwrap_or_default();
        let relevant = |grade: i64| usize::from(grade >= min_rel);
        ReviewersSummary {
            policy: self.policy.clone(),
            reviewers: self.reviewers.clone(),
            pairs_judged_by_several: self.votes.iter().map(|(_, pairs)| pairs).sum(),
            pairs_disputed: (self.votes.iter())
                .filter(|(given, _)| given.first() != given.last())
                .map(|(_, pairs)| pairs)
                .sum(),
            fleiss_kappa_relevance: fleiss_kappa(&tally(&relevant, 2)),
            fleiss_kappa_grade: fleiss_kappa(&tally(&place, grades.len())),
            krippendorff_alpha_grade: krippendorff_alpha_ordinal(&tally(&place, grades.len())),
        }
    }
}

/// The first error found, by line: whatever order the checks run in, the
/// one reported is the earliest in the file.
#[derive(Default)]
struct FirstError(Option<LineError>);

impl FirstError {
    fn note(&mut self, line: usize, message: impl FnOnce() -> String) {
        if self.0.as_ref().is_none_or(|(first, _)| Some(line) < *first) {
            self.0 = Some((Some(line), anyhow!(message())));
        }
    }

    fn into_result(self) -> Result<(), LineError> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Combine the judgments of a key whose labels name reviewers, before
/// it is indexed: JSONL lines labeling one query (one line per reviewer)
/// become one query, each (query, doc) pair's grades become one under
/// `policy`, and with one reviewer chosen, only the queries they labeled
/// stay. Returns what the reviewers did; `None`, leaving the builder as
/// it is, when no label names a reviewer.
///
/// # Errors
/// At the earliest line it concerns: a query labeled twice, or a pair
/// judged twice, by one reviewer; lines of one query that disagree on its
/// attributes or text; a pair judged by several reviewers and no policy.
/// A policy for labels that name no reviewer, or a chosen reviewer who
/// labeled nothing.
pub(super) fn combine(
    builder: &mut Builder,
    reviewing: Reviewing<'_>,
) -> Result<Option<Reviewers>, LineError> {
    let Reviewing { policy, option } = reviewing;
    if !builder.has_reviewers {
        return match policy {
            Some(policy) => Err((
                None,
                anyhow!("{}: no label names a reviewer", option.given(policy)),
            )),
            None => Ok(None),
        };
    }
    // JSONL labels (declared by line, not by id) hold a query per line.
    let by_line = builder.by_id.is_empty();
    let mut labeled = std::mem::take(&mut builder.reviewed);
    let id_of = |q: &u32| builder.text(builder.queries[*q as usize].id);
    let order = sorted_by_id(builder.queries.len() as u32, id_of);
    let canonical = if by_line {
        one_query_per_id(builder, &order)?
    } else {
        (0..builder.queries.len() as u32).collect()
    };
    if by_line {
        for doc in &mut builder.docs {
            doc.query = canonical[doc.query as usize];
        }
        for (query, _) in &mut builder.pooled {
            *query = canonical[*query as usize];
        }
        labeled.extend((builder.queries.iter().zip(&canonical)).map(|(q, &c)| (c, q.reviewer)));
    }
    // By reviewer, then query: each reviewer's queries side by side.
    labeled.par_sort_unstable_by_key(|&(query, reviewer)| (reviewer, query));
    labeled.dedup();

    let mut docs = std::mem::take(&mut builder.docs);
    let name_of = |r: u32| builder.reviewer_name(r);
    let chosen = match policy {
        Some(ReviewerPolicy::Only(name)) => {
            let found = (labeled.iter()).find(|&&(_, r)| name_of(r) == name.as_str());
            let Some(&(_, reviewer)) = found else {
                let names: BTreeSet<&str> = labeled.iter().map(|&(_, r)| name_of(r)).collect();
                let names: Vec<&str> = names.into_iter().collect();
                let message = anyhow!(
                    "{}: no label is by reviewer '{name}'; the reviewers are {}",
                    option.given(name),
                    names.join(", ")
                );
                return Err((None, message));
            };
            Some(reviewer)
        }
        _ => None,
    };

    let text = |doc: &RawDoc| builder.text(doc.id);
    docs.par_sort_unstable_by(|a, b| {
        (a.query.cmp(&b.query))
            .then_with(|| text(a).cmp(text(b)))
            .then(a.line.cmp(&b.line))
    });
    let mut pairs: BTreeMap<u32, u64> = BTreeMap::new();
    let mut votes: BTreeMap<Vec<i64>, u64> = BTreeMap::new();
    let mut combined = Vec::with_capacity(docs.len());
    let mut error = FirstError::default();
    for pair in docs.chunk_by(|a, b| a.query == b.query && text(a) == text(b)) {
        let query = || builder.text(builder.queries[pair[0].query as usize].id);
        for (i, doc) in pair.iter().enumerate() {
            *pairs.entry(doc.reviewer).or_default() += 1;
            if let Some(earlier) = pair[..i].iter().find(|e| e.reviewer == doc.reviewer) {
                error.note(doc.line, || {
                    format!(
                        "doc_id '{}' is judged twice for query_id '{}'{} (first on line {})",
                        text(doc),
                        query(),
                        by_reviewer(name_of(doc.reviewer)),
                        earlier.line
                    )
                });
            }
        }
        let mut grades: Vec<i64> = pair.iter().map(|d| d.grade).collect();
        grades.sort_unstable();
        if pair.len() > 1 {
            *votes.entry(grades.clone()).or_default() += 1;
        }
        let kept = match (policy, chosen) {
            (_, Some(reviewer)) => pair.iter().find(|d| d.reviewer == reviewer).copied(),
            (Some(rule), None) => rule
                .combine(&grades)
                .map(|grade| RawDoc { grade, ..pair[0] }),
            (None, _) if pair.len() == 1 => Some(pair[0]),
            (None, _) => {
                error.note(pair[1].line, || {
                    let by: Vec<String> = (pair.iter())
                        .map(|d| format!("'{}' on line {}", name_of(d.reviewer), d.line))
                        .collect();
                    format!(
                        "doc_id '{}' of query_id '{}' is judged by {} reviewers ({}): say whose \
                         grade counts with {}, any, all or a reviewer's name",
                        text(&pair[0]),
                        query(),
                        pair.len(),
                        by.join(", "),
                        option.given("majority")
                    )
                });
                None
            }
        };
        combined.extend(kept);
    }
    error.into_result()?;

    let mut reviewers: Vec<ReviewerSummary> = labeled
        .chunk_by(|a, b| a.1 == b.1)
        .map(|same| ReviewerSummary {
            name: name_of(same[0].1).to_string(),
            queries: same.len() as u64,
            pairs: pairs.get(&same[0].1).copied().unwrap_or_default(),
        })
        .collect();
    reviewers.sort_by(|a, b| a.name.cmp(&b.name));
    let reviewers = Reviewers {
        policy: policy.cloned(),
        reviewers,
        votes: votes.into_iter().collect(),
    };
    builder.docs = combined;
    keep_only(builder, &canonical, chosen.map(|r| (r, &labeled[..])));
    Ok(Some(reviewers))
}

/// Drop from `builder` every query that is not its own `canonical` query
/// (its lines were merged into another's) and, with a reviewer chosen,
/// every query that reviewer did not label (in `labeled`, pairs of
/// query and reviewer), renumbering the judgments' queries.
fn keep_only(builder: &mut Builder, canonical: &[u32], chosen: Option<(u32, &[(u32, u32)])>) {
    let mut kept: Vec<bool> = (canonical.iter().enumerate())
        .map(|(q, &c)| c as usize == q)
        .collect();
    if let Some((reviewer, labeled)) = chosen {
        let mut theirs = vec![false; kept.len()];
        for &(q, r) in labeled {
            theirs[q as usize] |= r == reviewer;
        }
        for (keep, theirs) in kept.iter_mut().zip(theirs) {
            *keep &= theirs;
        }
    }
    let mut renumbered = vec![u32::MAX; kept.len()];
    let mut next = 0;
    for (new, &keep) in renumbered.iter_mut().zip(&kept) {
        if keep {
            *new = next;
            next += 1;
        }
    }
    let mut index = 0;
    builder.queries.retain(|_| {
        index += 1;
        kept[index - 1]
    });
    for doc in &mut builder.docs {
        doc.query = renumbered[doc.query as usize];
    }
    builder.pooled.retain(|&(query, _)| kept[query as usize]);
    for (query, _) in &mut builder.pooled {
        *query = renumbered[*query as usize];
    }
    // Its query numbers are gone: nothing reads it after this.
    builder.by_id.clear();
}

/// " by reviewer 'name'", or nothing for a label that names none.
fn by_reviewer(name: &str) -> String {
    if name == NO_SLICE {
        String::new()
    } else {
        format!(" by reviewer '{name}'")
    }
}

/// Each JSONL query id's lines (one per reviewer) made one query, the
/// one of its earliest line: returns each query's such query.
///
/// # Errors
/// Two lines of one query by one reviewer, or that give it other
/// attributes or another text, at the earliest line it concerns.
fn one_query_per_id(builder: &mut Builder, order: &[u32]) -> Result<Vec<u32>, LineError> {
    let queries = &builder.queries;
    let mut canonical: Vec<u32> = (0..queries.len() as u32).collect();
    let mut required = Vec::new();
    let mut error = FirstError::default();
    let id = |q: u32| builder.text(queries[q as usize].id);
    for same in order.chunk_by(|&a, &b| id(a) == id(b)) {
        if same.len() == 1 {
            continue;
        }
        let mut lines = same.to_vec();
        lines.sort_by_key(|&q| queries[q as usize].line);
        let first = lines[0];
        let head = &queries[first as usize];
        for (i, &q) in lines.iter().enumerate().skip(1) {
            let line = &queries[q as usize];
            canonical[q as usize] = first;
            if line.required {
                required.push(first);
            }
            if let Some(&earlier) =
                (lines[..i].iter()).find(|&&e| queries[e as usize].reviewer == line.reviewer)
            {
                let name = builder.reviewer_name(line.reviewer);
                error.note(line.line, || {
                    format!(
                        "query_id '{}' is labeled twice{} (first on line {})",
                        id(q),
                        by_reviewer(name),
                        queries[earlier as usize].line
                    )
                });
            }
            if let (Some(names), Some(earlier)) = (line.attributes, head.attributes) {
                if let Err(err) = builder.same_attributes(first as usize, names.0, earlier) {
                    error.note(line.line, || err.to_string());
                }
            }
            if let (Some(text), Some(earlier)) = (line.query_text, head.query_text) {
                let (text, earlier) = (builder.text(text), builder.text(earlier));
                if text != earlier {
                    error.note(line.line, || {
                        format!(
                            "query_id '{}' has query text '{text}' here but '{earlier}' on line {}",
                            id(q),
                            head.line
                        )
                    });
                }
            }
        }
    }
    error.into_result()?;
    for q in required {
        builder.queries[q as usize].required = true;
    }
    Ok(canonical)
}
