//! One module per subcommand; each turns its arguments into a run and
//! reports how it ended as an exit status.

pub mod compare;
pub mod gen;
pub mod grade;
