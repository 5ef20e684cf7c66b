//! Counts and lists as rgrade's messages spell them.

/// A count and its noun: "1 query", "12 queries".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The first `shown` of `items`, comma separated, then "(+n more)" for
/// the rest: a long list of queries stays one readable line.
pub fn first_few(items: impl ExactSizeIterator<Item = String>, shown: usize) -> String {
    let total = items.len();
    let mut text = items.take(shown).collect::<Vec<_>>().join(", ");
    if total > shown {
        text.push_str(&format!(" (+{} more)", total - shown));
    }
    text
}

/// A series' evidence of a drop as stdout and the trend page write it:
/// three decimals while it reads well, in scientific notation past a
/// million, where it grows by factors.
pub fn evidence_text(evidence: f64) -> String {
    if evidence < 1e6 {
        format!("{evidence:.3}")
    } else {
        format!("{evidence:.3e}")
    }
}
