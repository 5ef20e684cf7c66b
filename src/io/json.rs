//! JSON lines through simd-json's tape, reusing one padded scratch buffer
//! and one tape per worker, so a line costs no allocation. Numbers beyond
//! 64 bits, which simd-json refuses, are read as absent, and a broken line
//! is described by what is wrong and where.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use simd_json::prelude::*;
use simd_json::tape::Value;
use simd_json::{Buffers, ErrorType, Tape};

use crate::base::whole::whole_float;

/// Why a line is no JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadJson {
    /// The line is not UTF-8.
    NotUtf8,
    /// What is wrong, and where, as simd-json saw it.
    Invalid(String),
}

impl fmt::Display for BadJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadJson::NotUtf8 => f.write_str("the line is not valid UTF-8"),
            BadJson::Invalid(what) => f.write_str(what),
        }
    }
}

/// A worker's reusable JSON parsing state: a padded copy of the line and
/// simd-json's buffers and tape, kept across lines.
pub struct JsonParser {
    scratch: Vec<u8>,
    buffers: Buffers,
    tape: Option<Tape<'static>>,
}

impl Default for JsonParser {
    fn default() -> Self {
        JsonParser {
            scratch: Vec::new(),
            buffers: Buffers::new(4096),
            tape: Some(Tape::null()),
        }
    }
}

impl JsonParser {
    /// Parse `line` and hand its root value to `visit`.
    ///
    /// # Errors
    /// `invalid_utf8` or `invalid_json`, with simd-json's description.
    pub fn parse<R>(
        &mut self,
        line: &[u8],
        visit: impl FnOnce(Value<'_, '_>) -> R,
    ) -> Result<R, BadJson> {
        let len = line.len();
        let mut tape = self.tape.take().unwrap_or_else(Tape::null).reset();
        self.copy_padded(line);
        let parsed =
            simd_json::fill_tape_padded(&mut self.scratch, len, &mut self.buffers, &mut tape);
        let (parsed, tape) = match parsed {
            Err(err) if matches!(err.error(), ErrorType::InvalidNumber) => {
                let mut retry = tape.reset();
                // Parsing rewrote the scratch in place: start again from the line.
                self.copy_padded(line);
                if blank_out_of_range_numbers(&mut self.scratch[..len]) {
                    let parsed = simd_json::fill_tape_padded(
                        &mut self.scratch,
                        len,
                        &mut self.buffers,
                        &mut retry,
                    );
                    (parsed, retry)
                } else {
                    (Err(err), retry)
                }
            }
            parsed => (parsed, tape),
        };
        let result = match parsed {
            Ok(()) => Ok(visit(tape.as_value())),
            Err(err) if matches!(err.error(), ErrorType::InvalidUtf8) => Err(BadJson::NotUtf8),
            Err(err) => Err(BadJson::Invalid(describe_invalid_json(line, &err))),
        };
        self.tape = Some(tape.reset());
        result
    }

    fn copy_padded(&mut self, line: &[u8]) {
        self.scratch.clear();
        self.scratch.extend_from_slice(line);
        self.scratch
            .resize(line.len() + simd_json::INPUT_PADDING, 0);
    }
}

/// What is wrong with a line simd-json rejected, and where. simd-json's
/// first pass places a bracket left open at character 0 and names some
/// errors after its internals, so the line, already rejected and rare, is
/// read again by serde_json, whose message says what it expected where
/// (its column counts bytes from 1). Should serde_json take the line
/// (they differ on some limits), simd-json's own words stand.
/// Nesting past simd-json's depth limit is said as such: serde_json's
/// own limit is lower.
fn describe_invalid_json(line: &[u8], err: &simd_json::Error) -> String {
    if matches!(err.error(), ErrorType::DepthLimitExceeded) {
        let depth = simd_json::DEFAULT_MAX_DEPTH;
        return format!("not valid JSON: nested deeper than {depth} arrays and objects");
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Err(reread) => {
            let message = reread.to_string();
            // One line: its "at line 1" would only confuse the file's line.
            let what = match message.rfind(" at line ") {
                Some(at) => &message[..at],
                None => &message,
            };
            format!("not valid JSON: {what} at byte {}", reread.column())
        }
        Ok(_) => format!("not valid JSON: {err}"),
    }
}

