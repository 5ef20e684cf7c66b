//! An input's format, told from its first lines: a CSV run's header, a
//! JSON object (a search event, or an OTLP request of spans), a TREC run
//! line, an MS MARCO run line; a run's header and a broken first line
//! looked past.

use crate::base::failure::Setting;
use crate::base::options::{Choice, LogsFormat};
use crate::io::blocks::{is_blank, line_ranges, Detected, Header};
use crate::logs::csv_run;

/// Decide how the input whose first block is `bytes` (from line
/// `first_line`) reads. A line of the given format (or, under `Auto`, a
/// JSON object, a TREC run line or an MS MARCO run line) decides it. A
/// first line that fits nothing is taken for a run's header when the next
/// line that fits is a run line; otherwise it is a broken line (cut
/// mid-line where a byte range began, a byte that is not UTF-8), and the
/// first line of the block that fits decides, so that only the broken line
/// is rejected. When none fits, the input is read as asked, JSONL under
/// `Auto`, so a broken JSON line is rejected as such, not misread. An
/// empty object `{}`, what OTLP exporters write for a batch of no spans,
/// says nothing of the format and is looked past, as blank lines are.
pub fn detect(bytes: &[u8], given: LogsFormat, first_line: u64) -> Detected {
    let says_nothing = |line: &[u8]| {
        is_blank(line)
            || std::str::from_utf8(line).is_ok_and(|text| {
                let text = text.trim();
                text.strip_prefix('{')
                    .and_then(|rest| rest.strip_suffix('}'))
                    .is_some_and(|inside| inside.trim().is_empty())
            })
    };
    let mut lines = line_ranges(bytes)
        .zip(first_line..)
        .map(|(range, number)| (&bytes[range], number))
        .filter(|(line, _)| !says_nothing(line));
    let first = lines.next();
    let fits = |line: &[u8]| match given {
        LogsFormat::Auto => shape_of(line),
        wanted => shape_of(line).filter(|&format| format == wanted),
    };
    let read_as = |format, header: Option<(&[u8], u64)>, looked_past_first| Detected {
        format,
        header: header.map(|(text, line)| Header {
            line,
            text: String::from_utf8_lossy(text).trim().into(),
        }),
        looked_past_first,
        doubt: None,
    };
    let csv_header = first.filter(|(line, _)| {
        matches!(given, LogsFormat::Auto | LogsFormat::Csv)
            && std::str::from_utf8(line).is_ok_and(csv_run::is_header)
    });
    if csv_header.is_some() {
        return read_as(LogsFormat::Csv, csv_header, false);
    }
    if let Some(format) = first.and_then(|(line, _)| fits(line)) {
        return read_as(format, None, false);
    }
    match (first, lines.find_map(|(line, _)| fits(line))) {
        (Some(header), Some(format @ (LogsFormat::Trec | LogsFormat::Msmarco)))
            if is_header(header.0, format) =>
        {
            read_as(format, Some(header), false)
        }
        (_, Some(format)) => read_as(format, None, true),
        _ => {
            let format = if given == LogsFormat::Auto {
                LogsFormat::Jsonl
            } else {
                given
            };
            Detected {
                format,
                header: None,
                looked_past_first: false,
                doubt: first.map(|(line, _)| doubt(line, format)),
            }
        }
    }
}

/// What an input that opens with `head` is, when it is a shape rgrade
/// knows and does not read, asked to read it as `given`: pretty-printed
/// JSON spans one after another, as the OpenTelemetry SDK's
/// ConsoleSpanExporter prints them (its first line a lone `{`, a span's
/// `"name"` and `"context"` after it). Read as JSONL, every line of it
/// would be rejected, and nothing would say why.
pub fn unread_shape(head: &[u8], given: LogsFormat) -> Option<String> {
    if !matches!(
        given,
        LogsFormat::Auto | LogsFormat::Jsonl | LogsFormat::Otlp
    ) {
        return None;
    }
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let console = lines.next() == Some("{")
        && lines
            .next()
            .is_some_and(|line| line.starts_with("\"name\":"))
        && lines
            .next()
            .is_some_and(|line| line.starts_with("\"context\": {"));
    console.then(|| {
        "pretty-printed JSON spans one after another, as the OpenTelemetry SDK's \
         ConsoleSpanExporter prints them: rgrade reads OTLP/JSON traces, one export \
         request a line, as the OpenTelemetry Collector's file exporter writes them \
         (docs/reference.md, \"Traces\")"
            .to_string()
    })
}

