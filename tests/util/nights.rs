//! Nightly series for the trend tests and the trend page's browser test:
//! `rgrade gen --nights` writes them, `rgrade grade --as-of` grades each
//! night.

use super::Workdir;

/// A drop for gen to plant: from night `from` on, each relevant document
/// of `task`'s queries lost with probability `rate`.
pub struct PlantedDrop<'a> {
    pub from: usize,
    pub task: &'a str,
    pub rate: &'a str,
}

/// `rgrade gen --queries QUERIES --nights NIGHTS -o OUT`, with `drop`
/// planted if given.
pub fn gen_nights(
    wd: &Workdir,
    out: &str,
    queries: &str,
    nights: usize,
    drop: Option<PlantedDrop>,
) {
    let nights = nights.to_string();
    let mut args = vec!["gen", "--queries", queries, "--nights", &nights, "-o", out];
    let from = drop.as_ref().map(|d| d.from.to_string());
    if let (Some(drop), Some(from)) = (&drop, &from) {
        args.extend([
            "--drop-from",
            from,
            "--drop-task",
            drop.task,
            "--drop-rate",
            drop.rate,
        ]);
    }
    wd.rgrade(&args).expect_code(0);
}

/// Grade `logs` against `labels` at k = 10 into `out`, as of `as_of`,
/// with `extra` options.
pub fn grade_night(wd: &Workdir, labels: &str, logs: &str, out: &str, as_of: &str, extra: &[&str]) {
    let mut args = vec![
        "grade", "--labels", labels, "-k", "10", "--as-of", as_of, "-q", "-o", out,
    ];
    args.extend(extra);
    args.push(logs);
    wd.rgrade(&args).expect_code(0);
}

/// `rgrade gen --queries QUERIES --nights NIGHTS --changes CHANGES -o OUT`:
/// a stable series whose fresh rankings revert or persist.
pub fn gen_nights_changing(wd: &Workdir, out: &str, queries: &str, nights: usize, changes: &str) {
    let nights = nights.to_string();
    let args = [
        "gen",
        "--queries",
        queries,
        "--nights",
        &nights,
        "--changes",
        changes,
        "-o",
        out,
    ];
    wd.rgrade(&args).expect_code(0);
}
