//! The index under construction: labels as read, in flat lists, checked
//! and indexed once the whole file is in.

use std::ops::Range;

use anyhow::{anyhow, bail, Result};
use hashbrown::{HashMap, HashTable};
use rayon::prelude::*;

use super::ids::{IdRef, IdText};
use super::index::{
    id_hash, join_form, IndexParts, JudgedDoc, LabelIndex, LabeledQuery, LabelsSource, QueryTexts,
    Reviewers, NO_POOL,
};
use crate::base::schema::SourceSummary;
use crate::base::slices::{ANY, NO_SLICE};

/// The reviewer of a label that names none: in a key whose other labels
/// name theirs, one more reviewer, called `(none)`.
pub(super) const NOT_NAMED: u32 = u32::MAX;

/// What separates the runs of a CSV or Parquet `pooled_from` cell, as
/// per_query.csv's `missing_at_k` separates ids.
pub(super) const POOL_SEPARATOR: char = '|';

/// A labels error and the 1-based line it is about, if any.
pub(super) type LineError = (Option<usize>, anyhow::Error);

/// The grade read as the whole number `whole` ([`crate::base::whole`]:
/// `2` or `2.0`), `None` when what was read holds none; `what` names what
/// was read in the error (made only then: grades are read by the million).
/// A fraction is refused rather than rounded: a grade of 0.5 says the file
/// is not what its reader takes it for.
pub(super) fn whole_grade(whole: Option<i128>, what: impl Fn() -> String) -> Result<i64> {
    let whole = whole.ok_or_else(|| {
        anyhow!(
            "{} is not a whole number: a grade is one (2, or 2.0 as a float)",
            what()
        )
    })?;
    i64::try_from(whole).map_err(|_| anyhow!("{} is out of range for a grade", what()))
}

/// Labels as read, before indexing: flat lists and one string of ids, so
/// that reading a large key costs no allocation per query or document.
#[derive(Default)]
pub struct Builder {
    /// Whether each query's question text is read and indexed, for
    /// captures matched to their labels by text.
    pub(super) keep_query_texts: bool,
    text: IdText,
    pub(super) queries: Vec<RawQuery>,
    /// Finds a query again by its id: qrels and CSV repeat it on each line.
    pub(super) by_id: HashTable<u32>,
    pub(super) docs: Vec<RawDoc>,
    /// The names of slices and of reviewers, interned.
    slice_ids: HashMap<Box<str>, u32>,
    pub(super) slice_names: Vec<Box<str>>,
    /// Whether any label names its reviewer.
    pub(super) has_reviewers: bool,
    /// (query, reviewer) for each row of tabular labels that names a
    /// reviewer: who labeled which query, rows without a document included.
    pub(super) reviewed: Vec<(u32, u32)>,
    /// (query, run) for each run a label names in `pooled_from`.
    pub(super) pooled: Vec<(u32, u32)>,
    /// (source, judgments) for each label line or row that names its
    /// `source`: for summary.json only.
    pub(super) sources: Vec<(u32, u32)>,
}

pub(super) struct RawQuery {
    pub(super) id: IdRef,
    /// The question text, trimmed, when kept.
    pub(super) query_text: Option<IdRef>,
    pub(super) line: usize,
    /// The attributes' interned names and the line that first gave them.
    pub(super) attributes: Option<(Interned, usize)>,
    pub(super) required: bool,
    /// The reviewer of a JSONL line, [`NOT_NAMED`] when it names none.
    pub(super) reviewer: u32,
}

/// A query's task, language, split and collection version, as indices
/// into the builder's names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Interned([u32; 4]);

/// What a label says about its query besides its judgments; `None` where
/// it says nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Attributes<'a> {
    /// The task slice.
    pub task: Option<&'a str>,
    /// The language slice.
    pub language: Option<&'a str>,
    /// The held-out split (`dev`, `test`, ...).
    pub split: Option<&'a str>,
    /// The collection version the reviewer judged against.
    pub collection_version: Option<&'a str>,
    /// A regression case a change must not lose.
    pub required: bool,
}

/// The attribute names, in [`Interned`] order, for messages.
const ATTRIBUTE_NAMES: [&str; 4] = ["task", "language", "split", "collection_version"];

