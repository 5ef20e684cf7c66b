//! The choices a grading run is configured with: plain values the library
//! takes. Each is a [`Choice`]: it has a name (what the command line, the
//! Python keyword arguments and summary.json spell) and a line of help
//! (its doc line), and reads from its name with `FromStr`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::base::failure::Setting;

/// A value picked by name from a closed set.
pub trait Choice: Copy + Sized + 'static {
    /// Every value, in the order they are offered.
    const ALL: &'static [Self];

    /// The value's name, as typed.
    fn name(self) -> &'static str;

    /// One line saying what the value does.
    fn help(self) -> &'static str;

    /// The value named `name`.
    ///
    /// # Errors
    /// No value has that name; the message lists those that do.
    fn from_name(name: &str) -> Result<Self, UnknownChoice> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.name() == name)
            .ok_or_else(|| UnknownChoice {
                given: name.to_string(),
                known: Self::ALL.iter().map(|value| value.name()).collect(),
            })
    }
}

/// A name no value of a [`Choice`] has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChoice {
    /// The name given.
    pub given: String,
    /// The names there are.
    pub known: Vec<&'static str>,
}

impl fmt::Display for UnknownChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}: expected one of {}",
            self.given,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownChoice {}

/// Define a [`Choice`] enum: each variant with its doc line (its help) and
/// its name, e.g. `/// Leave it out of the means.` then `Skip = "skip",`.
/// The enum also reads from its name (`FromStr`, and `Deserialize`, so
/// that a plan read from Python's keyword arguments takes the names the
/// command line takes) and prints as it (`Display`).
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[doc = $help:literal])+
                $variant:ident = $text:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $(
                $(#[doc = $help])+
                $variant,
            )+
        }

        impl $crate::base::options::Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            fn help(self) -> &'static str {
                match self {
                    $($name::$variant => concat!($($help),+).trim_start(),)+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::base::options::UnknownChoice;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                <$name as $crate::base::options::Choice>::from_name(name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::base::options::Choice::name(*self))
            }
        }

        /// Its name, or its variant's: a plan written down (partial.json,
        /// a shard's captures) spells each choice as its variant, as
        /// serde's derive writes it, and a binary form by its index.
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(::serde::Deserialize)]
                enum Written {
                    $($variant,)+
                }
                if !deserializer.is_human_readable() {
                    return Ok(match <Written as ::serde::Deserialize>::deserialize(deserializer)? {
                        $(Written::$variant => $name::$variant,)+
                    });
                }
                let name = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                match name.as_str() {
                    $(stringify!($variant) => Ok($name::$variant),)+
                    _ => name.parse().map_err(::serde::de::Error::custom),
                }
            }
        }
    };
}
pub(crate) use choice;

choice! {
    /// What `--missing` does with a labeled query that has no capture.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum MissingPolicy {
        /// Score it 0 in every metric and count it in the means (trec_eval -c).
        Fail = "fail",
        /// Leave it out of the means.
        Skip = "skip",
    }
}

choice! {
    /// What `--repeats` does with several captures of one (run, stage, query).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum RepeatPolicy {
        /// Reject every capture of that key; the query is invalid.
        Error = "error",
        /// Grade the first capture in input order.
        First = "first",
        /// Grade the last capture in input order.
        Last = "last",
        /// Grade every capture and average the scores.
        Mean = "mean",
    }
}

choice! {
    /// What `--unit` grades a ranking's results as.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Unit {
        /// The ids as the logs give them.
        Result = "result",
        /// The documents the ids are chunks of (`--doc-of` says how).
        Doc = "doc",
    }
}

choice! {
    /// What `--duplicate-docs` does with a doc id listed twice in one ranking.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum DuplicateDocs {
        /// Reject the capture.
        Reject = "reject",
        /// Keep the first occurrence and close the gap.
        Dedupe = "dedupe",
    }
}

