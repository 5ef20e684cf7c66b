//! What the `rgrade compare` tests share: running compare, a six-query
//! fixture small enough to compute by hand (its labels, logs and TREC run,
//! graded at k = 3), the exact sign-flip p-value, and checks of the order of
//! per_query_delta.csv and of a refusal.

use super::{text, Run, Table, Workdir};

/// `rgrade compare ARGS` in `wd`.
pub fn compare(wd: &Workdir, args: &[&str]) -> Run {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    wd.rgrade(&all)
}

/// One labeled query of the hand-computed fixture and its two captures.
struct Case {
    id: &'static str,
    task: &'static str,
    language: &'static str,
    required: bool,
    relevant: &'static [&'static str],
    baseline: &'static [&'static str],
    candidate: &'static [&'static str],
    latency: (f64, f64),
    context: (u32, u32),
}

/// Six queries at k = 3 (q6 has no relevant document):
///
/// | query | recall@3 base → cand | rr@3 base → cand |
/// |-------|----------------------|------------------|
/// | q1    | 1 → 1                | 1 → 1            |
/// | q2    | 0.5 → 1              | 0.5 → 1          |
/// | q3    | 1 → 1                | 1/3 → 1          |
/// | q4    | 1 → 0 (required)     | 1 → 0            |
/// | q5    | 0 → 1                | 0 → 0.5          |
///
/// recall@3: 0.7 → 0.8, 2 wins, 2 ties, 1 loss; rr@3: 17/30 → 0.7, 3 wins,
/// 1 tie, 1 loss. Candidate latencies 15, 25, 35, 45, 55, 300 (p50 40,
/// p95 238.75, p99 287.75); context 100 … 600 on both sides (mean 350).
const CASES: [Case; 6] = [
    Case {
        id: "q1",
        task: "howto",
        language: "en",
        required: false,
        relevant: &["d1"],
        baseline: &["d1", "x1", "x2"],
        candidate: &["d1", "x1", "x2"],
        latency: (10.0, 15.0),
        context: (100, 100),
    },
    Case {
        id: "q2",
        task: "howto",
        language: "de",
        required: false,
        relevant: &["d2a", "d2b"],
        baseline: &["x1", "d2a", "x2"],
        candidate: &["d2a", "d2b", "x1"],
        latency: (20.0, 25.0),
        context: (200, 200),
    },
    Case {
        id: "q3",
        task: "billing",
        language: "en",
        required: false,
        relevant: &["d3"],
        baseline: &["x1", "x2", "d3"],
        candidate: &["d3", "x1", "x2"],
        latency: (30.0, 35.0),
        context: (300, 300),
    },
    Case {
        id: "q4",
        task: "billing",
        language: "de",
        required: true,
        relevant: &["d4"],
        baseline: &["d4", "x1", "x2"],
        candidate: &["x1", "x2", "x3"],
        latency: (40.0, 45.0),
        context: (400, 400),
    },
    Case {
        id: "q5",
        task: "howto",
        language: "en",
        required: false,
        relevant: &["d5"],
        baseline: &["x1", "x2", "x3"],
        candidate: &["x1", "d5", "x2"],
        latency: (50.0, 55.0),
        context: (500, 500),
    },
    Case {
        id: "q6",
        task: "chitchat",
        language: "en",
        required: false,
        relevant: &[],
        baseline: &["x1"],
        candidate: &["x1"],
        latency: (60.0, 300.0),
        context: (600, 600),
    },
];

/// The fixture's answer key.
pub fn cases_labels() -> String {
    text(
        &CASES
            .iter()
            .map(|c| {
                serde_json::json!({
                    "query_id": c.id,
                    "relevant": c.relevant,
                    "task": c.task,
                    "language": c.language,
                    "required": c.required,
                })
                .to_string()
            })
            .collect::<Vec<_>>(),
    )
}

/// One capture per query of `run`: the baseline's rankings or the candidate's.
fn cases_log(run: &str, candidate: bool) -> Vec<String> {
    CASES
        .iter()
        .map(|c| {
            let (ranking, latency, context) = if candidate {
                (c.candidate, c.latency.1, c.context.1)
            } else {
                (c.baseline, c.latency.0, c.context.0)
            };
            serde_json::json!({
                "query_id": c.id,
                "run": run,
                "results": ranking,
                "latency_ms": latency,
                "context_tokens": context,
            })
            .to_string()
        })
        .collect()
}

