//! Grouping sets: every graded query counts in four of them (overall, its
//! task, its language, its task × language), and every output lists them in
//! one order. When the labels name held-out splits, each of the four is
//! also kept per split: a query then counts in eight. Shared by grading,
//! the diagnostics and compare. Slices by a field the logs recorded
//! (`slice_by`: a tenant, a partition) stand beside these: each value of
//! each field is one more set, crossed with nothing, so the table grows by
//! the values seen and never by their product.

use hashbrown::HashMap;

/// The name of a grouping set's "any" task or language.
pub const ANY: &str = "*";

/// The task or language of a label that names none; also the value of a
/// log field (`slice_by`) for a query whose graded capture lacks it, or
/// that no capture graded.
pub const NO_SLICE: &str = "(none)";

/// The value of a log field (`slice_by`) for a query graded over several
/// captures (`--repeats mean`) that do not all carry the same value: the
/// query belongs to none of their slices, so it is counted apart rather
/// than in one of them by chance of order.
pub const MIXED_SLICE: &str = "(mixed)";

/// The value a query takes in one log-field slice: the value the graded
/// captures all carry, [`NO_SLICE`] when they carry none (or no capture
/// was graded), [`MIXED_SLICE`] when they disagree. `values` yields, for
/// each graded capture, its value (`None` when it lacks the field).
pub fn log_slice_value<'a>(mut values: impl Iterator<Item = Option<&'a str>>) -> &'a str {
    let Some(first) = values.next() else {
        return NO_SLICE;
    };
    match values.all(|value| value == first) {
        true => first.unwrap_or(NO_SLICE),
        false => MIXED_SLICE,
    }
}

/// Whether a grouping set, its `[split, task, language]` with `any` for a
/// part it does not fix, repeats a broader one: it holds `queries`, as
/// many as a set one step broader (`queries_of` of that set, `None` when
/// there is no such set). A set holds a subset of the queries of every set
/// broader than it, so as many are the same ones, and the means the same:
/// what people read shows it once (the task `(none)` of labels that name no
/// task is the overall set again), while aggregates.csv keeps every row.
pub fn repeats_broader<T: Copy + PartialEq>(
    set: [T; 3],
    any: T,
    queries: u64,
    queries_of: impl Fn([T; 3]) -> Option<u64>,
) -> bool {
    (0..set.len()).filter(|&part| set[part] != any).any(|part| {
        let mut broader = set;
        broader[part] = any;
        queries_of(broader) == Some(queries)
    })
}

/// For each of `sets`, a grouping set by its `[split, task, language]`
/// names (`*` for any) and its queries, whether it repeats a broader one
/// of `sets` ([`repeats_broader`]).
pub fn repeating(sets: &[([&str; 3], u64)]) -> Vec<bool> {
    let queries: HashMap<[&str; 3], u64> = sets.iter().copied().collect();
    let of = |set: [&str; 3]| queries.get(&set).copied();
    (sets.iter())
        .map(|&(set, n)| repeats_broader(set, ANY, n, of))
        .collect()
}

/// A grouping set: a task and a language, `None` meaning any (`*`).
pub type SliceKey = (Option<u32>, Option<u32>);

/// The four grouping sets a query of `task` and `language` belongs to:
/// overall, its task, its language, its task × language.
pub fn slice_keys(task: u32, language: u32) -> [SliceKey; 4] {
    [
        (None, None),
        (Some(task), None),
        (None, Some(language)),
        (Some(task), Some(language)),
    ]
}

/// A grouping set within a split: the split, `None` meaning any (`*`),
/// and the task and language.
pub type SplitSliceKey = (Option<u32>, SliceKey);

/// The grouping sets a query of `task`, `language` and `split` belongs to:
/// the four of [`slice_keys`] over every split, then, when it has a
/// split, the four within it.
pub fn split_slice_keys(
    task: u32,
    language: u32,
    split: Option<u32>,
) -> impl Iterator<Item = SplitSliceKey> {
    let within = split.map(|split| slice_keys(task, language).map(|key| (Some(split), key)));
    slice_keys(task, language)
        .map(|key| (None, key))
        .into_iter()
        .chain(within.into_iter().flatten())
}

/// Where a grouping set sorts among the others of its split: its level
/// (overall, task, language, task × language), then its names.
pub type SliceRank<'a> = (u8, Option<&'a str>, Option<&'a str>);

/// A sort key that puts grouping sets within splits in the order of
/// aggregates.csv: every split (`*`) first, then each split by name, and
/// within each the order of [`slice_order`].
pub fn split_slice_order<'a>(
    (split, key): SplitSliceKey,
    name: impl Fn(u32) -> &'a str + Copy,
) -> (Option<&'a str>, SliceRank<'a>) {
    (split.map(name), slice_order(key, name))
}

/// A sort key that puts grouping sets in the order of aggregates.csv:
/// overall first, then each task, each language and each task × language,
/// each group by name (`name` turns a slice index into its name).
pub fn slice_order<'a>((task, language): SliceKey, name: impl Fn(u32) -> &'a str) -> SliceRank<'a> {
    let level = match (task.is_some(), language.is_some()) {
        (false, false) => 0,
        (true, false) => 1,
        (false, true) => 2,
        (true, true) => 3,
    };
    (level, task.map(&name), language.map(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_repeats_a_broader_one_of_as_many_queries() {
        let sizes = [
            (["*", "*", "*"], 4),
            (["*", "a", "*"], 4),
            (["*", "a", "en"], 3),
        ];
        let of = |set: [&str; 3]| sizes.iter().find(|(s, _)| *s == set).map(|&(_, n)| n);
        assert!(repeats_broader(["*", "a", "*"], ANY, 4, of));
        assert!(!repeats_broader(["*", "a", "en"], ANY, 3, of));
        // Its other broader set, language en over every task, is unknown.
        assert!(!repeats_broader(["*", "a", "en"], ANY, 4, |_| None));
        assert!(!repeats_broader(["*", "*", "*"], ANY, 4, of));
    }

    #[test]
    fn a_log_slice_is_the_value_every_graded_capture_agrees_on() {
        assert_eq!(log_slice_value([].into_iter()), NO_SLICE);
        assert_eq!(log_slice_value([None].into_iter()), NO_SLICE);
        assert_eq!(log_slice_value([Some("acme")].into_iter()), "acme");
        let agreeing = [Some("acme"), Some("acme")];
        assert_eq!(log_slice_value(agreeing.into_iter()), "acme");
        let differing = [Some("acme"), Some("zeta")];
        assert_eq!(log_slice_value(differing.into_iter()), MIXED_SLICE);
        assert_eq!(
            log_slice_value([Some("acme"), None].into_iter()),
            MIXED_SLICE
        );
    }
}
