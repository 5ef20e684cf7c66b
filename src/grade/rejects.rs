//! The rejected records of a run, in input order, each with its first
//! bytes: rejects decided after their block was gone (repeated captures,
//! TREC rankings) get their excerpt from a second reading of the input.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::grade::capture::Reject;
use crate::grade::parse::EXCERPT_BYTES;
use crate::grade::read::{self, Input};

/// Sort `rejects` into input order (then reason) and fill in the excerpts
/// they lack.
///
/// # Errors
/// An input that must be read again cannot be.
pub fn finish(inputs: &[Input], rejects: &mut [Reject]) -> Result<()> {
    rejects.sort_by(|a, b| {
        a.origin
            .cmp(&b.origin)
            .then_with(|| a.reason.cmp(&b.reason))
    });
    recover_excerpts(inputs, rejects)
}

/// Fill in the record excerpt of rejects that were decided after their
/// block was gone, by reading those inputs again.
fn recover_excerpts(inputs: &[Input], rejects: &mut [Reject]) -> Result<()> {
    let mut wanted: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for reject in rejects.iter().filter(|r| r.excerpt.is_empty()) {
        wanted
            .entry(reject.origin.input)
            .or_default()
            .push(reject.origin.line);
    }
    for (input, mut lines) in wanted {
        lines.sort_unstable();
        lines.dedup();
        let source = &inputs[input as usize];
        let found: BTreeMap<u64, Vec<u8>> = read::excerpts(source, &lines, EXCERPT_BYTES)
            .with_context(|| format!("{}: cannot read again for rejected records", source.name()))?
            .into_iter()
            .collect();
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
