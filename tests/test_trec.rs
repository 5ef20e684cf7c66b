//! TREC runs as logs: ranked like trec_eval, bad lines rejected, the same
//! grades however a long run's lines are laid out, and a ranking read twice
//! meeting a JSONL capture of its key.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use crate::util::{
    assert_cell, assert_counts_add_up, assert_text, count, discount, gzip, in_file, reject_keys,
    text, Workdir,
};

/// A TREC run is grouped by query across the file, ranked by score
/// descending with ties broken by doc id descending in byte order (as
/// trec_eval), the rank column ignored, fields past the sixth ignored;
/// the tag is the run, the stage `final`, and `#` is part of a doc id.
#[test]
fn trec_runs_are_ranked_like_trec_eval() {
    let wd = Workdir::new("trec_run");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["Zeta", "msmarco#7"]}"#,
            r#"{"query_id": "q2", "relevant": ["x"]}"#,
        ]),
    );
    wd.write(
        "run.trec",
        text(&[
            "q1 Q0 alpha 4 1.0 myrun",
            "q2 Q0 x 1 -1.5 myrun",
            "q1\tQ0\tZeta\t3\t1.0\tmyrun",
            "q1  Q0  msmarco#7 2 0.5 myrun extra fields",
            "q2 Q0 y 2 -1.0 myrun",
            "q1 Q0 top 1 3e0 myrun",
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-o",
        "out",
        "run.trec",
    ])
    .expect_code(0);
    // q1 ranks top (3.0), then the 1.0 tie alpha before Zeta (byte order
    // descending: 'a' > 'Z'), then msmarco#7 (0.5): relevant at ranks 3 and 4.
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "myrun");
    assert_text(&q1, "stage", "final");
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "n_results", 4.0);
    assert_cell(&q1, "first_rel_rank", 3.0);
    assert_cell(&q1, "recall@3", 0.5);
    assert_cell(&q1, "rr@3", 1.0 / 3.0);
    assert_cell(&q1, "precision@3", 1.0 / 3.0);
    assert_cell(&q1, "ap@3", (1.0 / 3.0) / 2.0);
    assert_cell(&q1, "ndcg@3", discount(3) / (discount(1) + discount(2)));
    assert_text(&q1, "missing_at_3", "msmarco#7");
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_cell(&q2, "first_rel_rank", 2.0);
    assert_cell(&q2, "rr@3", 0.5);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records"), 6);
    assert_eq!(count(&summary, "graded_records"), 6);
    assert_eq!(count(&summary, "rejected"), 0);
}

