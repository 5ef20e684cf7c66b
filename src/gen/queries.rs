//! The queries and their answer key. Each query has an id, its own random
//! stream, a task and a language (both skewed), and judged chunks from the
//! collections that serve its task: most labels are plain lists, some are
//! graded, a few are no-answer (`chitchat`), and a few are marked as
//! required regression cases.

use std::ops::Range;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::config::GenConfig;
use super::corpus::{
    Corpus, DOCS_GUIDES, KB_ADMIN, KB_ARTICLES, KB_BILLING, KB_TROUBLESHOOTING, SUPPORT_TICKETS,
};
use super::encode::{decimal_digits, push_padded};
use super::random::{pick, pick_weighted};

/// The narrowest query id number, so small data sets have ids like `q000001`.
const MIN_ID_WIDTH: usize = 6;

/// A query id: a prefix and a zero-padded number, so ids sort in byte order
/// as their numbers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueryName {
    prefix: u8,
    number: usize,
    width: usize,
}

impl QueryName {
    /// The id of query `index`: labeled queries come first, then unlabeled
    /// ones, each numbered from 1.
    pub(super) fn of(config: &GenConfig, index: usize) -> Self {
        if index < config.labeled {
            QueryName::new(b'q', index + 1, config.labeled)
        } else {
            QueryName::new(b'u', index - config.labeled + 1, config.unlabeled)
        }
    }

    /// Query `number` of `count`, padded to the width of the largest number.
    pub(super) fn new(prefix: u8, number: usize, count: usize) -> Self {
        let width = decimal_digits(count).max(MIN_ID_WIDTH);
        QueryName {
            prefix,
            number,
            width,
        }
    }

    pub(super) fn push_to(self, line: &mut Vec<u8>) {
        line.push(self.prefix);
        push_padded(line, self.number, self.width);
    }

    /// The id as a JSON string: it is a letter and digits, nothing to escape.
    pub(super) fn push_json(self, line: &mut Vec<u8>) {
        line.push(b'"');
        self.push_to(line);
        line.push(b'"');
    }
}

/// What a query's night stream draws.
#[derive(Debug, Clone, Copy)]
pub(super) enum NightDraw {
    /// Its rankings, on a night it is drawn afresh.
    Rankings = 0,
    /// Which relevant documents a planted drop loses.
    Losses = 1,
}

/// Hands every query its own random stream.
pub(super) struct QueryStreams {
    key: u64,
}

impl QueryStreams {
    pub(super) fn new(rng: &mut Pcg64) -> Self {
        QueryStreams { key: rng.random() }
    }

    /// `seed_from_u64` scrambles its input, so neighbouring indices get
    /// unrelated streams.
    pub(super) fn rng(&self, index: usize) -> Pcg64 {
        Pcg64::seed_from_u64(self.key ^ index as u64)
    }

    /// The query's stream for one purpose on one night of a series,
    /// apart from its own and from every other night's.
    pub(super) fn night_rng(&self, index: usize, night: usize, purpose: NightDraw) -> Pcg64 {
        let night = (night as u64) << 40 | (purpose as u64) << 39;
        Pcg64::seed_from_u64(self.key ^ index as u64 ^ night)
    }
}

/// A task type and the collections its answers come from.
#[derive(Debug, Clone, Copy)]
struct Task {
    name: &'static str,
    homes: &'static [usize],
}

impl Task {
    const fn new(name: &'static str, homes: &'static [usize]) -> Self {
        Task { name, homes }
    }
}

/// The tasks of answerable queries, with their shares.
const TASKS: &[(Task, u32)] = &[
    (Task::new("howto", &[KB_ARTICLES, DOCS_GUIDES]), 38),
    (
        Task::new("troubleshooting", &[KB_TROUBLESHOOTING, SUPPORT_TICKETS]),
        27,
    ),
    (Task::new("billing", &[KB_BILLING, SUPPORT_TICKETS]), 18),
    (Task::new("permissions", &[KB_ADMIN, KB_ARTICLES]), 17),
];

/// The names of the tasks queries are drawn from.
pub(super) fn task_names() -> impl Iterator<Item = &'static str> {
    TASKS.iter().map(|(task, _)| task.name)
}

/// The task of every no-answer query.
const NO_ANSWER_TASK: &str = "chitchat";

const LANGUAGES: &[(&str, u32)] = &[("en", 62), ("de", 18), ("fr", 12), ("ja", 8)];

/// How a query's relevant documents are written in labels.jsonl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LabelShape {
    /// A list of doc ids, each grade 1.
    List,
    /// An object of doc id to grade, 0 to 3.
    Graded,
    /// An empty list: nothing in the corpus answers the query.
    NoAnswer,
}

const LABEL_SHAPES: &[(LabelShape, u32)] = &[
    (LabelShape::List, 72),
    (LabelShape::Graded, 25),
    (LabelShape::NoAnswer, 3),
];

/// How many doc ids a list label holds.
const LIST_SIZES: &[(usize, u32)] = &[(1, 55), (2, 30), (3, 15)];
/// How many docs a graded label judges.
const GRADED_SIZES: Range<usize> = 2..MAX_JUDGED + 1;
/// The most docs one label judges.
const MAX_JUDGED: usize = 4;
/// The share of answerable queries marked as required regression cases.
const REQUIRED_PER_MILLE: u32 = 20;

