//! What a reader of an output directory may rely on: one run writes into
//! it at a time (docs/reference.md, Outputs).

use std::fs::File;
use std::process::{Command, Stdio};

use rgrade::schema::LOCK_FILE;

use crate::util::{run_command, seed, Workdir, RGRADE};

/// While another run holds DIR, grade and compare into it stop at once
/// (exit 2, naming DIR) and write nothing; once it is let go, they run.
#[test]
fn one_run_writes_into_a_directory_at_a_time() {
    let wd = Workdir::new("output_lock");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let grade = [
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "out", &logs,
    ];
    wd.rgrade(&grade).expect_code(0);
    wd.rgrade(&[
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "other", &logs,
    ])
    .expect_code(0);
    let compare = ["compare", "out", "other", "-o", "cmp"];
    let graded = wd.read("out/per_query.csv");

    // Other runs hold the directories, as a running rgrade would.
    let hold = |dir: &str| {
        std::fs::create_dir_all(wd.path(dir)).expect("mkdir");
        let lock = File::create(wd.path(&format!("{dir}/{LOCK_FILE}"))).expect("lock file");
        lock.lock().expect("the test takes the lock");
        lock
    };
    let held = [hold("out"), hold("cmp")];
    wd.rgrade(&compare)
        .expect_code(2)
        .expect_stderr(&["cmp: another rgrade run is writing into this directory"]);
    wd.write(
        "out/per_query.csv",
        "left by the run that holds the directory\n",
    );
    wd.rgrade(&grade)
        .expect_code(2)
        .expect_stderr(&["out: another rgrade run is writing into this directory"]);
    assert_eq!(
        wd.read_text("out/per_query.csv"),
        "left by the run that holds the directory\n"
    );
    assert!(!wd.exists("cmp/comparison.csv"), "nothing written");

    drop(held);
    wd.rgrade(&grade).expect_code(0);
    assert_eq!(wd.read("out/per_query.csv"), graded);
    wd.rgrade(&compare).expect_code(0);
    assert!(wd.exists("cmp/comparison.csv"));
}

/// Killed at any point of writing its outputs, a run leaves DIR with the
/// previous complete set or the new one, never a mix and never a partly
/// written file under a final name: every file there is whole, and a
/// summary.json present lists exactly the files beside it.
#[test]
fn a_killed_run_leaves_the_previous_set_or_the_new_one() {
    let wd = Workdir::new("killed_run");
    wd.rgrade(&[
        "gen",
        "--queries",
        "20000",
        "--results",
        "20",
        "--seed",
        "5",
        "-o",
        "data",
    ])
    .expect_code(0);
    let grade = |k: &'static str, dir: &'static str| {
        [
            "grade",
            "--labels",
            "data/labels.jsonl",
            "-k",
            k,
            "-q",
            "--stage-order",
            "retrieve,final",
            "-o",
            dir,
            "data/logs.jsonl",
        ]
    };
    // The two complete sets: the previous run's, and the new one's.
    wd.rgrade(&grade("10", "previous")).expect_code(0);
    wd.rgrade(&grade("5,10", "new")).expect_code(0);
    // The bytes written before summary.json, whose own size varies with
    // its elapsed time: the last budgets stop the run at the last byte
    // before it, and inside it.
    let others: u64 = listed(&wd, "new").iter().map(|(_, bytes)| bytes).sum();
    for budget in [
        0,
        1,
        4 << 10,
        1 << 20,
        others / 3,
        others / 2,
        others - 1,
        others + 10,
    ] {
        copy_dir(&wd, "previous", "out");
        let mut cmd = wd.command(&grade("5,10", "out"));
        cmd.env("RGRADE_TEST_ABORT_AFTER_BYTES", budget.to_string());
        let run = run_command(&mut cmd);
        assert_eq!(run.status.code(), None, "killed at {budget} bytes: {run}");
        for entry in std::fs::read_dir(wd.path("out")).expect("list out") {
            let name = entry
                .expect("entry")
                .file_name()
                .into_string()
                .expect("name");
            if name.starts_with('.') {
                continue; // the lock, and files not yet moved into place
            }
            let whole = [wd.path("previous").join(&name), wd.path("new").join(&name)]
                .iter()
                .any(|path| std::fs::read(path).ok() == Some(wd.read(&format!("out/{name}"))));
            assert!(
                whole || name == "summary.json",
                "{name} is partial after a kill at {budget} bytes"
            );
        }
        if wd.exists("out/summary.json") {
            for (name, bytes) in listed(&wd, "out") {
                assert_eq!(
                    wd.read(&format!("out/{name}")).len() as u64,
                    bytes,
                    "{name}"
                );
            }
        }
    }
    wd.rgrade(&grade("5,10", "out")).expect_code(0);
    assert_eq!(wd.read("out/per_query.csv"), wd.read("new/per_query.csv"));
    wd.rgrade(&["compare", "out", "new"]).expect_code(0);
}

