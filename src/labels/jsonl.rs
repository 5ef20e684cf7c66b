//! JSONL labels, one labeled query a line (or one line per reviewer of
//! it), read in blocks on the workers ([`super::blocks`]). A query labeled
//! twice is found afterwards, when the index is built.

use anyhow::{anyhow, bail, Result};
use simd_json::prelude::*;
use simd_json::tape::Value;

use super::blocks::too_long;
use super::build::{whole_grade, Attributes, Builder, LineError};
use crate::io::blocks::{lines, Block, MAX_LINE};
use crate::io::json::{id_text, json_whole, JsonParser};

/// Read the labels of one block of JSONL lines into `part`, which is empty.
pub(super) fn parse_block(
    parser: &mut JsonParser,
    block: &Block,
    part: &mut Builder,
) -> Result<(), LineError> {
    part.reserve(block.bytes.len());
    for (number, line) in (block.first_line as usize..).zip(lines(&block.bytes)) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > MAX_LINE {
            return Err((Some(number), too_long()));
        }
        parser
            .parse(line, |value| add_json(part, value, number))
            .map_err(|bad| anyhow!("{bad}"))
            .and_then(|added| added)
            .map_err(|err| (Some(number), err))?;
    }
    Ok(())
}

/// Add the JSONL label record `value`, read from `line`. Its query is
/// not checked against earlier ones: a query labeled twice is found
/// when the index is built.
fn add_json(builder: &mut Builder, value: Value<'_, '_>, line: usize) -> Result<()> {
    if !value.is_object() {
        bail!("a label line must be a JSON object");
    }
    let id = match value.get("query_id") {
        Some(id) => {
            id_text(id).ok_or_else(|| anyhow!("query_id must be a string or an integer"))?
        }
        None => bail!("missing query_id"),
    };
    let required = match value.get("required") {
        None => false,
        Some(v) if v.is_null() => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| anyhow!("required must be true or false"))?,
    };
    let relevant = value
        .get("relevant")
        .ok_or_else(|| anyhow!("missing relevant (use [] for a no-answer query)"))?;
    let optional_text = |key: &str| -> Result<Option<&str>> {
        match value.get(key) {
            None => Ok(None),
            Some(v) if v.is_null() => Ok(None),
            Some(v) => v
                .into_string()
                .map(Some)
                .ok_or_else(|| anyhow!("{key} must be a string")),
        }
    };
    let query = builder.push_query(&id, line)?;
    let reviewer = builder.reviewer(optional_text("reviewer")?);
    builder.set_line_reviewer(query, reviewer);
    let pooled_from = match value.get("pooled_from") {
        None => Vec::new(),
        Some(v) if v.is_null() => Vec::new(),
        Some(v) => {
            let runs = v
                .as_array()
                .map(|runs| runs.iter().map(|r| r.into_string()).collect());
            runs.and_then(|runs: Option<Vec<&str>>| runs)
                .ok_or_else(|| anyhow!("pooled_from must be an array of run names (strings)"))?
        }
    };
    let judgments = relevant
        .as_array()
        .map_or_else(|| relevant.as_object().map_or(0, |o| o.len()), |a| a.len());
    builder.set_provenance(query, optional_text("source")?, pooled_from, judgments);
    if let Some(ids) = relevant.as_array() {
        for doc in ids.iter() {
            let doc =
                id_text(doc).ok_or_else(|| anyhow!("relevant must hold doc ids (strings)"))?;
            builder.judge(query, &doc, 1, reviewer, line)?;
        }
    } else if let Some(graded) = relevant.as_object() {
        for (doc, grade) in graded.iter() {
            let grade = whole_grade(json_whole(grade), || format!("the grade of '{doc}'"))?;
            builder.judge(query, doc, grade, reviewer, line)?;
        }
    } else {
        bail!("relevant must be an array of doc ids or an object of doc id to grade");
    }
    let attributes = Attributes {
        task: optional_text("task")?,
        language: optional_text("language")?,
        split: optional_text("split")?,
        collection_version: optional_text("collection_version")?,
        required,
    };
    if builder.keep_query_texts {
        let text = optional_text("query")?.ok_or_else(|| {
            anyhow!(
                "no 'query' text: {} matches captures by a label's 'query'",
                crate::base::failure::Setting::Join.given("text")
            )
        })?;
        builder.set_query_text(query, text)?;
    }
    builder.set_attributes(query, &attributes, line)
}
