//! report.html: drawn for every shipped sample, the same bytes however it
//! is drawn, escaped, and opened in a real browser (headless Chromium),
//! which must log nothing to its console and request nothing from the
//! network. Screenshots are kept under `target/tmp/report-screenshots/`
//! for a person to look at.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::nights::{gen_nights, grade_night, PlantedDrop};
use crate::util::*;

/// A shipped sample graded as its README grades it, into `out`.
struct Sample {
    name: &'static str,
    args: &'static [&'static str],
}

/// Every sample with a grade command, and the hostile ids.
const SAMPLES: &[Sample] = &[
    Sample {
        name: "seed",
        args: &[
            "--labels",
            "data-samples/seed/labels.jsonl",
            "-k",
            "3",
            "data-samples/seed/logs.jsonl",
        ],
    },
    Sample {
        name: "realistic",
        args: &[
            "--labels",
            "data-samples/realistic/labels.jsonl",
            "-k",
            "1,5,10",
            "--repeats",
            "last",
            "--max-rejects",
            "10",
            "data-samples/realistic/logs",
        ],
    },
    Sample {
        name: "diagnostics",
        args: &[
            "--labels",
            "data-samples/diagnostics/labels.jsonl",
            "-k",
            "1,3",
            "--stage-order",
            "retrieve,rerank,final",
            "--doc-collections",
            "data-samples/diagnostics/doc_collections.csv",
            "--max-leaks",
            "1",
            "data-samples/diagnostics/logs.jsonl",
        ],
    },
    Sample {
        name: "traces",
        args: &[
            "--labels",
            "data-samples/traces/labels.jsonl",
            "-k",
            "1,5,10",
            "data-samples/traces/otlp/openinference.jsonl",
        ],
    },
    Sample {
        name: "ubi",
        args: &[
            "--labels",
            "data-samples/ubi/labels.jsonl",
            "-k",
            "1,3",
            "--query-field",
            "user_query",
            "--results-field",
            "query_response_hit_ids",
            "--run-field",
            "application",
            "data-samples/ubi/ubi_queries.jsonl",
        ],
    },
    Sample {
        name: "questions",
        args: &[
            "--labels",
            "data-samples/questions/labels.jsonl",
            "-k",
            "1,5,10",
            "--review-queue",
            "--pool-depth",
            "5",
            "data-samples/questions/logs.jsonl",
        ],
    },
    Sample {
        name: "hostile",
        args: &[
            "--labels",
            "data-samples/hostile/labels.jsonl",
            "--max-rejects",
            "1",
            "data-samples/hostile/logs.jsonl",
        ],
    },
];