#[derive(Clone, Copy)]
pub(super) struct RawDoc {
    pub(super) query: u32,
    /// Its reviewer, [`NOT_NAMED`] when the label names none.
    pub(super) reviewer: u32,
    pub(super) id: IdRef,
    pub(super) grade: i64,
    pub(super) line: usize,
}

impl Builder {
    /// An empty builder for a part of the labels, read on its own and
    /// appended later.
    pub(super) fn part(keep_query_texts: bool) -> Self {
        Builder {
            keep_query_texts,
            ..Builder::default()
        }
    }

    /// The line of the first query read into this builder, if any.
    pub(super) fn first_line(&self) -> Option<usize> {
        self.queries.first().map(|q| q.line)
    }

    /// Move the labels of `part`, read from the lines that follow ours,
    /// into this builder, leaving `part` empty. A part that declared its
    /// queries by id (qrels, whose query goes on from line to line and so
    /// from one block into the next) has each query join the one of the
    /// same id declared before, if any.
    pub(super) fn append(&mut self, part: &mut Builder) -> Result<()> {
        let text_start = self.text.append(&part.text.0)?;
        let first_query = self.queries.len() as u32;
        let slices: Vec<u32> = part
            .slice_names
            .iter()
            .map(|name| self.intern(Some(name)))
            .collect();
        let reviewer = |r: u32| {
            if r == NOT_NAMED {
                r
            } else {
                slices[r as usize]
            }
        };
        self.has_reviewers |= part.has_reviewers;
        let by_id = !part.by_id.is_empty();
        let mut joined = Vec::new();
        for q in part.queries.drain(..) {
            let q = RawQuery {
                id: q.id.shifted(text_start),
                query_text: q.query_text.map(|t| t.shifted(text_start)),
                attributes: q
                    .attributes
                    .map(|(names, line)| (Interned(names.0.map(|n| slices[n as usize])), line)),
                reviewer: reviewer(q.reviewer),
                ..q
            };
            if by_id {
                let id = self.text.get(q.id);
                let hash = id_hash(id.as_bytes());
                if let Some(earlier) = self.find(id, hash) {
                    joined.push(earlier as u32);
                    continue;
                }
                let index = self.queries.len() as u32;
                let (queries, text) = (&self.queries, &self.text);
                self.by_id.insert_unique(hash, index, |&q| {
                    id_hash(text.get(queries[q as usize].id).as_bytes())
                });
                joined.push(index);
            }
            self.queries.push(q);
        }
        let query = |q: u32| {
            if by_id {
                joined[q as usize]
            } else {
                first_query + q
            }
        };
        self.docs.extend(part.docs.drain(..).map(|d| RawDoc {
            query: query(d.query),
            reviewer: reviewer(d.reviewer),
            id: d.id.shifted(text_start),
            ..d
        }));
        let reviewed = part.reviewed.drain(..);
        self.reviewed
            .extend(reviewed.map(|(q, r)| (query(q), reviewer(r))));
        let pooled = part.pooled.drain(..);
        (self.pooled).extend(pooled.map(|(q, run)| (query(q), slices[run as usize])));
        let sources = part.sources.drain(..);
        (self.sources).extend(sources.map(|(s, n)| (slices[s as usize], n)));
        part.text.0.clear();
        part.by_id.clear();
        part.slice_ids.clear();
        part.slice_names.clear();
        Ok(())
    }

    /// Room for the labels of `bytes` bytes of labels: at most that much
    /// id text, a judgment per 40 bytes, a query per 80, so that the lists
    /// do not grow by doubling, copying themselves into fresh pages. (Not
    /// the table of query ids: JSONL labels do not use it, and a table is
    /// written to as soon as it is made.)
    pub(super) fn reserve(&mut self, bytes: usize) {
        self.text.0.reserve(bytes);
        self.queries.reserve(bytes / 80);
        self.docs.reserve(bytes / 40);
    }

    fn find(&self, id: &str, hash: u64) -> Option<usize> {
        let found = self
            .by_id
            .find(hash, |&q| self.text.get(self.queries[q as usize].id) == id);
        found.map(|&q| q as usize)
    }

