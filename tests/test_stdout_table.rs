//! The stdout table fits its width (docs/reference.md, Outputs): 100 columns
//! when stdout is a pipe, `COLUMNS` when set; a table too wide for it turns,
//! metrics as rows, and keeps every value.

use crate::util::{repo_path, run_command, Run, StdoutTable, Table, Workdir};

/// Seven cutoffs: 42 metric columns, far wider than any terminal.
const MANY_CUTOFFS: &str = "1,3,5,10,20,50,100";

/// Grade the realistic sample (two stages, five tasks, four languages) at
/// `MANY_CUTOFFS` into `out`, with `COLUMNS` set to `columns` if given.
fn grade_realistic(wd: &Workdir, columns: Option<&str>) -> Run {
    let labels = repo_path("data-samples/realistic/labels.jsonl");
    let logs = repo_path("data-samples/realistic/logs");
    let (labels, logs) = (labels.display().to_string(), logs.display().to_string());
    let args = [
        "grade",
        "--labels",
        &labels,
        "-k",
        MANY_CUTOFFS,
        "--repeats",
        "last",
        "--max-rejects",
        "10",
        "-o",
        "out",
        &logs,
    ];
    let mut cmd = wd.command(&args);
    if let Some(columns) = columns {
        cmd.env("COLUMNS", columns);
    }
    let run = run_command(&mut cmd);
    run.expect_code(0);
    run
}

/// Panic unless every line of stdout is at most `width` characters.
#[track_caller]
fn assert_fits(run: &Run, width: usize) {
    for line in run.stdout.lines() {
        assert!(
            line.chars().count() <= width,
            "a line wider than {width}: {line:?}\n{run}"
        );
    }
}

/// Whether some block of the table has slices as rows (its header names
/// the count columns).
fn has_slices_as_rows(run: &Run) -> bool {
    let header = |line: &str| {
        let cells: Vec<&str> = line.split_whitespace().take(2).collect();
        cells == ["slice", "queries"]
    };
    run.stdout.lines().any(header)
}

/// Every count and metric mean of aggregates.csv's overall, per-task and
/// per-language rows is in the stdout table, rounded to 3 decimals.
#[track_caller]
fn assert_all_values_shown(table: &StdoutTable, aggregates: &Table) {
    let at = |name: &str| aggregates.header.iter().position(|h| h == name).unwrap();
    let (task, language) = (at("task"), at("language"));
    let shown_columns = at("queries")..at("latency_p50_ms");
    let mut checked = 0;
    for row in &aggregates.rows {
        let slice = match (row[task].as_str(), row[language].as_str()) {
            ("*", "*") => "all".to_string(),
            (task, "*") => format!("task={task}"),
            ("*", language) => format!("language={language}"),
            _ => continue,
        };
        let key = (row[at("run")].clone(), row[at("stage")].clone());
        let cells = &table[&key][&slice];
        for column in shown_columns.clone() {
            let name = &aggregates.header[column];
            let want = match row[column].as_str() {
                "" => "-".to_string(),
                value if name.contains('@') => format!("{:.3}", value.parse::<f64>().unwrap()),
                count => count.to_string(),
            };
            assert_eq!(cells[name], want, "{key:?} {slice} {name}");
            checked += 1;
        }
    }
    // Two stages, 1 + 5 tasks + 4 languages, 5 counts and 42 means.
    assert_eq!(checked, 2 * 10 * 47);
}

/// With seven cutoffs and stdout a pipe, the table turns to fit 100
/// columns, and every value is still there.
#[test]
fn a_wide_table_turns_to_fit_a_pipe() {
    let wd = Workdir::new("table_pipe");
    let run = grade_realistic(&wd, None);
    assert_fits(&run, 100);
    assert!(!has_slices_as_rows(&run), "{run}");
    assert_all_values_shown(&run.stdout_table(), &wd.read_csv("out/aggregates.csv"));
}

/// `COLUMNS` sets the width: at 60 the slices spread over more column
/// groups, at 1000 the slices are rows again; the values are the same.
#[test]
fn columns_sets_the_table_width() {
    let wd = Workdir::new("table_columns");
    let narrow = grade_realistic(&wd, Some("60"));
    assert_fits(&narrow, 60);
    let pipe = grade_realistic(&wd, None);
    let groups = |run: &Run| {
        run.stdout
            .lines()
            .filter(|l| l.starts_with("  slice "))
            .count()
    };
    assert!(groups(&narrow) > groups(&pipe), "{narrow}\n{pipe}");
    let wide = grade_realistic(&wd, Some("1000"));
    assert!(has_slices_as_rows(&wide), "{wide}");
    assert_eq!(narrow.stdout_table(), wide.stdout_table());
    assert_all_values_shown(&wide.stdout_table(), &wd.read_csv("out/aggregates.csv"));
}