/// Grade with a sample's `sample_args` in `wd` into `out` (relative to
/// `wd`) with `extra` options.
fn grade_sample(wd: &Workdir, sample_args: &[&str], out: &str, extra: &[&str]) -> PathBuf {
    let out_dir = wd.path(out);
    let out_arg = out_dir.display().to_string();
    let mut args: Vec<String> = vec!["grade".into(), "-q".into(), "-o".into(), out_arg];
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(
        sample_args
            .iter()
            .map(|a| match a.starts_with("data-samples/") {
                true => repo_path(a).display().to_string(),
                false => a.to_string(),
            }),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    wd.rgrade(&args).expect_code(0);
    out_dir
}

/// The compare sample's two sides, graded as its README grades them into
/// `wd`'s `baseline` and `candidate`.
fn compare_sides(wd: &Workdir) -> (PathBuf, PathBuf) {
    let realistic = SAMPLES.iter().find(|s| s.name == "realistic").unwrap();
    // The realistic grading, with the answer key that names the splits.
    let mut args = realistic.args.to_vec();
    args[1] = "data-samples/compare/labels.jsonl";
    let baseline = grade_sample(wd, &args, "baseline", &[]);
    *args.last_mut().unwrap() = "data-samples/compare/candidate";
    (baseline, grade_sample(wd, &args, "candidate", &[]))
}

/// The compare sample's sides compared as its README does, at `threads`,
/// into `wd`'s `out`; returns `out`.
fn compare_into(
    wd: &Workdir,
    (baseline, candidate): &(PathBuf, PathBuf),
    out: &str,
    threads: &str,
) -> PathBuf {
    let out_dir = wd.path(out);
    wd.rgrade(&[
        "compare",
        baseline.to_str().unwrap(),
        candidate.to_str().unwrap(),
        "--rules",
        repo_path("data-samples/compare/rules.toml")
            .to_str()
            .unwrap(),
        "--metrics",
        "recall@5,recall@10,rr@10,ndcg@10",
        "-j",
        threads,
        "-q",
        "-o",
        out_dir.to_str().unwrap(),
    ])
    .expect_code(1);
    out_dir
}

#[test]
fn the_compare_sample_draws_the_same_page_however_it_is_drawn() {
    let wd = Workdir::new("report_compare_same");
    let sides = compare_sides(&wd);
    let one = compare_into(&wd, &sides, "one", "1");
    let two = compare_into(&wd, &sides, "two", "2");
    let page = std::fs::read(one.join("report.html")).unwrap();
    assert!(page == std::fs::read(two.join("report.html")).unwrap());
    let again = wd.path("again.html");
    wd.rgrade(&[
        "report",
        one.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ])
    .expect_code(0);
    assert!(std::fs::read(&again).unwrap() == page);
    let text = String::from_utf8(page).unwrap();
    // The verdict comes first, before any stage.
    let verdict = text.find("FAIL: 2 of 6 acceptance rules failed").unwrap();
    assert!(verdict < text.find("stage final").unwrap());
    // comparison.json vouches for every other file, the page apart.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(one.join("comparison.json")).unwrap()).unwrap();
    let listed: Vec<&str> = summary["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["comparison.csv", "per_query_delta.csv", "gate.json"]
    );
    // The biggest loss on recall@5 is the required case the rules name.
    assert_eq!(summary["biggest_losses"][0]["query_id"], "q000025");

    // A changed file makes the directory no complete comparison.
    std::fs::write(one.join("gate.json"), "{}").unwrap();
    wd.rgrade(&["report", one.to_str().unwrap()])
        .expect_code(2)
        .expect_stderr(&["gate.json"]);
}

#[test]
fn a_grade_and_a_comparison_never_share_a_directory() {
    let wd = Workdir::new("report_kinds");
    let sides = compare_sides(&wd);
    let compared = compare_into(&wd, &sides, "cmp", "2");
    let grade_dir = &sides.0;
    wd.rgrade(&[
        "compare",
        grade_dir.to_str().unwrap(),
        sides.1.to_str().unwrap(),
        "-q",
        "-o",
        grade_dir.to_str().unwrap(),
    ])
    .expect_code(2)
    .expect_stderr(&["holds a grade output"]);
    let mut args = vec!["grade", "-o", compared.to_str().unwrap()];
    let seed_labels = seed("labels.jsonl");
    let seed_logs = seed("logs.jsonl");
    args.extend(["--labels", &seed_labels, &seed_logs]);
    wd.rgrade(&args)
        .expect_code(2)
        .expect_stderr(&["holds a comparison"]);
}

#[test]
fn every_sample_draws_the_same_page_however_it_is_drawn() {
    let wd = Workdir::new("report_same");
    for sample in SAMPLES {
        let one = grade_sample(
            &wd,
            sample.args,
            &format!("{}-j1", sample.name),
            &["-j", "1"],
        );
        let two = grade_sample(
            &wd,
            sample.args,
            &format!("{}-j2", sample.name),
            &["-j", "2"],
        );
        let page = std::fs::read(one.join("report.html")).unwrap();
        assert_eq!(
            page,
            std::fs::read(two.join("report.html")).unwrap(),
            "{}: the page depends on the thread count",
            sample.name
        );
        // Drawn again from the files, the page is the same bytes.
        let again = wd.path(&format!("{}-again.html", sample.name));
        let again_arg = again.display().to_string();
        wd.rgrade(&["report", one.to_str().unwrap(), "-o", &again_arg])
            .expect_code(0);
        assert!(
            std::fs::read(&again).unwrap() == page,
            "{}: rgrade report draws another page than grade did",
            sample.name
        );
        let text = String::from_utf8(page).unwrap();
        assert!(
            text.len() < 3_000_000,
            "{}: {} bytes",
            sample.name,
            text.len()
        );
        // The page is not among the outputs summary.json vouches for.
        let summary: Value =
            serde_json::from_slice(&std::fs::read(one.join("summary.json")).unwrap()).unwrap();
        assert!(summary["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["name"] != "report.html"));
    }
}

/// The questions sample's page shows its answers by their evidence (the
/// numbers of attribution.csv), its splits among the slices, the labels'
/// coverage, the collection versions and the review queue's depth.
#[test]
fn the_questions_page_shows_the_four_answers() {
    let wd = Workdir::new("report_questions");
    let questions = SAMPLES.iter().find(|s| s.name == "questions").unwrap();
    let out = grade_sample(&wd, questions.args, "out", &[]);
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    for want in [
        "Wrong answers and their evidence",
        // bm25-v3 · final: 120 answered, 58 ok, 48 retrieval, 14 generation, 15 ok missing.
        "<td class=\"n\">120</td><td class=\"n\">58</td><td class=\"n\">48</td>\
         <td class=\"n\">14</td><td class=\"n\">15</td>",
        "By split",
        "judged@10 0.115",
        "kb-2026-09",
        "the unjudged documents ranked within the top 5",
    ] {
        assert!(page.contains(want), "the page lacks {want}");
    }
}

#[test]
fn hostile_ids_stay_text() {
    let wd = Workdir::new("report_hostile");
    let hostile = SAMPLES.iter().find(|s| s.name == "hostile").unwrap();
    let out = grade_sample(&wd, hostile.args, "out", &[]);
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    for raw in [
        "<script",
        "<img",
        "<iframe",
        "<b>run",
        "<h1>task",
        "<svg onload",
        "<a href=\"http",
        "</style><h1>",
        "]]><!--",
    ] {
        assert!(!page.contains(raw), "the page holds {raw} unescaped");
    }
    // Each is there, as text.
    for escaped in [
        "&lt;script&gt;console.error('pwned')&lt;/script&gt;",
        "&lt;/style&gt;&lt;h1&gt;task&lt;/h1&gt;",
        "&lt;b&gt;run&lt;/b&gt;",
        "&lt;a href=&quot;http://example.invalid/&quot;&gt;link&lt;/a&gt;",
    ] {
        assert!(page.contains(escaped), "the page lacks {escaped}");
    }
}

/// NUL, escape and bidirectional formatting characters in ids and names
/// never reach the page or the OpenMetrics gauges' labels raw: each
/// shows as its code point.
#[test]
fn characters_that_act_unseen_show_as_code_points() {
    let wd = Workdir::new("report_unseen");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q\\u202e1\", \"relevant\": [\"d\\u00001\"], \"task\": \"t\\u0000x\", \
         \"language\": \"\\u2066en\"}\n",
    );
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q\\u202e1\", \"run\": \"r\\u001b[31m\", \"results\": [\"e\\u202e2\", \"d\\u00001\"]}\n",
    );
    let args = [
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "-o",
        "out",
        "--openmetrics",
        "metrics.txt",
        "logs.jsonl",
    ];
    wd.rgrade(&args).expect_code(0);
    let page = wd.read_text("out/report.html");
    let gauges = wd.read_text("metrics.txt");
    for (name, text) in [("report.html", &page), ("metrics.txt", &gauges)] {
        for raw in ['\u{0}', '\u{1b}', '\u{202e}', '\u{2066}'] {
            assert!(!text.contains(raw), "{name} holds U+{:04X} raw", raw as u32);
        }
    }
    for shown in ["t[U+0000]x", "[U+2066]en", "r[U+001B][31m"] {
        assert!(page.contains(shown), "the page lacks {shown}");
        assert!(gauges.contains(shown), "the gauges lack {shown}");
    }
    assert!(page.contains("q[U+202E]1"), "the page lacks the query id");

    // So do stdout's table and stderr's messages, where they would act
    // on the terminal.
    let table = wd.rgrade(&["grade", "--labels", "labels.jsonl", "logs.jsonl"]);
    let message = wd.rgrade(&["grade", "--labels", "no\u{1b}[31m.jsonl", "logs.jsonl"]);
    message
        .expect_code(2)
        .expect_stderr(&["no[U+001B][31m.jsonl"]);
    for (name, text) in [("stdout", &table.stdout), ("stderr", &message.stderr)] {
        for raw in ['\u{0}', '\u{1b}', '\u{202e}', '\u{2066}'] {
            assert!(!text.contains(raw), "{name} holds U+{:04X} raw", raw as u32);
        }
    }
    for shown in ["t[U+0000]x", "[U+2066]en", "r[U+001B][31m"] {
        assert!(
            table.stdout.contains(shown),
            "stdout lacks {shown}\n{table}"
        );
    }
}

/// `-o -` writes the page to stdout, as `--openmetrics -` writes there:
/// the bytes drawn into the directory, and no file named `-`.
#[test]
fn report_to_stdout_writes_the_page_and_no_file() {
    let wd = Workdir::new("report_stdout");
    let out = grade_sample(&wd, SAMPLES[0].args, "out", &[]);
    let run = wd.rgrade(&["report", &out.display().to_string(), "-o", "-"]);
    run.expect_code(0);
    assert!(run.stderr.contains("wrote the page to stdout"), "{run}");
    assert_eq!(run.stdout, wd.read_text("out/report.html"));
    assert!(!wd.exists("-"));
    let missing = wd.rgrade(&["report", "no-such-dir", "-o", "-"]);
    missing.expect_code(2).expect_stderr(&["no-such-dir"]);
    assert!(missing.stdout.is_empty() && !wd.exists("-"), "{missing}");
}

#[test]
fn report_refuses_a_directory_without_a_complete_result() {
    let wd = Workdir::new("report_incomplete");
    let seed = &SAMPLES[0];
    let out = grade_sample(&wd, seed.args, "out", &[]);
    let dir = out.display().to_string();

    // Drawn again in place, it is the same page.
    let before = std::fs::read(out.join("report.html")).unwrap();
    std::fs::remove_file(out.join("report.html")).unwrap();
    let run = wd.rgrade(&["report", &dir]);
    run.expect_code(0);
    assert!(run.stderr.contains("report.html"), "{run}");
    assert_eq!(std::fs::read(out.join("report.html")).unwrap(), before);

    // The page never takes the place of a file it is drawn from, nor of
    // anything but a regular file.
    for drawn_from in ["summary.json", "per_query.csv"] {
        let target = out.join(drawn_from).display().to_string();
        wd.rgrade(&["report", &dir, "-o", &target])
            .expect_code(2)
            .expect_stderr(&[drawn_from, "a name rgrade gives the files of a result"]);
    }
    // Nor of another grading's file or page.
    let other = grade_sample(&wd, seed.args, "other", &[]);
    for name in ["per_query.csv", "report.html"] {
        let target = other.join(name).display().to_string();
        let before = std::fs::read(other.join(name)).unwrap();
        wd.rgrade(&["report", &dir, "-o", &target])
            .expect_code(2)
            .expect_stderr(&[name]);
        assert_eq!(
            std::fs::read(other.join(name)).unwrap(),
            before,
            "{name} kept"
        );
    }
    std::fs::create_dir_all(wd.path("a-directory.html")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(out.join("aggregates.csv"), wd.path("link.html")).unwrap();
    for target in ["a-directory.html", "link.html"] {
        if wd.exists(target) {
            let target = wd.path(target).display().to_string();
            wd.rgrade(&["report", &dir, "-o", &target])
                .expect_code(2)
                .expect_stderr(&["not a regular file"]);
        }
    }
    wd.rgrade(&["report", &dir]).expect_code(0);

    // A file changed since it was graded.
    let aggregates = out.join("aggregates.csv");
    let mut text = std::fs::read_to_string(&aggregates).unwrap();
    text.push_str("x\n");
    std::fs::write(&aggregates, text).unwrap();
    wd.rgrade(&["report", &dir])
        .expect_code(2)
        .expect_stderr(&["aggregates.csv"]);

    // No summary.json: a run that never finished.
    std::fs::remove_file(out.join("summary.json")).unwrap();
    wd.rgrade(&["report", &dir])
        .expect_code(2)
        .expect_stderr(&["no summary.json"]);

    // A directory that is not there is not made.
    wd.rgrade(&["report", "typo"])
        .expect_code(2)
        .expect_stderr(&["typo: no such output directory"]);
    assert!(!wd.exists("typo"));
}

/// A per_query.csv edited after grading (its hash listed anew, as a
/// post-processing tool would) is read as compare reads it: a latency of
/// `1e400` (infinite) or a metric cell that is NaN or outside [0, 1] is
/// refused, naming the file, line and column, never drawn and never hung on.
#[test]
fn report_refuses_cells_no_grading_writes() {
    let wd = Workdir::new("report_bad_cells");
    grade_sample(&wd, SAMPLES[0].args, "out", &[]);
    let original = wd.read_text("out/per_query.csv");
    let header: Vec<&str> = original.lines().next().unwrap().split(',').collect();
    for (column, value, said) in [
        (
            "latency_ms",
            "1e400",
            "'1e400' is not a number in column latency_ms",
        ),
        (
            "context_tokens",
            "-inf",
            "'-inf' is not a number in column context_tokens",
        ),
        (
            "latency_ms",
            "-5",
            "'-5' is not a number of at least 0 in column latency_ms",
        ),
        (
            "first_rel_rank",
            "0",
            "'0' is not a rank in column first_rel_rank",
        ),
        ("n_relevant", "0", "of a query with none (n_relevant 0)"),
        (
            "recall@3",
            "NaN",
            "'NaN' is not a number in column recall@3",
        ),
        (
            "rr@3",
            "7",
            "'7' is not a metric value (0 to 1) in column rr@3",
        ),
        (
            "ndcg@3",
            "-1",
            "'-1' is not a metric value (0 to 1) in column ndcg@3",
        ),
    ] {
        let at = header.iter().position(|h| *h == column).unwrap();
        let edited: Vec<String> = (original.lines().enumerate())
            .map(|(i, line)| {
                let mut cells: Vec<&str> = line.split(',').collect();
                if i == 2 {
                    cells[at] = value;
                }
                cells.join(",")
            })
            .collect();
        relist(&wd, "out", &(edited.join("\n") + "\n"));
        let dir = wd.path("out").display().to_string();
        wd.rgrade(&["report", &dir, "-o", "page.html"])
            .expect_code(2)
            .expect_stderr(&["per_query.csv:3", said]);
        assert!(!wd.exists("page.html"), "{column}: no page drawn");
    }
}

/// A listed file that is a pipe in the grading's directory (or a link to
/// a device) is refused, never read until it ends.
#[cfg(unix)]
#[test]
fn report_refuses_a_pipe_in_place_of_an_output() {
    let wd = Workdir::new("report_pipe");
    let out = grade_sample(&wd, SAMPLES[0].args, "out", &[]);
    std::fs::remove_file(out.join("per_query.csv")).unwrap();
    let made = Command::new("mkfifo")
        .arg(out.join("per_query.csv"))
        .status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let dir = out.display().to_string();
    wd.rgrade(&["report", &dir, "-o", "page.html"])
        .expect_code(2)
        .expect_stderr(&["per_query.csv", "not a regular file"]);
    std::fs::remove_file(out.join("per_query.csv")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", out.join("per_query.csv")).unwrap();
    wd.rgrade(&["report", &dir, "-o", "page.html"])
        .expect_code(2)
        .expect_stderr(&["per_query.csv", "not a regular file"]);
}

#[test]
fn a_failed_grade_leaves_no_page_of_an_earlier_run() {
    let wd = Workdir::new("report_stale");
    let out = grade_sample(&wd, SAMPLES[0].args, "out", &[]);
    assert!(out.join("report.html").exists());
    // Graded again into the same directory, from a log that is not there:
    // the run fails once it has begun to replace the old result, and the
    // old page must go with it, or it would pass for this run's.
    wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        "-o",
        out.to_str().unwrap(),
        &wd.path("no-such-log.jsonl").display().to_string(),
    ])
    .expect_code(2);
    assert!(!out.join("summary.json").exists());
    assert!(!out.join("report.html").exists());
}

/// Where screenshots are kept after the tests end.
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Chromium to drive: `RGRADE_CHROMIUM`, else `chromium` or
/// `chromium-browser` on PATH. Absent, the browser tests fail in CI (which
/// installs it) and say loudly that they were skipped elsewhere.
fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("RGRADE_CHROMIUM").map(PathBuf::from);
    let found = named.or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the browser tests: install Chromium (apt-get install -y chromium)"
        );
        eprintln!(
            "\n************************************************************\n\
             SKIPPED: no Chromium on PATH, so report.html was not checked\n\
             in a browser. Install it (apt-get install -y chromium) or\n\
             set RGRADE_CHROMIUM to run these tests.\n\
             ************************************************************\n"
        );
    }
    found
}

