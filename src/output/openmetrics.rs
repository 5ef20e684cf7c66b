//! `--openmetrics FILE`: a grading's (or a trend's) figures in the
//! OpenMetrics text format, for the Prometheus node exporter's textfile
//! collector or a Pushgateway. Every family is a gauge: a grading's means
//! and counts are levels, not counters that only grow. A file is
//! written under a temporary name beside its final one and renamed into
//! place, as the textfile collector asks, so a scrape never reads half of
//! it; a stream is written into ([`super::target`]).

use anyhow::Result;

use super::cells::NumberCell;
use super::target::Destination;
use crate::base::schema::{Status, LANGUAGE, RUN, SPLIT, STAGE, TASK};
use crate::base::slices::ANY;
use crate::base::text::visible;
use crate::base::timestamp::Timestamp;
use crate::grade::graded::Graded;

/// One gauge family: its name, help, and samples (label pairs and value).
#[derive(Debug, Clone)]
pub struct Family {
    /// The family's name (letters, digits and `_`, never a digit first).
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Its samples, each with its labels.
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    /// An empty family.
    pub fn new(name: &'static str, help: &'static str) -> Self {
        Family {
            name,
            help,
            samples: Vec::new(),
        }
    }

    /// Add a sample; a value that does not exist adds none.
    pub fn add(&mut self, labels: Vec<(&'static str, String)>, value: Option<f64>) {
        if let Some(value) = value {
            self.samples.push((labels, value));
        }
    }
}

/// A label value as OpenMetrics quotes it: backslash, double quote and
/// line feed escaped, control and bidirectional formatting characters
/// written as their code points ([`visible`]), everything else as it is.
fn escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in visible(value).chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// `families` in the text format, ending with `# EOF`.
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    let mut cell = NumberCell::default();
    for family in families {
        out.push_str(&format!("# TYPE {} gauge\n", family.name));
        out.push_str(&format!("# HELP {} {}\n", family.name, family.help));
        for (labels, value) in &family.samples {
            out.push_str(family.name);
            if !labels.is_empty() {
                let pairs: Vec<String> = (labels.iter())
                    .map(|(name, value)| format!("{name}=\"{}\"", escaped(value)))
                    .collect();
                out.push_str(&format!("{{{}}}", pairs.join(",")));
            }
            let text = String::from_utf8_lossy(cell.text(Some(*value))).into_owned();
            out.push_str(&format!(" {text}\n"));
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Write `families` where `destination` says: a regular file renamed into
/// place once complete (its directory created if missing), or a stream.
///
/// # Errors
/// The path is refused, or the text cannot be written or moved into
/// place.
pub fn write(destination: &Destination, families: &[Family]) -> Result<()> {
    let text = render(families);
    destination.write(|out| Ok(out.write_all(text.as_bytes())?))?;
    Ok(())
}

/// The labels of a (run, stage, grouping set), in aggregates.csv's names
/// (`*` for any task, language or split).
pub fn set_labels([run, stage, task, language, split]: [&str; 5]) -> Vec<(&'static str, String)> {
    [
        (RUN, run),
        (STAGE, stage),
        (TASK, task),
        (LANGUAGE, language),
        (SPLIT, split),
    ]
    .map(|(name, value)| (name, value.to_string()))
    .to_vec()
}

/// The time a result stands for, as a family of one sample.
pub fn as_of_family(name: &'static str, as_of: Timestamp) -> Family {
    let mut family = Family::new(
        name,
        "The time the figures stand for, in seconds since 1970 (UTC).",
    );
    family.add(Vec::new(), Some(as_of.seconds() as f64));
    family
}

/// A grading's figures: every mean of aggregates.csv per (run, stage,
/// grouping set, metric), the queries of each set per status, and
/// summary.json's counts.
pub fn grading_families(graded: &Graded) -> Vec<Family> {
    let labels = &graded.labels;
    let slice = |id: Option<u32>| id.map_or(ANY, |id| labels.slice_name(id));
    let metrics = graded.settings.metric_columns();
    let mut means = Family::new(
        "rgrade_mean",
        "Mean of a metric over a grouping set's counted queries (aggregates.csv).",
    );
    let mut queries = Family::new(
        "rgrade_queries",
        "Labeled queries of a grouping set, by status (aggregates.csv).",
    );
    for pair in &graded.pairs {
        for agg in &pair.aggregates {
            let set = set_labels([
                &pair.run,
                &pair.stage,
                slice(agg.task),
                slice(agg.language),
                slice(agg.split),
            ]);
            let agg_means = agg.means();
            for (i, metric) in metrics.iter().enumerate() {
                let mut labels = set.clone();
                labels.push(("metric", metric.clone()));
                means.add(labels, agg_means.as_ref().map(|m| m[i]));
            }
            for status in [
                Status::Ok,
                Status::Missing,
                Status::Invalid,
                Status::NoAnswer,
            ] {
                let mut labels = set.clone();
                labels.push(("status", status.name().to_string()));
                queries.add(labels, Some(agg.status_count(status) as f64));
            }
        }
    }
    let mut records = Family::new(
        "rgrade_count",
        "summary.json's counts of the grading: labeled queries, records read, rejected, ...",
    );
    // Every count, by the name summary.json gives it.
    if let Ok(serde_json::Value::Object(counts)) = serde_json::to_value(graded.counts) {
        for (name, value) in counts {
            records.add(vec![("count", name)], value.as_u64().map(|v| v as f64));
        }
    }
    vec![
        means,
        queries,
        records,
        as_of_family("rgrade_as_of_seconds", graded.as_of),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_the_text_ends_with_eof() {
        let mut family = Family::new("rgrade_mean", "A mean.");
        family.add(vec![("run", "a\"b\\c\nd".to_string())], Some(0.5));
        family.add(vec![("run", "\u{202E}x\u{0}".to_string())], Some(1.0));
        family.add(vec![("run", "none".to_string())], None);
        let text = render(&[family]);
        assert_eq!(
            text,
            "# TYPE rgrade_mean gauge\n# HELP rgrade_mean A mean.\n\
             rgrade_mean{run=\"a\\\"b\\\\c\\nd\"} 0.5\n\
             rgrade_mean{run=\"[U+202E]x[U+0000]\"} 1\n# EOF\n"
        );
    }
}
