//! What an error that leaves nothing done is about: the labels, the logs,
//! the output directory, a comparison's inputs, a merge's shards, or the
//! settings. Inside the library an error is an `anyhow::Error` marked with
//! its kind where it arises ([`OfKind`]); the API returns it as an
//! [`Error`], whose [`Error::kind`] callers branch on (the Python package
//! raises one exception class per kind).

use std::fmt;

/// What an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A setting: a cutoff, a stage order, a thread count.
    Usage,
    /// The answer key: unreadable, invalid, refused by a check.
    Labels,
    /// A log input, or a file read beside the logs: missing, empty,
    /// corrupt, or of columns that do not fit.
    Logs,
    /// The output directory: locked, unwritable, holding another result.
    Output,
    /// Two gradings that cannot be compared, or rules that cannot hold.
    Comparison,
    /// Partial gradings that cannot be merged.
    Shards,
    /// Anything the other kinds do not cover.
    Other,
}

/// An error that left nothing done: what it is about, and a message that
/// names the file (and line) it arose in, its causes after it.
pub struct Error {
    kind: ErrorKind,
    error: anyhow::Error,
}

impl Error {
    /// What the error is about.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// The kind it was marked with where it arose, else [`ErrorKind::Other`].
impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Self {
        Error {
            kind: error_kind(&error).unwrap_or(ErrorKind::Other),
            error,
        }
    }
}

/// The whole message, causes included: the error has no source of its
/// own to walk, so a caller that prints causes prints them once.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} error: {:#}", self.kind, self.error)
    }
}

impl std::error::Error for Error {}

/// An error of one kind; it reads as the error it wraps.
#[derive(Debug)]
struct Failure {
    kind: ErrorKind,
    error: anyhow::Error,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Failure {}

/// The kind of `error`, if one was given to it.
fn error_kind(error: &anyhow::Error) -> Option<ErrorKind> {
    (error.chain())
        .find_map(|e| e.downcast_ref::<Failure>())
        .map(|failure| failure.kind)
}

/// Say what an error is about.
pub trait OfKind<T> {
    /// The error, if any, marked as being of `kind`.
    fn of_kind(self, kind: ErrorKind) -> anyhow::Result<T>;
}

impl<T> OfKind<T> for anyhow::Result<T> {
    fn of_kind(self, kind: ErrorKind) -> anyhow::Result<T> {
        self.map_err(|error| match error_kind(&error) {
            // Already said, more precisely, where it arose.
            Some(_) => error,
            None => anyhow::Error::new(Failure { kind, error }),
        })
    }
}
