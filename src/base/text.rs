//! Counts and lists as rgrade's messages spell them, and names as a
//! reader can see them.

use std::borrow::Cow;

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

/// Whether `c` acts on the text around it rather than shows: a control
/// character (NUL, escape, ...) other than a line break or tab, or a
/// bidirectional formatting character (U+202E shows what follows
/// backwards, so an id could pass for another).
fn acts_unseen(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character that [acts unseen](acts_unseen) written as
/// its code point, `[U+202E]`: the report and the OpenMetrics gauges'
/// labels show names so, since neither HTML nor the OpenMetrics text
/// format can escape such a character for a reader to see.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_unseen) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts_unseen(c) {
            out.push_str(&format!("[U+{:04X}]", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The JSON text `json` with every character that [acts unseen](acts_unseen)
/// written as its JSON escape, `\u202e`: a parser reads the same values,
/// and a terminal shows the document as text. serde_json escapes the C0
/// controls itself but writes DEL, the C1 controls and the bidirectional
/// marks as they are; outside a string JSON holds none of them.
pub fn visible_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(acts_unseen) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if acts_unseen(c) {
            // Every such character is in the Basic Multilingual Plane.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_that_act_unseen_are_escaped_in_json_as_the_same_values() {
        let value = serde_json::json!({"run": "a\u{9b}31m\u{202E}b\u{7f}", "n": 1});
        let json = serde_json::to_string(&value).unwrap();
        let shown = visible_json(&json);
        assert_eq!(shown, r#"{"n":1,"run":"a\u009b31m\u202eb\u007f"}"#);
        assert!(!shown.chars().any(acts_unseen));
        let read: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(read, value);
        assert!(matches!(visible_json(r#"{"id":"évé"}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn characters_that_act_unseen_show_as_code_points() {
        assert_eq!(visible("kb/a\u{0}b"), "kb/a[U+0000]b");
        assert_eq!(visible("\u{202E}gpj.exe"), "[U+202E]gpj.exe");
        assert_eq!(visible("a\u{1B}[31m\u{2066}"), "a[U+001B][31m[U+2066]");
        assert!(matches!(visible("plain\tid\névé"), Cow::Borrowed(_)));
    }
}
