//! The drivers: each takes a plan, runs the library's stages in order and
//! writes through [`crate::output`] and [`crate::report`]. Nothing below
//! this folder writes a result directory.
//!
//! - [`grade`]: logs in, graded queries out, in three steps;
//! - [`index`]: the answer key compiled into a file gradings read back;
//! - [`rows`]: per_query.csv and the report's figures, as rows are graded;
//! - [`write`]: every output of a grading, and summary.json;
//! - [`partial`]: a shard of the logs graded up to its captures, and the
//!   shards merged into one grading;
//! - [`compare`]: two gradings compared, with their outputs and page;
//! - [`agree`]: two answer keys compared, with their outputs;
//! - [`copy`]: a complete result copied into another directory.

pub mod agree;
pub mod compare;
pub mod copy;
pub mod grade;
pub mod index;
pub mod partial;
pub mod rows;
pub mod trend;
pub mod write;
