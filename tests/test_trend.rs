//! `rgrade trend`, through the binary, on series `rgrade gen --nights`
//! writes and `rgrade grade --as-of` grades: a drop planted in one task
//! raises alarms there and nowhere else, within two watched nights; a
//! stable series raises none, nor one whose rankings change and stay
//! changed; one series' p-values and levels equal the paired t-test and
//! spending rule computed here from the nights' per_query.csv; grouping
//! sets of the same queries are one series; each night's means equal grade's aggregates; the
//! refusals (no time, one time twice, other labels, a baseline of one
//! night, an unknown metric); what was not tested, said; and the page, which marks every alarm (a
//! series may alarm once in each labels revision) and every change of
//! labels, and draws again the same.

use std::collections::{HashMap, HashSet};

use crate::util::nights::{gen_nights, gen_nights_changing, grade_night, PlantedDrop};
use crate::util::{Table, Workdir};

const NIGHTS: usize = 30;
const DROP_FROM: usize = 20;
const QUERIES: &str = "1500";

/// Generate a series of `NIGHTS` nights (with a drop in billing from
/// `DROP_FROM` when `drop` is set) and grade each night into
/// `graded/night-NN`, as of 2026-11-NN. Returns the night directories.
fn graded_series(wd: &Workdir, drop: Option<&str>) -> Vec<String> {
    let drop = drop.map(|rate| PlantedDrop {
        from: DROP_FROM,
        task: "billing",
        rate,
    });
    gen_nights(wd, "data", QUERIES, NIGHTS, drop);
    grade_nights(wd, "data/labels.jsonl", NIGHTS)
}

/// Grade gen's nights 1 to `count` under `labels` into `graded/night-NN`,
/// as of 2026-11-NN. Returns the night directories.
fn grade_nights(wd: &Workdir, labels: &str, count: usize) -> Vec<String> {
    (1..=count)
        .map(|n| {
            let (night, out) = (format!("data/night-{n:02}"), format!("graded/night-{n:02}"));
            let as_of = format!("2026-11-{n:02}");
            grade_night(wd, labels, &night, &out, &as_of, &[]);
            out
        })
        .collect()
}

fn trend(wd: &Workdir, nights: &[String], extra: &[&str]) -> crate::util::Run {
    let mut args = vec!["trend"];
    args.extend(extra);
    args.extend(nights.iter().map(String::as_str));
    wd.rgrade(&args)
}

#[test]
fn a_planted_drop_alarms_in_its_task_and_nowhere_before_it() {
    let wd = Workdir::new("trend_drop");
    // Listed in reverse: trend orders nights by their as_of.
    let mut nights = graded_series(&wd, Some("0.1"));
    nights.reverse();
    let run = trend(&wd, &nights, &["-o", "trend"]);
    run.expect_code(1);
    let alarms = wd.read_json("trend/alarms.json");
    let alarms = alarms["alarms"].as_array().unwrap();
    assert!(!alarms.is_empty());
    for alarm in alarms {
        let night: usize = alarm["as_of"].as_str().unwrap()[8..10].parse().unwrap();
        assert!(
            night >= DROP_FROM,
            "an alarm before the drop could show: {alarm}"
        );
        // Only sets holding billing queries dropped: billing, or any task.
        let task = alarm["task"].as_str().unwrap();
        assert!(task == "billing" || task == "*", "{alarm}");
        assert!(alarm["drop"].as_f64().unwrap() > 0.0, "{alarm}");
    }
    let planted = |metric: &str| {
        alarms.iter().any(|a| {
            a["task"] == "billing"
                && a["language"] == "*"
                && a["stage"] == "final"
                && a["metric"] == metric
        })
    };
    assert!(planted("recall@10"), "{alarms:?}");
    assert!(run.stdout.contains("ALARM"), "{}", run.stdout);
    // The nights are listed in time order, the first 7 the baseline.
    let summary = wd.read_json("trend/alarms.json");
    let listed: Vec<&str> = (summary["nights"].as_array().unwrap().iter())
        .map(|n| n["night"].as_str().unwrap())
        .collect();
    assert!(listed.windows(2).all(|w| w[0] < w[1]), "{listed:?}");
    let baseline = (summary["nights"].as_array().unwrap().iter())
        .filter(|n| n["baseline"] == true)
        .count();
    assert_eq!(baseline, 7);

    // The page: every alarm marked twice (in its own panel among the
    // alarmed series, and among every series), every series drawn.
    let page = wd.read_text("trend/report.html");
    assert!(page.contains(&format!("{} alarms on", alarms.len())));
    let triangles = page.matches("fill=\"#D55E00\" points=").count();
    assert_eq!(triangles, 2 * alarms.len());
    let series = summary["revisions"][0]["series"].as_u64().unwrap() as usize;
    let lines = page.matches("stroke=\"#0072B2\" stroke-width=\"2\" points=");
    assert_eq!(lines.count(), series + alarms.len());
    // `rgrade report` draws the same page again from the files.
    wd.rgrade(&["report", "trend", "-o", "again.html"])
        .expect_code(0);
    assert_eq!(wd.read_text("again.html"), page);
}

