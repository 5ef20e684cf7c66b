//! One module per subcommand; each turns its arguments into a run and
//! reports how it ended.

pub mod gen;
