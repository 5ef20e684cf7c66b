//! `grade`: captured search logs in, graded queries out. The stages, in the
//! order a record meets them:
//!
//! 1. [`read`]: find the inputs, undo their compression, cut them into
//!    newline-aligned blocks; [`workers`] runs the reader thread and the
//!    worker pool that every later block stage runs on.
//! 2. [`parse`]: a line becomes a typed event or a reject with a reason code.
//! 3. [`judge`]: each event is matched against the label index on its
//!    worker; only the ranks of judged documents survive ([`capture`]),
//!    and TREC lines become rankings ([`trec`]). [`permissions`] keeps
//!    results the user may not see from counting.
//! 4. [`group`]: captures are gathered per (run, stage, query) under the
//!    repeat policy and graded with [`crate::metrics`]. [`gather`] drives
//!    stages 1 to 4 together.
//! 5. [`aggregate`]: rows are averaged per grouping set.
//! 6. [`write`]: every output, through [`crate::output`].
//!
//! Beside the pipeline, the diagnostics: [`stage_loss`] (evidence dropped
//! between stages) and [`stale`] (labels that no longer match the
//! collection); [`pool`] and [`review`] gather unjudged documents for the
//! next round of judging; [`rejects`] puts rejected records in input order.
//!
//! [`run()`] takes a [`Plan`] and returns what it [`Graded`], in three
//! steps ([`pipeline`]); [`partial`] writes the captures of a shard of the logs
//! and merges the shards' into one grading.

pub mod aggregate;
pub mod capture;
mod checks;
pub mod gather;
pub mod graded;
pub mod group;
pub mod judge;
pub mod parquet;
pub mod parse;
pub mod partial;
pub mod permissions;
pub mod pipeline;
pub mod plan;
pub mod pool;
pub mod read;
pub mod rejects;
pub mod review;
pub mod spans;
pub mod stage_loss;
pub mod stale;
pub mod trec;
pub mod workers;
pub mod write;

pub use graded::{Graded, Warning};
pub use pipeline::run;
pub use plan::Plan;