/// The format a single line has the shape of: an OTLP trace export (a
/// JSON object whose first key is `resourceSpans`, as exporters write
/// it); another JSON object; a TREC run line (at least six fields, a
/// whole-number rank in the fourth, a number in the fifth); or an MS MARCO
/// run line (three fields, a whole-number rank in the third).
pub fn shape_of(line: &[u8]) -> Option<LogsFormat> {
    let text = std::str::from_utf8(line).ok()?.trim();
    if let Some(object) = text.strip_prefix('{') {
        if object.trim_start().starts_with("\"resourceSpans\"") {
            return Some(LogsFormat::Otlp);
        }
        return Some(LogsFormat::Jsonl);
    }
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let whole = |field: &str| field.parse::<i64>().is_ok();
    match fields.len() {
        3 if whole(fields[2]) => Some(LogsFormat::Msmarco),
        n if n >= 6 && whole(fields[3]) && fields[4].parse::<f64>().is_ok() => {
            Some(LogsFormat::Trec)
        }
        _ => None,
    }
}

/// Whether `line` can be the header of a run in `format`: its fields where
/// the run line's are, with words where the numbers go. A run line with a
/// defect (a field missing, a bad score) is no header: it is rejected.
fn is_header(line: &[u8], format: LogsFormat) -> bool {
    let text = String::from_utf8_lossy(line);
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let number = |field: &str| field.parse::<f64>().is_ok();
    match format {
        LogsFormat::Trec => fields.len() >= 6 && !number(fields[3]) && !number(fields[4]),
        LogsFormat::Msmarco => fields.len() == 3 && !number(fields[2]),
        LogsFormat::Jsonl
        | LogsFormat::Otlp
        | LogsFormat::Parquet
        | LogsFormat::Csv
        | LogsFormat::Auto => false,
    }
}

