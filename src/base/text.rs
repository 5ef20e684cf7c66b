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

/// A p-value as stdout and the trend page write it: two significant
/// digits, in scientific notation below 0.001, where the levels of a
/// large family lie.
pub fn p_value_text(p: f64) -> String {
    if p >= 1e-3 || p == 0.0 {
        let digits = if p >= 0.1 {
            2
        } else if p >= 0.01 {
            3
        } else {
            4
        };
        format!("{p:.digits$}")
    } else {
        format!("{p:.1e}")
    }
}
