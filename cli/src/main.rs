//! The `rgrade` binary: the command line of [`rgrade_cli::main`], run with
//! mimalloc as the allocator, and its exit status (0 clean, 1 a check
//! tripped, 2 nothing graded).

use std::process::ExitCode;

// Building the label index makes millions of small strings; mimalloc is
// 2-3x faster at that than the system allocator and neutral elsewhere.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in mimalloc.h's option
/// enum, the same in mimalloc 2 and 3; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keep freed memory for reuse instead of handing it back to the kernel a
/// second later: a grading frees and allocates block buffers and label
/// parts all along, and each page handed back is zeroed again by the
/// kernel when it is touched next, which took a fifth of the CPU time on
/// 1M queries. The memory kept is what a grading freed and would take again:
/// peak RSS grows by about a sixth on 1M queries (benches/runs/, "Label
/// index, judging, qrels and freed memory").
fn keep_freed_memory() {
    // SAFETY: sets one option before any thread starts; any value is valid
    // (-1: never purge).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

fn main() -> ExitCode {
    keep_freed_memory();
    ExitCode::from(rgrade_cli::main(std::env::args_os().collect()))
}
