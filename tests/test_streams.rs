//! Closed or full standard streams: rgrade never panics over them, and the
//! exit status stays the one the run decided (docs/reference.md, Exit status).

use std::fs::File;
use std::process::{Command, Stdio};

use crate::util::{seed, Run, Workdir, RUN_TIMEOUT};

/// A log with one record that is not JSON: with the default
/// `--max-rejects 0`, the run ends with status 1 and a message on stderr.
fn log_with_a_reject(wd: &Workdir) {
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q_export\", \"results\": [\"export_csv\"]}\nnot json\n",
    );
}

/// `/dev/full`, which takes no byte: every write fails with "no space".
fn full_device() -> Stdio {
    Stdio::from(
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full opens"),
    )
}

#[test]
fn a_full_stderr_keeps_the_exit_status_of_grade() {
    let wd = Workdir::new("full_stderr_grade");
    log_with_a_reject(&wd);
    let labels = seed("labels.jsonl");
    let mut cmd = wd.command(&["grade", "--labels", &labels, "-o", "out", "logs.jsonl"]);
    cmd.stderr(full_device());
    finish(&mut cmd).expect_code(1);
    assert!(wd.exists("out/summary.json"), "the outputs are written");
}

#[test]
fn a_closed_stderr_keeps_the_exit_status_of_grade() {
    let wd = Workdir::new("closed_stderr_grade");
    log_with_a_reject(&wd);
    let labels = seed("labels.jsonl");
    let mut cmd = wd.command(&["grade", "--labels", &labels, "logs.jsonl"]);
    let mut child = cmd.spawn().expect("rgrade starts");
    // The reader of stderr goes away before rgrade writes to it.
    drop(child.stderr.take());
    Run::wait(&cmd, child, RUN_TIMEOUT).expect_code(1);
}

#[test]
fn a_full_stderr_keeps_the_exit_status_of_an_error() {
    let wd = Workdir::new("full_stderr_error");
    for args in [
        &["grade", "--labels", "missing.jsonl", "logs.jsonl"][..],
        &["compare", "no-baseline", "no-candidate"][..],
    ] {
        let mut cmd = wd.command(args);
        cmd.stderr(full_device());
        finish(&mut cmd).expect_code(2);
    }
}

#[test]
fn a_full_stderr_keeps_the_exit_status_of_gen() {
    let wd = Workdir::new("full_stderr_gen");
    let mut cmd = wd.command(&["gen", "--queries", "3", "-o", "data"]);
    cmd.stderr(full_device());
    finish(&mut cmd).expect_code(0);
    assert!(wd.exists("data/labels.jsonl"));
}

/// A table that cannot be written for another reason than a closed pipe
/// (a full disk) is said on stderr, and a clean run exits 2: its reader
/// did not get the result (for `agree` and `trend` without `-o`, the table
/// is all of it). A tripped check stays exit status 1.
#[test]
fn a_full_stdout_is_exit_status_2_unless_a_check_tripped() {
    let wd = Workdir::new("full_stdout");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let full = |args: &[&str]| {
        let mut cmd = wd.command(args);
        cmd.stdout(full_device());
        finish(&mut cmd)
    };
    for (night, as_of) in [("a", "2026-11-01"), ("b", "2026-11-02")] {
        let args = [
            "grade", "--labels", &labels, "-k", "3", "--as-of", as_of, "-o", night, &logs,
        ];
        full(&args)
            .expect_code(2)
            .expect_stderr(&["stdout", "cannot write the table"]);
        assert!(
            wd.exists(&format!("{night}/summary.json")),
            "the outputs are written"
        );
    }
    for args in [
        &["compare", "a", "b"][..],
        &["agree", &labels, &labels],
        &["trend", "a", "b"],
    ] {
        full(args)
            .expect_code(2)
            .expect_stderr(&["stdout", "cannot write the table"]);
    }
    wd.write(
        "rules.toml",
        "[[rule]]\nname = \"unmet\"\nmetric = \"recall@3\"\nmin = 0.99\n",
    );
    full(&["compare", "a", "b", "--rules", "rules.toml"])
        .expect_code(1)
        .expect_stderr(&["stdout", "cannot write the table"]);

    log_with_a_reject(&wd);
    full(&["grade", "--labels", &labels, "logs.jsonl"])
        .expect_code(1)
        .expect_stderr(&["stdout", "rejected record"]);
}

/// Run `cmd` to the end.
fn finish(cmd: &mut Command) -> Run {
    let child = cmd.spawn().expect("rgrade starts");
    Run::wait(cmd, child, RUN_TIMEOUT)
}
