//! Synthetic labels and logs that look like a help-center RAG system's.
//!
//! The generator models:
//! - a corpus of chunked documents (`kb/billing/invoice-export#chunk-0012`,
//!   `support/tickets/t-482913#chunk-0003`) in a few collections, each chunk
//!   with a fixed size in tokens;
//! - an answer key: queries with a task and a language (both skewed), whose
//!   relevant chunks come from the collections that serve the task; most are
//!   plain lists, some graded, a few no-answer (`chitchat`), a few marked as
//!   required regression cases;
//! - a retriever that finds a relevant chunk near the top, deep in the
//!   ranking, or not at all, and fills the rest with unrelated chunks, so
//!   recall@10 lands around 0.65;
//! - a reranker that lightly reshuffles the retriever's top candidates,
//!   lifting relevant chunks a little, and keeps the top 10;
//! - production traffic: queries in random order, each query's `final` event
//!   a few events after its `retrieve` event, latencies with a long tail.
//!
//! Every query draws from its own random stream, seeded from the seed and its
//! index, so labels and logs are written in separate passes without keeping
//! the key in memory, and the TREC run holds exactly the rankings of the
//! JSONL log's `retrieve` events. Only integer arithmetic, division and square
//! roots touch the random numbers, so every platform writes the same bytes.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::ops::Range;
use std::path::PathBuf;

use anyhow::{bail, Context};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

mod encode;
mod output;
mod random;

use encode::{decimal_digits, push_fixed, push_json_string, push_list, push_padded, push_uint};
use output::{write_file, Output};
use random::{pick, pick_weighted};

/// The largest `results`: rankings deeper than trec_eval's customary 1000
/// are rare, and the corpus grows with the ranking depth.
pub const MAX_RESULTS: usize = 10_000;

/// The run name every generated event carries.
const RUN: &str = "bm25-v3";
/// How many results the reranker keeps for the `final` stage.
const FINAL_DEPTH: usize = 10;
/// How many of the retriever's results the reranker looks at.
const RERANK_CANDIDATES: usize = 20;
/// How many queries are in flight at once: a query's `final` event follows
/// its `retrieve` event after about this many other events.
const IN_FLIGHT: usize = 4;
/// The narrowest query id number, so small data sets have ids like `q000001`.
const MIN_ID_WIDTH: usize = 6;

/// What to generate and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Queries in the answer key (and in the log), at least 1.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// Results per retrieved ranking, 1 to [`MAX_RESULTS`].
    pub results: usize,
    /// Seeds every random draw: the same configuration gives byte-identical
    /// files.
    pub seed: u64,
    /// The log's format.
    pub format: GenFormat,
    /// The directory to write into, created if missing.
    pub out: PathBuf,
}

/// The log format `rgrade gen` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GenFormat {
    /// logs.jsonl, one JSON object per search event.
    Jsonl,
    /// run.trec, a TREC run file.
    Trec,
}

/// Write the answer key and the log (or TREC run) that `config` describes
/// into `config.out`, and say what was written.
pub fn write_dataset(config: &GenConfig) -> anyhow::Result<Written> {
    config.check()?;
    fs::create_dir_all(&config.out)
        .with_context(|| format!("cannot create output directory {}", config.out.display()))?;
    let mut rng = Pcg64::seed_from_u64(config.seed);
    let corpus = Corpus::generate(&mut rng, config.results);
    let streams = QueryStreams::new(&mut rng);
    let labels = write_labels(config, &corpus, &streams)?;
    let logs = write_logs(config, &corpus, &streams, rng)?;
    Ok(Written {
        labeled: config.labeled,
        unlabeled: config.unlabeled,
        files: vec![labels, logs],
    })
}

/// What `write_dataset` wrote, so the command can report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Queries in the answer key.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// The files, labels first.
    pub files: Vec<WrittenFile>,
}

/// One file `write_dataset` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its lines: labeled queries, search events or TREC result lines.
    pub lines: u64,
    /// Its size.
    pub bytes: u64,
}

impl GenConfig {
    /// An error for counts the generator cannot honour, named by the
    /// `rgrade gen` options that set them.
    fn check(&self) -> anyhow::Result<()> {
        if self.labeled == 0 {
            bail!("--queries must be at least 1: the answer key needs a labeled query");
        }
        if !(1..=MAX_RESULTS).contains(&self.results) {
            bail!(
                "--results must be between 1 and {MAX_RESULTS}, got {}",
                self.results
            );
        }
        Ok(())
    }

    /// The id of query `index`: labeled queries come first, then unlabeled
    /// ones, each numbered from 1.
    fn query_name(&self, index: usize) -> QueryName {
        if index < self.labeled {
            QueryName::new(b'q', index + 1, self.labeled)
        } else {
            QueryName::new(b'u', index - self.labeled + 1, self.unlabeled)
        }
    }
}