/// A write that fails (here over a file-size limit, as a full disk would)
/// stops the run with exit 2, naming the output by its whole path; DIR then
/// holds no summary.json, and every file under a final name is the
/// previous run's, whole.
#[test]
fn a_failed_write_names_the_file_and_leaves_no_result() {
    let wd = Workdir::new("failed_write");
    wd.rgrade(&["gen", "--queries", "8000", "--seed", "3", "-o", "data"])
        .expect_code(0);
    let grade = |dir: &'static str| {
        [
            "grade",
            "--labels",
            "data/labels.jsonl",
            "-q",
            "-o",
            dir,
            "data/logs.jsonl",
        ]
    };
    wd.rgrade(&grade("previous")).expect_code(0);
    copy_dir(&wd, "previous", "out");
    // Ignoring SIGXFSZ turns a write past the limit into an EFBIG error.
    let limited = "trap '' XFSZ; ulimit -f 64; exec \"$0\" \"$@\"";
    let mut cmd = Command::new("sh");
    cmd.current_dir(wd.root())
        .args(["-c", limited, RGRADE])
        .args(grade("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = run_command(&mut cmd);
    run.expect_code(2)
        .expect_stderr(&["out/per_query.csv: cannot write", "too large"]);
    assert!(
        !wd.exists("out/summary.json"),
        "no result is marked complete"
    );
    for entry in std::fs::read_dir(wd.path("out")).expect("list out") {
        let name = entry.expect("entry").file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            assert_eq!(name, LOCK_FILE, "a failed run removes its temporary files");
        } else {
            assert_eq!(
                wd.read(&format!("out/{name}")),
                wd.read(&format!("previous/{name}")),
                "{name} is the previous run's, whole"
            );
        }
    }
}

/// The outputs summary.json lists in `dir`, with their sizes.
fn listed(wd: &Workdir, dir: &str) -> Vec<(String, u64)> {
    let summary = wd.read_json(&format!("{dir}/summary.json"));
    summary["outputs"]
        .as_array()
        .expect("summary.json lists its outputs")
        .iter()
        .map(|file| {
            let name = file["name"].as_str().expect("name").to_string();
            (name, file["bytes"].as_u64().expect("bytes"))
        })
        .collect()
}

/// Replace `to` with a copy of `from`'s files.
fn copy_dir(wd: &Workdir, from: &str, to: &str) {
    let _ = std::fs::remove_dir_all(wd.path(to));
    std::fs::create_dir_all(wd.path(to)).expect("mkdir");
    for entry in std::fs::read_dir(wd.path(from)).expect("list") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), wd.path(to).join(entry.file_name())).expect("copy");
    }
}

/// A run that fails before it reads a log (labels that do not load, a
/// candidate that cannot be read) still takes DIR first: the earlier
/// result is gone, so it cannot pass for this run's. (A usage error stops
/// before any run begins, and touches nothing.)
#[test]
fn a_run_that_fails_early_leaves_no_earlier_result() {
    let wd = Workdir::new("output_fails_early");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let grade = |dir: &str, labels: &str| {
        wd.rgrade(&[
            "grade", "--labels", labels, "-k", "3", "-q", "-o", dir, &logs,
        ])
    };
    grade("base", &labels).expect_code(0);
    grade("cand", &labels).expect_code(0);
    wd.write(
        "twice.jsonl",
        "{\"query_id\": \"q\", \"relevant\": []}\n".repeat(2),
    );
    for bad in ["twice.jsonl", "no-such-labels.jsonl"] {
        grade("out", &labels).expect_code(0);
        assert!(wd.exists("out/summary.json"));
        grade("out", bad).expect_code(2);
        assert!(
            !wd.exists("out/summary.json"),
            "{bad}: the earlier result stays"
        );
        assert!(
            !wd.exists("out/report.html"),
            "{bad}: the earlier page stays"
        );
    }

    let compare = |candidate: &str| wd.rgrade(&["compare", "base", candidate, "-q", "-o", "cmp"]);
    compare("cand").expect_code(0);
    assert!(wd.exists("cmp/comparison.json"));
    compare("no-such-dir").expect_code(2);
    for name in ["comparison.json", "comparison.csv", "report.html"] {
        assert!(!wd.exists(&format!("cmp/{name}")), "{name} stays");
    }
}

