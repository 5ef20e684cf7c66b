//! rgrade grades the retrieval step of a RAG or search system: it streams
//! captured search logs, groups them by query, grades every labeled query
//! against a reviewed answer key and reports per-query and sliced results.
//!
//! # Ubiquitous language
//!
//! - **query**: one question a user asked, known by its `query_id`.
//! - **label**: the answer key's entry for a query: its judged documents,
//!   task, language, and whether it is a required regression case.
//! - **grade**: how relevant a judged document is (an integer; a document
//!   counts as relevant from `--min-rel` up).
//! - **run**: one retriever configuration whose results were captured.
//! - **stage**: a step of the pipeline (`retrieve`, `rerank`, `final`).
//! - **capture** (or event): one ranking a run returned for a query at a
//!   stage, as logged.
//! - **result**: one retrieved document of a capture, in pipeline order.
//!
//! # Pipeline
//!
//! [`read`] cuts inputs into newline-aligned blocks → [`record`] parses
//! each line → [`capture`] judges it against the [`labels`] index (a
//! [`trec`] run is ranked once it is all read) → [`group`] applies the
//! repeat policy and grades with [`metrics`] → [`aggregate`] averages per
//! slice → [`report`] writes the outputs. With `--stage-order`,
//! [`stage_loss`] finds the evidence each stage dropped; [`stale`] checks
//! the labels against the logs and a corpus snapshot. [`compare`] reads
//! two grade outputs back and tests the difference with the paired
//! [`stats`].
#![deny(missing_docs)]

pub mod aggregate;
pub mod capture;
pub mod cli;
pub mod cmd;
pub mod compare;
pub mod gen;
pub mod group;
pub mod labels;
pub mod metrics;
pub mod permissions;
pub mod read;
pub mod record;
pub mod report;
pub mod stage_loss;
pub mod stale;
pub mod stats;
pub mod trec;