/// `--json` prints summary.json's document on stdout as one line: with
/// `-o` the very document written, without it the same figures listing no
/// output; a name holding characters that act on a terminal arrives as
/// JSON escapes of the same value.
#[test]
fn json_prints_the_summary_on_stdout() {
    let wd = Workdir::new("stdout_json");
    let labels = r#"{"query_id":"q1","relevant":["d1"]}
{"query_id":"q2","relevant":["d2"]}
"#;
    let run_name = "bm25\u{202E}\u{9B}31m";
    let logs = format!(
        "{}\n{}\n",
        serde_json::json!({"query_id": "q1", "run": run_name, "results": ["d1", "d9"]}),
        serde_json::json!({"query_id": "q2", "run": run_name, "results": ["d9", "d2"]}),
    );
    wd.write("labels.jsonl", labels);
    wd.write("logs.jsonl", logs);
    let json = [
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1",
        "logs.jsonl",
        "--json",
    ];
    let grade = |extra: &[&str]| {
        let args = [&json[..], extra].concat();
        let run = wd.rgrade(&args);
        run.expect_code(0);
        assert_eq!(run.stdout.lines().count(), 1, "one line of JSON\n{run}");
        assert!(
            !run.stdout.contains('\u{202E}') && !run.stdout.contains('\u{9B}'),
            "raw terminal controls on stdout\n{run}"
        );
        serde_json::from_str::<serde_json::Value>(&run.stdout)
            .unwrap_or_else(|e| panic!("stdout is no JSON: {e}\n{run}"))
    };

    let written = grade(&["-o", "out"]);
    assert_eq!(written, wd.read_json("out/summary.json"));
    assert_eq!(written["overall"][0]["run"], run_name);
    let overall = &written["overall"][0];
    assert_eq!(overall["metrics"]["recall@1"], 0.5, "{overall}");

    let alone = grade(&[]);
    assert_eq!(alone["outputs"], serde_json::json!([]));
    for key in ["labels", "counts", "overall", "settings", "inputs"] {
        assert_eq!(alone[key], written[key], "{key} differs without -o");
    }

    wd.rgrade(&[&json[..], &["-q"]].concat())
        .expect_code(2)
        .expect_stderr(&["--json", "--quiet"]);
}

/// Labels of two tasks in one language: the language's slice holds the
/// same queries as `all`, and each task × language those of its task. The
/// table shows them once and names the repeats; the page draws no task ×
/// language chart beside the tasks'; aggregates.csv keeps every row.
#[test]
fn slices_of_the_same_queries_are_shown_once() {
    let wd = Workdir::new("stdout_repeated_slices");
    let label = |q: &str, task: &str| {
        format!(
            r#"{{"query_id": "{q}", "relevant": ["d_{q}"], "task": "{task}", "language": "en"}}"#
        )
    };
    wd.write(
        "labels.jsonl",
        [label("q1", "a"), label("q2", "a"), label("q3", "b")].join("\n"),
    );
    // q1 found at rank 1, q2 and q3 at rank 2.
    let capture = |q: &str, first: &str, second: &str| {
        format!(r#"{{"query_id": "{q}", "results": ["{first}", "{second}"]}}"#)
    };
    wd.write(
        "logs.jsonl",
        [
            capture("q1", "d_q1", "x"),
            capture("q2", "x", "d_q2"),
            capture("q3", "x", "d_q3"),
        ]
        .join("\n"),
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
    let slices: Vec<&str> = (run.stdout.lines())
        .find_map(|line| line.trim().strip_prefix("slice "))
        .map(|names| names.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(slices, ["all", "task=a", "task=b"], "{run}");
    assert!(
        run.stdout
            .contains("\n  the same queries as all: language=en\n"),
        "{run}"
    );
    let aggregates = wd.read_csv("out/aggregates.csv");
    assert_eq!(
        aggregates.column("language"),
        ["*", "*", "*", "en", "en", "en"]
    );
    let page = wd.read_text("out/report.html");
    assert!(page.contains("By task: "), "{page}");
    assert!(!page.contains("By task × language"), "{page}");
}