/// trec_eval keeps a score as a 32-bit float: scores that differ only past
/// the 7th digit (as dense retrievers write them) tie, and the tie breaks
/// by doc id descending. Scores that differ in f32 still rank by score.
#[test]
fn scores_equal_as_32_bit_floats_tie_as_in_trec_eval() {
    let wd = Workdir::new("trec_f32");
    wd.write("qrels.txt", text(&["q1 0 d2 1", "q2 0 d2 1"]));
    wd.write(
        "run.trec",
        text(&[
            "q1 Q0 d1 1 0.06016738602340008 dense",
            "q1 Q0 d2 2 0.06016738602340007 dense",
            "q2 Q0 d1 1 0.0601674 dense",
            "q2 Q0 d2 2 0.0601673 dense",
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "qrels.txt",
        "-k",
        "2",
        "-o",
        "out",
        "run.trec",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_cell(&per_query.row(&[("query_id", "q1")]), "rr@2", 1.0);
    assert_cell(&per_query.row(&[("query_id", "q2")]), "rr@2", 0.5);
}

/// `-k all` grades the whole ranking as trec_eval's uncut measures do:
/// precision over what was retrieved (set_P), nDCG against every judged
/// grade (ndcg), AP (map), rr (recip_rank); `missing_at_all` names what
/// no depth found; an empty ranking has precision 0. compare reads it back.
#[test]
fn k_all_grades_the_whole_ranking() {
    let wd = Workdir::new("k_all");
    wd.write(
        "qrels.txt",
        text(&["q1 0 a 2", "q1 0 b 1", "q1 0 c 1", "q1 0 z 0", "q2 0 a 1"]),
    );
    let run: Vec<String> = ["x", "a", "z", "y", "b", "w"]
        .iter()
        .enumerate()
        .map(|(i, doc)| format!("q1 Q0 {doc} {} {} run", i + 1, 10 - i))
        .collect();
    wd.write("run.trec", text(&run));
    wd.write(
        "empty.jsonl",
        text(&[r#"{"query_id": "q2", "run": "run", "results": []}"#]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "qrels.txt",
        "-k",
        "2,all",
        "-o",
        "out",
        "run.trec",
        "empty.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    // Relevant a (grade 2) at rank 2 and b (grade 1) at rank 5 of 6; c never.
    let dcg = 2.0 * discount(2) + discount(5);
    let idcg = 2.0 * discount(1) + discount(2) + discount(3);
    assert_cell(&q1, "recall@all", 2.0 / 3.0);
    assert_cell(&q1, "rr@all", 0.5);
    assert_cell(&q1, "hit@all", 1.0);
    assert_cell(&q1, "precision@all", 2.0 / 6.0);
    assert_cell(&q1, "ndcg@all", dcg / idcg);
    assert_cell(&q1, "ap@all", (1.0 / 2.0 + 2.0 / 5.0) / 3.0);
    assert_cell(&q1, "precision@2", 0.5);
    assert_text(&q1, "missing_at_all", "c");
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_cell(&q2, "precision@all", 0.0);
    assert_cell(&q2, "recall@all", 0.0);
    assert_eq!(
        wd.read_json("out/summary.json")["settings"]["k"],
        serde_json::json!([2, "all"])
    );
    let compared = wd.rgrade(&["compare", "out", "out", "--metrics", "ap@all,ndcg@all"]);
    compared.expect_code(0);
    assert!(compared.stdout.contains("ap@all"), "{compared}");
}

/// An MS MARCO run (`qid<TAB>docid<TAB>rank`, a header line allowed) is
/// found by its shape, ranked by rank, and named after its file; a bad rank
/// is `bad_rank`, and its ranking is rejected whole. The header line is
/// counted, not rejected.
#[test]
fn msmarco_runs_are_ranked_by_rank_and_named_after_their_file() {
    let wd = Workdir::new("msmarco_run");
    wd.write("qrels.txt", text(&["1 0 7 1", "2 0 9 1"]));
    wd.write(
        "bm25.dev.tsv",
        text(&[
            "qid\tpid\trank",
            "1\t5\t2",
            "1\t7\t3",
            "1\t6\t1",
            "2\t9\t1",
            "2\t8\tfirst",
        ]),
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "qrels.txt",
        "-k",
        "3",
        "-o",
        "out",
        "bm25.dev.tsv",
    ]);
    run.expect_code(1);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "1")]);
    assert_text(&q1, "run", "bm25.dev");
    assert_cell(&q1, "rr@3", 1.0 / 3.0);
    // Query 2's ranking lost its second line: none of it is graded.
    assert_text(&per_query.row(&[("query_id", "2")]), "status", "invalid");
    assert_eq!(
        reject_keys(&wd.read_jsonl("out/rejects.jsonl")),
        in_file(
            "bm25.dev.tsv",
            &[(5, "incomplete_ranking"), (6, "bad_rank")]
        )
    );
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "header_lines"), 1);
    assert_eq!(count(&summary, "records"), 5);
    assert_counts_add_up(&summary);
}

