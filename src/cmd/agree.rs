//! `rgrade agree`: compare two answer keys and print how far they agree.

use std::io::{self, Write};

use anyhow::Result;
use rgrade::{AgreePlan, Agreed};

use super::terminal::{print_stdout, Exit};
use crate::cli::AgreeArgs;

/// Compare the keys `args` names, print the figures unless quiet.
///
/// # Errors
/// A key that does not load, an output that cannot be written.
pub fn run(args: &AgreeArgs) -> Result<Exit> {
    let plan = AgreePlan {
        labels_format: args.labels_format,
        min_rel: args.min_rel,
        out: args.out.clone(),
        threads: args.threads,
        ..AgreePlan::new(args.key_a.clone(), args.key_b.clone())
    };
    let agreed = rgrade::agree(&plan)?;
    if !args.quiet {
        print_stdout(|out| print(out, &agreed));
    }
    Ok(Exit::Clean)
}

/// The counts, both kappas, the confusion matrix and each grouping set.
fn print(out: &mut impl Write, agreed: &Agreed) -> io::Result<()> {
    let (summary, agreement) = (&agreed.summary, &agreed.agreement);
    let kappa = |k: Option<f64>| k.map_or("undefined".to_string(), |k| format!("{k:.3}"));
    writeln!(out, "A: {}\nB: {}", summary.key_a.path, summary.key_b.path)?;
    writeln!(
        out,
        "queries: {} both, {} A only, {} B only",
        summary.queries_both, summary.queries_a_only, summary.queries_b_only
    )?;
    writeln!(
        out,
        "judged pairs: {} both, {} A only, {} B only; {} graded differently",
        summary.pairs_both,
        summary.pairs_a_only,
        summary.pairs_b_only,
        agreement.disagreements.len()
    )?;
    writeln!(
        out,
        "kappa on relevance (grade >= {}): {}; linear-weighted kappa on grades: {}",
        summary.min_rel,
        kappa(summary.relevance_kappa),
        kappa(summary.grade_kappa)
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
        "\n{:<16} {:<10} {:>8} {:>8} {:>10} {:>10}",
        "task", "language", "queries", "pairs", "kappa_rel", "kappa_grade"
    )?;
    for slice in &agreement.slices {
        writeln!(
            out,
            "{:<16} {:<10} {:>8} {:>8} {:>10} {:>10}",
            slice.task,
            slice.language,
            slice.queries,
            slice.pairs,
            kappa(slice.relevance_kappa),
            kappa(slice.grade_kappa)
        )?;
    }
    Ok(())
}