choice! {
    /// What `--bad-files` does with a log input that cannot be read to its
    /// end (a truncated gzip or zstd stream, a corrupt Parquet file).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum BadFiles {
        /// Stop: nothing is graded (exit 2), naming the file.
        Fail = "fail",
        /// Grade the other inputs; each skipped file is a reject.
        Skip = "skip",
    }
}

choice! {
    /// The format of the labels file.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum LabelsFormat {
        /// A compiled key or Parquet by its first bytes; a JSON dict when the file opens with a query id keying an object; JSONL when the first byte is `{`; CSV or TSV when the first line is a header; else TREC qrels.
        Auto = "auto",
        /// One JSON object per labeled query.
        Jsonl = "jsonl",
        /// TREC qrels: query_id iteration doc_id grade.
        Trec = "trec",
        /// CSV with a header holding query_id and doc_id.
        Csv = "csv",
        /// Tab-separated, with a header: BEIR's qrels (query-id, corpus-id, score), or the CSV labels' columns.
        Tsv = "tsv",
        /// One JSON object of query id to an object of doc id to grade, as ranx and pytrec_eval write qrels.
        Json = "json",
        /// Parquet with the CSV labels' columns (a file opening with PAR1).
        Parquet = "parquet",
        /// A compiled answer key, as `rgrade index` writes it.
        Compiled = "compiled",
    }
}

choice! {
    /// The format of a log file.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum LogsFormat {
        /// Parquet by its PAR1 magic; a CSV run by its header; TREC or MS MARCO run when the first line (or the one after a header) has that shape; else JSONL.
        Auto = "auto",
        /// One JSON object per search event.
        Jsonl = "jsonl",
        /// TREC run: query_id Q0 doc_id rank score tag.
        Trec = "trec",
        /// MS MARCO run: query_id doc_id rank, ranked by rank; the run is the file's name.
        Msmarco = "msmarco",
        /// OpenTelemetry traces as OTLP/JSON lines: retrieval and rerank spans are the captures.
        Otlp = "otlp",
        /// Parquet: a row per search event, a row per (event, result) with a rank, or Phoenix spans.
        Parquet = "parquet",
        /// CSV run: a header naming query_id (or q_id), doc_id and score or rank; a row per result.
        Csv = "csv",
    }
}

choice! {
    /// What `--join` matches a capture to its label by.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum JoinBy {
        /// The query id.
        Id = "id",
        /// The question text, trimmed, against each label's `query`.
        Text = "text",
    }
}

/// Which grade counts when several reviewers judged one (query, document)
/// pair (`--reviewers`; docs/guide.md, "Several reviewers in one key").
/// Each is decided among the reviewers who judged that pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum ReviewerPolicy {
    /// The grade most of them gave; a tie counts the lowest of the tied
    /// grades, so a split vote never makes a document more relevant.
    Majority,
    /// The highest grade any of them gave.
    Any,
    /// The lowest grade any of them gave: relevant only if all agree.
    All,
    /// This reviewer's grades only; the queries they did not label are
    /// left out of the key.
    Only(String),
}

impl ReviewerPolicy {
    /// The words that name a rule rather than a reviewer.
    pub const RULES: [&'static str; 3] = ["majority", "any", "all"];

    /// The grade that counts among `grades` (not empty), those of the
    /// reviewers who judged one pair, under a rule ([`ReviewerPolicy::Only`]
    /// picks a reviewer, not a grade, and answers `None`).
    pub fn combine(&self, grades: &[i64]) -> Option<i64> {
        match self {
            ReviewerPolicy::Any => grades.iter().copied().max(),
            ReviewerPolicy::All => grades.iter().copied().min(),
            ReviewerPolicy::Majority => {
                let mut sorted = grades.to_vec();
                sorted.sort_unstable();
                // Runs of equal grades, lowest first: the first longest wins.
                let mut best: Option<(usize, i64)> = None;
                for run in sorted.chunk_by(|a, b| a == b) {
                    if best.is_none_or(|(count, _)| run.len() > count) {
                        best = Some((run.len(), run[0]));
                    }
                }
                best.map(|(_, grade)| grade)
            }
            ReviewerPolicy::Only(_) => None,
        }
    }
}

impl fmt::Display for ReviewerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReviewerPolicy::Majority => "majority",
            ReviewerPolicy::Any => "any",
            ReviewerPolicy::All => "all",
            ReviewerPolicy::Only(name) => name,
        })
    }
}

