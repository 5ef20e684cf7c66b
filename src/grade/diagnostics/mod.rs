//! Diagnostics, beside the judge → group → aggregate pipeline: what a
//! grading notices of the logs and labels without changing a score.
//! [`permissions`] keeps results the user may not see from counting;
//! [`stage_loss`] measures evidence dropped between stages and [`stale`]
//! labels that no longer match the collection; [`self_pooled`] finds runs
//! that defined their own answer key; [`pool`] and [`review`] gather
//! unjudged documents for the next round of judging.

pub mod permissions;
pub mod pool;
pub mod review;
pub mod self_pooled;
pub mod stage_loss;
pub mod stale;