    /// A new query, without looking for an earlier one of the same id.
    pub(super) fn push_query(&mut self, id: &str, line: usize) -> Result<usize> {
        let index = self.queries.len();
        let id = self.text.push(id)?;
        self.queries.push(RawQuery {
            id,
            query_text: None,
            line,
            attributes: None,
            required: false,
            reviewer: NOT_NAMED,
        });
        Ok(index)
    }

    /// The query with this id, declared on first sight (qrels and CSV,
    /// whose lines repeat the query id).
    pub(super) fn declare(&mut self, id: &str, line: usize) -> Result<usize> {
        let hash = id_hash(id.as_bytes());
        if let Some(q) = self.find(id, hash) {
            return Ok(q);
        }
        let index = self.push_query(id, line)?;
        let (queries, text) = (&self.queries, &self.text);
        self.by_id.insert_unique(hash, index as u32, |&q| {
            id_hash(text.get(queries[q as usize].id).as_bytes())
        });
        Ok(index)
    }

    fn intern(&mut self, name: Option<&str>) -> u32 {
        let name = name.filter(|n| !n.is_empty()).unwrap_or(NO_SLICE);
        if let Some(&id) = self.slice_ids.get(name) {
            return id;
        }
        let id = self.slice_names.len() as u32;
        self.slice_names.push(name.into());
        self.slice_ids.insert(name.into(), id);
        id
    }

    /// The reviewer called `name`, interned; [`NOT_NAMED`] for none.
    pub(super) fn reviewer(&mut self, name: Option<&str>) -> u32 {
        match name {
            None => NOT_NAMED,
            Some(name) => {
                self.has_reviewers = true;
                self.intern(Some(name))
            }
        }
    }

    /// The name of `reviewer`, `(none)` for [`NOT_NAMED`].
    pub(super) fn reviewer_name(&self, reviewer: u32) -> &str {
        match reviewer {
            NOT_NAMED => NO_SLICE,
            r => &self.slice_names[r as usize],
        }
    }

    /// Record that `reviewer` labeled the JSONL line that declared `query`.
    pub(super) fn set_line_reviewer(&mut self, query: usize, reviewer: u32) {
        self.queries[query].reviewer = reviewer;
    }

    /// The reviewer of a row of tabular labels about `query`, with or
    /// without a document: [`NOT_NAMED`] when the table has no reviewer
    /// column (`column` false); else the one `name` gives (an empty cell
    /// is a reviewer too, `(none)`), recorded as having labeled `query`.
    pub(super) fn row_reviewer(&mut self, query: usize, column: bool, name: Option<&str>) -> u32 {
        if !column {
            return NOT_NAMED;
        }
        let reviewer = self.reviewer(name);
        self.reviewed.push((query as u32, reviewer));
        reviewer
    }