impl std::str::FromStr for ReviewerPolicy {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Ok(match name {
            "majority" => ReviewerPolicy::Majority,
            "any" => ReviewerPolicy::Any,
            "all" => ReviewerPolicy::All,
            "" => return Err("expected majority, any, all or a reviewer's name".into()),
            reviewer => ReviewerPolicy::Only(reviewer.to_string()),
        })
    }
}

/// A key's reviewers policy with the setting that sets it, so that a
/// message about the policy names the option the user gives: `reviewers`,
/// or `calibrate_reviewers` for the human key of a calibration.
#[derive(Debug, Clone, Copy)]
pub struct Reviewing<'a> {
    /// The policy; `None` when the option is not given.
    pub policy: Option<&'a ReviewerPolicy>,
    /// The setting.
    pub option: Setting,
}

impl<'a> Reviewing<'a> {
    /// `policy`, as `--reviewers` gives it.
    pub fn by_reviewers(policy: Option<&'a ReviewerPolicy>) -> Self {
        Reviewing {
            policy,
            option: Setting::Reviewers,
        }
    }
}

impl From<ReviewerPolicy> for String {
    fn from(policy: ReviewerPolicy) -> String {
        policy.to_string()
    }
}

impl TryFrom<String> for ReviewerPolicy {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        name.parse()
    }
}

/// The kinds of span that are captures, as `--span-stage` names them (a
/// plan reads either that name or the variant's, which it is written with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SpanKind {
    /// An OpenInference RETRIEVER span.
    #[serde(alias = "RETRIEVER")]
    Retriever,
    /// An OpenInference RERANKER span.
    #[serde(alias = "RERANKER")]
    Reranker,
    /// An OpenTelemetry GenAI span whose operation is `retrieval`.
    #[serde(alias = "retrieval")]
    GenAiRetrieval,
}

impl SpanKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [SpanKind; 3] = [
        SpanKind::Retriever,
        SpanKind::Reranker,
        SpanKind::GenAiRetrieval,
    ];

    /// The name `--span-stage` takes: the OpenInference span kind, or the
    /// GenAI operation name.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Retriever => "RETRIEVER",
            SpanKind::Reranker => "RERANKER",
            SpanKind::GenAiRetrieval => "retrieval",
        }
    }

    /// The stage its captures have unless `--span-stage` renames it.
    pub fn default_stage(self) -> &'static str {
        match self {
            SpanKind::Retriever | SpanKind::GenAiRetrieval => "retrieve",
            SpanKind::Reranker => "rerank",
        }
    }

    /// The kind `--span-stage` names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

choice! {
    /// What names the run of a TREC run line.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum RunName {
        /// The tag, its sixth field.
        Tag = "tag",
        /// The file's name without its extensions (`.trec`, `.txt`, `.gz`, ...).
        File = "file",
    }
}

/// A plan's list read from one value or several: Python's
/// `metrics="ndcg@10"` names one metric (not a list of its letters), as
/// `k=10` names one cutoff; each value reads as the list's own would, with
/// its own message.
pub(crate) fn one_or_many<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    OneOrMany::deserialize(deserializer).map(|list| list.0)
}

/// [`one_or_many`] for a list that may be left out (`None`).
pub(crate) fn maybe_one_or_many<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<OneOrMany<T>>::deserialize(deserializer).map(|list| list.map(|list| list.0))
}

