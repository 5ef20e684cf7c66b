//! Stage 4, group and grade: captures are gathered per (run, stage, query)
//! under the repeat policy, then every labeled query of every
//! (run, stage) becomes one graded row.
//!
//! Merging is order-independent: "first" and "last" compare capture
//! times, then record origins, never arrival order, and rows are produced in query order, so
//! the output is the same whatever the thread count.
//!
//! The [`grouper`] gathers the captures, kept in the [`store`], into the
//! [`grouped`] result, which grades a range of queries at a time.

mod grouped;
mod grouper;
mod store;

pub use grouped::{Grouped, PairSlots};
pub use grouper::Grouper;
