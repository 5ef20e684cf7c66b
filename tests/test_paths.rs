//! Where `--openmetrics FILE` and `rgrade index -o KEY` write
//! (docs/reference.md, "Links, streams and concurrent runs"): into a stream as
//! it is, through a link to the file it names, over no file of an rgrade
//! result and no input of the run (refused before anything is read), and
//! a failed export said beside the verdict it does not hide.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::process::{Command, Stdio};

use crate::util::nights::{gen_nights, grade_night, PlantedDrop};
use crate::util::{seed, Run, Workdir, RUN_TIMEOUT};

/// `rgrade grade` of the worked example at k = 3, quiet, with `args`.
fn grade(wd: &Workdir, args: &[&str]) -> Run {
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    let mut all = vec!["grade", "--labels", &labels, "-k", "3", "-q"];
    all.extend_from_slice(args);
    all.push(&logs);
    wd.rgrade(&all)
}

/// A workdir holding the worked example's grading in `other`.
fn with_a_grading(test: &str) -> Workdir {
    let wd = Workdir::new(test);
    grade(&wd, &["-o", "other"]).expect_code(0);
    wd
}

/// Run `cmd` to the end.
fn finish(cmd: &mut Command) -> Run {
    let child = cmd.spawn().expect("rgrade starts");
    Run::wait(cmd, child, RUN_TIMEOUT)
}

/// Whether the text is a whole OpenMetrics export.
fn is_export(text: &str) -> bool {
    text.starts_with("# TYPE rgrade_") && text.ends_with("# EOF\n")
}

#[test]
fn an_export_into_a_fifo_is_written_into_and_the_fifo_stays() {
    let wd = Workdir::new("paths_fifo");
    let fifo = wd.path("metrics.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            File::open(fifo).unwrap().read_to_string(&mut text).unwrap();
            text
        })
    };
    grade(&wd, &["--openmetrics", "metrics.fifo"]).expect_code(0);
    // Checked first: a FIFO replaced by a file leaves the reader waiting.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced: {kind:?}");
    assert!(is_export(&reader.join().unwrap()));
    assert!(!wd.exists(".metrics.fifo.rgrade-tmp"));
}

#[test]
fn dash_and_a_link_to_stdout_write_to_stdout() {
    let wd = Workdir::new("paths_stdout");
    let run = grade(&wd, &["--openmetrics", "-"]);
    run.expect_code(0);
    assert!(is_export(&run.stdout), "{run}");
    assert!(!wd.exists("-"), "a file named '-' was made");

    // A name of stdout, whether stdout is a pipe or a regular file: the
    // link stays, and the text goes where stdout goes. (A link of the
    // test's own, not /dev/stdout, which a run that renamed over it would
    // replace for the whole machine.)
    symlink("/proc/self/fd/1", wd.path("stdout")).unwrap();
    let run = grade(&wd, &["--openmetrics", "stdout"]);
    run.expect_code(0);
    assert!(is_export(&run.stdout), "{run}");
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    let mut cmd = wd.command(&[
        "grade",
        "--labels",
        &labels,
        "-k",
        "3",
        "-q",
        "--openmetrics",
        "stdout",
        &logs,
    ]);
    cmd.stdout(Stdio::from(File::create(wd.path("captured")).unwrap()));
    finish(&mut cmd).expect_code(0);
    assert!(is_export(&wd.read_text("captured")));
    assert!(wd.path("stdout").symlink_metadata().unwrap().is_symlink());
}

