//! Partial gradings and `rgrade merge` through the binary: shards of logs
//! partitioned by query id, merged, write what one grading writes; shards
//! that do not fit together are refused, naming why.

use std::io::Read;

use serde_json::Value;

use crate::util::{repo_path, summary_without, Workdir, RUN_KEYS};

/// The realistic sample's labels.
const LABELS: &str = "data-samples/realistic/labels.jsonl";

/// grade's options in every run here: stage loss, repeats and rejects,
/// as the realistic sample needs them.
const OPTIONS: [&str; 8] = [
    "-k",
    "1,5,10",
    "--repeats",
    "last",
    "--max-rejects",
    "10",
    "--stage-order",
    "retrieve,final",
];

/// Split the realistic sample's logs by query id into `shards` files in
/// `wd` (`shard0.jsonl`, ...); a line that names no query goes to the
/// first. Returns their names.
fn split_sample(wd: &Workdir, shards: usize) -> Vec<String> {
    let mut parts = vec![Vec::new(); shards];
    for name in ["part-000.jsonl", "part-001.jsonl.gz"] {
        let path = repo_path(&format!("data-samples/realistic/logs/{name}"));
        let mut bytes = Vec::new();
        let file = std::fs::File::open(&path).unwrap();
        if name.ends_with(".gz") {
            flate2::read::MultiGzDecoder::new(file)
                .read_to_end(&mut bytes)
                .unwrap();
        } else {
            bytes = std::fs::read(&path).unwrap();
        }
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let query = serde_json::from_slice::<Value>(line)
                .ok()
                .map(|record| record["query_id"].to_string())
                .unwrap_or_default();
            let shard = query.bytes().map(usize::from).sum::<usize>() % shards;
            parts[if query.is_empty() { 0 } else { shard }].extend_from_slice(line);
        }
    }
    (0..shards)
        .map(|shard| {
            let name = format!("shard{shard}.jsonl");
            wd.write(&name, &parts[shard]);
            name
        })
        .collect()
}

/// `rgrade grade` with [`OPTIONS`] and `args` in `wd`.
fn grade(wd: &Workdir, args: &[&str]) -> crate::util::Run {
    let labels = repo_path(LABELS).display().to_string();
    let mut all = vec!["grade", "--labels", &labels];
    all.extend_from_slice(&OPTIONS);
    all.extend_from_slice(args);
    wd.rgrade(&all)
}

/// `rgrade merge` of `shards` into `out`, in `wd`.
fn merge(wd: &Workdir, out: &str, shards: &[&str]) -> crate::util::Run {
    let labels = repo_path(LABELS).display().to_string();
    let mut all = vec![
        "merge",
        "--labels",
        &labels,
        "--max-rejects",
        "10",
        "-o",
        out,
    ];
    all.extend_from_slice(shards);
    wd.rgrade(&all)
}

