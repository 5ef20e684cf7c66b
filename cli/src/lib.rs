//! The `rgrade` command line: clap's parsing of what the user typed
//! ([`cli`]), one module per subcommand that turns it into the library's
//! plan and shows the outcome ([`cmd`]), and the terminal's side of it
//! (tables on stdout, messages and progress on stderr). The binary runs
//! [`main`]; so does the Python package's `rgrade` command.

mod cli;
mod cmd;

pub use cmd::main;