/// A directory yields `.txt` and `.tsv` runs, and skips, naming them, the
/// ones that hold no run; `--run-name file` keeps runs that share a tag
/// apart, and a first line that fits no format says what it looked like.
#[test]
fn text_runs_in_a_directory_and_runs_named_after_files() {
    let wd = Workdir::new("txt_runs");
    wd.write("qrels.txt", text(&["q1 0 a 1"]));
    wd.write(
        "runs/first.txt",
        text(&["q1 Q0 a 1 2.0 rank", "q1 Q0 b 2 1.0 rank"]),
    );
    wd.write(
        "runs/second.txt.gz",
        gzip(text(&["q1 Q0 b 1 2.0 rank", "q1 Q0 a 2 1.0 rank"]).as_bytes()),
    );
    wd.write("runs/notes.txt", "Runs of the spring experiments.\n");
    let grade = |extra: &[&'static str], out: &'static str| {
        let mut args = vec!["grade", "--labels", "qrels.txt", "-k", "2", "-o", out];
        args.extend_from_slice(extra);
        args.push("runs");
        wd.rgrade(&args)
    };
    let by_file = grade(&["--run-name", "file"], "by_file");
    by_file
        .expect_code(0)
        .expect_stderr(&["skipped 1 file", "runs/notes.txt"]);
    let per_query = wd.read_csv("by_file/per_query.csv");
    assert_cell(&per_query.row(&[("run", "first")]), "rr@2", 1.0);
    assert_cell(&per_query.row(&[("run", "second")]), "rr@2", 0.5);
    // By tag, the two files fuse into one ranking with every doc twice:
    // the reject names both places; dedupe keeps one copy, and says so.
    grade(&[], "by_tag").expect_code(1);
    let rejects = wd.read_jsonl("by_tag/rejects.jsonl");
    let detail = rejects[0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("runs/second.txt.gz:1 and runs/first.txt:2")
            && detail.contains("`run_name` file"),
        "{detail}"
    );
    grade(&["--duplicate-docs", "dedupe"], "deduped")
        .expect_code(0)
        .expect_stderr(&[
            "run 'rank'",
            "runs/first.txt, runs/second.txt.gz",
            "--run-name file",
        ]);
    assert_text(
        &wd.read_csv("by_tag/per_query.csv").row(&[("run", "rank")]),
        "status",
        "invalid",
    );

    wd.write("scores.txt", text(&["q1 a 0.5", "q1 b 0.25"]));
    wd.rgrade(&["grade", "--labels", "qrels.txt", "scores.txt"])
        .expect_code(1)
        .expect_stderr(&["scores.txt: read as JSONL", "the third not a whole number"]);
}

/// A TREC run line with fewer than six fields is `bad_trec_line`, one whose
/// score is not a finite number is `bad_score`, and its ranking loses it:
/// the other lines of that ranking are `incomplete_ranking`. A doc listed
/// twice in a ranking rejects every line of it.
#[test]
fn bad_trec_lines_are_rejected() {
    let wd = Workdir::new("bad_trec");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["x"]}"#,
        ]),
    );
    let run_lines = [
        "q1 Q0 a 1 2.0 runA",
        "q1 Q0 b 2",
        "q1 Q0 c 3 high runA",
        "q1 Q0 d 4 nan runA",
        "q2 Q0 x 1 1.0 runA",
        "q2 Q0 x 2 0.5 runA",
        "q1 Q0 e 5 inf runA",
    ];
    wd.write("run.trec", text(&run_lines));
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--max-rejects",
        "7",
        "-o",
        "out",
        "run.trec",
    ])
    .expect_code(1)
    .expect_stderr(&["was rejected, so nothing was graded"]);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let want = in_file(
        "run.trec",
        &[
            (1, "incomplete_ranking"),
            (2, "bad_trec_line"),
            (3, "bad_score"),
            (4, "bad_score"),
            (5, "duplicate_doc"),
            (6, "duplicate_doc"),
            (7, "bad_score"),
        ],
    );
    assert_eq!(reject_keys(&rejects), want);
    for reject in &rejects {
        let line = reject["line"].as_u64().unwrap_or_default() as usize;
        assert_eq!(reject["record"], run_lines[line - 1], "{reject}");
    }
    assert!(
        (rejects[0]["detail"].as_str().unwrap_or_default())
            .contains("a line of query 'q1' in run.trec that names no run was rejected"),
        "{}",
        rejects[0]
    );
    assert!(
        (rejects[2]["detail"].as_str().unwrap_or_default())
            .contains("the ranking of query 'q1' in run 'runA' lost this line"),
        "{}",
        rejects[2]
    );
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "runA");
    assert_text(&q1, "status", "invalid");
    assert_cell(&q1, "rr@10", 0.0);
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_text(&q2, "status", "invalid");
    assert_counts_add_up(&wd.read_json("out/summary.json"));
}

