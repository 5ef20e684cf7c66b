//! The grading core: log records in, graded queries out. The stages, in
//! the order a record meets them (1, read, and 2, parse, are
//! [`crate::logs`]'; 6, write, is `crate::run`'s, through `crate::output`):
//!
//! 3. [`judge`]: each record is matched against the label index on its
//!    worker ([`ranking`]); only the ranks of judged documents survive ([`capture`]),
//!    and run lines become rankings ([`trec`]). [`diagnostics::permissions`]
//!    keeps results the user may not see from counting.
//! 4. [`group`]: captures are gathered per (run, stage, query) under the
//!    repeat policy, and each key's graded into a row ([`score`]) with
//!    [`crate::base::metrics`]. [`gather`]
//!    drives stages 1 to 4 together.
//! 5. [`aggregate`]: rows are averaged per grouping set, and handed on to
//!    whatever keeps them; with a human key to calibrate against, beside
//!    each mean its calibrated estimate, from the human values
//!    [`calibrate`] keeps.
//!
//! Beside the pipeline, the [`diagnostics`]: evidence dropped between
//! stages, labels that no longer match the collection, runs that defined
//! their own answer key, unjudged documents pooled for the next round of
//! judging. [`rejects`] puts rejected records in input order; [`checks`]
//! warns of what looks wrong in the result.
//!
//! A [`Plan`] says what to grade; what it [`Graded`] is the result. The
//! drivers in `crate::run` call these stages and write the outputs.

pub mod aggregate;
pub mod calibrate;
pub mod capture;
mod checks;
pub mod diagnostics;
pub mod gather;
pub mod graded;
pub mod group;
pub mod judge;
pub mod plan;
pub mod ranking;
pub mod rejects;
pub mod score;
pub mod trec;
pub mod units;

pub use graded::{Graded, Warning};
pub use plan::Plan;