/// What the browser saw of one page.
#[derive(Debug, Default)]
struct Visit {
    /// Messages logged to the console (the page has no script, so any
    /// message is an error: a blocked request, a refused inline script).
    console: Vec<String>,
    /// URLs the page requested.
    requests: Vec<String>,
}

/// Open `page` in headless Chromium, screenshot it into `shot`, and
/// report its console messages and network requests.
fn visit(chromium: &Path, page: &Path, shot: &Path, scratch: &Path) -> Visit {
    let profile = scratch.join("profile");
    let netlog = scratch.join("netlog.json");
    std::fs::create_dir_all(&profile).unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--net-log-capture-mode=Default",
            "--window-size=1100,5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish {} in 120 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = reader.join().unwrap();
    assert!(
        shot.is_file(),
        "no screenshot of {}:\n{log}",
        page.display()
    );
    Visit {
        console: log
            .lines()
            .filter(|line| line.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
        requests: page_requests(&netlog),
    }
}

/// The URLs a page requested, from Chromium's net log. The browser's own
/// requests (its clock, its spelling dictionary) have no origin; a page's
/// have the page's (`null` for a file) and its file:// isolation key.
fn page_requests(netlog: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(netlog).expect("chromium wrote its net log");
    let log: Value = serde_json::from_str(&text).expect("a complete net log");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == start)
        .filter_map(|event| {
            let params = &event["params"];
            let url = params["url"].as_str()?;
            let browsers_own = params["initiator"] == "not an origin"
                && !params["network_isolation_key"]
                    .as_str()
                    .unwrap_or("")
                    .contains("file://");
            (!browsers_own).then(|| url.to_string())
        })
        .collect()
}