/// The same captures as a TREC run: one line per result, scores
/// descending, tagged with the run.
pub fn cases_trec(run: &str, candidate: bool) -> Vec<String> {
    CASES
        .iter()
        .flat_map(|c| {
            let ranking = if candidate { c.candidate } else { c.baseline };
            ranking
                .iter()
                .enumerate()
                .map(move |(i, doc)| format!("{} Q0 {doc} {} {} {run}", c.id, i + 1, 10 - i))
        })
        .collect()
}

/// Write labels.jsonl, base.jsonl (run `bm25`), cand.jsonl (run `dense`)
/// and both.jsonl (both runs) into `wd`.
fn write_cases(wd: &Workdir) {
    wd.write("labels.jsonl", cases_labels());
    let base = cases_log("bm25", false);
    let cand = cases_log("dense", true);
    wd.write("base.jsonl", text(&base));
    wd.write("cand.jsonl", text(&cand));
    wd.write("both.jsonl", text(&[base, cand].concat()));
}

/// `rgrade grade --labels labels.jsonl -k K -q -o OUT LOGS`, expected to exit 0.
pub fn grade(wd: &Workdir, k: &str, out: &str, logs: &str) {
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        k,
        "-q",
        "-o",
        out,
        logs,
    ])
    .expect_code(0);
}

/// The fixture's labels and logs, not yet graded.
pub fn cases(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    write_cases(&wd);
    wd
}

/// The fixture graded at k = 3: `base/` and `cand/`.
pub fn graded_cases(name: &str) -> Workdir {
    let wd = cases(name);
    grade(&wd, "3", "base", "base.jsonl");
    grade(&wd, "3", "cand", "cand.jsonl");
    wd
}

/// The exact two-sided p-value of the sign-flip test: the share of the
/// 2^n sign assignments whose |sum| reaches the observed |sum|.
pub fn exact_p(deltas: &[f64]) -> f64 {
    let observed = deltas.iter().sum::<f64>().abs();
    let n = deltas.len();
    let extreme = (0u32..1 << n)
        .filter(|signs| {
            let sum: f64 = (0..n)
                .map(|i| {
                    if signs >> i & 1 == 1 {
                        -deltas[i]
                    } else {
                        deltas[i]
                    }
                })
                .sum();
            sum.abs() >= observed - 1e-9
        })
        .count();
    extreme as f64 / f64::from(1u32 << n)
}

/// Rows of per_query_delta.csv are sorted by `metric`'s delta, most
/// negative first, ties by query_id; rows with an empty delta (no relevant
/// document) come last with every metric cell empty.
#[track_caller]
pub fn assert_sorted_worst_first(table: &Table, metric: &str) {
    let deltas = table.column(&format!("{metric}_delta"));
    let ids = table.column("query_id");
    let counted = deltas.iter().take_while(|d| !d.is_empty()).count();
    assert!(
        deltas[counted..].iter().all(String::is_empty),
        "{}: a row with a delta after a row without",
        table.name
    );
    for i in 1..counted {
        let (a, b): (f64, f64) = (deltas[i - 1].parse().unwrap(), deltas[i].parse().unwrap());
        assert!(
            a < b || (a == b && ids[i - 1] <= ids[i]),
            "{}: row {} ({} {a}) before row {} ({} {b})",
            table.name,
            i,
            ids[i - 1],
            i + 1,
            ids[i]
        );
    }
    let metric_cells: Vec<usize> = (0..table.header.len())
        .filter(|&i| {
            let h = &table.header[i];
            h.ends_with("_baseline") || h.ends_with("_candidate") || h.ends_with("_delta")
        })
        .collect();
    assert!(
        !metric_cells.is_empty(),
        "{}: no metric columns",
        table.name
    );
    for row in &table.rows[counted..] {
        assert!(metric_cells.iter().all(|&i| row[i].is_empty()), "{row:?}");
    }
}

/// Run compare with `args`, expect exit 2, every needle on stderr and no
/// output file written into `refused/`.
#[track_caller]
pub fn expect_refusal(wd: &Workdir, args: &[&str], needles: &[&str]) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["-o", "refused"]);
    let run = compare(wd, &all);
    run.expect_code(2).expect_stderr(needles);
    assert!(
        run.stdout.is_empty(),
        "nothing on stdout when refusing\n{run}"
    );
    for file in ["comparison.csv", "per_query_delta.csv", "gate.json"] {
        assert!(
            !wd.exists(&format!("refused/{file}")),
            "{file} written\n{run}"
        );
    }
}