    /// Record where a label line or row of `query` came from: its
    /// `source` (who or what judged it) and the runs whose results were
    /// pooled for judging, `pooled_from`; `judgments` is how many
    /// documents it judges.
    pub(super) fn set_provenance<'a>(
        &mut self,
        query: usize,
        source: Option<&str>,
        pooled_from: impl IntoIterator<Item = &'a str>,
        judgments: usize,
    ) {
        if let Some(source) = source {
            let source = self.intern(Some(source));
            self.sources.push((source, judgments as u32));
        }
        for run in pooled_from.into_iter().filter(|run| !run.is_empty()) {
            let run = self.intern(Some(run));
            self.pooled.push((query as u32, run));
        }
    }

    /// Record a query's attributes; a later line must agree.
    ///
    /// # Errors
    /// A task, language or split named `*`: every output names the
    /// grouping set of any task, language or split so, and a slice of that
    /// name would be listed twice under one name.
    pub(super) fn set_attributes(
        &mut self,
        query: usize,
        attributes: &Attributes<'_>,
        line: usize,
    ) -> Result<()> {
        let slices = [attributes.task, attributes.language, attributes.split];
        if let Some(i) = slices.iter().position(|name| *name == Some(ANY)) {
            let attribute = ATTRIBUTE_NAMES[i];
            bail!("{attribute} '{ANY}': the outputs call every {attribute} so; name it otherwise");
        }
        let names = Interned([
            self.intern(attributes.task),
            self.intern(attributes.language),
            self.intern(attributes.split),
            self.intern(attributes.collection_version),
        ]);
        let q = &mut self.queries[query];
        q.required |= attributes.required;
        let Some(earlier) = q.attributes else {
            q.attributes = Some((names, line));
            return Ok(());
        };
        self.same_attributes(query, names, earlier)
    }

    /// That `names`, given to `query` again, are the attributes `earlier`
    /// gave it (with the line that gave them).
    ///
    /// # Errors
    /// The first attribute that differs, naming both values.
    pub(super) fn same_attributes(
        &self,
        query: usize,
        names: Interned,
        (earlier, first): (Interned, usize),
    ) -> Result<()> {
        if let Some(i) = (0..ATTRIBUTE_NAMES.len()).find(|&i| earlier.0[i] != names.0[i]) {
            bail!(
                "query_id '{}' has {} '{}' here but '{}' on line {first}",
                self.text.get(self.queries[query].id),
                ATTRIBUTE_NAMES[i],
                self.slice_names[names.0[i] as usize],
                self.slice_names[earlier.0[i] as usize],
            )
        }
        Ok(())
    }

    /// The text of an id.
    pub(super) fn text(&self, id: IdRef) -> &str {
        self.text.get(id)
    }

    /// Record a query's question text, trimmed and in Unicode's composed
    /// form (as every text is matched); a later line must agree. Only
    /// kept when the labels are to be joined by text.
    pub(super) fn set_query_text(&mut self, query: usize, text: &str) -> Result<()> {
        if !self.keep_query_texts {
            return Ok(());
        }
        let text = join_form(text);
        let text = &text[..];
        if text.is_empty() {
            bail!(
                "an empty query text: {} matches captures by it",
                crate::base::failure::Setting::Join.given("text")
            );
        }
        if let Some(earlier) = self.queries[query].query_text {
            if self.text.get(earlier) != text {
                bail!(
                    "query_id '{}' has query text '{text}' here but '{}' on line {}",
                    self.text.get(self.queries[query].id),
                    self.text.get(earlier),
                    self.queries[query].line
                );
            }
            return Ok(());
        }
        self.queries[query].query_text = Some(self.text.push(text)?);
        Ok(())
    }

    /// Record `reviewer`'s grade of `doc` for `query`.
    pub(super) fn judge(
        &mut self,
        query: usize,
        doc: &str,
        grade: i64,
        reviewer: u32,
        line: usize,
    ) -> Result<()> {
        let id = self.text.push(doc)?;
        self.docs.push(RawDoc {
            query: query as u32,
            reviewer,
            id,
            grade,
            line,
        });
        Ok(())
    }

    /// Index the labels: queries in byte order of their ids, each query's
    /// judged documents sorted by hash, those with a positive grade first.
    /// Labels that name reviewers have had their grades combined already
    /// (`super::reviewers::combine`), which found `reviewers`.
    ///
    /// # Errors
    /// A query on two JSONL lines, or a (query, doc) pair judged twice, at
    /// the line of its second appearance.
    pub(super) fn build(
        mut self,
        min_rel: i64,
        reviewers: Option<Reviewers>,
        source: LabelsSource,
    ) -> Result<LabelIndex, LineError> {
        let none = self.intern(None);
        let text = self.text;
        let id_of = |q: &u32| text.get(self.queries[*q as usize].id);
        let order = sorted_by_id(self.queries.len() as u32, id_of);
        if let Some(err) = labeled_twice(&order, &self.queries, &text) {
            return Err(err);
        }
        // Group the judgments by query (JSONL and most qrels come grouped
        // already), keeping file order within a query.
        if !self.docs.is_sorted_by_key(|d| d.query) {
            self.docs.par_sort_by_key(|d| d.query);
        }
        let total = self.docs.len();
        let mut docs: Vec<JudgedDoc> = (0..total)
            .into_par_iter()
            .map(|_| JudgedDoc::default())
            .collect();
        let mut ideal_grades = vec![0; total];
        let mut by_text = vec![0; total];
        let stretches = Stretch::cut(&mut self.docs, &mut docs, &mut ideal_grades, &mut by_text);
        let indexed: Vec<_> = stretches
            .into_par_iter()
            .map(|stretch| stretch.index(&text, &self.queries))
            .collect();
        let mut ranges = vec![(0..0, 0); self.queries.len()];
        for stretch in indexed {
            for run in stretch? {
                ranges[run.query as usize] = (run.positive, run.end);
            }
        }
        drop(self.docs);

        let query_texts = if self.keep_query_texts {
            Some(index_query_texts(&self.queries, &order, &text)?)
        } else {
            None
        };
        let (pool_of, pools) = pools(&mut self.pooled, self.queries.len(), &self.slice_names);
        let sources = sources(&mut self.sources, &self.slice_names);
        let queries: Vec<LabeledQuery> = order
            .par_iter()
            .map(|&old| {
                let raw = &self.queries[old as usize];
                let (range, judged_end) = ranges[old as usize].clone();
                let Interned([task, language, split, collection_version]) = raw
                    .attributes
                    .map_or(Interned([none; 4]), |(names, _)| names);
                LabeledQuery {
                    id: raw.id,
                    task,
                    language,
                    split,
                    collection_version,
                    required: raw.required,
                    n_relevant: 0,
                    docs: range,
                    judged_end,
                    pool: pool_of[old as usize],
                }
            })
            .collect();
        let parts = IndexParts {
            queries,
            docs,
            ideal_grades,
            by_text,
            query_texts,
            text,
            slice_names: self.slice_names,
            reviewers,
            pools,
            sources,
        };
        Ok(LabelIndex::assemble(parts, min_rel, source))
    }
}