#[test]
fn a_stable_series_raises_no_alarm() {
    let wd = Workdir::new("trend_stable");
    let nights = graded_series(&wd, None);
    let run = trend(&wd, &nights, &["-o", "trend"]);
    run.expect_code(0);
    assert!(run.stdout.contains("no alarm"), "{}", run.stdout);
    assert_eq!(
        wd.read_json("trend/alarms.json")["alarms"],
        serde_json::json!([])
    );
    let page = wd.read_text("trend/report.html");
    assert!(page.contains("No alarm"));
    assert!(!page.contains("fill=\"#D55E00\""), "nothing marked");
}

/// Per night, per query: recall@10 of (bm25-v3, final) queries of `task`
/// that count in the means.
fn values(wd: &Workdir, nights: &[String], task: &str) -> Vec<HashMap<String, f64>> {
    nights
        .iter()
        .map(|night| {
            let table = wd.read_csv(&format!("{night}/per_query.csv"));
            (table.records().into_iter())
                .filter(|r| {
                    r["stage"] == "final" && r["task"] == task && r["status"] != "no_answer"
                })
                .map(|r| (r["query_id"].clone(), r["recall@10"].parse().unwrap()))
                .collect()
        })
        .collect()
}

/// The one-sided paired t-test's p-value for `drops`, floored at 2^−k for
/// the k that are not 0, computed apart from rgrade.
fn paired_p(drops: &[f64]) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = drops.len() as f64;
    let mean = drops.iter().sum::<f64>() / n;
    let var = drops.iter().map(|d| (d - mean) * (d - mean)).sum::<f64>() / (n - 1.0);
    let t = mean / (var.sqrt() / n.sqrt());
    let p = StudentsT::new(0.0, 1.0, n - 1.0).unwrap().sf(t);
    let moved = drops.iter().filter(|&&d| d != 0.0).count();
    p.max(0.5f64.powi(moved as i32))
}