#[test]
fn an_export_through_a_link_replaces_the_file_it_names_and_keeps_the_link() {
    let wd = Workdir::new("paths_link");
    wd.write("real.prom", "old\n");
    symlink("real.prom", wd.path("link.prom")).unwrap();
    grade(&wd, &["--openmetrics", "link.prom"]).expect_code(0);
    assert!(wd
        .path("link.prom")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
    assert!(is_export(&wd.read_text("real.prom")));
    assert!(!wd.exists(".real.prom.rgrade-tmp") && !wd.exists(".link.prom.rgrade-tmp"));

    // A link to nothing, and a directory, are not replaced.
    symlink("gone.prom", wd.path("dangling.prom")).unwrap();
    grade(&wd, &["--openmetrics", "dangling.prom"])
        .expect_code(2)
        .expect_stderr(&["dangling.prom", "link to nothing"]);
    std::fs::create_dir(wd.path("dir.prom")).unwrap();
    grade(&wd, &["--openmetrics", "dir.prom"])
        .expect_code(2)
        .expect_stderr(&["dir.prom", "is a directory"]);
}

/// Every file of a grading, and its lock: a path naming one, or linking
/// to one, is refused before the labels are read (a missing labels file
/// would be the error otherwise), and nothing is written.
#[test]
fn an_export_never_replaces_a_file_of_an_rgrade_result() {
    let wd = with_a_grading("paths_refused");
    symlink("other/summary.json", wd.path("summary-link.prom")).unwrap();
    wd.rgrade(&["index", &seed("labels.jsonl"), "-o", "key.rgx"])
        .expect_code(0);
    for path in [
        "other/summary.json",
        "other/per_query.csv",
        "summary-link.prom",
        "other/.rgrade.lock",
        "key.rgx",
    ] {
        let before = wd.read(path);
        let run = wd.rgrade(&[
            "grade",
            "--labels",
            "missing.jsonl",
            "-o",
            "new",
            "--openmetrics",
            path,
            "logs",
        ]);
        run.expect_code(2)
            .expect_stderr(&[path, "--openmetrics will not write there"]);
        assert!(
            !run.stderr.contains("missing.jsonl"),
            "the labels were read: {run}"
        );
        assert!(!wd.exists("new"), "the output directory was made: {run}");
        assert!(wd.read(path) == before, "{path} changed");
    }
    assert!(wd
        .path("summary-link.prom")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
    // This run's own outputs, before its directory holds any.
    grade(&wd, &["-o", "fresh", "--openmetrics", "fresh/summary.json"])
        .expect_code(2)
        .expect_stderr(&["fresh/summary.json", "will not write there"]);
    assert!(!wd.exists("fresh"));
    // merge's and trend's exports too.
    let run = wd.rgrade(&[
        "merge",
        "--labels",
        "key.rgx",
        "-o",
        "merged",
        "--openmetrics",
        "other/summary.json",
        "shard",
    ]);
    run.expect_code(2).expect_stderr(&["will not write there"]);
    let run = wd.rgrade(&["trend", "other", "--openmetrics", "other/aggregates.csv"]);
    run.expect_code(2).expect_stderr(&["will not write there"]);
    wd.rgrade(&["compare", "other", "other", "-q"])
        .expect_code(0);
}

#[test]
fn index_replaces_only_a_compiled_key() {
    let wd = with_a_grading("paths_index");
    let labels = seed("labels.jsonl");
    wd.write("labels.jsonl", std::fs::read(&labels).unwrap());
    wd.write("notes.txt", "not a key\n");
    let lock = wd.read("other/.rgrade.lock");
    for (path, why) in [
        ("labels.jsonl", "is an input of this run"),
        ("other/summary.json", "is an output of the rgrade result"),
        (
            "other/.rgrade.lock",
            "is the lock of an rgrade output directory",
        ),
        ("notes.txt", "other than a compiled answer key"),
    ] {
        let before = wd.read(path);
        let run = wd.rgrade(&["index", "labels.jsonl", "-o", path]);
        run.expect_code(2).expect_stderr(&[path, why]);
        assert!(wd.read(path) == before, "{path} changed");
    }
    assert!(wd.read("other/.rgrade.lock") == lock);
    // A key is replaced by the key compiled again.
    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    let key = wd.read("key.rgx");
    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    assert!(wd.read("key.rgx") == key);
}

#[test]
fn a_killed_index_leaves_no_file_the_next_one_to_its_path_keeps() {
    let wd = Workdir::new("paths_index_killed");
    let labels = seed("labels.jsonl");
    let mut cmd = wd.command(&["index", &labels, "-o", "key.rgx"]);
    cmd.env("RGRADE_TEST_ABORT_AFTER_BYTES", "64");
    let run = finish(&mut cmd);
    assert_ne!(run.status.code(), Some(0), "{run}");
    assert!(
        wd.exists(".key.rgx.rgrade-tmp"),
        "the abort left no temporary file"
    );
    assert!(!wd.exists("key.rgx"));
    // The next index to the path removes it, even one whose labels fail.
    wd.rgrade(&["index", "missing.jsonl", "-o", "key.rgx"])
        .expect_code(2);
    assert!(
        !wd.exists(".key.rgx.rgrade-tmp"),
        "the killed run's file stayed"
    );
}

/// A failed export after the outputs are in place: said on stderr, the
/// outputs kept, and a tripped check still exit status 1.
#[test]
fn a_failed_export_is_said_and_hides_no_verdict() {
    let wd = Workdir::new("paths_export_fails");
    symlink("/dev/full", wd.path("full.prom")).unwrap();
    grade(&wd, &["-o", "out", "--openmetrics", "full.prom"])
        .expect_code(2)
        .expect_stderr(&["full.prom: cannot write --openmetrics"]);
    assert!(wd.exists("out/summary.json"), "the outputs are in place");
    wd.rgrade(&["compare", "out", "out", "-q"]).expect_code(0);

    // Rejects over --max-rejects stay exit status 1.
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q_export\", \"results\": []}\nnot json\n",
    );
    let labels = seed("labels.jsonl");
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-q",
        "--openmetrics",
        "full.prom",
        "logs.jsonl",
    ]);
    run.expect_code(1)
        .expect_stderr(&["cannot write --openmetrics", "rejected record"]);
}

#[test]
fn a_trend_alarm_survives_a_failed_export() {
    let wd = Workdir::new("paths_trend_alarm");
    let drop = PlantedDrop {
        from: 8,
        task: "billing",
        rate: "0.5",
    };
    gen_nights(&wd, "data", "200", 9, Some(drop));
    let nights: Vec<String> = (1..=9)
        .map(|n| {
            let out = format!("graded/night-{n:02}");
            let night = format!("data/night-{n:02}");
            grade_night(
                &wd,
                "data/labels.jsonl",
                &night,
                &out,
                &format!("2026-11-{n:02}"),
                &[],
            );
            out
        })
        .collect();
    symlink("/dev/full", wd.path("full.prom")).unwrap();
    let mut args = vec!["trend", "-o", "trend", "--openmetrics", "full.prom"];
    args.extend(nights.iter().map(String::as_str));
    let run = wd.rgrade(&args);
    run.expect_code(1)
        .expect_stderr(&["full.prom: cannot write --openmetrics"]);
    assert!(
        run.stdout.contains("ALARM"),
        "the alarm is not printed: {run}"
    );
    assert!(wd.exists("trend/alarms.json"));
}