/// The files a killed run was writing are removed by the next run into
/// its directory, whatever that run writes (agree without --logs writes
/// no agreement_runs.csv), and nothing else hidden there is touched.
#[test]
fn a_killed_runs_unfinished_files_go_with_the_next_run() {
    let wd = Workdir::new("unfinished_files");
    let unfinished = [
        ".agreement_runs.csv.rgrade-tmp",
        ".agreement.csv.rgrade-tmp",
    ];
    for name in unfinished {
        wd.write(&format!("out/{name}"), "cut off mid-row,");
    }
    wd.write("out/.keep", "a user's file");
    let labels = seed("labels.jsonl");
    wd.rgrade(&["agree", &labels, &labels, "-q", "-o", "out"])
        .expect_code(0);
    for name in unfinished {
        assert!(!wd.exists(&format!("out/{name}")), "{name} stays");
    }
    assert!(wd.exists("out/agreement.csv") && wd.exists("out/.keep"));
}

/// A thread count beyond reason is a usage error, not minutes of threads.
#[test]
fn too_many_threads_are_refused() {
    let wd = Workdir::new("output_threads");
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    wd.rgrade(&["grade", "--labels", &labels, "-j", "1025", &logs])
        .expect_code(2)
        .expect_stderr(&["--threads 1025: at most 1024 worker threads"]);
}

/// A directory removed and made again while a run writes into it holds
/// another lock file, which a second run may take: the first run then
/// commits nothing there (exit 2), so the two never mix their files.
#[test]
fn a_directory_replaced_under_a_run_gets_none_of_its_files() {
    let wd = Workdir::new("output_replaced");
    let labels = seed("labels.jsonl");
    // Reading its log from a pipe, the run holds DIR until the pipe closes.
    let mut first = Command::new(RGRADE)
        .args([
            "grade", "--labels", &labels, "-k", "3", "-q", "-o", "out", "-",
        ])
        .current_dir(wd.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rgrade");
    let lock = wd.path(&format!("out/{LOCK_FILE}"));
    let started = std::time::Instant::now();
    while !lock.exists() && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(lock.exists(), "the run claimed its directory");
    std::fs::remove_dir_all(wd.path("out")).unwrap();
    let second = [
        "grade",
        "--labels",
        &labels,
        "-k",
        "3",
        "-q",
        "-o",
        "out",
        &seed("logs.jsonl"),
    ];
    wd.rgrade(&second).expect_code(0);
    let graded = wd.read("out/per_query.csv");

    let logs = std::fs::read(seed("logs.jsonl")).unwrap();
    let mut pipe = first.stdin.take().unwrap();
    std::io::Write::write_all(&mut pipe, &logs).unwrap();
    drop(pipe);
    let output = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("removed or replaced while this run wrote into it"),
        "{stderr}"
    );
    assert_eq!(
        wd.read("out/per_query.csv"),
        graded,
        "the second run's result stands"
    );
    let temps = std::fs::read_dir(wd.path("out")).unwrap();
    let names: Vec<String> = temps
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
}

/// A partial grading into a full grading's directory leaves none of the
/// full grading's files, and a full grading into a shard's leaves none of
/// the shard's captures: a directory never holds two kinds of result.
#[test]
fn a_grading_of_another_kind_clears_the_directory() {
    let wd = Workdir::new("output_kinds");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let grade = |extra: &[&str]| {
        let mut args = vec!["grade", "--labels", &labels, "-k", "3", "-q", "-o", "out"];
        args.extend(extra);
        args.push(&logs);
        wd.rgrade(&args).expect_code(0);
    };
    let names = || {
        let mut names: Vec<String> = std::fs::read_dir(wd.path("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    };
    grade(&[]);
    assert!(names().contains(&"per_query.csv".to_string()));
    grade(&["--partial"]);
    assert_eq!(names(), ["captures.postcard.zst", "partial.json"]);
    grade(&[]);
    assert!(
        !names().contains(&"captures.postcard.zst".to_string()),
        "{:?}",
        names()
    );
    assert!(!names().contains(&"partial.json".to_string()));
}
