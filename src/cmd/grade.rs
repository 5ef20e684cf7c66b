//! `rgrade grade`: grade the logs, print the table and the warnings, and
//! turn the rejects and leaks over their limits into exit status 1.

use anyhow::Result;
use rgrade::grade::{self, Graded, Plan};
use rgrade::output::{plural, rejects};

use super::{print_stdout, Exit};
use crate::cli::GradeArgs;

/// Grade the logs named in `args`; `command` is the command line as typed,
/// for summary.json.
///
/// # Errors
/// Anything that leaves nothing graded: bad options, unreadable or invalid
/// labels, a missing, empty or corrupt log input, an unwritable output.
pub fn run(args: &GradeArgs, command: Vec<String>) -> Result<Exit> {
    let plan = Plan {
        labels: args.labels.clone(),
        labels_format: args.labels_format,
        min_rel: args.min_rel,
        logs: args.logs.clone(),
        logs_format: args.logs_format,
        fields: args.fields.names(),
        ks: args.k.iter().map(|k| k.get()).collect(),
        missing: args.missing,
        repeats: args.repeats,
        duplicate_docs: args.duplicate_docs,
        stages: args.stages.clone(),
        stage_order: args.stage_order.clone(),
        doc_collections: args.doc_collections.clone(),
        corpus: args.corpus.clone(),
        out: args.out.clone(),
        meta: args.meta.clone(),
        threads: args.threads,
        progress: args.progress,
        command,
    };
    let mut warnings = Vec::new();
    let graded = grade::run(&plan, &mut |warning| warnings.push(warning))?;
    if !args.quiet {
        print_stdout(|out| graded.print_table(out))?;
    }
    for warning in &warnings {
        eprintln!("rgrade: warning: {warning}");
    }
    let too_many_leaks = graded.counts.leaked_results > args.max_leaks;
    if too_many_leaks {
        report_leaks(&graded, args.max_leaks);
    }
    if graded.counts.rejected > args.max_rejects {
        report_rejects(&graded, args);
        return Ok(Exit::CheckFailed);
    }
    Ok(if too_many_leaks {
        Exit::CheckFailed
    } else {
        Exit::Clean
    })
}

/// Say that the leaks exceed `--max-leaks`, naming the first.
fn report_leaks(graded: &Graded, max_leaks: u64) {
    let Some(first) = graded.leaks.first() else {
        return;
    };
    eprintln!(
        "rgrade: {} --max-leaks {max_leaks}; the first is {}:{}: query {} got {} from collection {}",
        exceed(
            graded.counts.leaked_results,
            "result outside the user's allowed collections",
            "results outside the user's allowed collections"
        ),
        graded.input_name(first.origin),
        first.origin.line,
        first.query_id,
        first.doc_id,
        first.collection
    );
}

/// Say that the rejects exceed `--max-rejects`, naming the first.
fn report_rejects(graded: &Graded, args: &GradeArgs) {
    let Some(first) = graded.rejects.first() else {
        return;
    };
    let listed = match &args.out {
        Some(dir) => format!("all are listed in {}", dir.join(rejects::FILE).display()),
        None => "use -o DIR to list them all in rejects.jsonl".to_string(),
    };
    eprintln!(
        "rgrade: {} --max-rejects {}; the first is {}:{}: {}: {} ({listed})",
        exceed(
            graded.counts.rejected,
            "rejected record",
            "rejected records"
        ),
        args.max_rejects,
        graded.input_name(first.origin),
        first.origin.line,
        first.reason,
        first.detail
    );
}

/// "1 rejected record exceeds", "2 rejected records exceed".
fn exceed(n: u64, one: &str, many: &str) -> String {
    let verb = if n == 1 { "exceeds" } else { "exceed" };
    format!("{} {verb}", plural(n, one, many))
}
