//! TREC runs, whose rankings are spread over lines instead of held in one
//! record: judging gathers a block's lines into rankings ([`runs`]), each
//! (run, query) ranked as trec_eval ranks it ([`ranker`]).

pub mod ranker;
pub mod runs;
