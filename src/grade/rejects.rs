//! The rejected records of a run, in input order, each with its first
//! bytes: rejects decided after their block was gone (repeated captures,
//! TREC rankings) get their excerpt from a second reading of the input,
//! checked against the first by its content hash.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::base::options::LogsFormat;
use crate::grade::capture::Reject;
use crate::io::inputs::{Input, InputStats};
use crate::io::reread;
use crate::logs::record::EXCERPT_BYTES;

/// Sort `rejects` into input order (then reason) and fill in the excerpts
/// they lack; `stats` are the inputs' first readings.
///
/// # Errors
/// An input that must be read again cannot be, or changed since it was
/// first read.
pub fn finish(inputs: &[Input], stats: &[InputStats], rejects: &mut [Reject]) -> Result<()> {
    rejects.sort_by(|a, b| {
        a.origin
            .cmp(&b.origin)
            .then_with(|| a.reason.cmp(&b.reason))
    });
    recover_excerpts(inputs, stats, rejects)
}

/// Fill in the record excerpt of rejects that were decided after their
/// block was gone, by reading those inputs again.
fn recover_excerpts(inputs: &[Input], stats: &[InputStats], rejects: &mut [Reject]) -> Result<()> {
    let mut wanted: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    // A Parquet row cannot be read back as a line: its rejects that have
    // no excerpt keep none. Nor does a skipped input's, which is no line.
    let readable = |input: u32| stats[input as usize].format != LogsFormat::Parquet;
    let wants_excerpt =
        |r: &Reject| r.excerpt.is_empty() && r.origin.line > 0 && readable(r.origin.input);
    for reject in rejects.iter().filter(|r| wants_excerpt(r)) {
        wanted
            .entry(reject.origin.input)
            .or_default()
            .push(reject.origin.line);
    }
    for (input, mut lines) in wanted {
        lines.sort_unstable();
        lines.dedup();
        let source = &inputs[input as usize];
        let mut found: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        reread::read_lines_again(source, &stats[input as usize], &lines, |line, text| {
            found.insert(line, text[..text.len().min(EXCERPT_BYTES)].to_vec());
        })
        .context("reading again for rejected records")?;
        for reject in rejects
            .iter_mut()
            .filter(|r| r.origin.input == input && r.excerpt.is_empty())
        {
            if let Some(excerpt) = found.get(&reject.origin.line) {
                reject.excerpt.clone_from(excerpt);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::record::Origin;
    use crate::logs::record::RejectReason;

    #[test]
    fn excerpts_come_from_the_bytes_that_were_graded() {
        let dir = std::env::temp_dir().join(format!("rgrade-rejects-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.jsonl");
        std::fs::write(&path, "first\nsecond\n").unwrap();
        let inputs = [Input::File(path.clone())];
        let stats = [InputStats {
            bytes: 13,
            decoded_bytes: 13,
            lines: 2,
            hash: format!("{:032x}", xxhash_rust::xxh3::xxh3_128(b"first\nsecond\n")),
            format: LogsFormat::Jsonl,
            format_doubt: None,
            part: false,
            skipped: None,
        }];
        let reject = || Reject {
            origin: Origin::line(0, 2),
            reason: RejectReason::RepeatedCapture,
            detail: String::new(),
            excerpt: Vec::new(),
        };

        let mut rejects = [reject()];
        finish(&inputs, &stats, &mut rejects).unwrap();
        assert_eq!(rejects[0].excerpt, b"second");

        // The file changed after it was graded: no excerpt from new bytes.
        std::fs::write(&path, "first\nchanged\n").unwrap();
        let mut rejects = [reject()];
        let err = finish(&inputs, &stats, &mut rejects).unwrap_err();
        assert!(
            format!("{err:#}").contains("changed while it was being graded"),
            "{err:#}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
