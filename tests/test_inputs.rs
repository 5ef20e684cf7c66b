//! How `rgrade grade` finds and reads its logs: gzip and zstd known by their
//! magic bytes, files, directories, standard input and named pipes, a log
//! read once however it is named, byte-order marks, file names that are not
//! UTF-8, and the field options for records of another shape.

use std::io::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::util::{
    assert_cell, assert_text, count, gzip, in_file, make_fifo, reject_keys, run_command, seed,
    text, zstd_compress, Run, Workdir,
};

/// gzip and zstd logs, named `.jsonl`, `.jsonl.gz`/`.jsonl.zst` or without
/// extension, concatenated members and frames included, are recognised by
/// their magic bytes and grade exactly like the plain file; a truncated
/// stream is an error naming the file (exit 2).
#[test]
fn compressed_logs_are_recognised_by_magic_bytes() {
    let wd = Workdir::new("compressed");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    let half = plain
        .iter()
        .position(|&b| b == b'\n')
        .map_or(plain.len(), |i| i + 1);
    wd.write("plain.jsonl", &plain);
    wd.write_gz("gz-named.jsonl", &plain);
    wd.write_gz("gz-noext", &plain);
    wd.write_gz("proper.jsonl.gz", &plain);
    wd.write_zst("zst-named.jsonl", &plain);
    wd.write_zst("zst-noext", &plain);
    wd.write_zst("proper.jsonl.zst", &plain);
    let mut members = gzip(&plain[..half]);
    members.extend(gzip(&plain[half..]));
    wd.write("members.jsonl.gz", members);
    let mut frames = zstd_compress(&plain[..half]);
    frames.extend(zstd_compress(&plain[half..]));
    wd.write("frames.jsonl.zst", frames);

    let grade = |log: &str| {
        let out = format!("out-{log}");
        let run = wd.rgrade(&[
            "grade",
            "--labels",
            &seed("labels.jsonl"),
            "-k",
            "3",
            "-o",
            &out,
            log,
        ]);
        (run, out)
    };
    let (run, _) = grade("plain.jsonl");
    run.expect_code(0);
    let expected = wd.read("out-plain.jsonl/per_query.csv");
    for log in [
        "gz-named.jsonl",
        "gz-noext",
        "proper.jsonl.gz",
        "zst-named.jsonl",
        "zst-noext",
        "proper.jsonl.zst",
        "members.jsonl.gz",
        "frames.jsonl.zst",
    ] {
        let (run, out) = grade(log);
        run.expect_code(0);
        assert_eq!(
            String::from_utf8_lossy(&wd.read(&format!("{out}/per_query.csv"))),
            String::from_utf8_lossy(&expected),
            "{log} grades like the plain file\n{run}"
        );
        let input = &wd.read_json(&format!("{out}/summary.json"))["inputs"][0];
        assert_eq!(input["decoded_bytes"], plain.len(), "{log}: {input}");
        assert_eq!(input["bytes"], wd.read(log).len(), "{log}: {input}");
    }

    let gz = gzip(&plain);
    wd.write("cut.jsonl.gz", &gz[..gz.len() / 2]);
    let zst = zstd_compress(&plain);
    wd.write("cut.jsonl.zst", &zst[..zst.len() / 2]);
    for log in ["cut.jsonl.gz", "cut.jsonl.zst"] {
        let (run, out) = grade(log);
        run.expect_code(2).expect_stderr(&[log]);
        assert!(
            !wd.exists(&format!("{out}/per_query.csv")),
            "{log}: nothing graded"
        );
    }
}

