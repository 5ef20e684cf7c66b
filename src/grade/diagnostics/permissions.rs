//! Diagnostics, permissions (docs/guide.md, "Diagnostics"): did a user get a document they may
//! not see? A record may name the collections its user is allowed to read
//! (`--allowed-field`); each result names its collection
//! (`--collection-field`), or `--doc-collections` maps doc ids to
//! collections. A result outside the allowed collections is a leak: it
//! keeps its position in the ranking but never counts as relevant, so a
//! leak can only lower a score.
//!
//! Records without an allowed list are graded as before and counted; a
//! result whose collection is unknown cannot be checked and is allowed.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::Path;

use anyhow::{bail, Context, Result};
use hashbrown::HashMap;

use crate::io::decompress::Source;
use crate::io::inputs::Input;
use crate::logs::record::{Invalid, Origin};

/// Leaks listed in summary.json.
pub const LEAKS_LISTED: usize = 100;

/// A result outside the user's allowed collections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leak {
    /// Where the record is.
    pub origin: Origin,
    /// The query it answered.
    pub query_id: String,
    /// The document the user should not have seen.
    pub doc_id: String,
    /// The document's collection.
    pub collection: String,
}

/// A result of a record found outside its allowed collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outside {
    /// 0-based position in the record's results, before any dedupe.
    pub position: usize,
    /// Its collection.
    pub collection: String,
}

/// The collection of each doc id, from `--doc-collections`.
///
/// Keyed by a 128-bit hash of the id, so a snapshot of ten million
/// documents costs a fixed 40–70 bytes each (a 32-byte entry, its control
/// byte and the table's free room) whatever their text; two ids sharing a
/// 128-bit hash is not a practical risk.
#[derive(Debug, Default)]
pub struct DocCollections {
    by_doc: HashMap<u128, u32>,
    names: Vec<Box<str>>,
}

impl DocCollections {
    /// Read a CSV file (plain, gzip or zstd) with a header holding
    /// `doc_id` and `collection`.
    ///
    /// # Errors
    /// The file cannot be read, lacks a column, or maps one doc id to two
    /// collections; the message names the file and line.
    pub fn load(path: &Path) -> Result<Self> {
        let input = Input::at(path)?;
        let name = input.name();
        let source = Source::open(&input).with_context(|| format!("{name}: cannot open"))?;
        // Flexible, so that a short row reaches the check below, which
        // names its line.
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(source);
        let header = reader
            .headers()
            .with_context(|| format!("{name}:1"))?
            .clone();
        let column = |wanted: &str| {
            header
                .iter()
                .position(|h| h.trim() == wanted)
                .with_context(|| format!("{name}:1: no '{wanted}' column"))
        };
        let (doc_col, collection_col) = (column("doc_id")?, column("collection")?);
        let mut map = DocCollections::default();
        let mut ids: HashMap<Box<str>, u32> = HashMap::new();
        let mut record = csv::StringRecord::new();
        while reader
            .read_record(&mut record)
            .with_context(|| format!("{name}:{}", reader.position().line()))?
        {
            let line = record.position().map_or(0, |p| p.line());
            let (Some(doc), Some(collection)) = (record.get(doc_col), record.get(collection_col))
            else {
                bail!("{name}:{line}: expected doc_id and collection");
            };
            let next_id = map.names.len() as u32;
            let id = *ids.entry(collection.into()).or_insert_with(|| {
                map.names.push(collection.into());
                next_id
            });
            let key = doc_key(doc);
            if let Some(&earlier) = map.by_doc.get(&key) {
                if earlier != id {
                    bail!(
                        "{name}:{line}: doc {doc} is in collection {collection} here but in {} on an earlier line",
                        map.names[earlier as usize]
                    );
                }
                continue;
            }
            map.by_doc.insert(key, id);
        }
        Ok(map)
    }

    /// The collection of `doc`, if mapped.
    pub fn get(&self, doc: &str) -> Option<&str> {
        self.by_doc
            .get(&doc_key(doc))
            .map(|&id| &*self.names[id as usize])
    }
}

fn doc_key(doc: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(doc.as_bytes())
}

/// The results outside `allowed`, each doc id at its first place only:
/// each result's own collection, else the mapped one; a result with
/// neither cannot be checked and is allowed.
///
/// # Errors
/// A collection that is not a string (from `collections`).
pub fn outside<'i>(
    allowed: &[&str],
    collections: impl Iterator<Item = Result<Option<Cow<'i, str>>, Invalid>>,
    docs: &[Cow<'_, str>],
    mapped: Option<&DocCollections>,
) -> Result<Vec<Outside>, Invalid> {
    let mut found = Vec::new();
    for (position, (collection, doc)) in collections.zip(docs).enumerate() {
        let collection = collection?.or_else(|| mapped.and_then(|m| m.get(doc)).map(Cow::Borrowed));
        if let Some(collection) = collection.filter(|c| !allowed.contains(&c.as_ref())) {
            found.push(Outside {
                position,
                collection: collection.to_string(),
            });
        }
    }
    if !found.is_empty() {
        // A doc listed twice was shown once: only its first place counts.
        let mut first_place: HashMap<&str, usize> = HashMap::with_capacity(docs.len());
        for (position, doc) in docs.iter().enumerate() {
            first_place.entry(doc.as_ref()).or_insert(position);
        }
        found.retain(|o| first_place[docs[o.position].as_ref()] == o.position);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_outside_the_allowed_collections_are_found() {
        let docs: Vec<Cow<str>> = ["a", "b", "c", "d"].map(Cow::Borrowed).to_vec();
        let mut mapped = DocCollections::default();
        mapped.names.push("hr".into());
        mapped.by_doc.insert(doc_key("c"), 0);
        let own =
            || [Some("public"), Some("finance"), None, None].map(|c| Ok(c.map(Cow::Borrowed)));
        let found = outside(&["public"], own().into_iter(), &docs, Some(&mapped)).unwrap();
        assert_eq!(
            found,
            [
                Outside {
                    position: 1,
                    collection: "finance".into()
                },
                Outside {
                    position: 2,
                    collection: "hr".into()
                },
            ]
        );
        // Without the map, c's collection is unknown: allowed.
        let found = outside(&["public", "finance"], own().into_iter(), &docs, None).unwrap();
        assert!(found.is_empty());
    }
}
