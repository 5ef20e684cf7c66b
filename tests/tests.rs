//! Integration tests: each module runs the real binary (or the library's
//! whole grade path) for one subcommand or concern.
mod prop_grade;
mod test_compare;
mod test_diagnostics;
mod test_docs;
mod test_gen;
mod test_grade;
mod test_permissions;
mod test_samples;
mod util;