/// A rejected run line never shortens its ranking: graded without it, the
/// documents below it would move up (a relevant document at rank 2 behind
/// a line whose score is NaN would count as rank 1). The ranking is
/// invalid, and scores 0 under `--missing fail` even when `--max-rejects`
/// lets the run exit 0; a ranking that lost no line is graded as before.
#[test]
fn a_rejected_run_line_invalidates_its_ranking() {
    let wd = Workdir::new("trec_lost_line");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
            r#"{"query_id": "q3", "relevant": ["c"]}"#,
        ]),
    );
    wd.write(
        "run.trec",
        text(&[
            "q1 Q0 x 1 nan run",
            "q1 Q0 a 2 5.0 run",
            "q2 Q0 b 1 3.0 run",
            "q3 Q0 c 1 +inf run",
        ]),
    );
    // MS MARCO: ranks that are null, 0, negative or beyond 32 bits.
    wd.write(
        "ranks.tsv",
        text(&[
            "q1\tx\t0",
            "q1\ta\t2",
            "q2\tb\t1",
            "q3\tz\t-1",
            "q3\tc\t2",
            "q3\ty\t4294967296",
        ]),
    );
    // `rgrade grade` of `log` read as `format` at k = 1 into `out`.
    let grade = |log: &str, format: &str, out: &str, extra: &[&str]| {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1",
            "--logs-format",
            format,
        ];
        let mut args = args.to_vec();
        args.extend(extra);
        args.extend(["-o", out, "-q", log]);
        wd.rgrade(&args)
    };
    // (log, format, lines rejected when read, lines of their rankings):
    // q3's TREC ranking is its lost line alone.
    for (log, format, lost, incomplete) in
        [("run.trec", "trec", 2, 1), ("ranks.tsv", "msmarco", 3, 2)]
    {
        let out = format!("out_{format}");
        grade(log, format, &out, &["--max-rejects", "10"]).expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        for (query, status, rr) in [
            ("q1", "invalid", 0.0),
            ("q2", "ok", 1.0),
            ("q3", "invalid", 0.0),
        ] {
            let row = per_query.row(&[("query_id", query)]);
            assert_text(&row, "status", status);
            assert_cell(&row, "rr@1", rr);
        }
        let rejects = wd.read_jsonl(&format!("{out}/rejects.jsonl"));
        let reasons = |reason: &str| rejects.iter().filter(|r| r["reason"] == reason).count();
        assert_eq!(reasons("incomplete_ranking"), incomplete, "{format}");
        assert_eq!(
            reasons(if format == "trec" {
                "bad_score"
            } else {
                "bad_rank"
            }),
            lost
        );
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(
            count(&summary, "graded_records"),
            1,
            "{format}: q2's line alone"
        );
        assert_counts_add_up(&summary);
    }
    // A line whose doc id is not UTF-8, or an MS MARCO line cut short,
    // still names its ranking, which it leaves incomplete; a TREC line cut
    // before its tag names its query only: every ranking of the query in
    // that file is rejected (q2's is not).
    wd.write(
        "garbled.trec",
        b"q1 Q0 caf\xe9 1 9.0 run\nq1 Q0 a 2 5.0 run\n",
    );
    wd.write("short.tsv", "q1\tx\nq1\ta\t2\n");
    let cut_lines = [
        "q1 Q0 a 1 5.0 runA",
        "q1 Q0 a 1 5.0 runB",
        "q2 Q0 b 1 3.0 runA",
        "q1 Q0 x 2 4.0",
    ];
    wd.write("cut.trec", text(&cut_lines));
    let logs = [
        ("garbled.trec", "trec"),
        ("short.tsv", "msmarco"),
        ("cut.trec", "trec"),
    ];
    for (log, format) in logs {
        let out = format!("out_{log}");
        grade(log, format, &out, &[]).expect_code(1);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let statuses = per_query.column("status");
        for (query, status) in per_query.column("query_id").iter().zip(&statuses) {
            assert_eq!(
                query == "q1",
                status == "invalid",
                "{log}: {query} is {status}"
            );
        }
        assert_counts_add_up(&wd.read_json(&format!("{out}/summary.json")));
    }
    let cut = wd.read_csv("out_cut.trec/per_query.csv");
    let runs = cut.column("run").into_iter().zip(cut.column("query_id"));
    let q1_runs: Vec<String> = runs
        .filter(|(_, q)| q == "q1")
        .map(|(run, _)| run)
        .collect();
    assert_eq!(q1_runs, ["runA", "runB"], "q1 is invalid in both runs");
}

