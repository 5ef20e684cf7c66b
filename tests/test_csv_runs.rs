//! CSV runs, as ir_measures' and ranx's run frames are saved: ranked by
//! score as the same run in TREC form is, byte for byte; by a rank column
//! when there is one; bad lines rejected with their rankings, a header
//! rgrade cannot read refused with the file and line.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use crate::util::{assert_counts_add_up, gzip, in_file, reject_keys, text, Workdir};

/// Labels of queries `q0`..`q29`, every query judging a few of the docs
/// `d0`..`d19` (ids with `#`, as MS MARCO passages have).
fn labels() -> String {
    let mut rng = Pcg64::seed_from_u64(31);
    let lines: Vec<String> = (0..30)
        .map(|q| {
            let mut judged = Vec::new();
            for d in 0..20 {
                if rng.random_bool(0.3) {
                    judged.push(format!("\"doc#{d}\": {}", rng.random_range(0..3)));
                }
            }
            format!(
                r#"{{"query_id": "q{q}", "relevant": {{{}}}}}"#,
                judged.join(", ")
            )
        })
        .collect();
    text(&lines)
}

/// A run of those queries, lines shuffled: (query, doc, score text).
/// Scores collide, and some differ only past a 32-bit float's precision,
/// so ties are broken as trec_eval breaks them.
fn run_lines() -> Vec<(String, String, String)> {
    let mut rng = Pcg64::seed_from_u64(32);
    let mut lines = Vec::new();
    for q in 0..30 {
        for d in 0..20 {
            let score = match rng.random_range(0..3) {
                0 => format!("{}", rng.random_range(0..4)),
                1 => format!("{:.12}", 2.0 + f64::from(rng.random_range(0..3)) * 1e-10),
                _ => format!("{:.3}", rng.random_range(-5.0..5.0)),
            };
            lines.push((format!("q{q}"), format!("doc#{d}"), score));
        }
    }
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.random_range(0..=i));
    }
    lines
}

fn grade(wd: &Workdir, out: &str, logs: &[&str], extra: &[&str]) {
    let mut args = vec![
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1,5,all",
        "-q",
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(logs);
    wd.rgrade(&args).expect_code(0);
}

#[test]
fn a_csv_run_grades_as_the_same_run_in_trec_form() {
    let wd = Workdir::new("csv_run_as_trec");
    wd.write("labels.jsonl", labels());
    let lines = run_lines();
    let trec: Vec<String> = (lines.iter())
        .map(|(q, d, s)| format!("{q} Q0 {d} 0 {s} bm25"))
        .collect();
    wd.write("run.trec", text(&trec));
    // ranx's columns, a run column, and a quoted field as pandas writes one.
    let mut csv = vec!["q_id,doc_id,score,run".to_string()];
    csv.extend(
        lines
            .iter()
            .map(|(q, d, s)| format!("{q},\"{d}\",{s},bm25")),
    );
    wd.write("ranx.csv", text(&csv));
    grade(&wd, "trec", &["run.trec"], &[]);
    grade(&wd, "csv", &["ranx.csv"], &[]);
    for file in ["per_query.csv", "aggregates.csv"] {
        assert_eq!(
            wd.read_text(&format!("csv/{file}")),
            wd.read_text(&format!("trec/{file}")),
            "{file}"
        );
    }
    assert_counts_add_up(&wd.read_json("csv/summary.json"));

    // ir_measures' columns, gzip-compressed, found by a directory walk,
    // beside a CSV that holds no run (skipped, and said so).
    let mut ir_measures = vec!["query_id,doc_id,score".to_string()];
    ir_measures.extend(lines.iter().map(|(q, d, s)| format!("{q},{d},{s}")));
    wd.write("dir/run.csv.gz", gzip(text(&ir_measures).as_bytes()));
    wd.write("dir/notes.csv", "name,value\nx,1\n");
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1,5,all",
        "-q",
        "-o",
        "walked",
        "dir",
    ]);
    run.expect_code(0);
    assert!(run.stderr.contains("notes.csv"), "{}", run.stderr);
    // Without a run column the run is unnamed: the rows differ in it alone.
    let unnamed = wd.read_text("walked/per_query.csv");
    let named = wd.read_text("trec/per_query.csv").replace("\nbm25,", "\n,");
    assert_eq!(unnamed, named);
}

