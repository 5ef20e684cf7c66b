//! Integration tests: each module runs the real binary for one subcommand.
mod util;