/// Each query's pool (the runs its labels were pooled from, as an index
/// into the returned list of distinct pools, [`NO_POOL`] for none), from
/// `pooled`'s (query, run) pairs; each pool's runs are sorted by `names`.
fn pools(
    pooled: &mut [(u32, u32)],
    queries: usize,
    names: &[Box<str>],
) -> (Vec<u32>, Vec<Box<[u32]>>) {
    let mut pool_of = vec![NO_POOL; queries];
    let mut pools: Vec<Box<[u32]>> = Vec::new();
    let mut found: HashMap<Box<[u32]>, u32> = HashMap::new();
    pooled.par_sort_unstable();
    for runs in pooled.chunk_by(|a, b| a.0 == b.0) {
        let mut set: Vec<u32> = runs.iter().map(|&(_, run)| run).collect();
        set.dedup();
        set.sort_unstable_by_key(|&run| &names[run as usize]);
        let set = set.into_boxed_slice();
        let id = *found.entry(set.clone()).or_insert_with(|| {
            pools.push(set);
            pools.len() as u32 - 1
        });
        pool_of[runs[0].0 as usize] = id;
    }
    (pool_of, pools)
}

/// The labels each `source` names, and their judgments, by source name.
fn sources(sources: &mut [(u32, u32)], names: &[Box<str>]) -> Vec<SourceSummary> {
    sources.sort_unstable_by(|a, b| names[a.0 as usize].cmp(&names[b.0 as usize]));
    (sources.chunk_by(|a, b| a.0 == b.0))
        .map(|same| SourceSummary {
            source: names[same[0].0 as usize].to_string(),
            labels: same.len() as u64,
            judgments: same.iter().map(|&(_, n)| u64::from(n)).sum(),
        })
        .collect()
}

/// The error for a query on two JSONL lines, at the earliest second line,
/// if there is one. `order` holds the queries in byte order of their ids.
fn labeled_twice(order: &[u32], queries: &[RawQuery], text: &IdText) -> Option<LineError> {
    let id_of = |q: &u32| text.get(queries[*q as usize].id);
    if !order
        .par_windows(2)
        .any(|pair| id_of(&pair[0]) == id_of(&pair[1]))
    {
        return None;
    }
    let (line, first, id) = order
        .chunk_by(|a, b| id_of(a) == id_of(b))
        .filter(|same| same.len() > 1)
        .map(|same| {
            let mut lines: Vec<usize> = same.iter().map(|&q| queries[q as usize].line).collect();
            lines.sort_unstable();
            (lines[1], lines[0], id_of(&same[0]))
        })
        .min()?;
    let message = anyhow!("query_id '{id}' is labeled twice (first on line {first})");
    Some((Some(line), message))
}