/// A missing log file is an error naming it (exit 2), and so is standard
/// input that holds nothing (no input holds a record); `-` reads standard
/// input; a directory is walked in sorted order for the log file names
/// only, other files ignored. (An empty file beside others is an input of
/// no records: `test_parts`.)
#[test]
fn log_inputs_files_stdin_and_directories() {
    let wd = Workdir::new("log_inputs");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    wd.write("plain.jsonl", &plain);
    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-o",
        "bad",
        "plain.jsonl",
        "nope.jsonl",
    ])
    .expect_code(2)
    .expect_stderr(&["nope.jsonl"]);
    assert!(!wd.exists("bad/per_query.csv"), "nothing graded");
    wd.rgrade_stdin(&["grade", "--labels", &labels, "-"], b"")
        .expect_code(2);

    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-k",
        "3",
        "-o",
        "file",
        "plain.jsonl",
    ])
    .expect_code(0);
    wd.rgrade_stdin(
        &["grade", "--labels", &labels, "-k", "3", "-o", "stdin", "-"],
        &plain,
    )
    .expect_code(0);
    assert_eq!(
        wd.read("stdin/per_query.csv"),
        wd.read("file/per_query.csv"),
        "stdin grades like the file"
    );
    assert_eq!(wd.read_json("stdin/summary.json")["inputs"][0]["path"], "-");

    // One capture per file; the unnamed run in JSONL, run "t" in TREC.
    let event = |q: &str, docs: &str| format!(r#"{{"query_id": "{q}", "results": [{docs}]}}"#);
    wd.write(
        "logs/a.jsonl",
        text(&[&event("q_export", r#""export_csv""#)]),
    );
    wd.write_gz(
        "logs/sub/b.jsonl.gz",
        text(&[&event(
            "q_reset",
            r#""billing", "reset_steps", "reset_limits""#,
        )]),
    );
    wd.write_zst(
        "logs/c.jsonl.zst",
        text(&[&event("q_sharing", r#""profile", "share_roles""#)]),
    );
    wd.write("logs/d.trec", text(&["q_export Q0 export_csv 1 1.0 t"]));
    wd.write("logs/e.run", text(&["q_reset Q0 reset_steps 1 1.0 t"]));
    for ignored in [
        "logs/notes.txt",
        "logs/f.json",
        "logs/g.jsonl.bak",
        "logs/README",
    ] {
        wd.write(ignored, "this is not a log line\n");
    }
    wd.rgrade(&["grade", "--labels", &labels, "-k", "3", "-o", "dir", "logs"])
        .expect_code(0);
    let summary = wd.read_json("dir/summary.json");
    let inputs: Vec<&str> = summary["inputs"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        inputs,
        [
            "logs/a.jsonl",
            "logs/c.jsonl.zst",
            "logs/d.trec",
            "logs/e.run",
            "logs/sub/b.jsonl.gz",
        ]
    );
    assert_eq!(count(&summary, "records"), 5);
    assert_eq!(count(&summary, "rejected"), 0);
    let per_query = wd.read_csv("dir/per_query.csv");
    for (run, query, status, recall) in [
        ("", "q_export", "ok", "1"),
        ("", "q_reset", "ok", "1"),
        ("", "q_sharing", "ok", "0.5"),
        ("t", "q_export", "ok", "1"),
        ("t", "q_reset", "ok", "0.5"),
        ("t", "q_sharing", "missing", "0"),
    ] {
        let row = per_query.row(&[("run", run), ("query_id", query)]);
        assert_text(&row, "status", status);
        assert_text(&row, "recall@3", recall);
    }
}

/// The UTF-8 byte-order mark some Windows tools write is not part of the
/// first query id or record: labels (JSONL, TREC qrels, CSV, detected by
/// content) and logs (JSONL plain, gzip and from stdin, TREC run) that
/// start with one grade exactly like the same files without it, and a
/// record excerpt read back from such a log does not carry the mark.
#[test]
fn a_byte_order_mark_is_ignored() {
    const BOM: &str = "\u{feff}";
    let wd = Workdir::new("bom");
    let labels_jsonl = text(&[
        r#"{"query_id": "q1", "relevant": ["a"]}"#,
        r#"{"query_id": "q2", "relevant": ["b"]}"#,
    ]);
    wd.write("labels.jsonl", format!("{BOM}{labels_jsonl}"));
    wd.write("labels.qrels", format!("{BOM}q1 0 a 1\nq2 0 b 1\n"));
    wd.write("labels.csv", format!("{BOM}query_id,doc_id\nq1,a\nq2,b\n"));
    let records = text(&[
        r#"{"query_id": "q1", "results": ["a", "x"]}"#,
        r#"{"query_id": "q2", "results": ["x", "b"]}"#,
    ]);
    wd.write("plain.jsonl", format!("{BOM}{records}"));
    wd.write_gz("gz.jsonl.gz", format!("{BOM}{records}"));
    wd.write(
        "run.trec",
        format!("{BOM}q1 Q0 a 1 2.0 t\nq1 Q0 x 2 1.0 t\nq2 Q0 x 1 2.0 t\nq2 Q0 b 2 1.0 t\n"),
    );

    // (labels, log or stdin, out, run name, labels format in summary.json)
    let cases = [
        ("labels.jsonl", "plain.jsonl", "jsonl", "", "jsonl"),
        ("labels.qrels", "plain.jsonl", "qrels", "", "trec"),
        ("labels.csv", "plain.jsonl", "csv", "", "csv"),
        ("labels.jsonl", "gz.jsonl.gz", "gz", "", "jsonl"),
        ("labels.jsonl", "-", "stdin", "", "jsonl"),
        ("labels.jsonl", "run.trec", "trec", "t", "jsonl"),
    ];
    for (labels, log, out, run_name, format) in cases {
        let args = ["grade", "--labels", labels, "-k", "2", "-o", out, log];
        let run = if log == "-" {
            wd.rgrade_stdin(&args, format!("{BOM}{records}").as_bytes())
        } else {
            wd.rgrade(&args)
        };
        run.expect_code(0);
        assert_eq!(wd.read(&format!("{out}/rejects.jsonl")), b"", "{run}");
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        assert_eq!(per_query.column("query_id"), ["q1", "q2"], "{labels} {log}");
        for (query, rr) in [("q1", 1.0), ("q2", 0.5)] {
            let row = per_query.row(&[("run", run_name), ("query_id", query)]);
            assert_text(&row, "status", "ok");
            assert_cell(&row, "rr@2", rr);
        }
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(summary["labels"]["format"], format, "{labels}");
        assert_eq!(count(&summary, "graded"), 2, "{log}");
    }

    // A repeated capture on the first line is reported once every record
    // was read, its excerpt read back from the file: without the mark.
    let first = r#"{"query_id": "q1", "results": ["a"]}"#;
    wd.write("repeat.jsonl", format!("{BOM}{}", text(&[first, first])));
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--max-rejects",
        "2",
        "-o",
        "repeat",
        "repeat.jsonl",
    ])
    .expect_code(1)
    .expect_stderr(&["was rejected, so nothing was graded"]);
    let rejects = wd.read_jsonl("repeat/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file(
            "repeat.jsonl",
            &[(1, "repeated_capture"), (2, "repeated_capture")]
        )
    );
    assert_eq!(rejects[0]["record"], first, "no mark in the excerpt");
}

/// Run `rgrade args` in `wd` while a thread writes `log` into the named
/// pipe `fifo`; the writer is released even if rgrade never opens the pipe.
fn rgrade_with_fifo(wd: &Workdir, args: &[&str], fifo: &str, log: &[u8]) -> Run {
    let path = wd.path(fifo);
    let bytes = log.to_vec();
    let writer = std::thread::spawn({
        let path = path.clone();
        move || -> std::io::Result<()> {
            // Blocks until a reader opens the pipe.
            let mut pipe = std::fs::OpenOptions::new().write(true).open(&path)?;
            pipe.write_all(&bytes)
        }
    });
    let mut cmd = wd.command(args);
    let child = cmd.spawn().expect("rgrade starts");
    let run = Run::wait(&cmd, child, Duration::from_secs(60));
    // Opening a FIFO for reading and writing never blocks on Linux, and
    // lets a writer still waiting for a reader go on (the log is smaller
    // than the pipe's buffer).
    let release = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path);
    let written = writer.join().expect("the writer thread panicked");
    drop(release);
    assert!(written.is_ok(), "writing into the pipe: {written:?}\n{run}");
    run
}

/// A named pipe (`<(zcat logs.gz)`, `mkfifo`) is a log input like any
/// other: read once, as it is written, and graded like the same records in
/// a file; a repeated capture in it is reported with an empty excerpt
/// rather than by opening the pipe again.
#[test]
fn a_named_pipe_is_read_as_a_log() {
    let wd = Workdir::new("fifo");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    if !make_fifo(&wd.path("pipe.jsonl")) {
        return;
    }
    wd.write("file.jsonl", &plain);
    wd.rgrade(&["grade", "--labels", &labels, "-o", "file", "file.jsonl"])
        .expect_code(0);

    let run = rgrade_with_fifo(
        &wd,
        &["grade", "--labels", &labels, "-o", "fifo", "pipe.jsonl"],
        "pipe.jsonl",
        &plain,
    );
    run.expect_code(0);
    assert_eq!(
        String::from_utf8_lossy(&wd.read("fifo/per_query.csv")),
        String::from_utf8_lossy(&wd.read("file/per_query.csv")),
        "the pipe grades like the file\n{run}"
    );
    let summary = wd.read_json("fifo/summary.json");
    assert_eq!(summary["inputs"][0]["path"], "pipe.jsonl");
    assert_eq!(count(&summary, "graded"), 3);
    assert_eq!(count(&summary, "rejected"), 0);

    let repeated = r#"{"query_id": "q_export", "results": ["export_csv"]}"#;
    let run = rgrade_with_fifo(
        &wd,
        &[
            "grade",
            "--labels",
            &labels,
            "--max-rejects",
            "2",
            "-o",
            "repeat",
            "pipe.jsonl",
        ],
        "pipe.jsonl",
        text(&[repeated, repeated]).as_bytes(),
    );
    run.expect_code(1)
        .expect_stderr(&["was rejected, so nothing was graded"]);
    let rejects = wd.read_jsonl("repeat/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file(
            "pipe.jsonl",
            &[(1, "repeated_capture"), (2, "repeated_capture")]
        )
    );
    assert_eq!(rejects[0]["record"], "", "a pipe cannot be read twice");
}

/// A directory walk does not follow symbolic links to directories, so a
/// link back to the directory itself (even one named like a log) reads
/// each log once: no `repeated_capture`, exit 0. Naming the same log
/// twice, directly or through its directory, is an error naming it
/// (exit 2), since its records would be counted twice.
#[test]
fn a_log_is_read_once_whatever_leads_to_it() {
    let wd = Workdir::new("symlinks");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    wd.write("logs/a.jsonl", &plain);
    wd.write("plain.jsonl", &plain);
    std::os::unix::fs::symlink(wd.path("logs"), wd.path("logs/self")).expect("symlink");
    std::os::unix::fs::symlink(".", wd.path("logs/loop.jsonl")).expect("symlink");
    std::fs::create_dir_all(wd.path("logs/sub")).expect("mkdir");
    std::os::unix::fs::symlink("..", wd.path("logs/sub/up")).expect("symlink");

    wd.rgrade(&["grade", "--labels", &labels, "-k", "3", "-o", "out", "logs"])
        .expect_code(0);
    assert_eq!(wd.read("out/rejects.jsonl"), b"");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["inputs"].as_array().map(Vec::len), Some(1));
    assert_eq!(summary["inputs"][0]["path"], "logs/a.jsonl");
    assert_eq!(count(&summary, "records"), 3);
    assert_eq!(count(&summary, "repeats"), 0);
    for row in wd.read_csv("out/per_query.csv").records() {
        assert_text(&row, "status", "ok");
        assert_cell(&row, "captures", 1.0);
    }

    // A hard link is the same file under a second name.
    std::fs::hard_link(wd.path("plain.jsonl"), wd.path("linked.jsonl")).expect("hard link");
    for (twice, named) in [
        (["plain.jsonl", "plain.jsonl"], "plain.jsonl"),
        (["plain.jsonl", "./plain.jsonl"], "plain.jsonl"),
        (["logs", "logs/a.jsonl"], "logs/a.jsonl"),
        (["plain.jsonl", "linked.jsonl"], "linked.jsonl"),
    ] {
        let mut args = vec!["grade", "--labels", &labels, "-o", "twice"];
        args.extend(twice);
        wd.rgrade(&args)
            .expect_code(2)
            .expect_stderr(&[named, "given twice"]);
        assert!(
            !wd.exists("twice/per_query.csv"),
            "{twice:?}: nothing graded"
        );
    }
}