/// A query id: a prefix and a zero-padded number, so ids sort in byte order
/// as their numbers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QueryName {
    prefix: u8,
    number: usize,
    width: usize,
}

impl QueryName {
    /// Query `number` of `count`, padded to the width of the largest number.
    fn new(prefix: u8, number: usize, count: usize) -> Self {
        let width = decimal_digits(count).max(MIN_ID_WIDTH);
        QueryName {
            prefix,
            number,
            width,
        }
    }

    fn push_to(self, line: &mut Vec<u8>) {
        line.push(self.prefix);
        push_padded(line, self.number, self.width);
    }

    /// The id as a JSON string: it is a letter and digits, nothing to escape.
    fn push_json(self, line: &mut Vec<u8>) {
        line.push(b'"');
        self.push_to(line);
        line.push(b'"');
    }
}

/// Hands every query its own random stream.
struct QueryStreams {
    key: u64,
}

impl QueryStreams {
    fn new(rng: &mut Pcg64) -> Self {
        QueryStreams { key: rng.random() }
    }

    /// `seed_from_u64` scrambles its input, so neighbouring indices get
    /// unrelated streams.
    fn rng(&self, index: usize) -> Pcg64 {
        Pcg64::seed_from_u64(self.key ^ index as u64)
    }
}

// ---------------------------------------------------------------------------
// The corpus

/// A collection of documents and the words its document names are made of.
struct Collection {
    path: &'static str,
    /// First words of document slugs, space separated; empty for support
    /// tickets, which are numbered.
    topics: &'static str,
}

/// Second words of document slugs, space separated.
const FACETS: &str = "overview setup settings limits errors steps faq roles export history \
    basics migration reference changes defaults checklist";

const COLLECTIONS: [Collection; 6] = [
    Collection {
        path: "kb/articles",
        topics: "sharing export import calendar search notifications templates folders mobile \
            integrations comments tags dashboards reports backups workflows",
    },
    Collection {
        path: "kb/billing",
        topics: "invoice refund plan seats tax receipt card trial upgrade downgrade currency \
            payment subscription discount vat renewal",
    },
    Collection {
        path: "kb/admin",
        topics: "roles sso saml guests teams permissions audit domains owners workspaces access \
            groups provisioning scim retention policies",
    },
    Collection {
        path: "kb/troubleshooting",
        topics: "login sync upload password email timeout crash export notifications calendar \
            api mobile search attachments session two-factor",
    },
    Collection {
        path: "docs/guides",
        topics: "api webhooks tokens sdk oauth pagination rate-limits cli embedding events \
            scripting automation bulk-edit zapier slack exports",
    },
    Collection {
        path: "support/tickets",
        topics: "",
    },
];

const KB_ARTICLES: usize = 0;
const KB_BILLING: usize = 1;
const KB_ADMIN: usize = 2;
const KB_TROUBLESHOOTING: usize = 3;
const DOCS_GUIDES: usize = 4;
const SUPPORT_TICKETS: usize = 5;

/// Chunks per document are numbered below this.
const CHUNKS_PER_DOC: u32 = 48;
/// Chunk sizes in tokens.
const CHUNK_TOKENS: Range<u32> = 90..420;
/// The fewest chunks drawn per collection.
const MIN_CHUNKS_PER_COLLECTION: usize = 4_000;

/// Every chunk the system can return, with its size in tokens.
struct Corpus {
    /// All chunk ids, back to back.
    text: String,
    /// Where each chunk id ends in `text`.
    ends: Vec<usize>,
    tokens: Vec<u32>,
    /// The chunks of each entry of `COLLECTIONS`.
    collections: Vec<Range<u32>>,
}

impl Corpus {
    /// Draw enough chunks that a ranking of `results` distinct chunks takes
    /// few rejected draws (at least three times as many chunks as results),
    /// yet few enough that popular chunks recur across queries.
    fn generate(rng: &mut Pcg64, results: usize) -> Self {
        let per_collection = MIN_CHUNKS_PER_COLLECTION.max(results.div_ceil(2));
        let mut corpus = Corpus {
            text: String::new(),
            ends: Vec::with_capacity(per_collection * COLLECTIONS.len()),
            tokens: Vec::with_capacity(per_collection * COLLECTIONS.len()),
            collections: Vec::with_capacity(COLLECTIONS.len()),
        };
        let facets: Vec<&str> = FACETS.split_whitespace().collect();
        let mut seen = HashSet::new();
        for collection in &COLLECTIONS {
            let topics: Vec<&str> = collection.topics.split_whitespace().collect();
            let start = corpus.len();
            while corpus.len() - start < per_collection as u32 {
                let id = chunk_id(rng, collection.path, &topics, &facets);
                if seen.insert(id.clone()) {
                    corpus.text.push_str(&id);
                    corpus.ends.push(corpus.text.len());
                    corpus.tokens.push(rng.random_range(CHUNK_TOKENS));
                }
            }
            corpus.collections.push(start..corpus.len());
        }
        corpus
    }

    fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    fn id(&self, doc: u32) -> &str {
        let doc = doc as usize;
        let start = if doc == 0 { 0 } else { self.ends[doc - 1] };
        &self.text[start..self.ends[doc]]
    }

    fn tokens(&self, hits: &[Hit]) -> u32 {
        hits.iter().map(|hit| self.tokens[hit.doc as usize]).sum()
    }

    fn random_doc_in(&self, rng: &mut Pcg64, collection: usize) -> u32 {
        rng.random_range(self.collections[collection].clone())
    }
}

/// A random chunk id in the collection at `path`, such as
/// `kb/admin/sso-setup#chunk-0003`, or `support/tickets/t-482913#chunk-0003`
/// when the collection has no topics.
fn chunk_id(rng: &mut Pcg64, path: &str, topics: &[&str], facets: &[&str]) -> String {
    let document = if topics.is_empty() {
        format!("t-{}", rng.random_range(100_000..1_000_000u32))
    } else {
        format!("{}-{}", pick(rng, topics), pick(rng, facets))
    };
    let chunk = rng.random_range(0..CHUNKS_PER_DOC);
    format!("{path}/{document}#chunk-{chunk:04}")
}

// ---------------------------------------------------------------------------
// The answer key

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

/// The task of every no-answer query.
const NO_ANSWER_TASK: &str = "chitchat";

const LANGUAGES: &[(&str, u32)] = &[("en", 62), ("de", 18), ("fr", 12), ("ja", 8)];

/// How a query's relevant documents are written in labels.jsonl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelShape {
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
struct Judged {
    doc: u32,
    grade: u8,
}

/// One query of the answer key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct QuerySpec {
    task: &'static str,
    language: &'static str,
    shape: LabelShape,
    required: bool,
    judged: [Judged; MAX_JUDGED],
    judged_len: usize,
}

impl QuerySpec {
    fn draw(rng: &mut Pcg64, corpus: &Corpus) -> Self {
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

    fn judged(&self) -> &[Judged] {
        &self.judged[..self.judged_len]
    }

    fn judges(&self, doc: u32) -> bool {
        self.judged().iter().any(|judged| judged.doc == doc)
    }

    fn is_relevant(&self, doc: u32) -> bool {
        self.judged()
            .iter()
            .any(|judged| judged.doc == doc && judged.grade > 0)
    }
}

// ---------------------------------------------------------------------------
// The ranking model

/// Where a judged doc tends to land in the retriever's ranking, in percent.
struct Findability {
    /// Near the top (geometric depth from 0).
    top: u32,
    /// Somewhere in `DEEP`.
    deep: u32,
    // The rest is never retrieved.
}

const RELEVANT: Findability = Findability { top: 60, deep: 27 };
/// Judged-not-relevant docs were judged because some system retrieved them,
/// but they are found less often than relevant ones.
const JUDGED_NOT_RELEVANT: Findability = Findability { top: 25, deep: 45 };
/// Each next rank near the top is reached with this probability.
const TOP_CONTINUE: f64 = 0.6;
/// The depth of a doc found deep in the ranking.
const DEEP: Range<usize> = 2..40;
/// The deepest a doc found "near the top" can land.
const TOP_MAX_DEPTH: usize = 40;

/// The reranker sorts by `rank * SPREAD + noise`, plus a lag for docs that
/// are not relevant: a doc moves a few ranks, a relevant one more often up.
const RERANK_SPREAD: u32 = 4;
const RERANK_NOISE: Range<u32> = 0..12;
const RERANK_NOT_RELEVANT_LAG: u32 = 6;

/// How scores fall with rank, in units of 0.0001: the last result scores
/// within `floor`, and the gap above rank r averages `top_gap / (r + 1)`.
struct ScoreScale {
    floor: Range<u32>,
    top_gap: u32,
}

/// BM25-like scores: the top result around 10 to 20.
const BM25: ScoreScale = ScoreScale {
    floor: 30_000..80_000,
    top_gap: 15_000,
};
/// Cross-encoder-like scores between 0 and 1.
const RERANKER: ScoreScale = ScoreScale {
    floor: 500..2_000,
    top_gap: 1_200,
};

/// One result: a corpus chunk and its score in units of 0.0001.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Hit {
    doc: u32,
    score: u32,
}

impl Hit {
    /// `doc` at its rank, before the ranking's scores are drawn.
    fn unscored(doc: u32) -> Self {
        Hit { doc, score: 0 }
    }
}