/// Replace each number that no 64-bit type holds (an integer beyond
/// i64/u64, a float beyond f64 such as `1e400`) by `[]` padded with
/// spaces, and say whether any was found.
///
/// simd-json refuses such a line outright, yet the number is often in a
/// field rgrade ignores (a 128-bit trace id). Blanked, the line parses; a
/// field rgrade does read then holds `[]`, which no reader accepts, so the
/// record is still rejected, under that field's own reason
/// (`bad_query_id`, `bad_field`, `bad_result`).
fn blank_out_of_range_numbers(line: &mut [u8]) -> bool {
    let mut blanked = false;
    let mut in_string = false;
    let mut i = 0;
    while i < line.len() {
        let byte = line[i];
        if in_string {
            match byte {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
        } else if byte == b'"' {
            in_string = true;
            i += 1;
        } else if byte == b'-' || byte.is_ascii_digit() {
            let start = i;
            while i < line.len()
                && matches!(line[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            let number = &mut line[start..i];
            if out_of_range(number) {
                number.fill(b' ');
                number[..2].copy_from_slice(b"[]");
                blanked = true;
            }
        } else {
            i += 1;
        }
    }
    blanked
}

/// Whether a JSON number's text is well formed yet held by no i64, u64 or
/// finite f64. Always at least two bytes long when true.
fn out_of_range(number: &[u8]) -> bool {
    if !is_json_number(number) {
        return false;
    }
    // A JSON number is ASCII, so this never fails.
    let text = std::str::from_utf8(number).unwrap_or_default();
    if text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok() {
        return false;
    }
    let integer = !text.contains(['.', 'e', 'E']);
    integer || text.parse::<f64>().is_ok_and(f64::is_infinite)
}

/// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(text: &[u8]) -> bool {
    fn digits(text: &[u8]) -> usize {
        text.iter().take_while(|b| b.is_ascii_digit()).count()
    }
    let mut rest = text.strip_prefix(b"-").unwrap_or(text);
    let whole = digits(rest);
    if whole == 0 || (whole > 1 && rest[0] == b'0') {
        return false;
    }
    rest = &rest[whole..];
    if let Some(after_point) = rest.strip_prefix(b".") {
        let fraction = digits(after_point);
        if fraction == 0 {
            return false;
        }
        rest = &after_point[fraction..];
    }
    if let Some(after_e) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let after_sign = after_e
            .strip_prefix(b"+")
            .or_else(|| after_e.strip_prefix(b"-"))
            .unwrap_or(after_e);
        let exponent = digits(after_sign);
        if exponent == 0 {
            return false;
        }
        rest = &after_sign[exponent..];
    }
    rest.is_empty()
}

thread_local! {
    /// Parsers for JSON held in a string of a parsed line (a span's
    /// attribute, results kept as text), kept for reuse: the line's own
    /// parser is still in use, and JSON found inside that JSON needs one
    /// more.
    static EMBEDDED: RefCell<Vec<JsonParser>> = const { RefCell::new(Vec::new()) };
}

/// Hand the root of `json`, JSON held in a string, to `visit`; `None`
/// when it is no valid JSON. It reads as a log line does: the first of a
/// key named twice counts, and a number beyond 64 bits is harmless where
/// rgrade does not read it. Called again from inside `visit`, it parses
/// with another parser.
pub fn with_embedded<R>(json: &str, visit: impl FnOnce(Value<'_, '_>) -> R) -> Option<R> {
    let spare = EMBEDDED.with(|spare| spare.borrow_mut().pop());
    let mut parser = spare.unwrap_or_default();
    let parsed = parser.parse(json.as_bytes(), visit).ok();
    EMBEDDED.with(|spare| spare.borrow_mut().push(parser));
    parsed
}

/// A string id, or an integer id as its decimal text.
pub fn id_text<'i>(value: Value<'_, 'i>) -> Option<Cow<'i, str>> {
    if let Some(text) = value.into_string() {
        return Some(Cow::Borrowed(text));
    }
    value
        .as_i64()
        .map(|n| n.to_string())
        .or_else(|| value.as_u64().map(|n| n.to_string()))
        .map(Cow::Owned)
}

/// A JSON number that is whole: an integer, or a float that holds one
/// ([`crate::base::whole`]: `2.0`, as pandas writes a rank or a grade).
pub fn json_whole(value: Value<'_, '_>) -> Option<i128> {
    if let Some(int) = value.as_i64() {
        return Some(int.into());
    }
    if let Some(int) = value.as_u64() {
        return Some(int.into());
    }
    whole_float(value.as_f64()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken line is described by what is wrong where,
    /// not where simd-json's first pass gave up.
    #[test]
    fn invalid_json_names_what_and_where() {
        let cases = [
            (
                r#"{"query_id":"b","results":["x""#,
                "EOF while parsing a list at byte 30",
            ),
            (
                r#"{"query_id": "q", "results": []}   garbage"#,
                "trailing characters at byte 36",
            ),
            (
                r#"{"query_id": "q" "results": []}"#,
                "expected `,` or `}` at byte 18",
            ),
        ];
        let mut parser = JsonParser::default();
        for (line, want) in cases {
            let err = parser.parse(line.as_bytes(), |_| ()).unwrap_err();
            assert_eq!(
                err,
                BadJson::Invalid(format!("not valid JSON: {want}")),
                "{line}"
            );
        }
        let nested = format!("{}{}", "[".repeat(1100), "]".repeat(1100));
        let deep = format!(r#"{{"query_id": "q", "x": {nested}, "results": []}}"#);
        let err = parser.parse(deep.as_bytes(), |_| ()).unwrap_err();
        assert!(err.to_string().contains("nested deeper than 1024"), "{err}");
    }
}