/// A file name that is not UTF-8 is a file name like any other: a missing
/// one is an error naming it (shown lossily, exit 2, no panic), whether
/// log or labels, and an existing one grades, into an output directory
/// whose name is not UTF-8 either.
#[test]
fn file_names_that_are_not_utf8() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let wd = Workdir::new("non_utf8_names");
    let labels = seed("labels.jsonl");
    let log = OsStr::from_bytes(b"\xff.jsonl");
    let run = run_command(wd.command(&["grade", "--labels", &labels]).arg(log));
    run.expect_code(2).expect_stderr(&["\u{fffd}.jsonl"]);
    assert!(!run.stderr.contains("panicked"), "{run}");

    let run = run_command(
        wd.command(&["grade", "--labels"])
            .arg(OsStr::from_bytes(b"l\xfe.jsonl"))
            .arg(seed("logs.jsonl")),
    );
    run.expect_code(2).expect_stderr(&["l\u{fffd}.jsonl"]);
    assert!(!run.stderr.contains("panicked"), "{run}");

    std::fs::write(
        wd.root().join(log),
        std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate"),
    )
    .expect("writing the log");
    let out = OsStr::from_bytes(b"out\xff");
    let run = run_command(
        wd.command(&["grade", "--labels", &labels, "-k", "3", "-o"])
            .arg(out)
            .arg(log),
    );
    run.expect_code(0);
    let summary: Value = serde_json::from_slice(
        &std::fs::read(wd.root().join(out).join("summary.json")).expect("summary.json written"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["inputs"][0]["path"], "\u{fffd}.jsonl");
    assert_eq!(count(&summary, "graded"), 3);
}