/// A slot of the retrieved ranking that no judged doc took yet.
const EMPTY: u32 = u32::MAX;

/// A set of corpus docs that empties in constant time, so checking that a
/// ranking's docs are distinct costs nothing per query.
struct DocSet {
    /// `marks[doc] == generation` when `doc` is in the set.
    marks: Vec<u32>,
    generation: u32,
}

impl DocSet {
    fn new(corpus_len: u32) -> Self {
        DocSet {
            marks: vec![0; corpus_len as usize],
            generation: 1,
        }
    }

    fn clear(&mut self) {
        if self.generation == u32::MAX {
            self.marks.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
    }

    /// Add `doc`; false when it was already there.
    fn insert(&mut self, doc: u32) -> bool {
        let mark = &mut self.marks[doc as usize];
        let added = *mark != self.generation;
        *mark = self.generation;
        added
    }
}

/// Draws the rankings of one query after another, reusing its buffers.
struct RankingModel<'c> {
    corpus: &'c Corpus,
    results: usize,
    /// The docs the current ranking holds or must not hold.
    taken: DocSet,
    retrieved: Vec<Hit>,
    rerank_order: Vec<(u32, u32)>,
    reranked: Vec<Hit>,
}

impl<'c> RankingModel<'c> {
    fn new(corpus: &'c Corpus, results: usize) -> Self {
        RankingModel {
            corpus,
            results,
            taken: DocSet::new(corpus.len()),
            retrieved: Vec::with_capacity(results),
            rerank_order: Vec::with_capacity(RERANK_CANDIDATES),
            reranked: Vec::with_capacity(FINAL_DEPTH),
        }
    }

    /// The retriever's ranking of `results` distinct chunks: the judged docs
    /// where they were found, unrelated chunks everywhere else, scores
    /// strictly descending.
    fn retrieve(&mut self, rng: &mut Pcg64, spec: &QuerySpec) -> &[Hit] {
        self.retrieved.clear();
        self.retrieved.resize(self.results, Hit::unscored(EMPTY));
        self.taken.clear();
        // Judged docs the retriever misses must not come back as filler.
        for judged in spec.judged() {
            self.taken.insert(judged.doc);
        }
        for judged in spec.judged() {
            if let Some(depth) = draw_depth(rng, judged.grade) {
                self.place(judged.doc, depth);
            }
        }
        for hit in self.retrieved.iter_mut().filter(|hit| hit.doc == EMPTY) {
            hit.doc = loop {
                let doc = rng.random_range(0..self.corpus.len());
                if self.taken.insert(doc) {
                    break doc;
                }
            };
        }
        assign_scores(rng, &BM25, &mut self.retrieved);
        &self.retrieved
    }

    /// The reranker's top results, drawn from the last `retrieve`.
    fn rerank(&mut self, rng: &mut Pcg64, spec: &QuerySpec) -> &[Hit] {
        self.rerank_order.clear();
        let candidates = self.retrieved.len().min(RERANK_CANDIDATES);
        for (rank, hit) in self.retrieved[..candidates].iter().enumerate() {
            let lag = if spec.is_relevant(hit.doc) {
                0
            } else {
                RERANK_NOT_RELEVANT_LAG
            };
            let key = rank as u32 * RERANK_SPREAD + rng.random_range(RERANK_NOISE) + lag;
            self.rerank_order.push((key, rank as u32));
        }
        // Keys tie-break on the original rank: unique, so an unstable sort
        // is deterministic (and does not allocate).
        self.rerank_order.sort_unstable();
        self.reranked.clear();
        let kept = candidates.min(FINAL_DEPTH);
        for &(_, rank) in &self.rerank_order[..kept] {
            let doc = self.retrieved[rank as usize].doc;
            self.reranked.push(Hit::unscored(doc));
        }
        assign_scores(rng, &RERANKER, &mut self.reranked);
        &self.reranked
    }

    /// Put `doc` at `depth`, or at the next free slot below it when another
    /// judged doc is there; nowhere when the ranking ends first.
    fn place(&mut self, doc: u32, depth: usize) {
        let free = self
            .retrieved
            .get_mut(depth..)
            .and_then(|below| below.iter_mut().find(|hit| hit.doc == EMPTY));
        if let Some(hit) = free {
            hit.doc = doc;
        }
    }
}

/// Where the retriever ranks a judged doc (0 is the top), or `None` when it
/// does not find it at all.
fn draw_depth(rng: &mut Pcg64, grade: u8) -> Option<usize> {
    let findability = if grade > 0 {
        &RELEVANT
    } else {
        &JUDGED_NOT_RELEVANT
    };
    let roll = rng.random_range(0..100);
    if roll < findability.top {
        let mut depth = 0;
        while depth < TOP_MAX_DEPTH && rng.random_bool(TOP_CONTINUE) {
            depth += 1;
        }
        Some(depth)
    } else if roll < findability.top + findability.deep {
        Some(rng.random_range(DEEP))
    } else {
        None
    }
}