#[test]
fn a_rank_column_ranks_the_run_and_a_stage_column_names_stages() {
    let wd = Workdir::new("csv_run_ranks");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a", "b"]}"#]),
    );
    // pandas' rank() writes floats; the score column is left alone when a
    // rank is given.
    wd.write(
        "ranked.csv",
        text(&[
            "query_id,doc_id,score,rank,stage",
            "q1,b,0.1,2.0,final",
            "q1,x,0.9,1.0,final",
            "q1,a,0.5,1,retrieve",
        ]),
    );
    grade(&wd, "out", &["ranked.csv"], &[]);
    let per_query = wd.read_csv("out/per_query.csv");
    let final_ = per_query.row(&[("stage", "final")]);
    assert_eq!(final_["first_rel_rank"], "2");
    assert_eq!(final_["recall@1"], "0");
    assert_eq!(final_["rr@5"], "0.5");
    let retrieve = per_query.row(&[("stage", "retrieve")]);
    assert_eq!(retrieve["first_rel_rank"], "1");
}

#[test]
fn bad_csv_lines_are_rejected_with_the_rankings_they_belong_to() {
    let wd = Workdir::new("csv_run_bad_lines");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
            r#"{"query_id": "q3", "relevant": ["c"]}"#,
        ]),
    );
    let mut bytes = text(&[
        "q_id,doc_id,score,run",
        "q1,a,NaN,r",
        "q1,z,1,r",
        "q2,b,1,r,extra",
        "q2,y,2,r",
        "q3,c,1,r",
        "q3,\"open,1,r",
        "",
        "q3,w,0.5,r",
    ])
    .into_bytes();
    bytes.extend_from_slice(b"q2,\xff,1,r\n");
    wd.write("run.csv", bytes);
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-q",
        "-o",
        "out",
        "run.csv",
    ]);
    run.expect_code(1);
    let rejects = reject_keys(&wd.read_jsonl("out/rejects.jsonl"));
    assert_eq!(
        rejects,
        in_file(
            "run.csv",
            &[
                (2, "bad_score"),
                (3, "incomplete_ranking"),
                // Too many fields: the query is named, its run is not, so
                // every ranking of q2 in the file is rejected.
                (4, "bad_csv_line"),
                (5, "incomplete_ranking"),
                (7, "bad_csv_line"),
                (10, "invalid_utf8"),
            ]
        )
    );
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    let per_query = wd.read_csv("out/per_query.csv");
    for q in ["q1", "q2"] {
        assert_eq!(
            per_query.row(&[("query_id", q)])["status"],
            "invalid",
            "{q}"
        );
    }
    // q3 lost line 7, whose quote never closes: its query is unknown, so
    // q3 is graded from the lines it has.
    assert_eq!(per_query.row(&[("query_id", "q3")])["status"], "ok");
}

#[test]
fn a_header_rgrade_cannot_read_stops_the_input() {
    let wd = Workdir::new("csv_run_headers");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a"]}"#]),
    );
    for (name, contents, needle) in [
        (
            "index.csv",
            ",query_id,doc_id,score\n0,q1,a,1\n",
            "index.csv: line 1: unknown column '' in the CSV run's header (a pandas index? \
             write the frame with index=False)",
        ),
        (
            "position.csv",
            "query_id,doc_id,score,position\nq1,a,1,1\n",
            "position.csv: line 1: unknown column 'position'",
        ),
        (
            "both.csv",
            "query_id,q_id,doc_id,score\nq1,q1,a,1\n",
            "both.csv: line 1: columns 'query_id' and 'q_id' both hold the query id",
        ),
    ] {
        wd.write(name, contents);
        let run = wd.rgrade(&["grade", "--labels", "labels.jsonl", "-q", name]);
        run.expect_code(2);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
    }
    // Asked for a CSV run, given one without a header.
    wd.write("bare.csv", "q1,a,1\n");
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--logs-format",
        "csv",
        "-q",
        "bare.csv",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("bare.csv: a CSV run's first line must be its header"),
        "{}",
        run.stderr
    );
}