/// Three shards graded apart and merged write every file one grading of
/// the three writes, byte for byte, and summary.json but for its command
/// line and timing: missing queries, rejects and their excerpts, stage
/// loss, stale labels, percentiles, the report.
#[test]
fn merged_shards_write_what_one_grading_writes() {
    let wd = Workdir::new("merge_sample");
    let shards = split_sample(&wd, 3);
    let mut one = vec!["-q", "-o", "one"];
    one.extend(shards.iter().map(String::as_str));
    grade(&wd, &one).expect_code(0);
    for (i, shard) in shards.iter().enumerate() {
        let dir = format!("partial{i}");
        let run = grade(&wd, &["--partial", "-o", &dir, shard]);
        run.expect_code(0);
        assert!(run.stdout.contains("captured queries"), "{run}");
        assert!(wd.exists(&format!("{dir}/partial.json")));
        assert!(!wd.exists(&format!("{dir}/per_query.csv")));
    }
    let run = merge(&wd, "merged", &["partial0", "partial1", "partial2"]);
    run.expect_code(0);
    assert!(run.stdout.contains("recall@10"), "{run}");

    let mut files: Vec<String> = std::fs::read_dir(wd.path("one"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.starts_with('.'))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for file in &files {
        let (one, merged) = (
            wd.read(&format!("one/{file}")),
            wd.read(&format!("merged/{file}")),
        );
        if file == "summary.json" {
            assert_eq!(
                summary_without(&one, &RUN_KEYS),
                summary_without(&merged, &RUN_KEYS),
                "summary.json"
            );
        } else {
            assert!(
                one == merged,
                "{file} differs between one grading and the merge"
            );
        }
    }
    let rejects = wd.read_jsonl("merged/rejects.jsonl");
    assert!(!rejects.is_empty(), "the sample's rejects are merged too");
}

/// One shard named twice is refused as such, and so is one input graded
/// into two shards. So are shards graded with other options or other
/// labels, and directories that are not complete partial gradings. A query
/// whose captures are in two shards is no misfit under `--repeats last`:
/// the merge keeps the latest, as one grading of every file does.
#[test]
fn shards_that_do_not_fit_together_are_refused() {
    let wd = Workdir::new("merge_refused");
    let shards = split_sample(&wd, 2);
    grade(&wd, &["--partial", "-o", "a", &shards[0]]).expect_code(0);
    grade(&wd, &["--partial", "-o", "b", &shards[1]]).expect_code(0);
    // Shard b's queries in another file: captured in two shards.
    let respaced = wd.read_text(&shards[1]).replace("}\n", "} \n");
    wd.write("again.jsonl", respaced);
    grade(&wd, &["--partial", "-o", "again", "again.jsonl"]).expect_code(0);
    merge(&wd, "latest", &["a", "b", "again"]).expect_code(0);
    grade(
        &wd,
        &["-q", "-o", "one", &shards[0], &shards[1], "again.jsonl"],
    )
    .expect_code(0);
    for file in ["per_query.csv", "aggregates.csv", "rejects.jsonl"] {
        let (one, merged) = (
            wd.read(&format!("one/{file}")),
            wd.read(&format!("latest/{file}")),
        );
        assert!(
            one == merged,
            "{file} differs between one grading and the merge"
        );
    }
    merge(&wd, "out", &["a", "b", "./a"])
        .expect_code(2)
        .expect_stderr(&["./a: shard is given twice"]);
    // A retried task: the same input graded into two shards. It holds no
    // labeled capture, so no query is captured twice, but its records
    // would be counted twice.
    wd.write(
        "unlabeled.jsonl",
        "{\"query_id\": \"nobody\", \"results\": [\"x\"]}\n",
    );
    grade(&wd, &["--partial", "-o", "task", "unlabeled.jsonl"]).expect_code(0);
    grade(&wd, &["--partial", "-o", "retried", "unlabeled.jsonl"]).expect_code(0);
    merge(&wd, "out", &["a", "task", "retried"])
        .expect_code(2)
        .expect_stderr(&["unlabeled.jsonl was graded by two shards, retried and task"]);
    // The same file reached by another path, or a link, is the same input.
    std::fs::hard_link(wd.path("unlabeled.jsonl"), wd.path("linked.jsonl")).unwrap();
    let absolute = wd.path("unlabeled.jsonl").display().to_string();
    for (shard, log) in [("by_path", absolute.as_str()), ("by_link", "linked.jsonl")] {
        grade(&wd, &["--partial", "-o", shard, log]).expect_code(0);
        merge(&wd, "out", &["a", "task", shard])
            .expect_code(2)
            .expect_stderr(&[&format!("was graded by two shards, {shard} and task")]);
    }
    assert!(!wd.exists("out/summary.json"));

    let labels = repo_path(LABELS).display().to_string();
    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-k",
        "3",
        "--partial",
        "-o",
        "k3",
        &shards[1],
    ])
    .expect_code(0);
    merge(&wd, "out", &["a", "k3"])
        .expect_code(2)
        .expect_stderr(&["k3: graded with other options than a"]);

    wd.write(
        "other.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"d\"]}\n",
    );
    wd.rgrade(&["merge", "--labels", "other.jsonl", "-o", "out", "a"])
        .expect_code(2)
        .expect_stderr(&["a: graded with other labels than other.jsonl"]);

    let mut one = vec!["-q", "-o", "full"];
    one.extend(shards.iter().map(String::as_str));
    grade(&wd, &one).expect_code(0);
    merge(&wd, "out", &["a", "full"])
        .expect_code(2)
        .expect_stderr(&["full/partial.json: cannot open: not a partial grading"]);

    // A shard cut short (its captures changed since partial.json was written).
    let captures = wd.read("b/captures.postcard.zst");
    wd.write("b/captures.postcard.zst", &captures[..captures.len() / 2]);
    merge(&wd, "out", &["a", "b"])
        .expect_code(2)
        .expect_stderr(&["captures.postcard.zst: does not match"]);

    merge(&wd, "a", &["a", "b"])
        .expect_code(2)
        .expect_stderr(&["a: the output directory is one of the shards"]);
    assert!(wd.exists("a/partial.json"), "the shard is left as it was");

    wd.rgrade(&["grade", "--labels", &labels, "--partial", &shards[0]])
        .expect_code(2)
        .expect_stderr(&["--out"]);
}

