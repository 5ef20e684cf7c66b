//! The frame every report shares: one HTML document with its stylesheet
//! inline and a strict Content-Security-Policy, so the page opens from a
//! file, loads nothing from anywhere and runs no script even if a doc id
//! smuggled one in (maud escapes every value it is given as well).

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::base::schema::ReviewersSummary;
use crate::base::slices::ANY;
use crate::base::text::visible;

/// The stylesheet, inlined into every page.
const STYLE: &str = include_str!("style.css");

/// Nothing may load: no script, no font, no image, no connection; the
/// inline stylesheet and SVG are all the page needs.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

/// The whole page: `title` in the tab and as the heading, `lede` under
/// it, then `body`. A control or bidirectional formatting character an
/// id or name brought in shows as its code point ([`visible`]): raw, NUL
/// is an HTML parse error and U+202E turns the text after it around.
pub fn document(title: &str, lede: Markup, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(POLICY);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content=(concat!("rgrade ", env!("CARGO_PKG_VERSION")));
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { (title) }
                    div.lede { (lede) }
                }
                main { (body) }
                footer.note {
                    p { "Made by rgrade " (env!("CARGO_PKG_VERSION")) " from the files beside it; "
                        code { "rgrade report DIR" } " makes it again." }
                }
            }
        }
    }
    .into_string();
    visible(&page).into_owned()
}

/// A number of the tables: three decimals, or an empty cell.
pub fn cell(value: Option<f64>) -> Markup {
    html! {
        td.n { @if let Some(v) = value { (format!("{v:.3}")) } }
    }
}

/// A (run, stage) as the pages name it.
pub fn pair_name(run: &str, stage: &str) -> String {
    match run {
        "" => format!("stage {stage}"),
        _ => format!("{run} · {stage}"),
    }
}

/// A grouping set as the pages name it: `all`, a task or a language
/// alone, `task × language`, each within its split when it has one.
pub fn slice_name(task: &str, language: &str, split: &str) -> String {
    let within = match (task, language) {
        (ANY, ANY) => "all".to_string(),
        (task, ANY) => task.to_string(),
        (ANY, language) => language.to_string(),
        (task, language) => format!("{task} × {language}"),
    };
    match split {
        ANY => within,
        split => format!("split {split}: {within}"),
    }
}

/// A count with thousands separated by thin spaces: 1 234 567.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(digit);
    }
    out
}

/// The reviewers of an answer key: who labeled how much, whose grade
/// counted where several judged one pair, and how far they agreed there.
pub fn reviewers(reviewers: &ReviewersSummary) -> Markup {
    let kappa = |k: Option<f64>| k.map_or("undefined".to_string(), |k| format!("{k:.3}"));
    html! {
        @for (i, r) in reviewers.reviewers.iter().enumerate() {
            @if i > 0 { ", " }
            code { (r.name) } " (" (count(r.queries)) " queries, " (count(r.pairs)) " pairs)"
        }
        br;
        (count(reviewers.pairs_judged_by_several)) " pairs judged by several, "
        (count(reviewers.pairs_disputed)) " of them graded differently; Fleiss' kappa "
        (kappa(reviewers.fleiss_kappa_relevance)) " on relevance, "
        (kappa(reviewers.fleiss_kappa_grade)) " on grades; Krippendorff's alpha "
        (kappa(reviewers.krippendorff_alpha_grade)) " on grades as ordered"
        @if let Some(policy) = &reviewers.policy {
            br; "whose grade counts: " code { (policy) }
        }
    }
}

/// A list of ids as code, the first `shown` of them, then how many more.
pub fn ids(ids: &[String], shown: usize) -> Markup {
    html! {
        @for (i, id) in ids.iter().take(shown).enumerate() {
            @if i > 0 { ", " }
            code { (id) }
        }
        @if ids.len() > shown {
            " " span.note { "(+" (ids.len() - shown) " more)" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_escapes_what_it_is_given_and_loads_nothing() {
        let page = document(
            "a <b>",
            html! { "x" },
            html! { (ids(&["<script>alert(1)</script>".to_string()], 3)) },
        );
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("a &lt;b&gt;"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("<script"));
        assert!(page.contains("default-src 'none'"));
        for fetch in ["src=", "href=", "url(", "@import"] {
            assert!(!page.contains(fetch), "{fetch}");
        }
    }

    #[test]
    fn counts_are_grouped_and_lists_cut() {
        assert_eq!(count(7), "7");
        assert_eq!(count(1_234_567), "1\u{2009}234\u{2009}567");
        let many: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        assert!(ids(&many, 2).into_string().contains("(+3 more)"));
    }
}
