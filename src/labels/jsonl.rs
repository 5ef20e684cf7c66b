//! JSONL labels, one labeled query a line, read in blocks and parsed on
//! the workers: each block into a part of its own, and the parts join the
//! index under construction in file order, so the line reported is the
//! first that cannot be read. A query labeled twice is found afterwards,
//! when the index is built.

use std::collections::BTreeMap;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Result};
use simd_json::prelude::*;
use simd_json::tape::Value;

use super::build::{Attributes, Builder, LineError};
use crate::grade::parse::{id_text, JsonParser};
use crate::grade::read::{lines, read_blocks, Block, Chunk, Source, MAX_LINE};
use crate::grade::workers::for_each_block;

/// Read the JSONL labels of `source` into `builder`, parsing blocks on `pool`.
pub fn read_jsonl(
    source: &mut Source,
    builder: &mut Builder,
    pool: &rayon::ThreadPool,
) -> Result<(), LineError> {
    // Parts keep their memory from block to block: fresh pages cost more
    // than parsing into them.
    let spare_parts: Mutex<Vec<Builder>> = Mutex::new(Vec::new());
    let keep_query_texts = builder.keep_query_texts;
    let mut waiting: BTreeMap<u64, Result<Builder, LineError>> = BTreeMap::new();
    let mut next = 0;
    let mut failed = None;
    let read = for_each_block(
        pool,
        |sink| read_blocks(source, sink),
        JsonParser::default,
        |parser, chunk| {
            let mut part = spare_parts
                .lock()
                .map_or_else(|_| None, |mut spare| spare.pop())
                .unwrap_or_else(|| Builder::part(keep_query_texts));
            match chunk {
                Chunk::Lines(block) => parse_block(parser, block, &mut part).map(|()| part),
                Chunk::Oversized { line, .. } => Err((Some(*line as usize), too_long())),
                // read_blocks cuts lines only.
                Chunk::Rows(group) => Err((Some(group.first_row as usize), too_long())),
            }
        },
        |number, parsed| {
            waiting.insert(number, parsed);
            while let Some(parsed) = waiting.remove(&next) {
                next += 1;
                let added = parsed.and_then(|mut part| {
                    let line = part.first_line();
                    let added = builder.append(&mut part).map_err(|err| (line, err));
                    if let Ok(mut spare) = spare_parts.lock() {
                        spare.push(part);
                    }
                    added
                });
                if let Err(err) = added {
                    failed = Some(err);
                    return false;
                }
            }
            true
        },
    );
    // A block that failed comes before the place where reading failed.
    match (failed, read) {
        (Some(err), _) => Err(err),
        (None, Err(err)) => Err((None, anyhow!("cannot read: {err}"))),
        (None, Ok(_)) => Ok(()),
    }
}

/// A label line longer than the reader takes: cut off by the reader, or
/// read whole in the block that holds its end.
fn too_long() -> anyhow::Error {
    anyhow!("a label line longer than {} MiB", MAX_LINE >> 20)
}

/// Read the labels of one block of JSONL lines into `part`, which is empty.
fn parse_block(
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
            .map_err(|invalid| anyhow!("{}", invalid.detail))
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
    let query = builder.push_query(&id, line)?;
    if let Some(ids) = relevant.as_array() {
        for doc in ids.iter() {
            let doc =
                id_text(doc).ok_or_else(|| anyhow!("relevant must hold doc ids (strings)"))?;
            builder.judge(query, &doc, 1, line)?;
        }
    } else if let Some(graded) = relevant.as_object() {
        for (doc, grade) in graded.iter() {
            let grade = grade
                .as_i64()
                .ok_or_else(|| anyhow!("the grade of '{doc}' must be an integer"))?;
            builder.judge(query, doc, grade, line)?;
        }
    } else {
        bail!("relevant must be an array of doc ids or an object of doc id to grade");
    }
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
    let attributes = Attributes {
        task: optional_text("task")?,
        language: optional_text("language")?,
        split: optional_text("split")?,
        collection_version: optional_text("collection_version")?,
        required,
    };
    if builder.keep_query_texts {
        let text = optional_text("query")?.ok_or_else(|| {
            anyhow!("no 'query' text: --join text matches captures by a label's 'query'")
        })?;
        builder.set_query_text(query, text)?;
    }
    builder.set_attributes(query, &attributes, line)
}