/// A judged document and its grade (0: judged not relevant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Judged {
    pub(super) doc: u32,
    pub(super) grade: u8,
}

/// One query of the answer key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct QuerySpec {
    pub(super) task: &'static str,
    pub(super) language: &'static str,
    pub(super) shape: LabelShape,
    pub(super) required: bool,
    pub(super) judged: [Judged; MAX_JUDGED],
    pub(super) judged_len: usize,
}

impl QuerySpec {
    pub(super) fn draw(rng: &mut Pcg64, corpus: &Corpus) -> Self {
        let shape = pick_weighted(rng, LABEL_SHAPES);
        let language = pick_weighted(rng, LANGUAGES);
        let mut spec = QuerySpec {
            task: NO_ANSWER_TASK,
            language,
            shape,
            required: false,
            judged: [Judged { doc: 0, grade: 0 }; MAX_JUDGED],
            judged_len: 0,
        };
        if shape == LabelShape::NoAnswer {
            return spec;
        }
        let task = pick_weighted(rng, TASKS);
        spec.task = task.name;
        spec.required = rng.random_ratio(REQUIRED_PER_MILLE, 1000);
        let count = match shape {
            LabelShape::Graded => rng.random_range(GRADED_SIZES),
            _ => pick_weighted(rng, LIST_SIZES),
        };
        while spec.judged_len < count {
            let home = pick(rng, task.homes);
            let doc = corpus.random_doc_in(rng, home);
            if !spec.judges(doc) {
                let grade = spec.draw_grade(rng);
                spec.judged[spec.judged_len] = Judged { doc, grade };
                spec.judged_len += 1;
            }
        }
        spec
    }

    /// The grade of the next judged doc: the first one of a graded label is
    /// relevant, so every answerable query has a relevant doc.
    fn draw_grade(&self, rng: &mut Pcg64) -> u8 {
        match (self.shape, self.judged_len) {
            (LabelShape::Graded, 0) => rng.random_range(1..=3),
            (LabelShape::Graded, _) => rng.random_range(0..=3),
            _ => 1,
        }
    }

    pub(super) fn judged(&self) -> &[Judged] {
        &self.judged[..self.judged_len]
    }

    fn judges(&self, doc: u32) -> bool {
        self.judged().iter().any(|judged| judged.doc == doc)
    }

    pub(super) fn is_relevant(&self, doc: u32) -> bool {
        self.judged()
            .iter()
            .any(|judged| judged.doc == doc && judged.grade > 0)
    }
}

/// The corpus and query streams of `seed`, drawn in `write_dataset`'s order,
/// for the tests of the parts drawn from them.
#[cfg(test)]
pub(super) fn corpus_and_streams(seed: u64, results: usize) -> (Corpus, QueryStreams) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let corpus = Corpus::generate(&mut rng, results);
    let streams = QueryStreams::new(&mut rng);
    (corpus, streams)
}

/// The first `count` queries of the answer key.
#[cfg(test)]
pub(super) fn specs(corpus: &Corpus, streams: &QueryStreams, count: usize) -> Vec<QuerySpec> {
    (0..count)
        .map(|index| QuerySpec::draw(&mut streams.rng(index), corpus))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::gen::testing::share;

    #[test]
    fn labels_have_the_advertised_shapes_and_shares() {
        let (corpus, streams) = corpus_and_streams(4, 10);
        let specs = specs(&corpus, &streams, 20_000);
        let count =
            |keep: &dyn Fn(&QuerySpec) -> bool| specs.iter().filter(|spec| keep(spec)).count();
        let no_answer = count(&|spec| spec.shape == LabelShape::NoAnswer);
        let graded = count(&|spec| spec.shape == LabelShape::Graded);
        let required = count(&|spec| spec.required);
        assert!(
            (0.02..0.04).contains(&share(no_answer, specs.len())),
            "{no_answer} no-answer"
        );
        assert!(
            (0.22..0.28).contains(&share(graded, specs.len())),
            "{graded} graded"
        );
        assert!(
            (0.01..0.03).contains(&share(required, specs.len())),
            "{required} required"
        );
        for spec in &specs {
            let answerable = spec.judged().iter().any(|judged| judged.grade > 0);
            assert_eq!(spec.shape != LabelShape::NoAnswer, answerable, "{spec:?}");
            assert_eq!(spec.task == NO_ANSWER_TASK, !answerable, "{spec:?}");
            assert!(
                answerable || !spec.required,
                "no-answer yet required: {spec:?}"
            );
            let docs: HashSet<u32> = spec.judged().iter().map(|judged| judged.doc).collect();
            assert_eq!(docs.len(), spec.judged().len(), "{spec:?}");
            assert!(spec.judged().iter().all(|judged| judged.grade <= 3));
        }
        let english = count(&|spec| spec.language == "en");
        let japanese = count(&|spec| spec.language == "ja");
        assert!(english > 5 * japanese, "{english} en, {japanese} ja");
    }

    #[test]
    fn query_ids_sort_in_byte_order_as_numbers_do() {
        let name = |number, count| {
            let mut line = Vec::new();
            QueryName::new(b'q', number, count).push_to(&mut line);
            String::from_utf8(line).unwrap()
        };
        assert_eq!(name(1, 3), "q000001");
        assert_eq!(name(42, 1_234_567), "q0000042");
        assert!(name(9, 10) < name(10, 10));
        assert!(name(999_999, 1_000_000) < name(1_000_000, 1_000_000));
    }
}