/// The field options map records of another shape: JSON pointers for the
/// query, results, stage, run and latency, a top-level key for the context
/// size, `--doc-field` for the key of a result object's doc id.
#[test]
fn field_options_map_other_record_shapes() {
    let wd = Workdir::new("field_mapping");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": 2, "relevant": ["c"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"request": {"qid": "q1", "hits": [{"id": "a", "doc_id": "WRONG"}, {"id": "b"}]}, "meta": {"pipeline": "rerank", "variant": "v2"}, "timing": {"ms": 12.5}, "ctx": 300}"#,
            r#"{"request": {"qid": 2, "hits": [{"id": "x"}, {"id": "c", "doc_id": "a"}]}, "meta": {"pipeline": "rerank", "variant": "v2"}, "timing": {"ms": 7.5}, "ctx": 100}"#,
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "--query-field",
        "/request/qid",
        "--results-field",
        "/request/hits",
        "--doc-field",
        "id",
        "--stage-field",
        "/meta/pipeline",
        "--run-field",
        "/meta/variant",
        "--latency-field",
        "/timing/ms",
        "--context-field",
        "ctx",
        "-o",
        "mapped",
        "logs.jsonl",
    ])
    .expect_code(0);
    assert_eq!(wd.read("mapped/rejects.jsonl"), b"");
    let per_query = wd.read_csv("mapped/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "v2");
    assert_text(&q1, "stage", "rerank");
    assert_cell(&q1, "rr@2", 1.0);
    assert_cell(&q1, "latency_ms", 12.5);
    assert_cell(&q1, "context_tokens", 300.0);
    let q2 = per_query.row(&[("query_id", "2")]);
    assert_cell(&q2, "rr@2", 0.5);
    assert_cell(&q2, "latency_ms", 7.5);
    let overall = wd
        .read_csv("mapped/aggregates.csv")
        .row(&[("task", "*"), ("language", "*")]);
    assert_cell(&overall, "latency_p50_ms", 10.0);
    assert_cell(&overall, "context_tokens_mean", 200.0);

    // Without the mapping, the same records lack a query id.
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "unmapped",
        "logs.jsonl",
    ])
    .expect_code(1);
    let reasons: Vec<String> = reject_keys(&wd.read_jsonl("unmapped/rejects.jsonl"))
        .into_iter()
        .map(|(_, _, reason)| reason)
        .collect();
    assert_eq!(reasons, ["missing_query_id", "missing_query_id"]);
}