/// Where one query's judged documents ended up in the index's arrays.
struct IndexedRun {
    query: u32,
    /// Those with a positive grade.
    positive: Range<u32>,
    /// Where those judged 0 or less end.
    end: u32,
}

/// A stretch of whole runs of judgments (each run one query's, in query
/// order) and the parts of the index's arrays they fill: stretches are
/// indexed on the workers side by side, each writing only its own part.
struct Stretch<'a> {
    /// The global index of its first judgment.
    base: usize,
    raw: &'a mut [RawDoc],
    docs: &'a mut [JudgedDoc],
    ideal_grades: &'a mut [i64],
    by_text: &'a mut [u32],
}

impl<'a> Stretch<'a> {
    /// Cut the judgments `raw`, grouped by query, and the arrays that
    /// match them into stretches of whole runs, a few per worker.
    fn cut(
        mut raw: &'a mut [RawDoc],
        mut docs: &'a mut [JudgedDoc],
        mut ideal_grades: &'a mut [i64],
        mut by_text: &'a mut [u32],
    ) -> Vec<Stretch<'a>> {
        let size = (raw.len() / (16 * rayon::current_num_threads())).max(4096);
        let mut stretches = Vec::new();
        let mut base = 0;
        while !raw.is_empty() {
            let mut end = size.min(raw.len());
            while end < raw.len() && raw[end].query == raw[end - 1].query {
                end += 1;
            }
            stretches.push(Stretch {
                base,
                raw: take_front(&mut raw, end),
                docs: take_front(&mut docs, end),
                ideal_grades: take_front(&mut ideal_grades, end),
                by_text: take_front(&mut by_text, end),
            });
            base += end;
        }
        stretches
    }

    /// Index each run: its judged documents sorted by hash, those with a
    /// positive grade first, the grades of each part highest first, and
    /// the documents again in byte order of their ids.
    ///
    /// # Errors
    /// A (query, doc) pair judged twice, at the line of its second
    /// appearance: the first such query of the stretch.
    fn index(self, text: &IdText, queries: &[RawQuery]) -> Result<Vec<IndexedRun>, LineError> {
        let mut runs = Vec::new();
        let mut at = 0;
        for run in self.raw.chunk_by_mut(|a, b| a.query == b.query) {
            run.sort_by(|a, b| text.get(a.id).cmp(text.get(b.id)).then(a.line.cmp(&b.line)));
            if let Some(pair) = run
                .windows(2)
                .find(|p| text.get(p[0].id) == text.get(p[1].id))
            {
                let query = text.get(queries[pair[1].query as usize].id);
                let message = anyhow!(
                    "doc_id '{}' is judged twice for query_id '{query}' (first on line {})",
                    text.get(pair[1].id),
                    pair[0].line
                );
                return Err((Some(pair[1].line), message));
            }
            let span = at..at + run.len();
            let docs = &mut self.docs[span.clone()];
            // The documents with a positive grade first, as the metrics see
            // them; then those judged 0 or less, kept only to tell a judged
            // document from an unjudged one.
            let mut filled = 0;
            let mut positive_end = 0;
            for positive in [true, false] {
                let part_start = filled;
                for doc in run.iter().filter(|d| (d.grade > 0) == positive) {
                    docs[filled] = JudgedDoc {
                        hash: id_hash(text.get(doc.id).as_bytes()),
                        grade: doc.grade,
                        id: doc.id,
                    };
                    filled += 1;
                }
                let part = &mut docs[part_start..filled];
                part.sort_unstable_by(|a, b| {
                    a.hash
                        .cmp(&b.hash)
                        .then_with(|| text.get(a.id).cmp(text.get(b.id)))
                });
                let grades = &mut self.ideal_grades[at + part_start..at + filled];
                for (grade, doc) in grades.iter_mut().zip(part.iter()) {
                    *grade = doc.grade;
                }
                grades.sort_unstable_by(|a, b| b.cmp(a));
                if positive {
                    positive_end = filled;
                }
            }
            let first = self.base + at;
            let by_text = &mut self.by_text[span];
            for (slot, global) in by_text.iter_mut().zip(first..) {
                *slot = global as u32;
            }
            let docs = &*docs;
            by_text.sort_unstable_by_key(|&d| text.get(docs[d as usize - first].id));
            runs.push(IndexedRun {
                query: run[0].query,
                positive: first as u32..(first + positive_end) as u32,
                end: (first + run.len()) as u32,
            });
            at += run.len();
        }
        Ok(runs)
    }
}

