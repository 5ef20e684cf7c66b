//! `rgrade gen`: synthetic labels and logs that look like a help-center RAG
//! system's, for demos, tests and benchmarks.
//!
//! [`write_dataset`] draws, in this order:
//! 1. the corpus (corpus.rs): chunked documents in a few collections, each
//!    chunk with a fixed size in tokens;
//! 2. a random stream per query (queries.rs), from which the query's entry
//!    in the answer key is drawn: a task and a language, judged chunks from
//!    the collections that serve the task;
//! 3. labels.jsonl (labels.rs): the answer key, in query id order;
//! 4. the log (logs.rs): labeled and unlabeled queries shuffled together as
//!    production traffic, each query's rankings drawn from the ranking model
//!    (ranking.rs), written as logs.jsonl or run.trec, as OTLP traces
//!    (otlp.rs) or as Parquet rows (parquet.rs).
//!
//! Every query draws from its own random stream, seeded from the seed and
//! its index, so labels and logs are written in separate passes without
//! keeping the key in memory, and the TREC run holds exactly the rankings of
//! the JSONL log's `retrieve` events. Only integer arithmetic, division and
//! square roots touch the random numbers, so every platform writes the same
//! bytes.
//!
//! Imports run one way, from the writers down to what they draw: otlp.rs
//! and parquet.rs use logs.rs's event model; logs.rs uses the ranking
//! model, the queries and the corpus; labels.rs the
//! queries and the corpus; ranking.rs the queries and the corpus; queries.rs
//! the corpus. The configuration (config.rs), the counted output files with
//! the account of what was written (output.rs), the line encoders
//! (encode.rs), the random picks (random.rs) and the tests' arithmetic
//! (testing.rs) import no other part. This file imports the parts, and none
//! of them imports it.

use std::fs;
use std::path::Path;

use anyhow::Context;
use rand::SeedableRng;
use rand_pcg::Pcg64;

mod config;
mod corpus;
mod encode;
mod labels;
mod logs;
mod otlp;
mod output;
mod parquet;
mod queries;
mod random;
mod ranking;
#[cfg(test)]
mod testing;

pub use config::{GenConfig, GenFormat, NightChanges, Nights, PlantedDrop};
pub use output::{Written, WrittenFile};

use crate::base::failure::{Error, ErrorKind, OfKind};
use corpus::Corpus;
use labels::write_labels;
use logs::{traffic_order, write_events, JsonlLog, NightOf, TrecRun};
use otlp::OtlpTraces;
use parquet::ParquetLog;
use queries::QueryStreams;

/// Write the answer key and the log (or TREC run) that `config` describes
/// into `config.out`, and say what was written.
///
/// # Errors
/// Counts the generator cannot honour (a usage error), or an output that
/// cannot be written.
pub fn write_dataset(config: &GenConfig) -> Result<Written, Error> {
    config.check().of_kind(ErrorKind::Usage)?;
    check_drop_task(config).of_kind(ErrorKind::Usage)?;
    Ok(write(config).of_kind(ErrorKind::Output)?)
}

/// A planted drop names one of the tasks queries are drawn from.
fn check_drop_task(config: &GenConfig) -> anyhow::Result<()> {
    let Some(drop) = config.nights.as_ref().and_then(|n| n.drop.as_ref()) else {
        return Ok(());
    };
    let mut tasks = queries::task_names();
    anyhow::ensure!(
        tasks.any(|task| task == drop.task),
        "{}: the generator's tasks are {}",
        crate::base::failure::Setting::DropTask.given(&drop.task),
        queries::task_names().collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

/// [`write_dataset`] once the counts are checked.
fn write(config: &GenConfig) -> anyhow::Result<Written> {
    // A synthetic dataset is written where it is made; copy it to object
    // storage after, if it is wanted there.
    crate::io::location::Location::local_only(&config.out, "a generated dataset")?;
    fs::create_dir_all(&config.out)
        .with_context(|| format!("cannot create output directory {}", config.out.display()))?;
    let mut rng = Pcg64::seed_from_u64(config.seed);
    let corpus = Corpus::generate(&mut rng, config.results);
    let streams = QueryStreams::new(&mut rng);
    let mut files = vec![write_labels(config, &corpus, &streams)?];
    match &config.nights {
        None => files.push(write_logs(
            config,
            &corpus,
            &streams,
            (rng, &config.out, None),
        )?),
        Some(nights) => {
            for night in 1..=nights.count {
                let dir = config.out.join(format!("night-{night:02}"));
                fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                // Every night's traffic comes in the same order.
                let night = Some(NightOf { night, nights });
                let log = write_logs(config, &corpus, &streams, (rng.clone(), &dir, night))?;
                files.push(log);
            }
        }
    }
    Ok(Written {
        labeled: config.labeled,
        unlabeled: config.unlabeled,
        files,
    })
}

/// Write the log in the format asked for into `dir`, for one `night` of a
/// series or for none. `rng` carries on the data set's stream: it shuffles
/// the queries and, for JSONL, picks when each held-back `final` event is
/// logged.
fn write_logs(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    (mut rng, dir, night): (Pcg64, &Path, Option<NightOf<'_>>),
) -> anyhow::Result<WrittenFile> {
    let order = traffic_order(config, &mut rng);
    let at = (&order[..], dir, night);
    match config.format {
        GenFormat::Jsonl => write_events(config, corpus, streams, at, JsonlLog::new(rng)),
        GenFormat::Trec => write_events(config, corpus, streams, at, TrecRun),
        GenFormat::Otlp => write_events(config, corpus, streams, at, OtlpTraces::default()),
        GenFormat::Parquet => write_events(config, corpus, streams, at, ParquetLog::new()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn config(labeled: usize, results: usize, out: PathBuf) -> GenConfig {
        GenConfig {
            labeled,
            unlabeled: 0,
            results,
            seed: 0,
            format: GenFormat::Jsonl,
            out,
            nights: None,
        }
    }

    #[test]
    fn bad_arguments_are_errors_that_say_why() {
        let out = std::env::temp_dir().join(format!("rgrade-gen-unit-{}", std::process::id()));
        let error = write_dataset(&config(0, 10, out.clone())).unwrap_err();
        assert!(
            error.to_string().contains("`queries` must be at least 1"),
            "{error}"
        );
        let error = write_dataset(&config(1, 0, out.clone())).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`results` must be between 1 and"),
            "{error}"
        );
        assert!(!out.exists(), "nothing is written for bad arguments");

        fs::create_dir_all(&out).unwrap();
        let file = out.join("a-file");
        fs::write(&file, "").unwrap();
        let inside_a_file = file.join("out");
        let error = write_dataset(&config(1, 10, inside_a_file.clone())).unwrap_err();
        assert!(
            format!("{error:#}").contains(&inside_a_file.display().to_string()),
            "{error:#}"
        );
        fs::remove_dir_all(&out).unwrap();
    }
}
