//! `rgrade grade`: grade the logs, print the table and the warnings, and
//! turn rejects and leaks over their limits into exit status 1.

use anyhow::Result;
use rgrade::GradePlan;

use super::{print_stdout, stdout_width, tell, Exit};
use crate::cli::GradeArgs;

/// Grade the logs named in `args`; `command` is the command line as typed,
/// for summary.json.
///
/// # Errors
/// Anything that leaves nothing graded: bad options, unreadable or invalid
/// labels, a missing, empty or corrupt log input, an unwritable output.
pub fn run(args: &GradeArgs, command: Vec<String>) -> Result<Exit> {
    let plan = GradePlan {
        labels: args.labels.clone(),
        labels_format: args.labels_format,
        min_rel: args.min_rel,
        logs: args.logs.clone(),
        logs_format: args.logs_format,
        fields: args.fields.names(),
        join: args.join,
        span_stages: args.span_stages.clone(),
        ks: args.k.clone(),
        missing: args.missing,
        repeats: args.repeats,
        duplicate_docs: args.duplicate_docs,
        run_name: args.run_name,
        stages: args.stages.clone(),
        stage_order: args.stage_order.clone(),
        doc_collections: args.doc_collections.clone(),
        corpus: args.corpus.clone(),
        collection_version: args.collection_version.clone(),
        out: args.out.clone(),
        review_queue: args.review_queue,
        pool_depth: args.pool_depth,
        meta: args.meta.clone(),
        threads: args.threads,
        progress: args.progress,
        command,
    };
    let mut warnings = Vec::new();
    let graded = rgrade::grade(&plan, &mut |warning| warnings.push(warning))?;
    if !args.quiet {
        print_stdout(|out| graded.print_table(out, stdout_width()));
    }
    for warning in &warnings {
        tell(format_args!("rgrade: warning: {warning}"));
    }
    let leaks = graded.leaks_over(args.max_leaks);
    let rejects = graded.rejects_over(args.max_rejects, args.out.as_deref());
    for message in leaks.iter().chain(&rejects) {
        tell(format_args!("rgrade: {message}"));
    }
    Ok(if leaks.is_some() || rejects.is_some() {
        Exit::CheckFailed
    } else {
        Exit::Clean
    })
}
