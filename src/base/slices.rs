//! Grouping sets: every graded query counts in four of them (overall, its
//! task, its language, its task × language), and every output lists them in
//! one order. When the labels name held-out splits, each of the four is
//! also kept per split: a query then counts in eight. Shared by grading,
//! the diagnostics and compare.

/// The name of a grouping set's "any" task or language.
pub const ANY: &str = "*";

/// The task or language of a label that names none.
pub const NO_SLICE: &str = "(none)";

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
