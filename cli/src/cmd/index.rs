//! `rgrade index`: compile an answer key, and say on stderr what went in.

use anyhow::Result;
use rgrade::IndexPlan;

use super::terminal::{tell, Exit};
use crate::cli::IndexArgs;

/// Compile the labels of `args` into the key file it names.
///
/// # Errors
/// Labels that do not load, a key that cannot be written.
pub fn run(args: &IndexArgs) -> Result<Exit> {
    let plan = IndexPlan {
        labels: args.labels.clone(),
        out: args.out.clone(),
        ..crate::cli::plan(args)?
    };
    let compiled = rgrade::index(&plan)?;
    tell(format_args!(
        "rgrade index: wrote {} ({} labeled queries, {} judged documents, {} bytes)",
        rgrade::shown_path(&args.out),
        compiled.queries,
        compiled.judged_docs,
        compiled.bytes
    ));
    Ok(Exit::Clean)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::IndexPlan;

    use crate::cli::plan;
    use crate::cli::{Cli, Command};

    /// `IndexPlan::new` holds the command line's defaults.
    #[test]
    fn a_library_plan_holds_the_command_lines_defaults() {
        let cli = Cli::try_parse_from(["rgrade", "index", "l.jsonl", "-o", "key"]).unwrap();
        let Command::Index(args) = cli.command else {
            panic!("expected index")
        };
        let parsed = IndexPlan {
            labels: args.labels.clone(),
            out: args.out.clone(),
            ..plan(&args).unwrap()
        };
        assert_eq!(parsed, IndexPlan::new("l.jsonl".into(), "key".into()));
    }
}