/// A TREC run of several 1 MB blocks grades the same whether each query's
/// lines are together (ranked in the block that holds them, or held when
/// at a block's edge), some are far apart in the file or split over two
/// files (read a second time), or it comes on standard input (all held).
#[test]
fn a_long_trec_run_grades_the_same_however_its_lines_are_laid_out() {
    const QUERIES: usize = 2_000;
    const RESULTS: usize = 40;
    let wd = Workdir::new("trec_layouts");
    let mut rng = Pcg64::seed_from_u64(7);
    let mut labels = String::new();
    let mut queries: Vec<Vec<String>> = Vec::new();
    for q in 0..QUERIES {
        labels.push_str(&format!(
            "{{\"query_id\": \"q{q:04}\", \"relevant\": {{\"d{q}_3\": 2, \"d{q}_{}\": 1}}}}\n",
            rng.random_range(4..2 * RESULTS)
        ));
        let lines = (0..RESULTS)
            .map(|d| {
                // Few distinct scores: many ties, broken by doc id.
                let score = f64::from(rng.random_range(0..8u8)) / 4.0;
                format!("q{q:04} Q0 d{q}_{d} {d} {score} run\n")
            })
            .collect();
        queries.push(lines);
    }
    // A doc twice in one ranking: that query's lines are all rejected.
    queries[700][5] = queries[700][9].clone();
    // A line whose score is no number: its ranking is rejected whole,
    // wherever its other lines are (query 1000's first lines move below).
    for (q, d) in [(900, 12), (1000, 3)] {
        queries[q][d] = format!("q{q:04} Q0 d{q}_{d} {d} NaN run\n");
    }
    wd.write("labels.jsonl", &labels);

    let together: String = queries.iter().flatten().cloned().collect();
    assert!(together.len() > 2 << 20, "{} bytes", together.len());
    wd.write("together.trec", &together);
    // Every 50th query's first lines moved to the end of the file.
    let mut far_apart = String::new();
    let mut moved = String::new();
    for (q, lines) in queries.iter().enumerate() {
        let (head, tail) = lines.split_at(if q % 50 == 0 { 10 } else { 0 });
        moved.extend(head.iter().cloned());
        far_apart.extend(tail.iter().cloned());
    }
    far_apart.push_str(&moved);
    wd.write("far_apart.trec", &far_apart);
    // Each query's first half in one file, the rest in the other.
    let (first, second): (String, String) = queries
        .iter()
        .map(|lines| {
            let (a, b) = lines.split_at(RESULTS / 2);
            (a.concat(), b.concat())
        })
        .unzip();
    wd.write("split/1.trec", &first);
    wd.write("split/2.trec", &second);

    let grade = |out: &str, logs: &[&str]| {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-k", "5,20", "-o", out];
        args.extend(logs);
        wd.rgrade(&args).expect_code(1);
    };
    grade("together", &["together.trec"]);
    grade("far_apart", &["far_apart.trec"]);
    grade("split", &["split/1.trec", "split/2.trec"]);
    wd.rgrade_stdin(
        &[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "5,20",
            "-o",
            "stdin",
            "-",
        ],
        together.as_bytes(),
    )
    .expect_code(1);

    let want = wd.read("together/per_query.csv");
    let per_query = wd.read_csv("together/per_query.csv");
    for (query, status) in [
        ("q0700", "invalid"),
        ("q0701", "ok"),
        ("q0900", "invalid"),
        ("q1000", "invalid"),
    ] {
        assert_text(&per_query.row(&[("query_id", query)]), "status", status);
    }
    for layout in ["far_apart", "split", "stdin"] {
        assert_eq!(
            wd.read(&format!("{layout}/per_query.csv")),
            want,
            "{layout} grades like the run with each query's lines together"
        );
        let summary = wd.read_json(&format!("{layout}/summary.json"));
        assert_eq!(count(&summary, "records"), (QUERIES * RESULTS) as u64);
        let rankings_rejected = 3;
        let rejected = (rankings_rejected * RESULTS) as u64;
        assert_eq!(count(&summary, "rejected"), rejected, "{layout}");
        assert_counts_add_up(&summary);
    }
    let lines = |layout: &str| {
        let rejects = wd.read_jsonl(&format!("{layout}/rejects.jsonl"));
        reject_keys(&rejects)
            .into_iter()
            .map(|(_, line, reason)| (line, reason))
            .collect::<Vec<_>>()
    };
    let first_rejected = (700 * RESULTS + 1) as u64;
    assert_eq!(
        lines("together")[0],
        (first_rejected, "duplicate_doc".to_string())
    );
    assert_eq!(lines("stdin"), lines("together"));
}

