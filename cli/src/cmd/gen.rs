//! `rgrade gen`: write synthetic labels and logs.

use rgrade::{GenConfig, Nights, PlantedDrop, Written};

use super::terminal::{tell, Exit};
use crate::cli::GenArgs;

/// Write the data set described by `args` and say on stderr what was written
/// (stdout stays empty, so scripts can pipe the command freely).
pub fn run(args: &GenArgs) -> anyhow::Result<Exit> {
    let written = rgrade::write_dataset(&config(args))?;
    tell(format_args!("{}", report(&written)));
    Ok(Exit::Clean)
}

/// The generator's configuration from the command line.
fn config(args: &GenArgs) -> GenConfig {
    GenConfig {
        labeled: args.queries,
        unlabeled: args.unlabeled,
        results: args.results,
        seed: args.seed,
        format: args.format,
        out: args.out.clone(),
        nights: args.nights.map(|count| Nights {
            count,
            changes: args.changes,
            drop: (args.drop_from)
                .zip(args.drop_task.clone())
                .map(|(from, task)| PlantedDrop {
                    task,
                    from,
                    rate: args.drop_rate,
                }),
        }),
    }
}

/// One line: how many queries, and each file with its lines and bytes.
fn report(written: &Written) -> String {
    let files: Vec<String> = written
        .files
        .iter()
        .map(|file| {
            format!(
                "{} ({} lines, {} bytes)",
                file.path.display(),
                file.lines,
                file.bytes
            )
        })
        .collect();
    format!(
        "rgrade gen: {} labeled and {} unlabeled queries: wrote {}",
        written.labeled,
        written.unlabeled,
        files.join(", ")
    )
}
