//! The vocabulary every other folder speaks, importing none of them: the
//! metric definitions, the choices a run is configured with, the grouping
//! sets, order-free means and percentiles, the paired statistics, kappa, the
//! outputs' schema and the kinds of error.
//!
//! - [`metrics`]: Recall@k, MRR@k and the rest, pure and small;
//! - [`measures`]: measures asked for by ir_measures', ranx's or rgrade's names;
//! - [`options`]: the plain values a plan is made of;
//! - [`slices`]: the grouping sets every output lists;
//! - [`numbers`]: finite, order-independent sums and percentiles;
//! - [`power`]: the queries a paired comparison needs;
//! - [`stats`]: randomization test, intervals of a mean (delta), Holm adjustment;
//! - [`intervals`]: a mean's 95% interval over a slice's queries;
//! - [`kappa`]: Cohen's and Fleiss' kappa, agreement beyond chance;
//! - [`monitor`]: alarms that stay valid however often they are checked;
//! - [`ppi`]: judge-graded means calibrated by a human-graded sample;
//! - [`schema`]: every output's file name, columns and summary types;
//! - [`text`]: counts and lists as messages spell them;
//! - [`timestamp`]: the time a grading stands for;
//! - [`failure`]: what an error that leaves nothing done is about.

pub mod failure;
pub mod intervals;
pub mod kappa;
pub mod measures;
pub mod metrics;
pub mod monitor;
pub mod numbers;
pub mod options;
pub mod power;
pub mod ppi;
pub mod schema;
pub mod slices;
pub mod stats;
pub mod text;
pub mod timestamp;
pub mod whole;