#[test]
fn each_night_is_a_paired_t_test_at_its_share_of_alpha() {
    let wd = Workdir::new("trend_p_values");
    let nights = graded_series(&wd, Some("0.1"));
    trend(
        &wd,
        &nights,
        &["-o", "trend", "--metrics", "recall@10,rr@10"],
    );
    let summary = wd.read_json("trend/alarms.json");
    let revision = &summary["revisions"][0];
    let series = revision["series"].as_u64().unwrap() as f64;
    // The family: every (run, stage, grouping set) of night 1 with a
    // counted query, for each of the two metrics; gen's sets all differ.
    let sets = (wd
        .read_csv(&format!("{}/aggregates.csv", nights[0]))
        .records())
    .iter()
    .filter(|r| r["queries"] != r["no_answer"])
    .count() as f64;
    assert_eq!(revision["repeated_sets"], serde_json::json!([]));
    assert_eq!(series, 2.0 * sets);
    // The first revision's share of alpha: a half.
    assert_eq!(revision["alpha"].as_f64().unwrap(), 0.025);

    let values = values(&wd, &nights, "billing");
    // Baseline: each query's mean over 7 nights.
    let mut baseline: HashMap<&str, f64> = HashMap::new();
    for query in values[0].keys() {
        let xs: Vec<f64> = values[..7]
            .iter()
            .filter_map(|n| n.get(query))
            .copied()
            .collect();
        baseline.insert(query, xs.iter().sum::<f64>() / xs.len() as f64);
    }
    let trend_table = wd.read_csv("trend/trend.csv");
    let mut alarmed = None;
    for (night, tonight) in values.iter().enumerate().skip(7) {
        let drops: Vec<f64> = (tonight.iter())
            .filter_map(|(q, &x)| Some(baseline.get(q.as_str())? - x))
            .collect();
        let as_of = format!("2026-11-{:02}T00:00:00Z", night + 1);
        let row = trend_table.row(&[
            ("as_of", &as_of),
            ("stage", "final"),
            ("task", "billing"),
            ("language", "*"),
            ("metric", "recall@10"),
        ]);
        let (got, want) = (row["p_value"].parse::<f64>().unwrap(), paired_p(&drops));
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "night {}: {got} vs {want}",
            night + 1
        );
        // The t-th watched night spends 1/(t(t+1)) of the revision's share.
        let t = (night - 6) as f64;
        let level = 0.025 / (t * (t + 1.0)) / series;
        let got_level: f64 = row["level"].parse().unwrap();
        assert!(
            (got_level - level).abs() <= 1e-12 * level,
            "night {}",
            night + 1
        );
        let drop = drops.iter().sum::<f64>() / drops.len() as f64;
        let got_drop: f64 = row["drop"].parse().unwrap();
        assert!((got_drop - drop).abs() < 1e-12, "night {}", night + 1);
        let alarm = alarmed.is_none() && want <= level;
        if alarm {
            alarmed = Some(night + 1);
        }
        assert_eq!(row["alarm"], alarm.to_string(), "night {}", night + 1);
    }
    // The drop planted on night 20 is seen within two watched nights.
    let night = alarmed.expect("a drop of 10% of billing's relevant documents is seen");
    assert!(
        (DROP_FROM..=DROP_FROM + 1).contains(&night),
        "night {night}"
    );
}

