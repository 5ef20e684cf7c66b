//! Labels read in blocks and parsed on the workers: each block into a
//! part of its own, and the parts join the index under construction in
//! file order, so the line reported is the first that cannot be read,
//! whatever the thread count.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Mutex;

use anyhow::anyhow;

use super::build::{Builder, LineError};
use crate::io::blocks::{read_blocks, Block, Chunk, ChunkSink, MAX_LINE};
use crate::io::decompress::Source;
use crate::io::json::JsonParser;
use crate::io::workers::for_each_block;

/// Reads one block of label lines into an empty part, with the worker's
/// JSON parser where the format needs one; errors name the line.
pub(super) type ParseBlock = fn(&mut JsonParser, &Block, &mut Builder) -> Result<(), LineError>;

/// Read the labels of `source` into `builder`, each block of lines into
/// a part by `parse` on `pool`.
pub(super) fn read_in_blocks(
    source: &mut Source,
    builder: &mut Builder,
    pool: &rayon::ThreadPool,
    parse: ParseBlock,
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
        // Labels are lines of text: no chunk holds rows.
        |sink: &mut dyn ChunkSink<Infallible>| read_blocks(source, sink),
        JsonParser::default,
        |parser, chunk| {
            let mut part = spare_parts
                .lock()
                .map_or_else(|_| None, |mut spare| spare.pop())
                .unwrap_or_else(|| Builder::part(keep_query_texts));
            match chunk {
                Chunk::Lines(block) => parse(parser, block, &mut part).map(|()| part),
                Chunk::Oversized { line, .. } => Err((Some(*line as usize), too_long())),
                Chunk::Rows(never) => match *never {},
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
pub(super) fn too_long() -> anyhow::Error {
    anyhow!("a label line longer than {} MiB", MAX_LINE >> 20)
}