/// What a first line that fits `format` looked like instead, and the
/// format it may be.
fn doubt(line: &[u8], format: LogsFormat) -> String {
    let read_as = match format {
        LogsFormat::Trec => "a TREC run",
        LogsFormat::Msmarco => "an MS MARCO run",
        LogsFormat::Otlp => "OTLP traces",
        LogsFormat::Parquet => "Parquet",
        LogsFormat::Csv => "a CSV run",
        LogsFormat::Jsonl | LogsFormat::Auto => "JSONL",
    };
    let text = String::from_utf8_lossy(line);
    if text.contains(',') && !text.trim_start().starts_with('{') {
        return format!(
            "read as {read_as}, but its first line is no CSV run header (comma-separated names \
             among which query_id or q_id, doc_id, and score or rank)"
        );
    }
    let fields = text.split_ascii_whitespace().count();
    let asked = |format: LogsFormat| Setting::LogsFormat.given(format.name());
    let saw = match shape_of(line) {
        Some(LogsFormat::Msmarco) => format!(
            "3 fields with a whole number third: an MS MARCO run? {}",
            asked(LogsFormat::Msmarco)
        ),
        Some(LogsFormat::Trec) => format!(
            "{fields} fields shaped as a TREC run line? {}",
            asked(LogsFormat::Trec)
        ),
        Some(LogsFormat::Jsonl) => format!("a JSON object? {}", asked(LogsFormat::Jsonl)),
        Some(LogsFormat::Otlp) => format!(
            "an OTLP trace export (resourceSpans)? {}",
            asked(LogsFormat::Otlp)
        ),
        _ if fields == 3 => "3 fields, the third not a whole number (an MS MARCO run line is \
                             'query_id doc_id rank')"
            .to_string(),
        _ if fields >= 6 => format!(
            "{fields} fields, without a whole-number rank 4th and a number 5th (a TREC run \
             line is 'query_id Q0 doc_id rank score tag')"
        ),
        _ => format!(
            "{fields} {} and no JSON object",
            if fields == 1 { "field" } else { "fields" }
        ),
    };
    format!("read as {read_as}, but its first line has {saw}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_line(detected: &Detected) -> Option<u64> {
        detected.header.as_ref().map(|header| header.line)
    }

    #[test]
    fn format_is_detected_from_the_first_line() {
        let format = |bytes: &[u8]| detect(bytes, LogsFormat::Auto, 1).format;
        assert_eq!(format(b"\n{\"query_id\": 1}\n"), LogsFormat::Jsonl);
        assert_eq!(format(b"q1 Q0 d1 1 2.5 run\n{"), LogsFormat::Trec);
        assert_eq!(format(b"1048585\t7187158\t1\n"), LogsFormat::Msmarco);
        assert_eq!(format(b"not json at all\n"), LogsFormat::Jsonl);
        // The tail of a line cut off by log rotation: six tokens, but no rank and score.
        let cut = br#"al", "results": ["a", "b"], "latency_ms": 41.2}"#;
        assert_eq!(format(cut), LogsFormat::Jsonl);
        assert_eq!(format(b""), LogsFormat::Jsonl);
        // An OTLP export of no spans first: the next line decides.
        let traces = b"{}\n { } \n{\"resourceSpans\": []}\n";
        assert_eq!(format(traces), LogsFormat::Otlp);
        // A first line with a byte that is not UTF-8, or the tail of a line
        // cut where a byte range began: the next line decides.
        let export = b"{\"resourceSpans\": []}";
        let garbled = [&b"{\"resourceSpans\": [\xff]}\n"[..], export].concat();
        assert_eq!(format(&garbled), LogsFormat::Otlp);
        let cut = [&b"ue\": \"q1\"}}]}]}]}\n"[..], export, b"\n", export].concat();
        assert_eq!(format(&cut), LogsFormat::Otlp);
    }

    /// A header line is looked past, and only a line shaped as the run's
    /// header counts as one; a first line that fits nothing says what it
    /// looked like.
    #[test]
    fn detection_looks_past_a_header_and_explains_itself() {
        let auto = |bytes: &[u8]| detect(bytes, LogsFormat::Auto, 1);
        let trec = auto(b"\nqid Q0 docno rank score tag\nq1 Q0 d1 1 2.5 run\n");
        assert_eq!(
            (trec.format, header_line(&trec)),
            (LogsFormat::Trec, Some(2))
        );
        let msmarco = auto(b"qid\tpid\trank\n1\t7\t1\n");
        assert_eq!(
            (msmarco.format, header_line(&msmarco)),
            (LogsFormat::Msmarco, Some(1))
        );
        // A run line with a defect is rejected later, not taken for a header.
        let broken = auto(b"q1 Q0 d1 1 2.5\nq1 Q0 d2 2 2.0 run\n");
        assert_eq!(
            (
                broken.format,
                header_line(&broken),
                broken.looked_past_first
            ),
            (LogsFormat::Trec, None, true)
        );
        let lone = auto(b"q1 Q0 d1 1 2.5\n");
        assert_eq!(lone.format, LogsFormat::Jsonl);
        assert!(lone.doubt.unwrap().contains("5 fields and no JSON object"));
        let scores = auto(b"q1 d1 0.5\nq1 d2 0.25\n").doubt.unwrap();
        assert!(scores.contains("the third not a whole number"), "{scores}");
        // Asked for TREC, given an MS MARCO run: read as asked, and said.
        let asked = detect(b"1\t7\t1\n", LogsFormat::Trec, 1);
        assert_eq!(asked.format, LogsFormat::Trec);
        let msmarco = Setting::LogsFormat.given("msmarco").to_string();
        assert!(asked.doubt.unwrap().contains(&msmarco));
        let header = detect(b"qid\tpid\trank\n1\t7\t1\n", LogsFormat::Msmarco, 1);
        assert_eq!(header_line(&header), Some(1));
        assert_eq!(auto(b"{\"query_id\": 1}\n").doubt, None);
    }

    #[test]
    fn console_spans_are_named_not_misread() {
        let console =
            b"{\n    \"name\": \"retrieve\",\n    \"context\": {\n        \"trace_id\": \"0x1\"\n";
        let said = unread_shape(console, LogsFormat::Auto).unwrap();
        assert!(said.contains("ConsoleSpanExporter"), "{said}");
        assert!(unread_shape(console, LogsFormat::Trec).is_none());
        // A JSON object a line, or pretty JSON of another shape, reads as asked.
        assert!(unread_shape(b"{\"name\": \"x\", \"context\": {}}\n", LogsFormat::Auto).is_none());
        assert!(unread_shape(b"{\n  \"query_id\": \"q1\"\n}\n", LogsFormat::Auto).is_none());
    }

    #[test]
    fn a_csv_run_is_known_by_its_header_on_the_first_line() {
        let auto = |bytes: &[u8]| detect(bytes, LogsFormat::Auto, 1);
        let csv = auto(b"\nq_id,doc_id,score\nq1,d1,0.5\n");
        assert_eq!(csv.format, LogsFormat::Csv);
        let header = csv.header.unwrap();
        assert_eq!((header.line, &*header.text), (2, "q_id,doc_id,score"));
        let labels = auto(b"query_id,doc_id,relevance\nq1,d1,1\n");
        assert_eq!(labels.format, LogsFormat::Jsonl);
        assert!(labels.doubt.unwrap().contains("no CSV run header"));
        let asked = detect(b"q1,d1,0.5\n", LogsFormat::Csv, 1);
        assert_eq!((asked.format, asked.header), (LogsFormat::Csv, None));
        assert!(asked.doubt.unwrap().starts_with("read as a CSV run"));
        // Asked for JSONL, a CSV header is not looked for.
        assert_eq!(
            detect(b"q_id,doc_id,score\n", LogsFormat::Jsonl, 1).format,
            LogsFormat::Jsonl
        );
    }
}