/// Give `hits` strictly descending scores on `scale`, so no two results tie
/// (a TREC reader re-sorts by score and would reorder ties).
fn assign_scores(rng: &mut Pcg64, scale: &ScoreScale, hits: &mut [Hit]) {
    let mut score = rng.random_range(scale.floor.clone());
    for (rank, hit) in hits.iter_mut().enumerate().rev() {
        hit.score = score;
        score += 1 + rng.random_range(0..=2 * scale.top_gap / (rank as u32 + 1));
    }
}

// ---------------------------------------------------------------------------
// Traffic: latencies and context sizes

/// Latencies are capped at a minute, as a gateway would time out.
const LATENCY_CAP_TENTHS: u32 = 600_000;

/// A latency in tenths of a millisecond with a long tail: a Pareto
/// distribution with shape 2 (`scale / sqrt(u)`), so the median is 1.4x the
/// scale and p99 10x. Square roots are exactly rounded on every platform.
fn long_tail_tenths(rng: &mut Pcg64, scale_tenths: u32) -> u32 {
    let unit = 1.0 - rng.random::<f64>();
    let tenths = f64::from(scale_tenths) / unit.sqrt();
    tenths.min(f64::from(LATENCY_CAP_TENTHS)) as u32
}

/// The retriever's latency: a fixed cost plus a little per result.
fn retrieve_latency(rng: &mut Pcg64, results: usize) -> u32 {
    long_tail_tenths(rng, 150 + results as u32 / 2)
}

/// The end-to-end latency of the `final` stage: retrieval, then the
/// reranker's cost per candidate.
fn final_latency(rng: &mut Pcg64, retrieve_tenths: u32, results: usize) -> u32 {
    let candidates = results.min(RERANK_CANDIDATES) as u32;
    retrieve_tenths + long_tail_tenths(rng, 250 + 15 * candidates)
}

// ---------------------------------------------------------------------------
// Writing

/// labels.jsonl: the labeled queries in id order.
fn write_labels(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
) -> anyhow::Result<WrittenFile> {
    write_file(&config.out, "labels.jsonl", |output| {
        for index in 0..config.labeled {
            let spec = QuerySpec::draw(&mut streams.rng(index), corpus);
            push_label(output.start_line(), config.query_name(index), &spec, corpus);
            output.end_line()?;
        }
        Ok(())
    })
}

/// The log, labeled and unlabeled queries shuffled together, in the format
/// asked for.
fn write_logs(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    mut rng: Pcg64,
) -> anyhow::Result<WrittenFile> {
    let mut order: Vec<usize> = (0..config.labeled + config.unlabeled).collect();
    order.shuffle(&mut rng);
    match config.format {
        GenFormat::Jsonl => write_events(config, corpus, streams, &order, JsonlLog::new(rng)),
        GenFormat::Trec => write_events(config, corpus, streams, &order, TrecRun),
    }
}

/// Draw each query of `order` from its own stream and let `format` write it.
fn write_events<F: LogFormat>(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    order: &[usize],
    mut format: F,
) -> anyhow::Result<WrittenFile> {
    let mut model = RankingModel::new(corpus, config.results);
    write_file(&config.out, F::FILE_NAME, |output| {
        for &index in order {
            let mut rng = streams.rng(index);
            let spec = QuerySpec::draw(&mut rng, corpus);
            let query = config.query_name(index);
            format.write_query(output, query, &mut rng, &mut model, &spec)?;
        }
        format.finish(output, corpus)
    })
}

/// A log file format: how one query's rankings become lines.
trait LogFormat {
    /// The file it writes in the output directory.
    const FILE_NAME: &'static str;

    /// Draw the query's rankings from `model` (the retriever's first, so
    /// every format sees the same retrieved ranking) and write them.
    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()>;

    /// Write whatever is still held back.
    fn finish(&mut self, output: &mut Output, corpus: &Corpus) -> io::Result<()>;
}

/// logs.jsonl: a `retrieve` event per query, and a `final` event that is
/// held back while a few other queries are logged.
struct JsonlLog {
    in_flight: Vec<FinalEvent>,
    /// Picks which held-back event is logged next.
    rng: Pcg64,
}

impl JsonlLog {
    fn new(rng: Pcg64) -> Self {
        JsonlLog {
            in_flight: Vec::with_capacity(IN_FLIGHT),
            rng,
        }
    }
}

