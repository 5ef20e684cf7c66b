//! Path arguments that are URIs (docs/reference.md, "Object storage"): a
//! scheme rgrade does not support is refused, exit 2, before anything is
//! read or written, and a result is never written to a local folder named
//! after a URI's scheme (`-o s3://bucket/night` made `./s3:` once). What
//! is read from and written to object storage is tested against an
//! S3-compatible server in python/tests/test_objects.py.

use crate::util::{seed, Workdir};

/// `rgrade grade` of the worked example with `args`, in a fresh workdir:
/// its exit status 2, stderr naming `shown`, and nothing written there.
fn refused(test: &str, args: &[&str], shown: &str) {
    let wd = Workdir::new(test);
    let labels = seed("labels.jsonl");
    let mut all = vec!["grade", "--labels", &labels, "-k", "3", "-q"];
    all.extend_from_slice(args);
    let run = wd.rgrade(&all);
    run.expect_code(2);
    assert!(run.stderr.contains(shown), "{}", run.stderr);
    let written: Vec<_> = std::fs::read_dir(wd.path("."))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn unsupported_schemes_are_refused_wherever_a_path_goes() {
    let logs = seed("logs.jsonl");
    let unsupported = "does not read or write";
    refused("uri_logs", &["hdfs://namenode/logs"], unsupported);
    refused("uri_out", &["-o", "ftp://host/night", &logs], unsupported);
    refused(
        "uri_metrics",
        &["--openmetrics", "ftp://host/m.prom", &logs],
        unsupported,
    );
    let labels_run = Workdir::new("uri_labels");
    let run = labels_run.rgrade(&["grade", "--labels", "http://host/labels.jsonl", &logs]);
    run.expect_code(2);
    assert!(run.stderr.contains(unsupported), "{}", run.stderr);
}

#[test]
fn results_are_never_written_to_a_folder_named_after_a_uri() {
    let logs = seed("logs.jsonl");
    for out in [
        "s3://bucket/night",
        "gs://bucket/night",
        "az://container/night",
    ] {
        refused(
            "uri_no_folder",
            &["-o", out, &logs],
            &format!("{out}: an output directory"),
        );
    }
    let metrics = "s3://bucket/night/metrics.prom";
    refused("uri_no_file", &["--openmetrics", metrics, &logs], metrics);
}

#[test]
fn a_secret_in_a_refused_uri_is_not_repeated() {
    let logs = seed("logs.jsonl");
    let out = "ftp://user:hunter2@host/night?sig=s3cret";
    let wd = Workdir::new("uri_secret");
    let labels = seed("labels.jsonl");
    let run = wd.rgrade(&["grade", "--labels", &labels, "-o", out, &logs]);
    run.expect_code(2);
    assert!(run.stderr.contains("ftp://host/night"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2") && !run.stderr.contains("s3cret"));
}

#[test]
fn results_read_back_or_written_by_other_commands_refuse_uris() {
    let wd = Workdir::new("uri_commands");
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    wd.rgrade(&[
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "night", &logs,
    ])
    .expect_code(0);
    let shard = "s3://bucket/shard";
    let cases: [(&[&str], &str); 7] = [
        (
            &["compare", "s3://bucket/base", "night"],
            "s3://bucket/base",
        ),
        (
            &["compare", "night", "ftp://host/night"],
            "does not read or write",
        ),
        (
            &["compare", "night", "night", "-o", "gs://bucket/cmp"],
            "gs://bucket/cmp",
        ),
        (&["report", "az://container/night"], "az://container/night"),
        (
            &["report", "night", "-o", "s3://bucket/page.html"],
            "s3://bucket/page.html",
        ),
        (&["trend", "s3://bucket/n1", "night"], "s3://bucket/n1"),
        (
            &["index", "-o", "s3://bucket/key.rgx", &labels],
            "s3://bucket/key.rgx",
        ),
    ];
    for (args, shown) in cases {
        let run = wd.rgrade(args);
        run.expect_code(2);
        assert!(run.stderr.contains(shown), "{args:?}: {}", run.stderr);
    }
    let run = wd.rgrade(&["merge", "--labels", &labels, "-o", "merged", shard]);
    run.expect_code(2);
    assert!(run.stderr.contains(shard), "{}", run.stderr);
    let left: Vec<_> = std::fs::read_dir(wd.path("."))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!left.iter().any(|name| name.ends_with(':')), "{left:?}");
}
