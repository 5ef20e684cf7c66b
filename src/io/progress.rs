//! How far the reading of the logs has come, told to whoever shows it.
//! The library draws nothing: the command line draws a bar on a terminal
//! and prints a line now and then into a job's log; a library caller may
//! do as it likes.

use std::fmt;

/// Told how the reading of a grading's logs goes. Called from the reading
/// thread and the calling thread at once, so it takes `&self`.
pub trait Progress: Send + Sync + fmt::Debug {
    /// The reading starts: `bytes` to read in all, when every input's
    /// size is known beforehand (files are; streams are not).
    fn started(&self, bytes: Option<u64>);

    /// `bytes` more of the inputs' raw bytes were read.
    fn read(&self, bytes: u64);

    /// `records` more records were judged.
    fn judged(&self, records: u64);

    /// The reading ended, whether it got through or failed.
    fn finished(&self);
}

/// Shows nothing: the progress of a caller that asked for none.
#[derive(Debug)]
pub struct Silent;

impl Progress for Silent {
    fn started(&self, _: Option<u64>) {}
    fn read(&self, _: u64) {}
    fn judged(&self, _: u64) {}
    fn finished(&self) {}
}
