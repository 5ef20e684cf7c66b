//! TREC and MS MARCO run lines: one line, one result of a ranking. A line
//! is split into its fields once, and its score kept as trec_eval keeps it.

use std::borrow::Cow;

use crate::base::options::LogsFormat;
use crate::base::whole::integer_text;
use crate::logs::record::{
    deliver, EventKey, Invalid, LineFormat, Origin, RankKey, Record, RecordSink, RejectReason,
    RunNames, RunResult, DEFAULT_STAGE,
};

/// One line of a run file: a TREC run's `query_id Q0 doc_id rank score
/// tag`, or an MS MARCO run's `query_id doc_id rank`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrecLine<'a> {
    /// The query id.
    pub query_id: &'a str,
    /// The retrieved document.
    pub doc_id: &'a str,
    /// What ranks it (higher first).
    pub key: RankKey,
    /// The run tag; empty for an MS MARCO line, whose run is its file's.
    pub run: &'a str,
}

/// A run line that cannot be read, and what it names of the ranking it
/// belongs to: a line whose score or rank is unusable, or that is cut
/// short, still says which query (and, with six fields, which tag) lost a
/// result.
#[derive(Debug, Clone, PartialEq)]
pub struct BadRunLine<'a> {
    /// Why the line is rejected.
    pub invalid: Invalid,
    /// The query id, when the first field is text.
    pub query_id: Option<&'a str>,
    /// The run tag, when the line has one that is text (empty for an MS
    /// MARCO line, whose run is its file's).
    pub tag: Option<&'a str>,
}

impl<'a> BadRunLine<'a> {
    /// `invalid`, for a line of `format` whose fields are `fields`.
    fn new<F: Copy>(
        invalid: Invalid,
        format: LogsFormat,
        fields: &[F],
        text: impl Fn(F) -> Option<&'a str>,
    ) -> Self {
        let tag = match format {
            LogsFormat::Msmarco => Some(""),
            _ => fields.get(5).copied().and_then(&text),
        };
        BadRunLine {
            invalid,
            query_id: fields.first().copied().and_then(&text),
            tag,
        }
    }

    /// `invalid`, for the line `text` of `format`.
    fn of_text(invalid: Invalid, format: LogsFormat, text: &'a str) -> Self {
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        Self::new(invalid, format, &fields, Some)
    }
}