/// A short series with a drop planted in its last nights, graded night by
/// night and trended (as docs/trend.md shows); the trend page's path.
fn trend_series(wd: &Workdir) -> PathBuf {
    let drop = PlantedDrop {
        from: 4,
        task: "billing",
        rate: "0.5",
    };
    gen_nights(wd, "series", "1500", 5, Some(drop));
    let nights: Vec<String> = (1..=5).map(|n| format!("nights/{n:02}")).collect();
    for (n, night) in (1..).zip(&nights) {
        let (as_of, logs) = (format!("2026-11-{n:02}"), format!("series/night-{n:02}"));
        grade_night(wd, "series/labels.jsonl", &logs, night, &as_of, &[]);
    }
    let mut trend = vec!["trend", "--baseline", "3", "-o", "trend"];
    trend.extend(nights.iter().map(String::as_str));
    wd.rgrade(&trend).expect_code(1);
    let page = wd.path("trend/report.html");
    assert!(wd
        .read_text("trend/report.html")
        .contains("rgrade trend report"));
    page
}

#[test]
fn every_sample_report_opens_in_a_browser_quietly_and_offline() {
    let Some(chromium) = chromium() else { return };
    let wd = Workdir::new("report_browser");
    let shots = screenshots();

    // The checks can fail: a page that logs and fetches is caught.
    wd.write(
        "control.html",
        "<!DOCTYPE html><html><body><p>control</p>\
         <img src=\"http://example.invalid/x.png\">\
         <script>console.error('control')</script></body></html>",
    );
    let control = visit(
        &chromium,
        &wd.path("control.html"),
        &wd.path("control.png"),
        &wd.path("control"),
    );
    assert!(
        control.console.iter().any(|l| l.contains("control")),
        "{control:?}"
    );
    assert_eq!(control.requests, ["http://example.invalid/x.png"]);

    let mut pages: Vec<(String, PathBuf)> = SAMPLES
        .iter()
        .map(|sample| {
            let out = grade_sample(&wd, sample.args, sample.name, &[]);
            (format!("grade-{}", sample.name), out.join("report.html"))
        })
        .collect();
    let compared = compare_into(&wd, &compare_sides(&wd), "compare", "2");
    pages.push(("compare".to_string(), compared.join("report.html")));
    let judges = repo_path("data-samples/judges");
    let [human, judge, logs] = ["human.jsonl", "judge.jsonl", "logs.jsonl"]
        .map(|name| judges.join(name).display().to_string());
    wd.rgrade(&[
        "agree", &human, &judge, "--logs", &logs, "-q", "-o", "agree",
    ])
    .expect_code(0);
    pages.push(("agree".to_string(), wd.path("agree/report.html")));
    wd.rgrade(&[
        "grade",
        "--labels",
        &judge,
        "--calibrate",
        &human,
        "-q",
        "-o",
        "calibrated",
        &logs,
    ])
    .expect_code(0);
    let calibrated = wd.read_text("calibrated/report.html");
    assert!(calibrated.contains("Calibrated against human labels"));
    pages.push((
        "grade-calibrated".to_string(),
        wd.path("calibrated/report.html"),
    ));
    pages.push(("trend".to_string(), trend_series(&wd)));
    for (name, page) in pages {
        let shot = shots.join(format!("{name}.png"));
        let seen = visit(
            &chromium,
            &page,
            &shot,
            &wd.path(&format!("{name}-browser")),
        );
        assert!(seen.console.is_empty(), "{name}: {:?}", seen.console);
        assert!(seen.requests.is_empty(), "{name}: {:?}", seen.requests);
        eprintln!("{name}: screenshot {}", shot.display());
    }
}

