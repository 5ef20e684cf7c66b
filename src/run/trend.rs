//! `rgrade trend` (docs/trend.md), driven: the output directory is
//! claimed, the nights are watched ([`crate::trend`]), and trend.csv and
//! alarms.json are written as one complete set with the page.

use std::path::PathBuf;

use anyhow::Result;

use crate::base::failure::{Error, ErrorKind, OfKind};
use crate::base::schema::REPORT_FILE;
use crate::io::workers;
use crate::output::target::{Destination, Output};
use crate::output::{openmetrics, OutputDir, ResultKind};
use crate::report::{self, Sources};
use crate::trend::{output, trend, Plan, Trended, Warning};

/// Watch the nights `plan` names, writing the outputs if it names a
/// directory, and hand each warning to `warn`.
///
/// # Errors
/// Anything that leaves nothing watched: bad options, a night that is no
/// complete grade output or was graded unlike the others, an unwritable
/// output.
pub fn run(plan: &Plan, warn: &mut (dyn FnMut(Warning) + Send)) -> Result<Trended, Error> {
    plan.check().of_kind(ErrorKind::Usage)?;
    let openmetrics = plan.openmetrics.as_deref().map(|path| Destination {
        path,
        output: Output::OpenMetrics,
        out_dir: plan.out.as_deref(),
        inputs: plan.nights.iter().map(PathBuf::as_path).collect(),
    });
    if let Some(destination) = &openmetrics {
        destination.check().of_kind(ErrorKind::Usage)?;
    }
    // Claimed before anything is read, as compare's is.
    let claim = |dir| OutputDir::claim_for(dir, ResultKind::Trend);
    let out_dir = (plan.out.as_deref().map(claim).transpose()).of_kind(ErrorKind::Output)?;
    let pool = workers::pool(plan.threads).of_kind(ErrorKind::Usage)?;
    let mut trended = pool
        .install(|| trend(plan, warn))
        .of_kind(ErrorKind::Comparison)?;
    if let Some(held) = out_dir {
        write(held, plan, &trended).of_kind(ErrorKind::Output)?;
    }
    // The outputs are in place: a failed export is the caller's to say,
    // beside the alarms it does not undo.
    if let Some(destination) = &openmetrics {
        let families = output::openmetrics_families(&trended);
        trended.openmetrics_failure = (openmetrics::write(destination, &families))
            .of_kind(ErrorKind::Output)
            .err()
            .map(Error::from);
    }
    Ok(trended)
}

/// Write trend.csv and the page drawn from it, then alarms.json listing
/// trend.csv, into the directory `held` claims.
fn write(held: OutputDir, plan: &Plan, trended: &Trended) -> Result<()> {
    let dir = held.dir();
    let mut files = vec![output::write_trend(dir, trended)?];
    let listed = files.iter().map(|f| f.listed().clone()).collect();
    let summary = output::summarize(trended, &plan.command, listed);
    let page = report::trend::page(&summary, &Sources::staged(&files))?;
    files.push(report::stage_page(dir, REPORT_FILE, &page)?);
    files.push(output::write_alarms(dir, &summary)?);
    held.commit(files)
}
