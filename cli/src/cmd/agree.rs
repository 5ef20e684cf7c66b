//! `rgrade agree`: compare two answer keys and print how far they agree.

use std::io::{self, Write};

use anyhow::Result;
use rgrade::{AgreePlan, Agreed};

use super::terminal::{print_stdout, tell, Exit};
use crate::cli::AgreeArgs;

/// Compare the keys `args` names, print the figures unless quiet; exit 1
/// when every record of the logs was rejected.
///
/// # Errors
/// A key that does not load, an output that cannot be written.
pub fn run(args: &AgreeArgs) -> Result<Exit> {
    let agreed = rgrade::agree(&plan(args)?, &mut |warning| {
        tell(format_args!(
            "rgrade: warning: {}",
            warning.spelled(crate::cli::flag)
        ));
    })?;
    let lost = !args.quiet && print_stdout(|out| print(out, &agreed));
    if let Some(why) = &agreed.every_record_rejected {
        tell(format_args!("rgrade: {}", why.spelled(crate::cli::flag)));
        return Ok(Exit::CheckFailed);
    }
    Ok(Exit::Clean.unless_lost(lost))
}

/// The library's plan for the options in `args`, its paths handed over
/// as they are. The options of the logs are the plan's only with logs:
/// without, the plan takes none (they are refused, and clap refuses them
/// given), and each counts at the plan's default.
fn plan(args: &AgreeArgs) -> Result<AgreePlan> {
    let mut options = serde_json::to_value(args)?;
    if !args.graded.logs.is_empty() {
        if let (Some(options), serde_json::Value::Object(graded)) =
            (options.as_object_mut(), serde_json::to_value(&args.graded)?)
        {
            options.extend(graded);
        }
    }
    Ok(AgreePlan {
        key_a: args.key_a.clone(),
        key_b: args.key_b.clone(),
        out: args.out.clone(),
        logs: args.graded.logs.clone(),
        ..serde_json::from_value(options)?
    })
}

/// The counts, both kappas, the confusion matrix and each grouping set.
fn print(out: &mut impl Write, agreed: &Agreed) -> io::Result<()> {
    let (summary, agreement) = (&agreed.summary, &agreed.agreement);
    let kappa = |k: Option<f64>| k.map_or("undefined".to_string(), |k| format!("{k:.3}"));
    writeln!(out, "A: {}\nB: {}", summary.key_a.path, summary.key_b.path)?;
    writeln!(
        out,
        "queries: {} both, {} A only, {} B only",
        summary.overlap.queries_both,
        summary.overlap.queries_a_only,
        summary.overlap.queries_b_only
    )?;
    writeln!(
        out,
        "judged pairs: {} both, {} A only, {} B only; {} graded differently",
        summary.overlap.pairs_both,
        summary.overlap.pairs_a_only,
        summary.overlap.pairs_b_only,
        agreement.disagreements.len()
    )?;
    writeln!(
        out,
        "kappa on relevance (grade >= {}): {}; kappa on grades: {} linear-weighted, {} \
         unweighted, {} quadratic-weighted; Krippendorff's alpha on grades (ordinal): {}",
        summary.min_rel,
        kappa(summary.relevance_kappa),
        kappa(summary.grade_kappa),
        kappa(summary.grade_kappa_unweighted),
        kappa(summary.grade_kappa_quadratic),
        kappa(summary.grade_alpha_ordinal)
    )?;
    if !summary.grades.is_empty() {
        writeln!(out, "\ngrades, A (rows) by B (columns):")?;
        write!(out, "{:>8}", "")?;
        for grade in &summary.grades {
            write!(out, " {grade:>8}")?;
        }
        writeln!(out)?;
        for (grade, row) in summary.grades.iter().zip(&summary.confusion) {
            write!(out, "{grade:>8}")?;
            for count in row {
                write!(out, " {count:>8}")?;
            }
            writeln!(out)?;
        }
    }
    writeln!(
        out,
        "\n{:<16} {:<10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "task",
        "language",
        "queries",
        "pairs",
        "kappa_rel",
        "kappa_lin",
        "kappa_unw",
        "kappa_quad",
        "alpha_ord"
    )?;
    for slice in agreement.distinct_slices() {
        writeln!(
            out,
            "{:<16} {:<10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
            slice.task,
            slice.language,
            slice.queries,
            slice.pairs,
            kappa(slice.relevance_kappa),
            kappa(slice.grade_kappa),
            kappa(slice.grade_kappa_unweighted),
            kappa(slice.grade_kappa_quadratic),
            kappa(slice.grade_alpha_ordinal)
        )?;
    }
    if let (Some(runs), Some(logs)) = (&agreed.runs, &summary.logs) {
        writeln!(
            out,
            "\n{} runs graded under both keys ({} and {} rows graded, {} and {} records \
             rejected); over all queries:",
            logs.runs, logs.graded_a, logs.graded_b, logs.rejected_a, logs.rejected_b
        )?;
        writeln!(
            out,
            "{:<10} {:<14} {:>5} {:>12}",
            "stage", "metric", "runs", "kendall_tau"
        )?;
        let overall = (runs.orders.iter()).filter(|o| o.task == "*" && o.language == "*");
        for order in overall {
            writeln!(
                out,
                "{:<10} {:<14} {:>5} {:>12}",
                order.stage,
                order.metric,
                order.runs,
                kappa(order.kendall_tau)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rgrade::{AgreePlan, GradePlan};

    use super::plan;
    use crate::cli::{Cli, Command};

    fn parsed(args: &[&str]) -> AgreePlan {
        let cli = Cli::try_parse_from(args).unwrap();
        let Command::Agree(args) = cli.command else {
            panic!("expected agree")
        };
        plan(&args).unwrap()
    }

    /// `AgreePlan::new` holds the command line's defaults, and the
    /// options of the logs are given only with logs (without, the
    /// library refuses them), at `GradePlan::new`'s defaults.
    #[test]
    fn the_library_plan_holds_the_command_lines_defaults() {
        let plain = parsed(&["rgrade", "agree", "a", "b"]);
        assert_eq!(plain, AgreePlan::new("a".into(), "b".into()));
        let with_logs = parsed(&["rgrade", "agree", "a", "b", "--logs", "l"]);
        let grading = GradePlan::new("a".into(), vec!["l".into()]);
        let expected = AgreePlan {
            logs: vec!["l".into()],
            logs_format: Some(grading.logs_format),
            ks: Some(grading.ks),
            missing: Some(grading.missing),
            repeats: Some(grading.repeats),
            run_name: Some(grading.run_name),
            ..plain
        };
        assert_eq!(with_logs, expected);
    }
}