/// The tables of `page` wider than their box, which then scroll sideways,
/// as Chromium lays the page out in the window the screenshots use: a
/// copy of the page, without the policy that allows it no script, runs one
/// that names them (by id, `table` when it has none) in the page's title.
fn overflowing_tables(chromium: &Path, page: &Path, scratch: &Path) -> String {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find(r#"<meta http-equiv="Content-Security-Policy""#)
        .unwrap_or_else(|| panic!("no policy in {}", page.display()));
    let end = start + html[start..].find('>').unwrap() + 1;
    let probe = format!("{}{}", &html[..start], &html[end..]).replace(
        "</body>",
        "<script>document.title = Array.from(document.querySelectorAll('table'))\
         .filter(t => t.scrollWidth > t.clientWidth).map(t => t.id || 'table').join(' ')\
         </script></body>",
    );
    std::fs::create_dir_all(scratch).unwrap();
    let copy = scratch.join("probe.html");
    std::fs::write(&copy, probe).unwrap();
    let dumped = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1100,5000",
            "--timeout=60000",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.join("profile").display()
        ))
        .arg(format!("file://{}", copy.display()))
        .stderr(Stdio::null())
        .output()
        .expect("start chromium");
    let dom = String::from_utf8_lossy(&dumped.stdout);
    let title = dom
        .split_once("<title>")
        .and_then(|(_, rest)| rest.split_once("</title>"));
    title
        .unwrap_or_else(|| panic!("no title in the dumped page:\n{dom}"))
        .0
        .to_string()
}