/// Shards graded `--as-of` a night merge into that night, as trend orders
/// nightly gradings by it; shards graded for different times, or a merge
/// told another time than its shards', are refused.
#[test]
fn shards_graded_as_of_a_night_merge_into_it() {
    let wd = Workdir::new("merge_as_of");
    let shards = split_sample(&wd, 2);
    let night = ["--as-of", "2026-12-01"];
    for (dir, shard, as_of) in [
        ("a", &shards[0], &night[..]),
        ("b", &shards[1], &night[..]),
        ("later", &shards[1], &["--as-of", "2026-12-02"][..]),
        ("unset", &shards[1], &[][..]),
    ] {
        let mut args = vec!["--partial", "-o", dir];
        args.extend(as_of);
        args.push(shard);
        grade(&wd, &args).expect_code(0);
    }
    merge(&wd, "merged", &["a", "b"]).expect_code(0);
    let summary = wd.read_json("merged/summary.json");
    assert_eq!(summary["as_of"], "2026-12-01T00:00:00Z");

    merge(&wd, "out", &["a", "later"])
        .expect_code(2)
        .expect_stderr(&[
            "later: graded --as-of 2026-12-02T00:00:00Z, a: graded --as-of 2026-12-01T00:00:00Z",
        ]);
    merge(&wd, "out", &["a", "unset"])
        .expect_code(2)
        .expect_stderr(&["unset: graded without --as-of"]);
    let mut told = vec!["--as-of", "2026-12-03"];
    told.extend(["a", "b"]);
    merge(&wd, "out", &told)
        .expect_code(2)
        .expect_stderr(&["--as-of 2026-12-03T00:00:00Z, but a was graded --as-of 2026-12-01"]);
    assert!(!wd.exists("out/summary.json"));
    // The same time given again is no conflict.
    let mut same = night.to_vec();
    same.extend(["a", "b"]);
    merge(&wd, "again", &same).expect_code(0);
    assert_eq!(
        wd.read_json("again/summary.json")["as_of"],
        "2026-12-01T00:00:00Z"
    );
}

/// A partial grading is the same bytes whatever the thread count: the
/// order workers hand captures over in leaves no trace in its file.
#[test]
fn partial_gradings_are_the_same_bytes_at_any_thread_count() {
    let wd = Workdir::new("partial_threads");
    let logs = repo_path("data-samples/realistic/logs")
        .display()
        .to_string();
    let captures: Vec<Vec<u8>> = ["1", "2", "3"]
        .iter()
        .map(|threads| {
            let dir = format!("partial-j{threads}");
            grade(&wd, &["--partial", "-j", threads, "-o", &dir, &logs]).expect_code(0);
            wd.read(&format!("{dir}/captures.postcard.zst"))
        })
        .collect();
    assert!(captures[0] == captures[1], "-j 1 and -j 2 differ");
    assert!(captures[0] == captures[2], "-j 1 and -j 3 differ");
}
