//! `rgrade grade --measures`: measures asked for by ir_measures' and ranx's
//! names, graded end to end on a ranking worked out by hand, named by
//! rgrade's column names in every output, drawn on the page and compared;
//! an unknown name is refused naming the option and what is known.

use crate::util::{assert_cell, text, Workdir};

/// The ranking of the unit tests' worked example as a TREC run: labels
/// a:3, b:0, c:1, d:2, e:0; results b a x c e y (x, y unjudged).
fn worked_example(wd: &Workdir) {
    wd.write(
        "qrels.txt",
        text(&["q1 0 a 3", "q1 0 b 0", "q1 0 c 1", "q1 0 d 2", "q1 0 e 0"]),
    );
    let results = ["b", "a", "x", "c", "e", "y"];
    let lines: Vec<String> = (results.iter().enumerate())
        .map(|(i, doc)| format!("q1 Q0 {doc} {} {} run1", i + 1, 10 - i))
        .collect();
    wd.write("run.trec", text(&lines));
}

const ASKED: &str =
    "Rprec,Bpref,RBP(p=0.8),ERR@10,ndcg_burges@5,f1@5,P(rel=2)@5,Judged@5,map,mrr@10";

#[test]
fn measures_asked_by_name_are_graded_and_named_by_rgrade() {
    let wd = Workdir::new("measures");
    worked_example(&wd);
    let grade = |out: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            "qrels.txt",
            "-k",
            "5",
            "--measures",
            ASKED,
            "-o",
            out,
            "run.trec",
        ])
    };
    let run = grade("out");
    run.expect_code(0);
    let columns = [
        "rprec",
        "bpref",
        "rbp(p=0.8)",
        "rbp_residual(p=0.8)",
        "err@10",
        "ndcg_burges@5",
        "f1@5",
        "precision(rel=2)@5",
        "judged@5",
        "ap@all",
        "rr@10",
    ];
    // The asked measures replace the six metrics per cutoff; the cutoff
    // still names missing_at_k, and judged@k comes only as asked.
    let per_query = wd.read_csv("out/per_query.csv");
    let at = per_query.header.iter().position(|c| c == "context_tokens");
    let after = &per_query.header[at.unwrap() + 1..];
    let trailing = ["missing_at_5", "unauthorized", "split", "answer_ok"];
    assert_eq!(after, [&columns[..], &trailing[..]].concat(), "{run}");
    // By hand (the unit tests spell out each): R = {a, c, d}.
    let l = |rank: f64| (rank + 1.0).log2();
    let want = [
        ("rprec", 1.0 / 3.0),
        ("bpref", 1.0 / 3.0),
        ("rbp(p=0.8)", 0.2 * (0.8 + 0.512)),
        ("rbp_residual(p=0.8)", 0.193536 + 0.262144),
        ("err@10", 7.0 / 32.0 + (9.0 / 16.0) * (1.0 / 16.0) / 4.0),
        (
            "ndcg_burges@5",
            (7.0 / l(2.0) + 1.0 / l(4.0)) / (7.0 + 3.0 / l(2.0) + 1.0 / l(3.0)),
        ),
        ("f1@5", 0.5),
        ("precision(rel=2)@5", 0.2),
        ("judged@5", 0.8),
        ("ap@all", (1.0 / 2.0 + 2.0 / 4.0) / 3.0),
        ("rr@10", 0.5),
    ];
    let row = per_query.row(&[("query_id", "q1")]);
    assert_eq!(row["missing_at_5"], "d");
    for (column, value) in want {
        assert_cell(&row, column, value);
    }
    // One query: each mean is its value; the stdout table and
    // summary.json name the measures as the columns do.
    let aggregates = wd.read_csv("out/aggregates.csv");
    let overall = aggregates.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    for (column, value) in want {
        assert_cell(&overall, column, value);
        assert!(aggregates.header.contains(&format!("{column}_half_width")));
    }
    assert!(!aggregates.header.contains(&"recall@5".to_string()));
    assert!(run.stdout.contains("rbp_residual(p=0.8)"), "{run}");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["settings"]["measures"], serde_json::json!(columns));
    let means = &summary["overall"][0]["metrics"];
    assert!((means["bpref"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);

    // The page leads with the asked measures, drawn again by `report`.
    let page = wd.read_text("out/report.html");
    assert!(page.contains("ndcg_burges@5") && page.contains("Worst queries"));
    wd.rgrade(&["report", "out", "-o", "page.html"])
        .expect_code(0);
    assert!(wd.read_text("page.html").contains("rbp(p=0.8)"));

    // Two gradings of the same measures compare measure by measure; a
    // grading of the default metrics is refused naming --measures.
    grade("again").expect_code(0);
    let compared = wd.rgrade(&[
        "compare",
        "out",
        "again",
        "--metrics",
        "bpref,err@10",
        "-o",
        "cmp",
    ]);
    compared.expect_code(0);
    let comparison = wd.read_csv("cmp/comparison.csv");
    assert!(comparison.column("metric").contains(&"bpref".to_string()));
    let default_metrics = wd.rgrade(&[
        "grade",
        "--labels",
        "qrels.txt",
        "-k",
        "5",
        "-o",
        "default",
        "run.trec",
    ]);
    default_metrics.expect_code(0);
    let refused = wd.rgrade(&["compare", "out", "default"]);
    assert_ne!(refused.status.code(), Some(0), "{refused}");
    assert!(refused.stderr.contains("--measures"), "{refused}");
}

#[test]
fn an_unknown_measure_is_refused_naming_the_option_and_what_is_known() {
    let wd = Workdir::new("measures_unknown");
    worked_example(&wd);
    for (asked, says) in [
        ("nDCG@10,nDGC@10", "'nDGC@10' is not a measure"),
        ("Rprec@10", "without a cutoff"),
        ("P(rel=0)@5", "rel must be"),
        ("RBP(p=1.2)", "p must be"),
    ] {
        let run = wd.rgrade(&[
            "grade",
            "--labels",
            "qrels.txt",
            "--measures",
            asked,
            "run.trec",
        ]);
        run.expect_code(2);
        assert!(run.stderr.contains("--measures"), "{run}");
        assert!(run.stderr.contains(says), "{run}");
        assert!(run.stderr.contains("ndcg_burges@10"), "{run}");
    }
}