/// Nine runs graded under both keys, with names as long as real ones: the
/// agree page's tables fit the window, none scrolls sideways. A table
/// wider than the page, put in beside them, is caught: the probe can fail.
#[test]
fn the_agree_page_fits_nine_runs_without_scrolling() {
    let Some(chromium) = chromium() else { return };
    let wd = Workdir::new("report_agree_nine_runs");
    wd.write("a.qrels", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\n");
    wd.write("b.qrels", "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\nq3 0 d8 1\n");
    let runs = [
        "bm25-baseline",
        "bm25-rm3-expanded",
        "dense-e5-large",
        "dense-bge-m3",
        "splade-v3-distil",
        "hybrid-rrf-k60",
        "hybrid-linear-0.7",
        "colbert-v2-plaid",
        "hybrid-rerank-cross-encoder",
    ];
    let mut logs = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        for (query, ranking) in [
            ("q1", ["d1", "d2", "d9"]),
            ("q2", ["d3", "d5", "d9"]),
            ("q3", ["d4", "d8", "d9"]),
        ] {
            let mut ranking = ranking;
            ranking.rotate_left(n % 3);
            logs.push(
                serde_json::json!({"query_id": query, "run": run, "results": ranking}).to_string(),
            );
        }
    }
    wd.write("logs.jsonl", text(&logs));
    wd.rgrade(&[
        "agree",
        "a.qrels",
        "b.qrels",
        "--logs",
        "logs.jsonl",
        "-k",
        "1,3",
        "-q",
        "-o",
        "out",
    ])
    .expect_code(0);
    let page = wd.path("out/report.html");
    assert_eq!(overflowing_tables(&chromium, &page, &wd.path("page")), "");
    let wide = format!(
        "<table id=\"control\"><tr><td style=\"white-space: nowrap\">{}</td></tr></table></main>",
        "wide ".repeat(400)
    );
    wd.write(
        "control.html",
        wd.read_text("out/report.html").replace("</main>", &wide),
    );
    let control = overflowing_tables(&chromium, &wd.path("control.html"), &wd.path("control"));
    assert_eq!(control, "control");
}