/// A TREC ranking ranked early in one file and found in another, read a
/// second time, meets a JSONL capture of the same (run, stage, query) as
/// any repeat does; with the JSONL log on standard input, which cannot be
/// read twice, every TREC line is held instead, and the outputs agree.
#[test]
fn a_trec_ranking_read_twice_is_a_repeat_of_a_jsonl_capture() {
    let wd = Workdir::new("trec_read_twice_repeat");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b", "c"]}"#,
            r#"{"query_id": "q3", "relevant": ["d"]}"#,
        ]),
    );
    // q2 lies whole in the middle of a.trec, so it is ranked there, and
    // b.trec has more of it.
    wd.write(
        "a.trec",
        text(&[
            "q1 Q0 a 1 2.0 t",
            "q1 Q0 x 2 1.0 t",
            "q2 Q0 x 1 3.0 t",
            "q2 Q0 c 2 2.0 t",
            "q2 Q0 y 3 1.0 t",
            "q3 Q0 d 1 1.0 t",
            "q3 Q0 z 2 0.5 t",
        ]),
    );
    wd.write(
        "b.trec",
        text(&[
            "q2 Q0 b 4 2.5 t",
            "q2 Q0 w 5 0.1 t",
            "q1 Q0 v 3 0.2 t",
            "q1 Q0 u 4 0.1 t",
        ]),
    );
    let jsonl = text(&[r#"{"query_id": "q2", "run": "t", "results": ["b", "c"]}"#]);
    wd.write("c.jsonl", &jsonl);

    for repeats in ["error", "first", "last", "mean"] {
        let args = |out: &str, last: &str| {
            let args = [
                "grade",
                "--labels",
                "labels.jsonl",
                "-k",
                "3",
                "--repeats",
                repeats,
            ];
            let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            args.extend(["-o", out, "a.trec", "b.trec", last].map(String::from));
            args
        };
        let code = if repeats == "error" { 1 } else { 0 };
        let files = args(&format!("files-{repeats}"), "c.jsonl");
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        wd.rgrade(&files).expect_code(code);
        let piped = args(&format!("piped-{repeats}"), "-");
        let piped: Vec<&str> = piped.iter().map(String::as_str).collect();
        wd.rgrade_stdin(&piped, jsonl.as_bytes()).expect_code(code);

        let per_query = wd.read(&format!("files-{repeats}/per_query.csv"));
        assert_eq!(
            wd.read(&format!("piped-{repeats}/per_query.csv")),
            per_query,
            "--repeats {repeats}: held or read twice, the same grades"
        );
        let lines = |out: &str| {
            let rejects = wd.read_jsonl(&format!("{out}-{repeats}/rejects.jsonl"));
            let keys = reject_keys(&rejects).into_iter();
            keys.map(|(_, line, reason)| (line, reason))
                .collect::<Vec<_>>()
        };
        assert_eq!(lines("piped"), lines("files"), "--repeats {repeats}");
        let table = wd.read_csv(&format!("files-{repeats}/per_query.csv"));
        let q2 = table.row(&[("query_id", "q2")]);
        match repeats {
            "error" => {
                assert_text(&q2, "status", "invalid");
                let repeated = |file: &str, lines: &[u64]| {
                    let rejects: Vec<(u64, &str)> =
                        lines.iter().map(|&l| (l, "repeated_capture")).collect();
                    in_file(file, &rejects)
                };
                let mut want = repeated("a.trec", &[3, 4, 5]);
                want.extend(repeated("b.trec", &[1, 2]));
                want.extend(repeated("c.jsonl", &[1]));
                let rejects = wd.read_jsonl("files-error/rejects.jsonl");
                assert_eq!(reject_keys(&rejects), want, "every line of both captures");
            }
            // The TREC ranking (x 3.0, b 2.5, c 2.0, y, w) starts in a.trec,
            // before the JSONL capture (b, c).
            "first" => assert_cell(&q2, "rr@3", 0.5),
            "last" => assert_cell(&q2, "rr@3", 1.0),
            _ => assert_cell(&q2, "rr@3", 0.75),
        }
        let q1 = table.row(&[("query_id", "q1")]);
        assert_cell(&q1, "n_results", 4.0);
    }
}