impl LogFormat for JsonlLog {
    const FILE_NAME: &'static str = "logs.jsonl";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        let retrieved = model.retrieve(rng, spec);
        let results = retrieved.len();
        let retrieve_tenths = retrieve_latency(rng, results);
        push_event(
            output.start_line(),
            query,
            "retrieve",
            retrieved,
            retrieve_tenths,
            corpus,
        );
        output.end_line()?;
        let reranked = model.rerank(rng, spec);
        let final_event = FinalEvent::new(
            query,
            reranked,
            final_latency(rng, retrieve_tenths, results),
        );
        if self.in_flight.len() == IN_FLIGHT {
            let due = self
                .in_flight
                .swap_remove(self.rng.random_range(0..IN_FLIGHT));
            due.write(output, corpus)?;
        }
        self.in_flight.push(final_event);
        Ok(())
    }

    fn finish(&mut self, output: &mut Output, corpus: &Corpus) -> io::Result<()> {
        self.in_flight
            .drain(..)
            .try_for_each(|due| due.write(output, corpus))
    }
}

/// A `final` event waiting to be logged.
struct FinalEvent {
    query: QueryName,
    hits: [Hit; FINAL_DEPTH],
    len: usize,
    latency_tenths: u32,
}

impl FinalEvent {
    fn new(query: QueryName, reranked: &[Hit], latency_tenths: u32) -> Self {
        let mut hits = [Hit::default(); FINAL_DEPTH];
        hits[..reranked.len()].copy_from_slice(reranked);
        FinalEvent {
            query,
            hits,
            len: reranked.len(),
            latency_tenths,
        }
    }

    fn write(&self, output: &mut Output, corpus: &Corpus) -> io::Result<()> {
        let hits = &self.hits[..self.len];
        push_event(
            output.start_line(),
            self.query,
            "final",
            hits,
            self.latency_tenths,
            corpus,
        );
        output.end_line()
    }
}

/// run.trec: the retriever's ranking of each query, one line per result.
struct TrecRun;

impl LogFormat for TrecRun {
    const FILE_NAME: &'static str = "run.trec";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        for (rank, hit) in model.retrieve(rng, spec).iter().enumerate() {
            push_trec_line(output.start_line(), query, rank + 1, hit, corpus);
            output.end_line()?;
        }
        Ok(())
    }

    fn finish(&mut self, _output: &mut Output, _corpus: &Corpus) -> io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Line formats

/// `{"query_id":"q000001","relevant":[...],"task":"howto","language":"en"}`,
/// with `"required":true` for required queries.
fn push_label(line: &mut Vec<u8>, query: QueryName, spec: &QuerySpec, corpus: &Corpus) {
    line.extend_from_slice(b"{\"query_id\":");
    query.push_json(line);
    line.extend_from_slice(b",\"relevant\":");
    match spec.shape {
        LabelShape::Graded => push_list(line, b'{', b'}', spec.judged(), |line, judged| {
            push_json_string(line, corpus.id(judged.doc));
            line.push(b':');
            push_uint(line, u64::from(judged.grade));
        }),
        LabelShape::List | LabelShape::NoAnswer => {
            push_list(line, b'[', b']', spec.judged(), |line, judged| {
                push_json_string(line, corpus.id(judged.doc));
            })
        }
    }
    line.extend_from_slice(b",\"task\":");
    push_json_string(line, spec.task);
    line.extend_from_slice(b",\"language\":");
    push_json_string(line, spec.language);
    if spec.required {
        line.extend_from_slice(b",\"required\":true");
    }
    line.push(b'}');
}

/// One search event in the log format the README describes (Input formats,
/// Logs); `context_tokens` is the size of the chunks the stage hands on.
fn push_event(
    line: &mut Vec<u8>,
    query: QueryName,
    stage: &str,
    hits: &[Hit],
    latency_tenths: u32,
    corpus: &Corpus,
) {
    line.extend_from_slice(b"{\"query_id\":");
    query.push_json(line);
    line.extend_from_slice(b",\"stage\":");
    push_json_string(line, stage);
    line.extend_from_slice(b",\"run\":");
    push_json_string(line, RUN);
    line.extend_from_slice(b",\"results\":");
    push_list(line, b'[', b']', hits, |line, hit| {
        line.extend_from_slice(b"{\"doc_id\":");
        push_json_string(line, corpus.id(hit.doc));
        line.extend_from_slice(b",\"score\":");
        push_fixed(line, hit.score, 4);
        line.push(b'}');
    });
    line.extend_from_slice(b",\"latency_ms\":");
    push_fixed(line, latency_tenths, 1);
    line.extend_from_slice(b",\"context_tokens\":");
    push_uint(line, u64::from(corpus.tokens(hits)));
    line.push(b'}');
}

