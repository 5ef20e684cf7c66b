//! Third-party decoders that may panic on a malformed file (the Apache
//! Parquet crate does, on some corrupt footers and pages): their panics
//! are caught and become errors of the input, and [`quiet_decoder_panics`]
//! keeps the panic hook from printing them as if rgrade had failed.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// Whether this thread is inside [`decode`].
    static DECODING: Cell<bool> = const { Cell::new(false) };
}

/// Run the decoding `work`; `None` if it panicked.
pub fn decode<T>(work: impl FnOnce() -> T) -> Option<T> {
    let outer = DECODING.with(|d| d.replace(true));
    let result = catch_unwind(AssertUnwindSafe(work));
    DECODING.with(|d| d.set(outer));
    result.ok()
}

/// Install a panic hook that stays silent for panics inside [`decode`],
/// whose callers report the input as corrupt, and hands every other panic
/// to the hook installed before it. For the binary and the fuzz targets:
/// a library leaves the process's hook alone.
pub fn quiet_decoder_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !DECODING.with(Cell::get) {
            previous(info);
        }
    }));
}
