//! What an error that leaves nothing done is about: the labels, the logs,
//! the output directory, a comparison's inputs, a merge's shards, or the
//! settings. Inside the library an error is an `anyhow::Error` marked with
//! its kind where it arises ([`OfKind`]); the API returns it as an
//! [`Error`], whose [`Error::kind`] callers branch on (the Python package
//! raises one exception class per kind).
//!
//! A message that names an option names it as a [`Setting`], not as a
//! front end spells it: each front end spells the settings of the messages
//! it shows ([`Error::spelled`], [`Message::spelled`], a warning's
//! `spelled`), the command line as `--reviewers`, Python as `reviewers=`.
//! Shown as they are (`Display`), and in the files the library writes,
//! messages name settings as the plan does: `` `reviewers` ``.

use std::fmt;
use std::path::Path;
use std::sync::Mutex;

/// What an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A setting: a cutoff, a stage order, a thread count.
    Usage,
    /// The answer key: unreadable, invalid, refused by a check.
    Labels,
    /// A log input, or a file read beside the logs: missing, empty,
    /// corrupt, or of columns that do not fit.
    Logs,
    /// The output directory: locked, unwritable, holding another result.
    Output,
    /// Two gradings that cannot be compared, or rules that cannot hold.
    Comparison,
    /// Partial gradings that cannot be merged.
    Shards,
    /// Anything the other kinds do not cover.
    Other,
}

/// An error that left nothing done: what it is about, and a message that
/// names the file (and line) it arose in, its causes after it.
pub struct Error {
    kind: ErrorKind,
    error: anyhow::Error,
}

impl Error {
    /// What the error is about.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// The kind it was marked with where it arose, else [`ErrorKind::Other`].
impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Self {
        Error {
            kind: error_kind(&error).unwrap_or(ErrorKind::Other),
            error,
        }
    }
}

impl Error {
    /// The whole message, causes included, each setting it names as
    /// `spelling` spells it (given the value the message quotes with it).
    pub fn spelled(&self, spelling: impl FnMut(Setting, Option<&str>) -> String) -> String {
        spell_settings(&copies_named(format!("{:#}", self.error)), spelling)
    }

    /// The setting the error is about: the first its message names.
    pub fn setting(&self) -> Option<Setting> {
        let mut named = Vec::new();
        self.spelled(|setting, _| {
            named.push(setting);
            String::new()
        });
        named.first().copied()
    }
}

/// The whole message, causes included, each setting named as the plan
/// names it: the error has no source of its own to walk, so a caller that
/// prints causes prints them once.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelled(plan_spelling))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} error: {self}", self.kind)
    }
}

/// Local copies of results fetched from object storage, each with the URI
/// it is a copy of (see [`name_copy`]).
static COPIES: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Have every error name the local copy `local` of a result in object
/// storage as `uri`, the place the user gave: an error found once the
/// result was fetched (a file not as its marker lists it, a cell of
/// per_query.csv no grading writes) is about the object, and by the time
/// the message is shown the copy is gone.
pub fn name_copy(local: &Path, uri: &str) {
    let mut copies = COPIES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    copies.push((
        local.display().to_string(),
        uri.trim_end_matches('/').to_string(),
    ));
}

/// `text` with each local copy's path named as the URI it copies.
fn copies_named(mut text: String) -> String {
    let copies = COPIES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (local, uri) in copies.iter() {
        if text.contains(local.as_str()) {
            text = text.replace(local.as_str(), uri);
        }
    }
    text
}

/// Define [`Setting`]: each variant with the name the plan gives it.
macro_rules! settings {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal,)+) => {
        /// An option a message names: the plan's name for it is
        /// [`Setting::name`], and each front end spells it its own way.
        /// In a message (its `Display`), it is a mark [`spell_settings`]
        /// replaces with its spelling.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Setting {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Setting {
            /// Every setting.
            pub const ALL: &'static [Setting] = &[$(Setting::$variant),+];

            /// Its name: the plan's field (a log field's, as a keyword
            /// argument names it: `stage_field`; a command's own option,
            /// as its keyword argument).
            pub fn name(self) -> &'static str {
                match self {
                    $(Setting::$variant => $name,)+
                }
            }
        }
    };
}

