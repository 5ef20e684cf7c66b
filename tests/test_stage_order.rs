//! What `--stage-order` refuses (exit 2) and warns about, and that no
//! stage-loss output is written or printed unless it is asked for.

use crate::util::stage_loss::{
    assert_table, csv_rows, loss_table, table_rows, PER_QUERY_HEADER, TOTALS_HEADER,
};
use crate::util::{grade, text, Workdir};

/// Small two-stage inputs in `wd`.
fn two_stage_inputs(wd: &Workdir) {
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a", "b"], "task": "t", "language": "en"}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "stage": "retrieve", "results": ["a", "b"]}"#,
            r#"{"query_id": "q1", "stage": "final", "results": ["b"]}"#,
        ]),
    );
}

/// One stage, a stage named twice or an empty name: exit 2 before
/// grading, a message naming --stage-order, no output directory.
#[test]
fn stage_order_needs_two_distinct_stages() {
    let wd = Workdir::new("stage_loss_refusals");
    two_stage_inputs(&wd);
    for (order, out, needles) in [
        ("retrieve", "one", vec!["--stage-order", "two stages"]),
        ("final", "one_b", vec!["--stage-order", "two stages"]),
        (
            "retrieve,final,retrieve",
            "twice",
            vec!["--stage-order", "retrieve", "twice"],
        ),
        (
            "final,final",
            "twice_b",
            vec!["--stage-order", "final", "twice"],
        ),
        // Spaces around a name are dropped, so this is final twice.
        (
            "final, final",
            "twice_c",
            vec!["--stage-order", "final", "twice"],
        ),
        (
            "retrieve,,final",
            "empty",
            vec!["--stage-order", "empty stage name"],
        ),
    ] {
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "--stage-order",
                order,
                "-o",
                out,
                "logs.jsonl",
            ],
        );
        run.expect_code(2).expect_stderr(&needles);
        assert!(run.stdout.is_empty(), "{run}");
        assert!(
            !wd.exists(out),
            "nothing is written on a usage error\n{run}"
        );
    }
}

/// A stage of the order that no run graded: a warning on stderr naming it
/// (even with -q), exit 0, and the stages that were graded are compared.
/// No stage of the order graded at all: one warning each, a one-line note
/// on stdout, the files hold their headers only.
#[test]
fn unseen_stages_warn() {
    let wd = Workdir::new("stage_loss_unseen");
    two_stage_inputs(&wd);
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0).expect_stderr(&[
        "rgrade: warning: stage rerank of --stage-order was never graded; \
         evidence loss is measured between the stages that were",
    ]);
    assert!(!run.stderr.contains("stage retrieve"), "{run}");
    assert!(!run.stderr.contains("stage final"), "{run}");
    assert_table(
        &wd.read_csv("out/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &csv_rows(&[",q1,t,en,retrieve,final,2,1,a"]),
    );
    assert_eq!(
        loss_table(&run),
        table_rows(&[
            "(unnamed) retrieve -> final all 2 1 0.500",
            "(unnamed) retrieve -> final task=t 2 1 0.500"
        ]),
        "{run}"
    );

    // -q: no table, the warning all the same.
    let quiet = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-q",
            "logs.jsonl",
        ],
    );
    quiet
        .expect_code(0)
        .expect_stderr(&["stage rerank of --stage-order was never graded"]);
    assert!(quiet.stdout.is_empty(), "{quiet}");

    // --stage keeps a stage out of grading: then it was never graded.
    let filtered = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage",
            "final",
            "--stage-order",
            "retrieve,final",
            "-o",
            "filtered",
            "logs.jsonl",
        ],
    );
    filtered
        .expect_code(0)
        .expect_stderr(&["stage retrieve of --stage-order was never graded"]);
    assert_eq!(
        wd.read_csv("filtered/stage_loss.csv").rows.len(),
        0,
        "{filtered}"
    );

    let none = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "dense,sparse",
            "-o",
            "none",
            "logs.jsonl",
        ],
    );
    none.expect_code(0).expect_stderr(&[
        "stage dense of --stage-order was never graded",
        "stage sparse of --stage-order was never graded",
    ]);
    assert!(
        none.stdout
            .contains("evidence lost between stages: no run graded two stages of --stage-order"),
        "{none}"
    );
    assert!(loss_table(&none).is_empty(), "{none}");
    assert_table(&wd.read_csv("none/stage_loss.csv"), &TOTALS_HEADER, &[]);
    assert_table(
        &wd.read_csv("none/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &[],
    );
}

/// Without --stage-order: no stage-loss files, no stdout table, no
/// warning, even when the logs hold several stages.
#[test]
fn no_stage_loss_unless_asked() {
    let wd = Workdir::new("stage_loss_not_asked");
    two_stage_inputs(&wd);
    let run = grade(
        &wd,
        &["--labels", "labels.jsonl", "-o", "out", "logs.jsonl"],
    );
    run.expect_code(0);
    assert!(wd.exists("out/per_query.csv"), "{run}");
    assert!(!wd.exists("out/stage_loss.csv"), "{run}");
    assert!(!wd.exists("out/stage_loss_per_query.csv"), "{run}");
    assert!(!run.stdout.contains("evidence lost"), "{run}");
    assert!(!run.stderr.contains("--stage-order"), "{run}");
    // The per-stage tables are still the usual ones.
    let table = run.stdout_table();
    assert_eq!(table.len(), 2, "{run}");

    // A rerun into a directory that holds an earlier run's stage-loss
    // files removes them: they are not this run's results.
    let args = ["--labels", "labels.jsonl", "-o", "out", "logs.jsonl"];
    let mut with_order = args.to_vec();
    with_order.extend(["--stage-order", "retrieve,final"]);
    grade(&wd, &with_order).expect_code(0);
    assert!(wd.exists("out/stage_loss.csv"));
    grade(&wd, &args).expect_code(0);
    assert!(!wd.exists("out/stage_loss.csv"));
    assert!(!wd.exists("out/stage_loss_per_query.csv"));
}