impl<'a> TrecLine<'a> {
    /// Split a run line of `format` (TREC, else MS MARCO) on whitespace.
    ///
    /// # Errors
    /// `invalid_utf8` (naming the ranking when its query id and tag are
    /// text), or as [`TrecLine::parse_text`].
    pub fn parse(line: &'a [u8], format: LogsFormat) -> Result<Self, BadRunLine<'a>> {
        let Ok(text) = std::str::from_utf8(line) else {
            let invalid = Invalid::new(RejectReason::InvalidUtf8, "the line is not valid UTF-8");
            let fields: Vec<&[u8]> = (line.split(u8::is_ascii_whitespace))
                .filter(|field| !field.is_empty())
                .collect();
            return Err(BadRunLine::new(invalid, format, &fields, |field| {
                std::str::from_utf8(field).ok()
            }));
        };
        Self::parse_text(text, format)
    }

    /// [`TrecLine::parse`] for a line already known to be UTF-8.
    ///
    /// # Errors
    /// `bad_trec_line` (too few fields), `bad_score` (TREC) or `bad_rank`
    /// (MS MARCO), with what the line names of its ranking.
    pub fn parse_text(text: &'a str, format: LogsFormat) -> Result<Self, BadRunLine<'a>> {
        match format {
            LogsFormat::Msmarco => Self::msmarco(text),
            _ => Self::trec(text),
        }
    }

    /// `query_id Q0 doc_id rank score tag`: fields after the sixth are
    /// ignored and the rank column is not used, as trec_eval does.
    fn trec(text: &'a str) -> Result<Self, BadRunLine<'a>> {
        let bad = |invalid| BadRunLine::of_text(invalid, LogsFormat::Trec, text);
        let Some([query_id, _q0, doc_id, _rank, score, run]) = leading_fields(text) else {
            return Err(bad(Invalid::new(
                RejectReason::BadTrecLine,
                "expected 6 fields 'query_id Q0 doc_id rank score tag'",
            )));
        };
        let score = score
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite())
            .ok_or_else(|| {
                bad(Invalid::new(
                    RejectReason::BadScore,
                    format!("score '{score}' is not a finite number"),
                ))
            })?;
        Ok(TrecLine {
            query_id,
            doc_id,
            key: RankKey::score(score),
            run,
        })
    }

    /// `query_id doc_id rank`: fields after the third are ignored, as in a
    /// TREC line.
    fn msmarco(text: &'a str) -> Result<Self, BadRunLine<'a>> {
        let bad = |invalid| BadRunLine::of_text(invalid, LogsFormat::Msmarco, text);
        let Some([query_id, doc_id, rank]) = leading_fields(text) else {
            return Err(bad(Invalid::new(
                RejectReason::BadTrecLine,
                "expected 3 fields 'query_id doc_id rank' (an MS MARCO run)",
            )));
        };
        let key = RankKey::whole_rank(integer_text(rank), &format!("rank '{rank}'"))
            .map_err(|detail| bad(Invalid::new(RejectReason::BadRank, detail)))?;
        Ok(TrecLine {
            query_id,
            doc_id,
            key,
            run: "",
        })
    }
}

/// The first `N` fields of `text` split on ASCII whitespace, as
/// `split_ascii_whitespace` gives them; `None` if it has fewer. A run
/// line's fields are short, and a run holds millions of lines: each field
/// end is looked for eight bytes at a time, among the bytes up to a space.
fn leading_fields<const N: usize>(text: &str) -> Option<[&str; N]> {
    let bytes = text.as_bytes();
    let mut fields = [""; N];
    let mut at = 0;
    for field in &mut fields {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        at = field_end(bytes, at + 1);
        // Whitespace is ASCII, so both ends are on character boundaries.
        *field = text.get(start..at)?;
    }
    Some(fields)
}

/// The place of the first ASCII whitespace byte at or after `from`, or the
/// end of `bytes`.
fn field_end(bytes: &[u8], mut from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    while let Some(word) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // The lowest set high bit marks the first byte below 0x21 (bits
        // above it may be set by the borrow, and are not read).
        let low = word.wrapping_sub(0x21 * ONES) & !word & HIGH;
        if low == 0 {
            from += 8;
            continue;
        }
        let first = from + (low.trailing_zeros() / 8) as usize;
        if bytes[first].is_ascii_whitespace() {
            return first;
        }
        // A control byte inside a field: look on past it.
        from = first + 1;
    }
    bytes[from.min(bytes.len())..]
        .iter()
        .position(u8::is_ascii_whitespace)
        .map_or(bytes.len(), |offset| from + offset)
}

/// The lines of a TREC or MS MARCO run: each one result of a ranking.
pub struct RunLines<'c> {
    format: LogsFormat,
    runs: RunNames<'c>,
}

impl<'c> RunLines<'c> {
    /// The lines of a run in `format` (TREC, else MS MARCO), named as
    /// `runs` says.
    pub fn new(format: LogsFormat, runs: RunNames<'c>) -> Self {
        RunLines { format, runs }
    }

    /// What a line that cannot be read is: one its ranking lost when its
    /// fields name that ranking (its query, and its tag unless runs are
    /// named after their files), one every ranking of its query may have
    /// lost when they name the query alone.
    fn bad<'l, R>(&self, bad: BadRunLine<'l>, input: u32) -> Record<'l, R>
    where
        'c: 'l,
    {
        let tag = bad.tag.or(self.runs.by_file(self.format).then_some(""));
        match (bad.query_id, tag) {
            (None, _) => Record::Invalid(bad.invalid),
            (Some(query_id), None) => Record::Unplaced {
                query_id: Cow::Borrowed(query_id),
                invalid: bad.invalid,
            },
            (Some(query_id), Some(tag)) => Record::LostResult {
                key: EventKey {
                    query_id: Cow::Borrowed(query_id),
                    stage: DEFAULT_STAGE,
                    run: self.runs.run_of(tag, self.format, input),
                },
                invalid: bad.invalid,
            },
        }
    }
}