settings! {
    /// The answer key.
    Labels = "labels",
    /// The output directory.
    Out = "out",
    /// The cutoffs.
    K = "k",
    /// The measures asked for by name.
    Measures = "measures",
    /// Whose grade counts where reviewers disagree.
    Reviewers = "reviewers",
    /// `reviewers` for the first key of a comparison of keys.
    ReviewersA = "reviewers_a",
    /// `reviewers` for the second key.
    ReviewersB = "reviewers_b",
    /// The human key a grading is calibrated against.
    Calibrate = "calibrate",
    /// `reviewers` for the human key.
    CalibrateReviewers = "calibrate_reviewers",
    /// A grading of one shard.
    Partial = "partial",
    /// How captures meet labels.
    Join = "join",
    /// Grading results or the documents they are chunks of.
    Unit = "unit",
    /// How a result id names its document.
    DocOf = "doc_of",
    /// The lowest relevant grade.
    MinRel = "min_rel",
    /// What a labeled query without a capture scores.
    Missing = "missing",
    /// The stages in pipeline order.
    StageOrder = "stage_order",
    /// Stage names for span kinds.
    SpanStages = "span_stages",
    /// The collection version labels must have been reviewed against.
    CollectionVersion = "collection_version",
    /// The logs graded.
    Logs = "logs",
    /// The collection snapshot every labeled id must be in.
    Corpus = "corpus",
    /// The stages graded.
    Stages = "stages",
    /// What a doc id listed twice in one ranking does.
    DuplicateDocs = "duplicate_docs",
    /// What a log input that cannot be read to its end does.
    BadFiles = "bad_files",
    /// The rejected records a grading tolerates.
    MaxRejects = "max_rejects",
    /// The results outside their user's collections a grading tolerates.
    MaxLeaks = "max_leaks",
    /// The logs' format.
    LogsFormat = "logs_format",
    /// What several captures of one (run, stage, query) become.
    Repeats = "repeats",
    /// What names a TREC run.
    RunName = "run_name",
    /// Where a record keeps its query id.
    QueryField = "query_field",
    /// Where a record keeps its results.
    ResultsField = "results_field",
    /// Where a result keeps its doc id.
    DocField = "doc_field",
    /// Where a result (or a result row) keeps its rank.
    RankField = "rank_field",
    /// Where a record keeps its capture time.
    TimeField = "time_field",
    /// The log fields the aggregates are sliced by.
    SliceBy = "slice_by",
    /// Where a record keeps its stage.
    StageField = "stage_field",
    /// Where a record keeps its run.
    RunField = "run_field",
    /// Where a record keeps its latency.
    LatencyField = "latency_field",
    /// Where a record keeps its context size.
    ContextField = "context_field",
    /// Where a record says whether its answer was acceptable.
    OutcomeField = "outcome_field",
    /// Where a record keeps its user's allowed collections.
    AllowedField = "allowed_field",
    /// Where a result keeps its collection.
    CollectionField = "collection_field",
    /// The time a grading stands for.
    AsOf = "as_of",
    /// The OpenMetrics export.
    Openmetrics = "openmetrics",
    /// The metrics compared or watched.
    Metrics = "metrics",
    /// A comparison's acceptance rules.
    Rules = "rules",
    /// The worker threads.
    Threads = "threads",
    /// The permutations of the paired test.
    Permutations = "permutations",
    /// The change a comparison's sample size is found for.
    Mde = "mde",
    /// The nights of a trend's baseline.
    Baseline = "baseline",
    /// The chance of a false alarm.
    Alpha = "alpha",
    /// Watching nights graded with other labels.
    AllowLabelChanges = "allow_label_changes",
    /// The generator's labeled queries.
    Queries = "queries",
    /// The generator's results per ranking.
    Results = "results",
    /// The generator's nights.
    Nights = "nights",
    /// The night a generated drop begins.
    DropFrom = "drop_from",
    /// The task whose queries drop.
    DropTask = "drop_task",
    /// How much of a task drops.
    DropRate = "drop_rate",
}

/// Marks around a setting named in a message, and between it and the value
/// quoted with it: Unicode noncharacters, which are set aside for a
/// program's own use and are no text a user writes.
const OPEN: char = '\u{FDD0}';
const VALUE: char = '\u{FDD1}';
const CLOSE: char = '\u{FDD2}';

/// The setting as a message names it.
impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OPEN}{}{CLOSE}", self.name())
    }
}

impl Setting {
    /// The setting with the value given it (`--join text`), as a message
    /// names them.
    pub fn given(self, value: impl fmt::Display) -> impl fmt::Display {
        Given(self, value)
    }

    /// The setting the plan names `name`.
    fn named(name: &str) -> Option<Setting> {
        Setting::ALL.iter().copied().find(|s| s.name() == name)
    }
}

struct Given<T>(Setting, T);

impl<T: fmt::Display> fmt::Display for Given<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OPEN}{}{VALUE}{}{CLOSE}", self.0.name(), self.1)
    }
}

