//! Path arguments that are URIs (docs/reference.md, "Object storage"): a
//! scheme rgrade does not support is refused, exit 2, before anything is
//! read or written; a result is never written to a local folder named
//! after a URI's scheme (`-o s3://bucket/night` made `./s3:` once), and
//! every command's result goes to (or is read from) object storage, which
//! failing is exit 2 naming the URI. What is read from and written to
//! object storage is tested against an S3-compatible server in
//! python/tests/test_objects.py.

use std::time::Duration;

use crate::util::{seed, Run, Workdir};

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
    for option in ["--corpus", "--doc-collections", "--calibrate"] {
        refused(
            "uri_option",
            &[option, "ftp://host/file", &logs],
            unsupported,
        );
    }
    let labels_run = Workdir::new("uri_labels");
    let run = labels_run.rgrade(&["grade", "--labels", "http://host/labels.jsonl", &logs]);
    run.expect_code(2);
    assert!(run.stderr.contains(unsupported), "{}", run.stderr);
}

/// `rgrade args` in `wd` with S3 pointed at a port of 127.0.0.1 where no
/// server listens: every request to object storage fails at once.
fn without_a_server(wd: &Workdir, args: &[&str]) -> Run {
    let mut cmd = wd.command(args);
    cmd.envs([
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ]);
    let child = cmd.spawn().expect("cannot start rgrade");
    Run::wait(&cmd, child, Duration::from_secs(120))
}

/// An endpoint where nothing listens fails the run within seconds (a few
/// quick retries, not the client's three minutes), exit 2, naming the URI
/// and the endpoint; `RGRADE_OBJECT_RETRIES` sets the retries, and a value
/// that is no number of retries is refused.
#[test]
fn an_unreachable_endpoint_fails_promptly_naming_it() {
    let wd = Workdir::new("uri_unreachable");
    let logs = seed("logs.jsonl");
    let args = ["grade", "--labels", "s3://bucket/labels.jsonl", "-q", &logs];
    let started = std::time::Instant::now();
    let run = without_a_server(&wd, &args);
    let took = started.elapsed();
    run.expect_code(2).expect_stderr(&[
        "s3://bucket/labels.jsonl: cannot connect to object storage at http://127.0.0.1:9",
    ]);
    assert!(took < Duration::from_secs(15), "{took:?}: {run}");
    let mut cmd = wd.command(&args);
    cmd.envs([
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_ALLOW_HTTP", "true"),
        ("RGRADE_OBJECT_RETRIES", "a few"),
    ]);
    let child = cmd.spawn().expect("cannot start rgrade");
    Run::wait(&cmd, child, Duration::from_secs(120))
        .expect_code(2)
        .expect_stderr(&["RGRADE_OBJECT_RETRIES=a few: not a whole number of retries"]);
}

/// The names in `wd`'s directory.
fn left(wd: &Workdir) -> Vec<String> {
    std::fs::read_dir(wd.path("."))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn results_are_never_written_to_a_folder_named_after_a_uri() {
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    let grade = ["grade", "--labels", &labels, "-k", "3", "-q"];
    for (flag, out) in [
        ("-o", "s3://bucket/night"),
        ("-o", "az://container/night"),
        ("--openmetrics", "s3://bucket/night/metrics.prom"),
    ] {
        let wd = Workdir::new("uri_no_folder");
        let run = without_a_server(&wd, &[&grade[..], &[flag, out, &logs]].concat());
        run.expect_code(2);
        let bucket = out.rsplit_once('/').unwrap().0;
        assert!(run.stderr.contains(bucket), "{}", run.stderr);
        let written = left(&wd);
        assert!(
            !written.iter().any(|name| name.contains(':')),
            "{written:?}"
        );
    }
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

/// Every command that reads a result back or writes one takes a URI:
/// where no store answers, each fails with exit 2 naming it, and nothing
/// is written to a local folder named after it.
#[test]
fn results_read_back_or_written_by_other_commands_go_to_object_storage() {
    let wd = Workdir::new("uri_commands");
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    wd.rgrade(&[
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "night", &logs,
    ])
    .expect_code(0);
    let shard = "s3://bucket/shard";
    let cases: [(&[&str], &str); 10] = [
        (
            &["compare", "s3://bucket/base", "night"],
            "s3://bucket/base",
        ),
        (
            &["compare", "night", "ftp://host/night"],
            "does not read or write",
        ),
        (
            &["compare", "night", "night", "-o", "s3://bucket/cmp"],
            "s3://bucket/cmp",
        ),
        (&["report", "az://container/night"], "az://container"),
        (
            &["report", "night", "-o", "s3://bucket/page.html"],
            "s3://bucket/page.html",
        ),
        (&["trend", "s3://bucket/n1", "night"], "s3://bucket/n1"),
        (
            &["index", "-o", "s3://bucket/key.rgx", &labels],
            "s3://bucket/key.rgx",
        ),
        (
            &["merge", "--labels", &labels, "-o", "merged", shard],
            shard,
        ),
        (
            &[
                "compare",
                "night",
                "night",
                "--rules",
                "ftp://host/rules.toml",
            ],
            "does not read or write",
        ),
        (
            &["gen", "--queries", "10", "-o", "s3://bucket/gen"],
            "s3://bucket/gen: a generated dataset cannot be in object storage",
        ),
    ];
    for (args, shown) in cases {
        let run = without_a_server(&wd, args);
        run.expect_code(2);
        assert!(run.stderr.contains(shown), "{args:?}: {}", run.stderr);
    }
    let left = left(&wd);
    assert!(!left.iter().any(|name| name.contains(':')), "{left:?}");
}