impl LineFormat for RunLines<'_> {
    const AS_TEXT: bool = true;

    fn line(&mut self, line: &[u8], text: Option<&str>, origin: Origin, sink: &mut dyn RecordSink) {
        let parsed = match text {
            Some(text) => TrecLine::parse_text(text, self.format),
            None => TrecLine::parse(line, self.format),
        };
        let record = match parsed {
            Ok(parsed) => Record::Result(RunResult {
                key: EventKey {
                    query_id: Cow::Borrowed(parsed.query_id),
                    stage: DEFAULT_STAGE,
                    run: self.runs.run_of(parsed.run, self.format, origin.input),
                },
                doc_id: Cow::Borrowed(parsed.doc_id),
                rank: parsed.key,
            }),
            Err(bad) => self.bad(bad, origin.input),
        };
        deliver(sink, origin, record, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn trec_lines() {
        let line =
            TrecLine::parse(b"q1\tQ0  msmarco#12 1 -3.5e1 run-a extra", LogsFormat::Trec).unwrap();
        assert_eq!(
            line,
            TrecLine {
                query_id: "q1",
                doc_id: "msmarco#12",
                key: RankKey::score(-35.0),
                run: "run-a"
            }
        );
        let bad = |line: &'static [u8], format| TrecLine::parse(line, format).unwrap_err();
        fn named<'a>(bad: &BadRunLine<'a>) -> (Option<&'a str>, Option<&'a str>) {
            (bad.query_id, bad.tag)
        }
        let short = bad(b"q1 Q0 d 1 2", LogsFormat::Trec);
        assert_eq!(short.invalid.reason, RejectReason::BadTrecLine);
        assert_eq!(
            named(&short),
            (Some("q1"), None),
            "no tag: its run is unknown"
        );
        for line in [
            &b"q1 Q0 d 1 nan r"[..],
            b"q1 Q0 d 1 x r",
            b"q1 Q0 d 1 -inf r",
        ] {
            let lost = bad(line, LogsFormat::Trec);
            assert_eq!(lost.invalid.reason, RejectReason::BadScore);
            assert_eq!(
                named(&lost),
                (Some("q1"), Some("r")),
                "its ranking lost a line"
            );
        }
        let garbled = bad(b"q1 Q0 caf\xe9 1 9.0 r", LogsFormat::Trec);
        assert_eq!(garbled.invalid.reason, RejectReason::InvalidUtf8);
        assert_eq!(named(&garbled), (Some("q1"), Some("r")));
        assert_eq!(
            named(&bad(b"q\xff Q0 d 1 9.0 r", LogsFormat::Trec)),
            (None, Some("r"))
        );
        let msmarco = TrecLine::parse(b"1048585\t7187158\t3", LogsFormat::Msmarco).unwrap();
        assert_eq!((msmarco.query_id, msmarco.doc_id), ("1048585", "7187158"));
        assert_eq!(msmarco.key, RankKey::rank(3));
        assert_eq!(
            named(&bad(b"q1\td1", LogsFormat::Msmarco)),
            (Some("q1"), Some(""))
        );
        for (line, says) in [
            (&b"q1 d1 0"[..], "not a whole number"),
            (b"q1 d1 1.5", "not a whole number"),
            (b"q1 d1 -2", "not a whole number"),
            (b"q1 d1 +", "not a whole number"),
            (b"q1 d1 4294967296", "too large"),
            (b"q1 d1 9007199254740993", "too large"),
            (
                b"q1 d1 123456789012345678901234567890123456789012",
                "too large",
            ),
        ] {
            let lost = bad(line, LogsFormat::Msmarco);
            assert_eq!(lost.invalid.reason, RejectReason::BadRank);
            assert!(
                lost.invalid.detail.contains(says),
                "{}",
                lost.invalid.detail
            );
            assert_eq!(named(&lost), (Some("q1"), Some("")));
        }
    }

    /// Keys order as trec_eval compares scores (as 32-bit floats, -0 equal
    /// to 0) and MS MARCO ranks (1 first).
    #[test]
    fn rank_keys_order_as_scores_and_ranks() {
        let scores = [
            -1e39,
            -3.5,
            -1e-40,
            0.0,
            1e-40,
            0.06016738602340007,
            2.0,
            1e39,
        ];
        for pair in scores.windows(2) {
            assert!(
                RankKey::score(pair[0]) < RankKey::score(pair[1]),
                "{pair:?}"
            );
        }
        assert_eq!(RankKey::score(-0.0), RankKey::score(0.0));
        assert_eq!(
            RankKey::score(0.06016738602340008),
            RankKey::score(0.06016738602340007)
        );
        assert!(RankKey::rank(1) > RankKey::rank(2));
        assert!(RankKey::rank(u32::MAX) < RankKey::rank(u32::MAX - 1));
    }

    /// Any text, made of the bytes that matter to a field split: every
    /// ASCII whitespace byte, other control bytes, `!` (just above the
    /// space), letters and a character of two bytes.
    fn field_text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            " ", "\t", "\n", "\r", "\x0c", "\x0b", "\x01", "\x1f", "!", "a", "Q0", "\u{e9}", "#",
        ]);
        prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        /// The word-at-a-time split finds the fields std's split finds.
        #[test]
        fn leading_fields_split_as_std_does(text in field_text()) {
            let std: Vec<&str> = text.split_ascii_whitespace().collect();
            let want3 = (std.len() >= 3).then(|| [std[0], std[1], std[2]]);
            prop_assert_eq!(leading_fields::<3>(&text), want3);
            let want6 = (std.len() >= 6).then(|| [std[0], std[1], std[2], std[3], std[4], std[5]]);
            prop_assert_eq!(leading_fields::<6>(&text), want6);
        }
    }
}
