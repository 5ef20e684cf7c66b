//! The documents of a capture span, in rank order: OpenInference's,
//! flattened into attributes or held as one JSON string (or, for
//! LangChain's instrumentation, only in `output.value`), and GenAI's.

use std::borrow::Cow;

use simd_json::prelude::*;
use simd_json::tape::Value;

use super::{any_id, owned_id, DocField, OtlpSpan};
use crate::base::failure::Setting;
use crate::io::json::with_embedded;
use crate::logs::record::{Invalid, RejectReason};

impl<'i> OtlpSpan<'_, 'i> {
    /// A RETRIEVER span's documents: flattened attributes, or one
    /// `retrieval.documents` attribute holding a JSON list of them (as
    /// Phoenix's manual-instrumentation guide writes it). OpenInference's
    /// LangChain instrumentation writes no `document.id`: the ids are then
    /// those of the documents in `output.value`, when they are as many.
    pub(super) fn retriever_documents(&self, doc: &DocField) -> Result<Vec<Cow<'i, str>>, Invalid> {
        const KEY: &str = "retrieval.documents";
        const PREFIX: &str = "retrieval.documents.";
        if let Some(value) = self.attribute(KEY) {
            let json = value.get("stringValue").and_then(|v| v.into_string());
            let json = json.ok_or_else(|| {
                let detail = format!("'{KEY}' must be a JSON string of documents");
                Invalid::new(RejectReason::BadResults, detail)
            })?;
            if self
                .attributes
                .iter()
                .any(|(key, _)| key.starts_with(PREFIX))
            {
                let detail = format!("'{KEY}' is given both as a JSON string and flattened");
                return Err(Invalid::new(RejectReason::BadResults, detail));
            }
            return json_documents(KEY, json, doc);
        }
        let has_ids = (self.attributes.iter())
            .any(|(key, _)| key.starts_with(PREFIX) && key.ends_with(".document.id"));
        if has_ids || !matches!(doc, DocField::Id) {
            return self.flattened_documents(PREFIX, doc);
        }
        let Some(ids) = self.output_documents()? else {
            return self.flattened_documents(PREFIX, doc);
        };
        let flattened = self.documents_numbered(PREFIX);
        if flattened > 0 && flattened != ids.len() {
            return Err(Invalid::new(
                RejectReason::BadResults,
                format!(
                    "the span flattens {flattened} documents without a 'document.id', and \
                     'output.value' holds {} documents: which ids are ranked is unclear",
                    ids.len()
                ),
            ));
        }
        Ok(ids)
    }

    /// How many documents the attributes under `prefix` number.
    fn documents_numbered(&self, prefix: &str) -> usize {
        let mut numbers: Vec<&str> = (self.attributes.iter())
            .filter_map(|(key, _)| key.strip_prefix(prefix))
            .map(|rest| rest.split_once('.').map_or(rest, |(number, _)| number))
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers.len()
    }

    /// The ids of the documents in `output.value`, a JSON object whose
    /// `documents` are LangChain documents (`{"id", "metadata",
    /// "page_content"}`); `None` when it holds no such list.
    ///
    /// # Errors
    /// `bad_result`: a document without a string or integer `id`.
    fn output_documents(&self) -> Result<Option<Vec<Cow<'i, str>>>, Invalid> {
        const KEY: &str = "output.value";
        let Some(json) = self.string(KEY) else {
            return Ok(None);
        };
        let ids = with_embedded(json, |root| {
            let documents = root.get("documents")?.as_array()?;
            let ids = (documents.iter().enumerate()).map(|(i, document)| {
                let id = document.get("id").and_then(owned_id);
                id.map(Cow::Owned).ok_or_else(|| {
                    Invalid::new(
                        RejectReason::BadResult,
                        format!(
                            "document {i} of '{KEY}' has no 'id', and the span no \
                             'document.id' ({} reads the id from each document's metadata)",
                            Setting::DocField.given("/KEY")
                        ),
                    )
                })
            });
            Some(ids.collect::<Result<Vec<_>, _>>())
        });
        ids.flatten().transpose()
    }

    /// OpenInference's documents, flattened into attributes
    /// `{prefix}{i}.document.id`: ranked by `i`.
    pub(super) fn flattened_documents(
        &self,
        prefix: &str,
        doc: &DocField,
    ) -> Result<Vec<Cow<'i, str>>, Invalid> {
        let wanted = match doc {
            DocField::Id => "document.id",
            DocField::Key(key) => key.as_str(),
            DocField::Metadata(_) => "document.metadata",
        };
        // (i, the id attribute's key and the document's id, if seen)
        type Numbered<'k, 'i> = (u64, Option<(&'k str, Cow<'i, str>)>);
        let mut documents: Vec<Numbered<'_, 'i>> = Vec::new();
        for &(key, value) in &self.attributes {
            let Some(rest) = key.strip_prefix(prefix) else {
                continue;
            };
            let (index, field) = rest.split_once('.').unwrap_or((rest, ""));
            let index: u64 = index.parse().map_err(|_| {
                Invalid::new(
                    RejectReason::BadResult,
                    format!("'{key}' has no document number"),
                )
            })?;
            let id = if field == wanted {
                let id = document_id(value, doc).ok_or_else(|| {
                    Invalid::new(
                        RejectReason::BadResult,
                        format!("document {index}: '{key}' holds no doc id"),
                    )
                })?;
                Some((key, id))
            } else {
                None
            };
            documents.push((index, id));
        }
        documents.sort_by_key(|(index, _)| *index);
        let mut ranked = Vec::new();
        for same in documents.chunk_by(|a, b| a.0 == b.0) {
            let index = same[0].0;
            let mut ids = same.iter().filter_map(|(_, id)| id.as_ref());
            let (key, id) = ids.next().ok_or_else(|| {
                Invalid::new(
                    RejectReason::BadResult,
                    format!("document {index} has no '{prefix}{index}.{wanted}'"),
                )
            })?;
            // Two ids for one number (under one key given twice, or `01`
            // and `1`) leave which document holds the place to chance.
            if let Some((other, other_id)) =
                ids.find(|(other, other_id)| other != key || other_id != id)
            {
                let detail = if other == key {
                    format!("document {index} is given twice, as '{key}': '{id}' and '{other_id}'")
                } else {
                    format!("document {index} is given twice, as '{key}' and '{other}'")
                };
                return Err(Invalid::new(RejectReason::BadResult, detail));
            }
            ranked.push(id.clone());
        }
        Ok(ranked)
    }

    /// The GenAI documents: an array of objects (structured: an OTLP
    /// array of key-value lists), or a JSON string holding one.
    pub(super) fn genai_documents(&self, doc: &DocField) -> Result<Vec<Cow<'i, str>>, Invalid> {
        const KEY: &str = "gen_ai.retrieval.documents";
        let id_key = match doc {
            DocField::Key(key) => key.as_str(),
            DocField::Id | DocField::Metadata(_) => "id",
        };
        let bad = |detail: String| Invalid::new(RejectReason::BadResults, detail);
        let Some(value) = self.attribute(KEY) else {
            return Ok(Vec::new());
        };
        if let Some(json) = value.get("stringValue").and_then(|v| v.into_string()) {
            let not_an_array = || bad(format!("'{KEY}' is not a JSON array"));
            let documents = with_embedded(json, |root| {
                let documents = root.as_array().ok_or_else(not_an_array)?;
                (documents.iter().enumerate())
                    .map(|(i, document)| {
                        let id = document.get(id_key).and_then(owned_id);
                        id.map(Cow::Owned).ok_or_else(|| no_document_id(i, id_key))
                    })
                    .collect()
            });
            return documents.unwrap_or_else(|| Err(not_an_array()));
        }
        let documents = value
            .get("arrayValue")
            .map(|array| array.get("values"))
            .ok_or_else(|| bad(format!("'{KEY}' must be an array or a JSON string")))?;
        let Some(documents) = documents else {
            // An empty OTLP array may leave out its values.
            return Ok(Vec::new());
        };
        let documents = documents
            .as_array()
            .ok_or_else(|| bad(format!("'{KEY}' must be an array or a JSON string")))?;
        documents
            .iter()
            .enumerate()
            .map(|(i, document)| {
                let entries = document
                    .get("kvlistValue")
                    .and_then(|list| list.get("values"))
                    .and_then(|values| values.as_array());
                entries
                    .and_then(|entries| {
                        entries
                            .iter()
                            .find(|e| e.get("key").and_then(|k| k.into_string()) == Some(id_key))
                    })
                    .and_then(|entry| entry.get("value"))
                    .and_then(any_id)
                    .ok_or_else(|| no_document_id(i, id_key))
            })
            .collect()
    }
}