/// A list given as one value or as several.
struct OneOrMany<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{IntoDeserializer, SeqAccess, Visitor};

        struct Values<T>(std::marker::PhantomData<T>);

        impl<T> Values<T> {
            /// One value, read as an element of the list.
            fn one<'de, E: serde::de::Error>(
                value: impl IntoDeserializer<'de, E>,
            ) -> Result<OneOrMany<T>, E>
            where
                T: Deserialize<'de>,
            {
                T::deserialize(value.into_deserializer()).map(|one| OneOrMany(vec![one]))
            }
        }

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Values<T> {
            type Value = OneOrMany<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list of them")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut list = Vec::new();
                while let Some(one) = seq.next_element()? {
                    list.push(one);
                }
                Ok(OneOrMany(list))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Self::one(text)
            }

            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<Self::Value, E> {
                Self::one(number)
            }

            fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<Self::Value, E> {
                Self::one(number)
            }

            fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<Self::Value, E> {
                Self::one(number)
            }

            fn visit_bool<E: serde::de::Error>(self, flag: bool) -> Result<Self::Value, E> {
                Self::one(flag)
            }
        }

        deserializer.deserialize_any(Values(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list read as one value or several: Python's `k=10` is `k=[10]`,
    /// and a value of the wrong type says what was expected.
    #[test]
    fn a_list_reads_from_one_value_or_several() {
        use crate::base::metrics::Cutoff;

        #[derive(Debug, Deserialize)]
        struct Listed {
            #[serde(deserialize_with = "one_or_many")]
            ks: Vec<Cutoff>,
        }
        let read = |json: &str| serde_json::from_str::<Listed>(json).map(|listed| listed.ks);
        assert_eq!(read(r#"{"ks": 10}"#).unwrap(), [Cutoff::At(10)]);
        assert_eq!(read(r#"{"ks": "all"}"#).unwrap(), [Cutoff::All]);
        assert_eq!(
            read(r#"{"ks": [3, "all"]}"#).unwrap(),
            [Cutoff::At(3), Cutoff::All]
        );
        let wrong = read(r#"{"ks": {"a": 1}}"#).unwrap_err().to_string();
        assert!(wrong.contains("a value or a list of them"), "{wrong}");
    }

    #[test]
    fn a_choice_reads_from_its_name_and_prints_as_it() {
        for &value in LogsFormat::ALL {
            assert_eq!(value.name().parse::<LogsFormat>(), Ok(value));
            assert_eq!(value.to_string(), value.name());
        }
        assert_eq!(MissingPolicy::Skip.help(), "Leave it out of the means.");
        let err = "sometimes".parse::<MissingPolicy>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""sometimes": expected one of fail, skip"#
        );
    }

    #[test]
    fn reviewer_rules_combine_grades_as_documented() {
        let majority = ReviewerPolicy::Majority;
        assert_eq!(majority.combine(&[2, 0, 2]), Some(2));
        assert_eq!(majority.combine(&[3, 1, 1, 3]), Some(1), "a tie: the lower");
        assert_eq!(
            majority.combine(&[1, 2, 3]),
            Some(1),
            "all tied: the lowest"
        );
        assert_eq!(majority.combine(&[0, 3, 3, 1, 1]), Some(1));
        assert_eq!(ReviewerPolicy::Any.combine(&[0, 3, 1]), Some(3));
        assert_eq!(ReviewerPolicy::All.combine(&[2, 3, 1]), Some(1));
        let only: ReviewerPolicy = "alice".parse().unwrap();
        assert_eq!(only, ReviewerPolicy::Only("alice".into()));
        assert_eq!(only.combine(&[1]), None);
        for name in ["majority", "any", "all", "alice"] {
            assert_eq!(name.parse::<ReviewerPolicy>().unwrap().to_string(), name);
        }
        assert!("".parse::<ReviewerPolicy>().is_err());
    }
}