/// `--doc-field` takes a JSON pointer into each result object, like the
/// other field options: `/meta/id` reads `{"meta": {"id": "a"}}`; a
/// plain string result is still a doc id, and an object without that
/// field is a `bad_result` even if it has an `id`.
#[test]
fn doc_field_takes_a_json_pointer() {
    let wd = Workdir::new("doc_field_pointer");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["c"]}"#,
            r#"{"query_id": "q3", "relevant": ["b"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": [{"meta": {"id": "x"}}, {"meta": {"id": "a"}}]}"#,
            r#"{"query_id": "q2", "results": ["c", {"meta": {"id": "y"}, "id": "c"}]}"#,
            r#"{"query_id": "q3", "results": [{"id": "b"}]}"#,
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "--doc-field",
        "/meta/id",
        "--max-rejects",
        "1",
        "-o",
        "out",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "rr@2", 0.5);
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_text(&q2, "status", "ok");
    assert_cell(&q2, "rr@2", 1.0);
    assert_cell(&q2, "n_results", 2.0);
    assert_text(&per_query.row(&[("query_id", "q3")]), "status", "invalid");
    assert_eq!(
        reject_keys(&wd.read_jsonl("out/rejects.jsonl")),
        in_file("logs.jsonl", &[(3, "bad_result")])
    );
}