/// The first `count` items of `items`, which keeps the rest.
fn take_front<'a, T>(items: &mut &'a mut [T], count: usize) -> &'a mut [T] {
    let (front, rest) = std::mem::take(items).split_at_mut(count);
    *items = rest;
    front
}

/// The queries `0..count` in byte order of their ids `id_of`, sorted on
/// the workers of the pool it runs in. Each query is keyed by its id's
/// first eight bytes, so that most comparisons are of two integers held
/// side by side, not of two texts elsewhere in memory; only ids that share
/// their first eight bytes compare their text.
pub(super) fn sorted_by_id<'t>(count: u32, id_of: impl Fn(&u32) -> &'t str + Sync) -> Vec<u32> {
    let prefix = |id: &str| {
        let mut head = [0u8; 8];
        let take = id.len().min(8);
        head[..take].copy_from_slice(&id.as_bytes()[..take]);
        u64::from_be_bytes(head)
    };
    let mut keyed: Vec<(u64, u32)> = (0..count).map(|q| (prefix(id_of(&q)), q)).collect();
    keyed.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| id_of(&a.1).cmp(id_of(&b.1))));
    keyed.into_iter().map(|(_, q)| q).collect()
}

/// The question texts of the queries, found by their text: each query
/// must have one, and no two the same. `order` lists the raw queries in
/// their final order.
fn index_query_texts(
    raw: &[RawQuery],
    order: &[u32],
    text: &IdText,
) -> Result<QueryTexts, LineError> {
    let mut texts = Vec::with_capacity(order.len());
    for &old in order {
        let query = &raw[old as usize];
        let Some(query_text) = query.query_text else {
            let message = anyhow!(
                "query_id '{}' has no query text: {} matches captures by a \
                 label's 'query'",
                text.get(query.id),
                crate::base::failure::Setting::Join.given("text")
            );
            return Err((Some(query.line), message));
        };
        texts.push(query_text);
    }
    QueryTexts::new(texts, text).map_err(|pair| {
        let [a, b] = pair.map(|q| &raw[order[q as usize] as usize]);
        let (first, second) = if a.line < b.line { (a, b) } else { (b, a) };
        let message = anyhow!(
            "query_id '{}' has the query text of query_id '{}' (line {}): '{}'; {} \
             needs each text once",
            text.get(second.id),
            text.get(first.id),
            first.line,
            text.get(first.query_text.unwrap_or_default()),
            crate::base::failure::Setting::Join.given("text")
        );
        (Some(second.line), message)
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Ids that share their first eight bytes, are shorter than eight,
    /// hold a zero byte or are empty sort as their text does.
    #[test]
    fn queries_sort_in_byte_order_of_their_ids() {
        let ids = [
            "q-abcdefgh2",
            "q-b",
            "q-abcdefgh1",
            "",
            "q-abcdef",
            "q-abcdef\0",
            "q-abcdefg",
            "q-a",
            "\u{e9}t\u{e9}",
            "Z",
        ];
        let order = sorted_by_id(ids.len() as u32, |&q| ids[q as usize]);
        let mut want: Vec<u32> = (0..ids.len() as u32).collect();
        want.sort_by_key(|&q| ids[q as usize]);
        assert_eq!(order, want);
    }

    /// A seeded stream of numbers below a bound, the same on every
    /// platform, for the tests' random keys.
    pub(in crate::labels) fn seeded(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |n| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        }
    }

    fn source() -> LabelsSource {
        LabelsSource {
            path: "labels".into(),
            bytes: 0,
            hash: String::new(),
            format: "jsonl",
            compiled: None,
        }
    }

    /// 30,000 queries, judged out of query order, with grades from -1 to
    /// 3: enough judgments for many stretches, each indexed on its own.
    fn many_labels(builder: &mut Builder) -> Vec<(String, Vec<(String, i64)>)> {
        let mut next = seeded(7);
        let labels: Vec<(String, Vec<(String, i64)>)> = (0..30_000)
            .map(|q| {
                let docs = (0..next(6))
                    .map(|d| (format!("doc-{}-{d}", next(1000)), next(5) as i64 - 1))
                    .collect();
                (format!("q{}", q * 7919 % 30_000), docs)
            })
            .collect();
        let ids: Vec<usize> = (0..labels.len())
            .map(|q| builder.push_query(&labels[q].0, q + 1).unwrap())
            .collect();
        // Judgments in reverse query order, so they are grouped by the build.
        for (q, (_, docs)) in labels.iter().enumerate().rev() {
            for (doc, grade) in docs {
                builder
                    .judge(ids[q], doc, *grade, NOT_NAMED, q + 1)
                    .unwrap();
            }
        }
        labels
    }

    #[test]
    fn each_query_is_indexed_as_a_naive_build_would() {
        let mut builder = Builder::default();
        let labels = many_labels(&mut builder);
        let index = builder.build(2, None, source()).unwrap();
        assert_eq!(index.queries().len(), labels.len());
        for (id, docs) in &labels {
            let query = index.find_query(id.as_bytes()).unwrap();
            assert_eq!(index.query_id(query), id);
            let mut want_positive: Vec<&(String, i64)> = docs.iter().filter(|d| d.1 > 0).collect();
            want_positive.sort_by_key(|(doc, _)| (id_hash(doc.as_bytes()), doc.clone()));
            let positive: Vec<(&str, i64)> = index
                .judged_docs(query)
                .map(|d| (index.doc_id(d), index.grade(d)))
                .collect();
            let want: Vec<(&str, i64)> = want_positive
                .iter()
                .map(|(d, g)| (d.as_str(), *g))
                .collect();
            assert_eq!(positive, want, "{id}");
            let mut ideal: Vec<i64> = want.iter().map(|d| d.1).collect();
            ideal.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(index.judgments(query).ideal_grades, &ideal[..]);
            assert_eq!(
                index.judgments(query).n_relevant,
                docs.iter().filter(|d| d.1 >= 2).count()
            );
            for (doc, grade) in docs {
                let found = index.find_doc(query, doc.as_bytes(), id_hash(doc.as_bytes()));
                assert_eq!(found.map(|d| index.grade(d)), Some(*grade), "{id} {doc}");
                let place = index.place_doc(query, doc.as_bytes());
                assert!(place.judged());
                assert_eq!(index.doc_id(index.judged_at(query, place)), doc);
            }
            let below = docs.iter().filter(|(d, _)| d.as_str() < "doc-5").count();
            assert_eq!(index.place_doc(query, b"doc-5").below() as usize, below);
        }
    }

    #[test]
    fn the_first_query_judging_a_doc_twice_is_reported() {
        let mut builder = Builder::default();
        let labels = many_labels(&mut builder);
        // A repeat in a late query and in an early one, in other stretches.
        for q in [labels.len() - 3, 2] {
            assert!(labels[q].1.iter().all(|(d, _)| d != "twice"));
            let late = labels.len() + 10 + q;
            builder.judge(q, "twice", 1, NOT_NAMED, late).unwrap();
            builder.judge(q, "twice", 0, NOT_NAMED, late + 1).unwrap();
        }
        let Err((line, err)) = builder.build(1, None, source()) else {
            panic!("judged twice, indexed");
        };
        assert_eq!(line, Some(labels.len() + 10 + 2 + 1));
        let want = format!(
            "doc_id 'twice' is judged twice for query_id '{}' (first on line {})",
            labels[2].0,
            labels.len() + 10 + 2
        );
        assert_eq!(err.to_string(), want);
    }
}
