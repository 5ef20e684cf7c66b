//! Which fields the records had: a field flag the user gave that matched
//! no record of any input is refused, naming the flag and the fields the
//! records do have, since falling back to the default would grade a
//! plausible wrong result (a mistyped stage field merges the stages). The
//! one place that knows which fields were seen, whatever the format.

use std::collections::BTreeSet;

use anyhow::{bail, Result};

use crate::base::failure::Setting;

/// A field flag: where a record keeps one thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldFlag {
    Query,
    Results,
    Doc,
    Stage,
    Run,
    Latency,
    Context,
    Outcome,
    Allowed,
    Collection,
    Rank,
    /// The capture time.
    Time,
    /// A field sliced by: the place of the field in the list given.
    Slice(usize),
}

impl FieldFlag {
    /// Every field flag of one field: all but the slices.
    pub const ALL: [FieldFlag; 12] = [
        FieldFlag::Query,
        FieldFlag::Results,
        FieldFlag::Doc,
        FieldFlag::Stage,
        FieldFlag::Run,
        FieldFlag::Latency,
        FieldFlag::Context,
        FieldFlag::Outcome,
        FieldFlag::Allowed,
        FieldFlag::Collection,
        FieldFlag::Rank,
        FieldFlag::Time,
    ];

    /// The setting messages name it by.
    pub fn setting(self) -> Setting {
        match self {
            FieldFlag::Query => Setting::QueryField,
            FieldFlag::Results => Setting::ResultsField,
            FieldFlag::Doc => Setting::DocField,
            FieldFlag::Stage => Setting::StageField,
            FieldFlag::Run => Setting::RunField,
            FieldFlag::Latency => Setting::LatencyField,
            FieldFlag::Context => Setting::ContextField,
            FieldFlag::Outcome => Setting::OutcomeField,
            FieldFlag::Allowed => Setting::AllowedField,
            FieldFlag::Collection => Setting::CollectionField,
            FieldFlag::Rank => Setting::RankField,
            FieldFlag::Time => Setting::TimeField,
            FieldFlag::Slice(_) => Setting::SliceBy,
        }
    }

    /// Whether it names a field inside each result rather than of the
    /// record.
    pub fn in_results(self) -> bool {
        matches!(
            self,
            FieldFlag::Doc | FieldFlag::Collection | FieldFlag::Rank
        )
    }
}

/// Fields listed in a message at most.
const FIELDS_LISTED: usize = 20;

/// What the records of an input showed of their fields: which field
/// flags some record matched, and the fields records (and results) have,
/// as found in a sample of them (the first record of each block; every
/// column of a table).
#[derive(Debug, Clone, Default)]
pub struct FieldsSeen {
    /// The flags some record matched: a few, so a list.
    matched: Vec<FieldFlag>,
    fields: BTreeSet<String>,
    result_fields: BTreeSet<String>,
}

impl FieldsSeen {
    /// Some record matched `flag`.
    pub fn mark(&mut self, flag: FieldFlag) {
        if !self.matched(flag) {
            self.matched.push(flag);
        }
    }

    /// Whether some record matched `flag`.
    pub fn matched(&self, flag: FieldFlag) -> bool {
        self.matched.contains(&flag)
    }

    /// Whether the fields of records were noted yet.
    pub fn sampled(&self) -> bool {
        !self.fields.is_empty()
    }

    /// A field records have: a top-level key, a column, a span attribute,
    /// or a partition column of the input's path.
    pub fn note(&mut self, field: &str) {
        if !self.fields.contains(field) {
            self.fields.insert(field.to_string());
        }
    }

    /// A field results have.
    pub fn note_result(&mut self, field: &str) {
        if !self.result_fields.contains(field) {
            self.result_fields.insert(field.to_string());
        }
    }

    /// Why the field `given` that `flag` names is refused: no record (or
    /// no result of one, for a field of results) has it; the message
    /// lists the fields they have, sorted and cut to a few.
    pub fn refusal(&self, flag: FieldFlag, given: &str) -> String {
        let (whose, they) = match flag.in_results() {
            true => ("result of any record", "their results"),
            false => ("record", "the records"),
        };
        let fields = self.fields_of(flag);
        let have = match fields.len() {
            0 => format!("{they} have no named fields"),
            n => {
                let listed: Vec<&str> = fields
                    .iter()
                    .take(FIELDS_LISTED)
                    .map(String::as_str)
                    .collect();
                let more = match n > FIELDS_LISTED {
                    true => format!(" and {} more", n - FIELDS_LISTED),
                    false => String::new(),
                };
                format!("{they} have {}{more}", listed.join(", "))
            }
        };
        format!(
            "no {whose} of the logs has the field '{given}' that {} names ({have}); \
             a mistyped field would fall back to the default and grade a wrong result",
            flag.setting()
        )
    }

    /// The fields noted where `flag` looks: of results, or of records.
    fn fields_of(&self, flag: FieldFlag) -> &BTreeSet<String> {
        match flag.in_results() {
            true => &self.result_fields,
            false => &self.fields,
        }
    }

    /// Take in what `other` saw.
    pub fn merge(&mut self, other: &FieldsSeen) {
        for &flag in &other.matched {
            self.mark(flag);
        }
        self.fields.extend(other.fields.iter().cloned());
        (self.result_fields).extend(other.result_fields.iter().cloned());
    }
}

/// Refuse a field flag the user gave (`given`, each with the field it
/// names) that no record of any input matched (`seen`, each input's); a
/// flag left at its default may match nothing.
/// A field noted under the very name given (a partition column) matches.
/// The run is the unit: an input may lack an optional field another has
/// (a shard written before latency was logged, a writer that leaves null
/// fields out), but a mistyped name is absent from them all.
///
/// # Errors
/// The first flag given that matched nothing, with the fields records
/// (or their results) have, sorted and cut to a few.
pub fn refuse_unmatched(given: &[(FieldFlag, &str)], seen: &[FieldsSeen]) -> Result<()> {
    let mut all = FieldsSeen::default();
    for input in seen {
        all.merge(input);
    }
    for &(flag, given) in given {
        if !all.matched(flag) && !all.fields_of(flag).contains(given) {
            bail!("{}", all.refusal(flag, given));
        }
    }
    Ok(())
}