/// A log directory never yields rgrade's own outputs: with `-o` inside it,
/// or an earlier run's directory below it, complete or not, their
/// rejects.jsonl is not read as a log, so grading again gives the same
/// outputs.
#[test]
fn a_log_directory_never_yields_rgrade_outputs() {
    let wd = Workdir::new("outputs_in_logs");
    let labels = seed("labels.jsonl");
    let logs = std::fs::read_to_string(seed("logs.jsonl")).expect("seed logs");
    wd.write("logs/day.jsonl", format!("{logs}not json\n"));
    let grade_into = |out: &str| {
        let args = [
            "grade",
            "--labels",
            &labels,
            "--max-rejects",
            "1",
            "-o",
            out,
            "logs",
        ];
        wd.rgrade(&args).expect_code(0);
    };
    grade_into("logs/out");
    let first = wd.read("logs/out/rejects.jsonl");
    assert_eq!(
        reject_keys(&wd.read_jsonl("logs/out/rejects.jsonl")).len(),
        1
    );
    let first_summary = wd.read_json("logs/out/summary.json");

    grade_into("logs/out");
    assert_eq!(wd.read("logs/out/rejects.jsonl"), first, "the same rejects");
    let summary = wd.read_json("logs/out/summary.json");
    assert_eq!(
        summary["inputs"], first_summary["inputs"],
        "the same inputs"
    );

    // An earlier grading kept below the logs, and graded into elsewhere.
    std::fs::rename(wd.path("logs/out"), wd.path("logs/archive")).expect("rename");
    grade_into("now");
    assert_eq!(wd.read("now/rejects.jsonl"), first);
    assert_eq!(
        wd.read_json("now/summary.json")["inputs"],
        first_summary["inputs"]
    );

    // A run killed there took the lock and removed summary.json first:
    // what it left is no log either, even an empty rejects.jsonl.
    for left in ["per_query.csv", "summary.json", "aggregates.csv"] {
        let _ = std::fs::remove_file(wd.path(&format!("logs/archive/{left}")));
    }
    wd.write("logs/archive/rejects.jsonl", "");
    assert!(wd.exists("logs/archive/.rgrade.lock"));
    grade_into("again");
    assert_eq!(wd.read("again/rejects.jsonl"), first);
}

/// A JSON object that names a key twice: the first occurrence counts, in
/// log records and labels alike (docs/reference.md, Input formats).
#[test]
fn the_first_of_a_key_named_twice_counts() {
    let wd = Workdir::new("duplicate_keys");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"], \"relevant\": [\"b\"]}\n",
    );
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q1\", \"query_id\": \"q2\", \"results\": [\"a\"], \"results\": [\"b\"]}\n",
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(0);
    let row = wd.read_csv("out/per_query.csv").row(&[("query_id", "q1")]);
    assert_text(&row, "status", "ok");
    assert_cell(&row, "recall@1", 1.0);
}
