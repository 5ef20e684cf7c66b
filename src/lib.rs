//! rgrade grades the retrieval step of a RAG or search system.
#![deny(missing_docs)]

pub mod cli;
pub mod cmd;
pub mod gen;