/// `query_id Q0 doc_id rank score tag`.
fn push_trec_line(line: &mut Vec<u8>, query: QueryName, rank: usize, hit: &Hit, corpus: &Corpus) {
    query.push_to(line);
    line.extend_from_slice(b" Q0 ");
    line.extend_from_slice(corpus.id(hit.doc).as_bytes());
    line.push(b' ');
    push_uint(line, rank as u64);
    line.push(b' ');
    push_fixed(line, hit.score, 4);
    line.push(b' ');
    line.extend_from_slice(RUN.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus_and_streams(seed: u64, results: usize) -> (Corpus, QueryStreams) {
        let mut rng = Pcg64::seed_from_u64(seed);
        let corpus = Corpus::generate(&mut rng, results);
        let streams = QueryStreams::new(&mut rng);
        (corpus, streams)
    }

    fn specs(corpus: &Corpus, streams: &QueryStreams, count: usize) -> Vec<QuerySpec> {
        (0..count)
            .map(|index| QuerySpec::draw(&mut streams.rng(index), corpus))
            .collect()
    }

    fn share(count: usize, total: usize) -> f64 {
        count as f64 / total as f64
    }

    fn assert_distinct_and_descending(hits: &[Hit]) {
        let docs: HashSet<u32> = hits.iter().map(|hit| hit.doc).collect();
        assert_eq!(docs.len(), hits.len(), "a doc twice in {hits:?}");
        assert!(
            hits.windows(2).all(|pair| pair[0].score > pair[1].score),
            "{hits:?}"
        );
    }

    #[test]
    fn corpus_ids_are_unique_and_safe() {
        let (corpus, _) = corpus_and_streams(1, 10);
        let ids: HashSet<&str> = (0..corpus.len()).map(|doc| corpus.id(doc)).collect();
        assert_eq!(ids.len(), corpus.len() as usize);
        assert!(ids.iter().all(|id| id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/#-".contains(&b))));
        assert!(ids.contains(corpus.id(0)) && corpus.id(0).starts_with("kb/articles/"));
        assert!(corpus
            .id(corpus.len() - 1)
            .starts_with("support/tickets/t-"));
    }

    #[test]
    fn doc_set_empties_in_constant_time_even_when_generations_wrap() {
        let mut set = DocSet::new(3);
        assert!(set.insert(1) && !set.insert(1));
        set.clear();
        assert!(set.insert(1));
        set.generation = u32::MAX - 1;
        set.insert(2);
        set.clear();
        assert!(set.insert(0) && set.insert(2) && !set.insert(0));
        set.clear();
        assert_eq!(set.generation, 1);
        assert!(set.insert(0) && set.insert(1) && set.insert(2));
    }

    #[test]
    fn rankings_hold_distinct_docs_with_descending_scores() {
        for results in [1, 3, 10, 100] {
            let (corpus, streams) = corpus_and_streams(2, results);
            let mut model = RankingModel::new(&corpus, results);
            for (index, spec) in specs(&corpus, &streams, 500).iter().enumerate() {
                let mut rng = streams.rng(index);
                let retrieved = model.retrieve(&mut rng, spec).to_vec();
                assert_eq!(retrieved.len(), results);
                assert_distinct_and_descending(&retrieved);
                let reranked = model.rerank(&mut rng, spec);
                assert_eq!(reranked.len(), results.min(FINAL_DEPTH));
                assert_distinct_and_descending(reranked);
                let candidates = &retrieved[..results.min(RERANK_CANDIDATES)];
                assert!(reranked
                    .iter()
                    .all(|hit| candidates.iter().any(|c| c.doc == hit.doc)));
            }
        }
    }

    #[test]
    fn relevant_docs_land_near_the_top_deep_or_nowhere() {
        let results = 100;
        let (corpus, streams) = corpus_and_streams(3, results);
        let mut model = RankingModel::new(&corpus, results);
        let (mut recall_at_10, mut answerable) = (0.0, 0);
        let (mut at_top, mut deeper_than_10, mut absent, mut relevant) = (0, 0, 0, 0);
        for (index, spec) in specs(&corpus, &streams, 3000).iter().enumerate() {
            let ranking = model.retrieve(&mut streams.rng(index), spec);
            let rank_of = |doc| ranking.iter().position(|hit| hit.doc == doc);
            let relevant_ranks: Vec<_> = spec
                .judged()
                .iter()
                .filter(|j| j.grade > 0)
                .map(|j| rank_of(j.doc))
                .collect();
            if relevant_ranks.is_empty() {
                continue;
            }
            answerable += 1;
            let found_in_10 = relevant_ranks
                .iter()
                .filter(|rank| rank.is_some_and(|r| r < 10))
                .count();
            recall_at_10 += share(found_in_10, relevant_ranks.len());
            relevant += relevant_ranks.len();
            at_top += relevant_ranks
                .iter()
                .filter(|&&rank| rank == Some(0))
                .count();
            deeper_than_10 += relevant_ranks
                .iter()
                .filter(|rank| rank.is_some_and(|r| r >= 10))
                .count();
            absent += relevant_ranks.iter().filter(|rank| rank.is_none()).count();
        }
        let recall_at_10 = recall_at_10 / answerable as f64;
        assert!(
            (0.6..0.8).contains(&recall_at_10),
            "recall@10 {recall_at_10}"
        );
        assert!(
            share(at_top, relevant) > 0.2,
            "{at_top} of {relevant} at rank 1"
        );
        assert!(
            share(deeper_than_10, relevant) > 0.1,
            "{deeper_than_10} of {relevant} below 10"
        );
        assert!(
            (0.05..0.25).contains(&share(absent, relevant)),
            "{absent} of {relevant} absent"
        );
    }

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
    fn a_query_does_not_depend_on_the_queries_before_it() {
        let (corpus, streams) = corpus_and_streams(5, 10);
        let mut model = RankingModel::new(&corpus, 10);
        let mut draw = |index| {
            let mut rng = streams.rng(index);
            let spec = QuerySpec::draw(&mut rng, &corpus);
            let retrieved = model.retrieve(&mut rng, &spec).to_vec();
            let reranked = model.rerank(&mut rng, &spec).to_vec();
            (spec, retrieved, reranked)
        };
        let alone = draw(7);
        for index in 0..7 {
            draw(index);
        }
        assert_eq!(draw(7), alone);
        assert_ne!(draw(8), alone);
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

    /// A corpus of the given ids, 100 tokens each, all in the first collection.
    fn corpus_of(ids: &[&str]) -> Corpus {
        let mut corpus = Corpus {
            text: String::new(),
            ends: vec![],
            tokens: vec![],
            collections: vec![],
        };
        for id in ids {
            corpus.text.push_str(id);
            corpus.ends.push(corpus.text.len());
            corpus.tokens.push(100);
        }
        corpus.collections.push(0..corpus.len());
        corpus
    }

    #[test]
    fn lines_follow_the_input_formats() {
        let corpus = corpus_of(&["kb/a#chunk-0001", "kb/b#chunk-0002"]);
        let query = QueryName::new(b'q', 3, 10);
        let mut spec = QuerySpec {
            task: "billing",
            language: "de",
            shape: LabelShape::Graded,
            required: true,
            judged: [
                Judged { doc: 1, grade: 3 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
            ],
            judged_len: 2,
        };
        let mut line = Vec::new();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":{"kb/b#chunk-0002":3,"kb/a#chunk-0001":0},"task":"billing","language":"de","required":true}"#
        );
        (spec.shape, spec.required, spec.judged_len) = (LabelShape::List, false, 1);
        line.clear();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":["kb/b#chunk-0002"],"task":"billing","language":"de"}"#
        );
        let hits = [
            Hit {
                doc: 0,
                score: 125_000,
            },
            Hit {
                doc: 1,
                score: 31_234,
            },
        ];
        line.clear();
        push_event(&mut line, query, "final", &hits, 412, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","stage":"final","run":"bm25-v3","results":[{"doc_id":"kb/a#chunk-0001","score":12.5000},{"doc_id":"kb/b#chunk-0002","score":3.1234}],"latency_ms":41.2,"context_tokens":200}"#
        );
        line.clear();
        push_trec_line(&mut line, query, 2, &hits[1], &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            "q000003 Q0 kb/b#chunk-0002 2 3.1234 bm25-v3"
        );
    }

    fn config(labeled: usize, results: usize, out: PathBuf) -> GenConfig {
        GenConfig {
            labeled,
            unlabeled: 0,
            results,
            seed: 0,
            format: GenFormat::Jsonl,
            out,
        }
    }

    #[test]
    fn bad_arguments_are_errors_that_say_why() {
        let out = std::env::temp_dir().join(format!("rgrade-gen-unit-{}", std::process::id()));
        let error = write_dataset(&config(0, 10, out.clone())).unwrap_err();
        assert!(
            error.to_string().contains("--queries must be at least 1"),
            "{error}"
        );
        let error = write_dataset(&config(1, 0, out.clone())).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--results must be between 1 and"),
            "{error}"
        );
        assert!(!out.exists(), "nothing is written for bad arguments");

        fs::create_dir_all(&out).unwrap();
        let file = out.join("a-file");
        fs::write(&file, "").unwrap();
        let inside_a_file = file.join("out");
        let error = write_dataset(&config(1, 10, inside_a_file.clone())).unwrap_err();
        assert!(
            format!("{error:#}").contains(&inside_a_file.display().to_string()),
            "{error:#}"
        );
        fs::remove_dir_all(&out).unwrap();
    }
}