/// Rankings that change and stay changed, with quality that never moves,
/// raise no alarm: each change is one draw of its query, tested once a
/// night against the baseline, not evidence that piles up night after
/// night.
#[test]
fn rankings_that_persist_raise_no_alarm() {
    let wd = Workdir::new("trend_persist");
    gen_nights_changing(&wd, "data", "1500", NIGHTS, "persist");
    let nights = grade_nights(&wd, "data/labels.jsonl", NIGHTS);
    // The rankings did change: by the last night many queries moved from
    // their first night's value, and stayed moved on the night before.
    let (first, before, last) = (
        values(&wd, &nights[..1], "billing").remove(0),
        values(&wd, &nights[NIGHTS - 2..NIGHTS - 1], "billing").remove(0),
        values(&wd, &nights[NIGHTS - 1..], "billing").remove(0),
    );
    let moved = (first.iter())
        .filter(|(q, v)| last.get(*q).is_some_and(|x| x != *v) && before.get(*q) == last.get(*q))
        .count();
    assert!(moved >= 10, "{moved} queries changed and stayed changed");
    let run = trend(&wd, &nights, &["-o", "trend"]);
    run.expect_code(0);
    assert!(run.stdout.contains("no alarm"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("closest to an alarm on the last night: "),
        "{}",
        run.stdout
    );
}

/// Labels with no task or language make the overall set and the `(none)`
/// slices the same queries: one series, tested and printed once.
#[test]
fn grouping_sets_of_the_same_queries_are_one_series() {
    let wd = Workdir::new("trend_repeated_sets");
    gen_nights(
        &wd,
        "data",
        "600",
        9,
        Some(PlantedDrop {
            from: 8,
            task: "billing",
            rate: "0.5",
        }),
    );
    let plain: String = (wd.read_text("data/labels.jsonl").lines())
        .map(|line| {
            let mut label: serde_json::Value = serde_json::from_str(line).unwrap();
            let object = label.as_object_mut().unwrap();
            object.remove("task");
            object.remove("language");
            object.remove("split");
            format!("{label}\n")
        })
        .collect();
    wd.write("plain.jsonl", plain);
    let nights = grade_nights(&wd, "plain.jsonl", 9);
    let run = trend(&wd, &nights, &["-o", "trend", "--metrics", "recall@10"]);
    run.expect_code(1);
    let summary = wd.read_json("trend/alarms.json");
    let revision = &summary["revisions"][0];
    // Two stages, one metric, one distinct set each; three sets repeat it.
    assert_eq!(revision["series"], 2, "{revision}");
    let repeated = revision["repeated_sets"].as_array().unwrap();
    assert_eq!(repeated.len(), 6, "{revision}");
    assert!(repeated
        .iter()
        .all(|r| r["same_as"]["task"] == "*" && r["same_as"]["language"] == "*"));
    // Each alarm once, naming the sets it stands for.
    let alarms = summary["alarms"].as_array().unwrap();
    assert_eq!(alarms.len(), 2, "{alarms:?}");
    for alarm in alarms {
        assert_eq!(alarm["task"], "*");
        assert_eq!(alarm["also"].as_array().unwrap().len(), 3, "{alarm}");
    }
    // Every distinct series was tested: nothing to warn of.
    assert!(!run.stderr.contains("never tested"), "{}", run.stderr);
    let printed = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("ALARM"))
        .count();
    assert_eq!(printed, 2, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("[the same queries as task=(none) language=*"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("2 distinct series watched (6 grouping sets hold the same queries"),
        "{}",
        run.stdout
    );
    // trend.csv keeps every set's rows, the repeats' tests equal to theirs.
    let table = wd.read_csv("trend/trend.csv");
    let row = |task: &str, language: &str| {
        table.row(&[
            ("as_of", "2026-11-08T00:00:00Z"),
            ("stage", "final"),
            ("task", task),
            ("language", language),
        ])
    };
    let (overall, none) = (row("*", "*"), row("(none)", "(none)"));
    for column in ["mean", "paired", "drop", "p_value", "level", "alarm"] {
        assert_eq!(overall[column], none[column], "{column}");
    }
    // The page draws each distinct series once, and each alarm once.
    let page = wd.read_text("trend/report.html");
    assert!(page.contains("2 alarms on"));
    assert_eq!(page.matches("fill=\"#D55E00\" points=").count(), 2 * 2);
}

#[test]
fn each_nights_means_are_its_aggregates() {
    let wd = Workdir::new("trend_means");
    let nights = graded_series(&wd, None);
    trend(&wd, &nights[..9], &["-o", "trend"]).expect_code(0);
    let trend_rows = wd.read_csv("trend/trend.csv").records();
    let key = |r: &HashMap<String, String>| {
        ["as_of", "stage", "task", "language", "metric"].map(|c| r[c].clone())
    };
    let trend_table: HashMap<[String; 5], &HashMap<String, String>> =
        trend_rows.iter().map(|r| (key(r), r)).collect();
    assert_eq!(
        trend_table.len(),
        trend_rows.len(),
        "one row per night and series"
    );
    for (n, night) in nights[..9].iter().enumerate() {
        let as_of = format!("2026-11-{:02}T00:00:00Z", n + 1);
        let role = if n < 7 { "baseline" } else { "watched" };
        for agg in wd.read_csv(&format!("{night}/aggregates.csv")).records() {
            if agg["queries"] == agg["no_answer"] {
                continue;
            }
            for metric in ["recall@10", "ndcg@10", "ap@10"] {
                let wanted = [
                    &as_of,
                    &agg["stage"],
                    &agg["task"],
                    &agg["language"],
                    metric,
                ];
                let row = trend_table[&wanted.map(ToString::to_string)];
                let (got, want): (f64, f64) =
                    (row["mean"].parse().unwrap(), agg[metric].parse().unwrap());
                assert!((got - want).abs() < 1e-12, "{row:?} vs {want}");
                let counted: u64 = ["ok", "missing", "invalid"]
                    .iter()
                    .map(|c| agg[*c].parse::<u64>().unwrap())
                    .sum();
                assert_eq!(row["queries"], counted.to_string());
                assert_eq!(row["role"], role);
                let (low, high): (f64, f64) = (
                    row["ci_low"].parse().unwrap(),
                    row["ci_high"].parse().unwrap(),
                );
                assert!(low <= got && got <= high, "{row:?}");
            }
        }
    }
    let first_night = trend_rows
        .iter()
        .filter(|r| r["night"].ends_with("night-01"));
    assert_eq!(first_night.count(), trend_rows.len() / 9);
}

#[test]
fn nights_that_cannot_be_ordered_or_compared_are_refused() {
    let wd = Workdir::new("trend_refusals");
    let nights = graded_series(&wd, None);
    let first = &nights[..8];
    let refused = |args: &[&str], nights: &[String], needles: &[&str]| {
        let run = trend(&wd, nights, args);
        run.expect_code(2);
        for needle in needles {
            assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
        }
    };
    refused(&["--baseline", "1"], first, &["--baseline 1", "at least 2"]);
    refused(
        &["--metrics", "recall@3"],
        first,
        &["--metrics recall@3", "per_query.csv has no such metric"],
    );
    refused(&["--metrics", "recall@ten"], first, &["not a metric"]);
    refused(
        &["--metrics", "judged@10"],
        first,
        &["judged@k measures how much of a ranking the labels cover"],
    );
    // The same night twice.
    let twice = [first.to_vec(), vec![first[0].clone()]].concat();
    refused(&[], &twice, &["both stand for 2026-11-01T00:00:00Z"]);
    // Other labels: refused, or a second revision with its own baseline.
    let labels = wd.read_text("data/labels.jsonl");
    let fewer: String = labels.lines().skip(1).map(|l| format!("{l}\n")).collect();
    wd.write("data/labels-2.jsonl", fewer);
    for n in 9..=18 {
        let (night, out) = (
            format!("data/night-{n:02}"),
            format!("relabeled/night-{n:02}"),
        );
        let as_of = format!("2026-11-{n:02}");
        grade_night(&wd, "data/labels-2.jsonl", &night, &out, &as_of, &[]);
    }
    let relabeled: Vec<String> = (9..=18)
        .map(|n| format!("relabeled/night-{n:02}"))
        .collect();
    let mixed = [first.to_vec(), relabeled].concat();
    refused(
        &[],
        &mixed,
        &["graded with other labels", "--allow-label-changes"],
    );
    let run = trend(&wd, &mixed, &["--allow-label-changes", "-o", "revised"]);
    run.expect_code(0);
    let summary = wd.read_json("revised/alarms.json");
    let revisions: Vec<u64> = (summary["nights"].as_array().unwrap().iter())
        .map(|n| n["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(revisions, [vec![1; 8], vec![2; 10]].concat());
    let changed: Vec<&serde_json::Value> = (summary["revisions"].as_array().unwrap().iter())
        .map(|r| &r["changed"])
        .collect();
    assert_eq!(
        changed,
        [&serde_json::Value::Null, &serde_json::json!("labels")]
    );
    let baseline: Vec<bool> = (summary["nights"].as_array().unwrap().iter())
        .map(|n| n["baseline"].as_bool().unwrap())
        .collect();
    let want = [vec![true; 7], vec![false], vec![true; 7], vec![false; 3]].concat();
    assert_eq!(baseline, want);
    let table: Table = wd.read_csv("revised/trend.csv");
    assert!(table.column("revision").iter().any(|r| r == "2"));
    // The page marks the change of labels in every panel, and breaks
    // each series there.
    let page = wd.read_text("revised/report.html");
    let columns = [
        "run", "stage", "task", "language", "split", "metric", "revision",
    ];
    let of_revision: HashSet<[String; 7]> = (table.records().iter())
        .map(|r| columns.map(|c| r[c].clone()))
        .collect();
    let series: HashSet<&[String]> = of_revision.iter().map(|s| &s[..6]).collect();
    assert_eq!(page.matches("stroke=\"#CC79A7\"").count(), series.len());
    let lines = page.matches("stroke=\"#0072B2\" stroke-width=\"2\" points=");
    assert_eq!(lines.count(), of_revision.len());
    // Other cutoffs start a revision too; only the metrics every night
    // has are watched, and the others are named.
    let deeper: Vec<String> = (9..=10)
        .map(|n| {
            let out = format!("deeper/night-{n:02}");
            wd.rgrade(&[
                "grade",
                "--labels",
                "data/labels.jsonl",
                "-k",
                "5,10",
                "--as-of",
                &format!("2026-11-{n:02}"),
                "-q",
                "-o",
                &out,
                &format!("data/night-{n:02}"),
            ])
            .expect_code(0);
            out
        })
        .collect();
    let run = trend(
        &wd,
        &[first.to_vec(), deeper].concat(),
        &["--allow-label-changes", "-o", "deeper-trend"],
    );
    run.expect_code(0);
    assert!(
        (run.stderr).contains("recall@5, rr@5, hit@5, precision@5, ndcg@5, ap@5 not watched"),
        "{}",
        run.stderr
    );
    let summary = wd.read_json("deeper-trend/alarms.json");
    assert_eq!(summary["revisions"][1]["changed"], "cutoffs");
    let watched = ["recall", "rr", "hit", "precision", "ndcg", "ap"].map(|m| format!("{m}@10"));
    assert_eq!(summary["settings"]["metrics"], serde_json::json!(watched));
    // A night that records no time.
    let summary_path = format!("{}/summary.json", first[1]);
    let mut timeless = wd.read_json(&summary_path);
    timeless.as_object_mut().unwrap().remove("as_of");
    wd.write(&summary_path, serde_json::to_vec_pretty(&timeless).unwrap());
    refused(&[], first, &["records no as_of", "--as-of"]);
}

#[test]
fn a_night_graded_again_while_trend_reads_it_is_refused() {
    let wd = Workdir::new("trend_regraded");
    gen_nights(&wd, "data", "300", 6, None);
    let nights = grade_nights(&wd, "data/labels.jsonl", 6);
    // Other labels: every other query's relevant documents are ones no
    // ranking holds, so its recall falls to 0.
    let labels = wd.read_text("data/labels.jsonl");
    let other: String = (labels.lines().enumerate())
        .map(|(i, line)| {
            let mut label: serde_json::Value = serde_json::from_str(line).unwrap();
            if i % 2 == 0 {
                label["relevant"] = serde_json::json!(["nowhere#chunk-0000"]);
            }
            format!("{label}\n")
        })
        .collect();
    wd.write("data/labels-2.jsonl", other);
    let args = [&["trend", "--baseline", "3"][..], &as_strs(&nights)].concat();

    // Nothing changed between checking the nights and reading them: watched.
    wd.rgrade_paused(&args, || {}).expect_code(0);
    // The last night graded again, with the other labels, once its
    // summary.json was checked: its new per_query.csv is not read under the
    // old summary's settings (nor half old, half new).
    let run = wd.rgrade_paused(&args, || {
        let regraded = "data/labels-2.jsonl";
        grade_night(
            &wd,
            regraded,
            "data/night-06",
            "graded/night-06",
            "2026-11-06",
            &[],
        );
    });
    run.expect_code(2)
        .expect_stderr(&["graded/night-06/per_query.csv: changed while it was being read"]);
    // Read again, the night is what it now is: graded with other labels.
    let again = trend(&wd, &nights, &["--baseline", "3"]);
    again
        .expect_code(2)
        .expect_stderr(&["graded/night-06: graded with other labels"]);
}

fn as_strs(strings: &[String]) -> Vec<&str> {
    strings.iter().map(String::as_str).collect()
}

#[test]
fn a_series_may_alarm_once_in_each_labels_revision() {
    let wd = Workdir::new("trend_two_revisions");
    let drop = PlantedDrop {
        from: 4,
        task: "billing",
        rate: "0.5",
    };
    gen_nights(&wd, "data", "1500", 5, Some(drop));
    let labels = wd.read_text("data/labels.jsonl");
    let fewer: String = labels.lines().skip(1).map(|l| format!("{l}\n")).collect();
    wd.write("data/labels-2.jsonl", fewer);
    // The five nights graded with the labels, then again, five days
    // later, with the labels revised: each revision sees the drop after
    // its own baseline.
    let mut nights = Vec::new();
    for (revision, labels) in [(0, "data/labels.jsonl"), (1, "data/labels-2.jsonl")] {
        for n in 1..=5 {
            let out = format!("graded/{revision}-{n}");
            let as_of = format!("2026-11-{:02}", n + 5 * revision);
            let night = format!("data/night-{n:02}");
            grade_night(&wd, labels, &night, &out, &as_of, &[]);
            nights.push(out);
        }
    }
    let args = ["--allow-label-changes", "--baseline", "3", "-o", "trend"];
    trend(&wd, &nights, &args).expect_code(1);
    let alarms = wd.read_json("trend/alarms.json")["alarms"].clone();
    let night_of = |a: &serde_json::Value| a["night"].as_str().unwrap().to_string();
    let of_series = |night: &str| {
        (alarms.as_array().unwrap().iter())
            .filter(|a| {
                a["stage"] == "final"
                    && a["task"] == "billing"
                    && a["language"] == "*"
                    && a["metric"] == "recall@10"
            })
            .filter(|a| night_of(a) == night)
            .count()
    };
    // The drop shows on each revision's first watched night.
    assert_eq!(of_series("graded/0-4"), 1, "{alarms}");
    assert_eq!(of_series("graded/1-4"), 1, "{alarms}");
    // The page marks both, and draws again the same.
    let page = wd.read_text("trend/report.html");
    let total = alarms.as_array().unwrap().len();
    assert!(
        page.contains(&format!("{total} alarms on 2 nights")),
        "{total}"
    );
    wd.rgrade(&["report", "trend", "-o", "again.html"])
        .expect_code(0);
    assert_eq!(wd.read_text("again.html"), page);
}

/// Grade gen's `logs` into `out` as of 2026-11-`n`, leaving out of the
/// means the queries they do not capture, with `extra` options.
fn grade_skipping(wd: &Workdir, n: usize, logs: &str, out: &str, extra: &[&str]) {
    let as_of = format!("2026-11-{n:02}");
    let extra = [&["--missing", "skip"], extra].concat();
    grade_night(wd, "data/labels.jsonl", logs, out, &as_of, &extra);
}

#[test]
fn what_was_not_tested_is_said() {
    let wd = Workdir::new("trend_untested");
    gen_nights(&wd, "data", "600", 5, None);
    // Billing's queries are captured only after the baseline, and the
    // retrieve stage is missing on night 4.
    let billing: HashSet<String> = (wd.read_text("data/labels.jsonl").lines())
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|label| label["task"] == "billing")
        .map(|label| label["query_id"].as_str().unwrap().to_string())
        .collect();
    assert!(!billing.is_empty());
    let mut nights = Vec::new();
    for n in 1..=5 {
        let night = format!("data/night-{n:02}");
        let out = format!("graded/night-{n:02}");
        if n <= 3 {
            let kept = captures(&wd, &night, &billing, false);
            wd.write(&format!("without-billing/night-{n:02}.jsonl"), kept);
            let logs = format!("without-billing/night-{n:02}.jsonl");
            grade_skipping(&wd, n, &logs, &out, &[]);
        } else if n == 4 {
            grade_skipping(&wd, n, &night, &out, &["--stage", "final"]);
        } else {
            grade_skipping(&wd, n, &night, &out, &[]);
        }
        nights.push(out);
    }

    let run = trend(&wd, &nights, &["--baseline", "3", "-o", "trend"]);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", run.stderr);
    assert!(
        (run.stderr).contains("series were never tested: no query graded on a watched night")
            && (run.stderr).contains("the first: run bm25-v3 stage final task=billing"),
        "{}",
        run.stderr
    );
    assert!(
        (run.stderr).contains(
            "run bm25-v3 stage retrieve has no rows on 1 of 5 nights (the first: graded/night-04)"
        ),
        "{}",
        run.stderr
    );
    // Billing's rows on the watched nights are there, untested.
    let table: Table = wd.read_csv("trend/trend.csv");
    let untested: Vec<_> = (table.records().into_iter())
        .filter(|r| r["task"] == "billing" && r["role"] == "watched")
        .collect();
    assert!(!untested.is_empty());
    assert!(untested
        .iter()
        .all(|r| r["p_value"].is_empty() && r["drop"].is_empty()));

    // The last table's baseline, night and drop are over one set of
    // queries, the paired ones; its mean is the night's over all.
    let table_lines: Vec<&str> = (run.stdout.lines())
        .skip_while(|line| !line.starts_with("run "))
        .skip(1)
        .collect();
    assert!(!table_lines.is_empty(), "{}", run.stdout);
    for line in table_lines {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let [baseline, night, drop] = [5, 6, 7].map(|i| cells[i].parse::<f64>().unwrap());
        assert!((baseline - night - drop).abs() <= 0.0015, "{line}");
    }

    // Before any night is past the baseline, nothing is tested, and the
    // verdict says so rather than "no alarm".
    let early = trend(&wd, &nights[..3], &["-o", "early"]);
    early.expect_code(0);
    assert!(
        (early.stdout).contains("nothing tested yet: no night past a baseline of 7 nights"),
        "{}",
        early.stdout
    );
    assert!(!early.stdout.contains("no alarm"), "{}", early.stdout);
    let page = wd.read_text("early/report.html");
    assert!(page.contains("Nothing tested yet"));
    assert!(!page.contains("No alarm"));

    // Nor when the watched night's queries are none of the baseline's.
    let only_billing = captures(&wd, "data/night-04", &billing, true);
    wd.write("only-billing/night-04.jsonl", only_billing);
    let out = "graded/only-billing-04";
    grade_skipping(&wd, 4, "only-billing/night-04.jsonl", out, &[]);
    let unpaired = [nights[..3].to_vec(), vec![out.to_string()]].concat();
    let run = trend(&wd, &unpaired, &["--baseline", "3", "-o", "unpaired"]);
    run.expect_code(0);
    let why = "nothing tested: no query of the watched nights was graded on the baseline nights";
    assert!(run.stdout.contains(why), "{}", run.stdout);
    assert!(
        run.stderr.contains("series were never tested"),
        "{}",
        run.stderr
    );
    let page = wd.read_text("unpaired/report.html");
    assert!(page.contains("Nothing tested: no query") && !page.contains("No alarm"));
    let summary = wd.read_json("unpaired/alarms.json");
    assert_eq!(summary["revisions"][0]["tested"], 0);
    assert!(summary["revisions"][0]["series"].as_u64().unwrap() > 0);
}

/// The lines of `night`'s log whose query is (`among`) or is not in `queries`.
fn captures(wd: &Workdir, night: &str, queries: &HashSet<String>, among: bool) -> String {
    let logs = wd.read_text(&format!("{night}/logs.jsonl"));
    (logs.lines())
        .filter(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            queries.contains(event["query_id"].as_str().unwrap()) == among
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