/// The ids of a JSON list of OpenInference documents held in the attribute
/// `key`: each document's `document.id` (else `id`), the key `--doc-field`
/// names, or what its pointer finds in the document's `document.metadata`
/// (an object, or a JSON string holding one).
///
/// # Errors
/// `bad_results` when the text is no JSON list, `bad_result` for a
/// document without the id.
fn json_documents<'i>(key: &str, json: &str, doc: &DocField) -> Result<Vec<Cow<'i, str>>, Invalid> {
    let not_a_list = || {
        let detail = format!("'{key}' is not a JSON list of documents");
        Invalid::new(RejectReason::BadResults, detail)
    };
    let wanted = match doc {
        DocField::Id => "document.id",
        DocField::Key(name) => name.as_str(),
        DocField::Metadata(_) => "document.metadata",
    };
    let ids = with_embedded(json, |root| {
        let documents = root.as_array().ok_or_else(not_a_list)?;
        (documents.iter().enumerate())
            .map(|(i, document)| {
                let field = document.get(wanted);
                let id = match doc {
                    DocField::Id => field.or_else(|| document.get("id")).and_then(owned_id),
                    DocField::Key(_) => field.and_then(owned_id),
                    DocField::Metadata(pointer) => {
                        field.and_then(|metadata| match metadata.into_string() {
                            Some(text) => {
                                with_embedded(text, |root| pointer.find(root).and_then(owned_id))
                                    .flatten()
                            }
                            None => pointer.find(metadata).and_then(owned_id),
                        })
                    }
                };
                id.map(Cow::Owned).ok_or_else(|| no_document_id(i, wanted))
            })
            .collect()
    });
    ids.unwrap_or_else(|| Err(not_a_list()))
}

fn no_document_id(i: usize, key: &str) -> Invalid {
    Invalid::new(
        RejectReason::BadResult,
        format!("document {i} has no '{key}' string"),
    )
}

/// A flattened document's id: the attribute itself, or what `pointer`
/// finds in its `document.metadata` JSON.
fn document_id<'i>(value: Value<'_, 'i>, doc: &DocField) -> Option<Cow<'i, str>> {
    match doc {
        DocField::Id | DocField::Key(_) => any_id(value),
        DocField::Metadata(pointer) => {
            let json = value.get("stringValue").and_then(|v| v.into_string())?;
            let id = with_embedded(json, |root| pointer.find(root).and_then(owned_id));
            id.flatten().map(Cow::Owned)
        }
    }
}