/// `text` with each setting named in it as `spelling` spells it, given the
/// value quoted with it: a message the library made, for a front end to
/// show in its own words.
pub fn spell_settings(
    text: &str,
    mut spelling: impl FnMut(Setting, Option<&str>) -> String,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len_utf8()..];
        let Some(end) = after.find(CLOSE) else {
            rest = &rest[start..];
            break;
        };
        let (name, value) = match after[..end].split_once(VALUE) {
            Some((name, value)) => (name, Some(value)),
            None => (&after[..end], None),
        };
        match Setting::named(name) {
            Some(setting) => out.push_str(&spelling(setting, value)),
            None => out.push_str(&after[..end]),
        }
        rest = &after[end + CLOSE.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// A setting as a library caller reads it, and as the files the library
/// writes name it: the plan's name, in backticks, and the value after it.
pub(crate) fn plan_spelling(setting: Setting, value: Option<&str>) -> String {
    match value {
        Some(value) => format!("`{}` {value}", setting.name()),
        None => format!("`{}`", setting.name()),
    }
}

/// `text` as the files the library writes say it: each setting named as
/// the plan names it, for no front end is known there.
pub(crate) fn plan_spelled(text: &str) -> String {
    spell_settings(text, plan_spelling)
}

/// Give a message type that writes itself with its settings as marks
/// (`write_marked`) the front ends' `spelled`, and a `Display` that names
/// the settings as the plan does: the one way every message the library
/// hands out is shown.
macro_rules! spelled_by_each_front_end {
    ($type:ty) => {
        impl $type {
            /// The message, each setting it names as `spelling` spells it
            /// (given the value the message quotes with it): the command
            /// line's `--reviewers`, Python's `reviewers=`.
            pub fn spelled(
                &self,
                spelling: impl FnMut($crate::Setting, Option<&str>) -> String,
            ) -> String {
                let mut marked = String::new();
                // Nothing fails writing into a String.
                let _ = self.write_marked(&mut marked);
                $crate::spell_settings(&marked, spelling)
            }
        }

        /// The message, each setting named as the plan names it.
        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.spelled($crate::base::failure::plan_spelling))
            }
        }
    };
}
pub(crate) use spelled_by_each_front_end;

/// A message the library hands out beside an error or a warning (why a
/// check tripped), which may name settings: a front end shows it
/// [`Message::spelled`] in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message(String);

impl Message {
    /// The message `marked` says, its settings as their marks.
    pub(crate) fn new(marked: String) -> Self {
        Message(marked)
    }

    /// The message with its settings as marks, to be said inside another.
    pub(crate) fn marked(&self) -> &str {
        &self.0
    }

    fn write_marked(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str(&self.0)
    }
}

spelled_by_each_front_end!(Message);

impl std::error::Error for Error {}

/// An error of one kind; it reads as the error it wraps.
#[derive(Debug)]
struct Failure {
    kind: ErrorKind,
    error: anyhow::Error,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Failure {}

/// The kind of `error`, if one was given to it.
fn error_kind(error: &anyhow::Error) -> Option<ErrorKind> {
    (error.chain())
        .find_map(|e| e.downcast_ref::<Failure>())
        .map(|failure| failure.kind)
}

/// Say what an error is about.
pub trait OfKind<T> {
    /// The error, if any, marked as being of `kind`.
    fn of_kind(self, kind: ErrorKind) -> anyhow::Result<T>;
}

impl<T> OfKind<T> for anyhow::Result<T> {
    fn of_kind(self, kind: ErrorKind) -> anyhow::Result<T> {
        self.map_err(|error| match error_kind(&error) {
            // Already said, more precisely, where it arose.
            Some(_) => error,
            None => anyhow::Error::new(Failure { kind, error }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setting `<name value>`, to see where the marks were.
    fn marked(setting: Setting, value: Option<&str>) -> String {
        match value {
            Some(value) => format!("<{} {value}>", setting.name()),
            None => format!("<{}>", setting.name()),
        }
    }

    #[test]
    fn a_message_names_settings_each_front_end_spells() {
        let error = anyhow::anyhow!("{} needs {}", Setting::Unit.given("doc"), Setting::DocOf);
        let error = Error::from(error.context(format!("in {}", Setting::Labels)));
        assert_eq!(
            error.spelled(marked),
            "in <labels>: <unit doc> needs <doc_of>"
        );
        assert_eq!(error.to_string(), "in `labels`: `unit` doc needs `doc_of`");
        assert_eq!(error.setting(), Some(Setting::Labels));
    }

    #[test]
    fn a_message_names_settings_as_the_plan_does_unless_spelled() {
        let message = Message::new(format!("over {}", Setting::MaxRejects.given(0)));
        assert_eq!(message.spelled(marked), "over <max_rejects 0>");
        assert_eq!(message.to_string(), "over `max_rejects` 0");
        assert_eq!(plan_spelled(message.marked()), message.to_string());
    }

    #[test]
    fn text_without_whole_marks_is_left_as_it_is() {
        assert_eq!(
            spell_settings("--reviewers majority", marked),
            "--reviewers majority"
        );
        // A mark never closed, and a name no setting has, are text.
        assert_eq!(
            spell_settings("a \u{FDD0}reviewers", marked),
            "a \u{FDD0}reviewers"
        );
        assert_eq!(
            spell_settings("\u{FDD0}nothing\u{FDD2} x", marked),
            "nothing x"
        );
    }
}
