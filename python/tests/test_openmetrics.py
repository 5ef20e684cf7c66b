"""``--openmetrics FILE`` (``grade``, ``trend``) and ``openmetrics=``
(``rgrade.grade``) write a file Prometheus' own parser reads
(prometheus_client's OpenMetrics parser), whose label values come back as
the runs, stages, tasks and languages were written, quotes, backslashes
and line feeds included, and whose values are aggregates.csv's and
trend.csv's."""

import csv
import json
import os
import subprocess
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families

import rgrade

ROOT = Path(__file__).resolve().parents[2]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))

# Names that need escaping in a label value.
TASK = 'say "hi"\\back\nslash'
RUN = 'run "a"'


def write_sample(tmp: Path):
    labels = [
        {"query_id": "q1", "relevant": ["a", "b"], "task": TASK, "language": "en"},
        {"query_id": "q2", "relevant": ["c"], "task": "plain", "language": "de"},
        {"query_id": "q3", "relevant": [], "task": "plain", "language": "de"},
    ]
    logs = [
        {"query_id": "q1", "run": RUN, "results": ["x", "a", "y"]},
        {"query_id": "q2", "run": RUN, "results": ["c"]},
        {"query_id": "q3", "run": RUN, "results": ["c"]},
    ]
    for name, rows in [("labels.jsonl", labels), ("logs.jsonl", logs)]:
        (tmp / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def samples(path: Path):
    families = list(text_string_to_metric_families(path.read_text(encoding="utf-8")))
    assert all(f.type == "gauge" for f in families)
    return {f.name: f.samples for f in families}


def test_a_gradings_file_parses_and_holds_its_aggregates(tmp_path):
    write_sample(tmp_path)
    run = subprocess.run(
        [RGRADE, "grade", "--labels", "labels.jsonl", "-k", "1,3", "-q", "-o", "out",
         "--as-of", "2026-12-01", "--openmetrics", "metrics/rgrade.prom", "logs.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    got = samples(tmp_path / "metrics" / "rgrade.prom")
    with open(tmp_path / "out" / "aggregates.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    means = {(s.labels["task"], s.labels["language"], s.labels["metric"]): s.value
             for s in got["rgrade_mean"]}
    assert {s.labels["run"] for s in got["rgrade_mean"]} == {RUN}
    assert (TASK, "*", "recall@3") in means
    checked = 0
    for row in rows:
        for metric in ["recall@1", "rr@3", "ndcg@3", "ap@3"]:
            key = (row["task"], row["language"], metric)
            if row[metric] == "":
                assert key not in means
            else:
                assert means[key] == float(row[metric])
                checked += 1
    assert checked >= 8
    queries = {(s.labels["task"], s.labels["language"], s.labels["status"]): s.value
               for s in got["rgrade_queries"]}
    assert queries[("plain", "de", "no_answer")] == 1
    assert queries[("*", "*", "ok")] == 2
    counts = {s.labels["count"]: s.value for s in got["rgrade_count"]}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert counts == {k: v for k, v in summary["counts"].items()}
    assert got["rgrade_as_of_seconds"][0].value == 1796083200  # 2026-12-01T00:00:00Z


def test_the_python_api_writes_the_same_file(tmp_path):
    write_sample(tmp_path)
    subprocess.run(
        [RGRADE, "grade", "--labels", "labels.jsonl", "-k", "3", "-q", "--as-of", "2026-12-01",
         "--openmetrics", "cli.prom", "logs.jsonl"],
        cwd=tmp_path, check=True, capture_output=True)
    rgrade.grade(tmp_path / "labels.jsonl", tmp_path / "logs.jsonl", k=3, as_of="2026-12-01",
                 openmetrics=tmp_path / "api.prom")
    assert (tmp_path / "api.prom").read_bytes() == (tmp_path / "cli.prom").read_bytes()


def test_a_trends_file_parses_and_holds_the_last_nights(tmp_path):
    subprocess.run([RGRADE, "gen", "--queries", "300", "--nights", "9", "-o", "data"],
                   cwd=tmp_path, check=True, capture_output=True)
    nights = []
    for n in range(1, 10):
        out = f"graded/{n}"
        subprocess.run(
            [RGRADE, "grade", "--labels", "data/labels.jsonl", "-k", "10", "-q",
             "--as-of", f"2026-11-0{n}", "-o", out, f"data/night-0{n}"],
            cwd=tmp_path, check=True, capture_output=True)
        nights.append(out)
    run = subprocess.run(
        [RGRADE, "trend", "-q", "-o", "trend", "--openmetrics", "trend.prom", *nights],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    got = samples(tmp_path / "trend.prom")
    with open(tmp_path / "trend" / "trend.csv", encoding="utf-8", newline="") as f:
        last = [r for r in csv.DictReader(f) if r["as_of"] == "2026-11-09T00:00:00Z"]
    key = lambda r: (r["run"], r["stage"], r["task"], r["language"], r["metric"])
    means = {key(s.labels): s.value for s in got["rgrade_trend_mean"]}
    p_values = {key(s.labels): s.value for s in got["rgrade_trend_p_value"]}
    levels = {key(s.labels): s.value for s in got["rgrade_trend_alarm_level"]}
    assert len(means) == len(last)
    for row in last:
        assert means[key(row)] == float(row["mean"])
        if row["p_value"]:
            assert p_values[key(row)] == float(row["p_value"])
            assert levels[key(row)] == float(row["level"])
    assert {s.value for s in got["rgrade_trend_alarmed"]} == {0.0}
    assert got["rgrade_trend_alarms"][0].value == 0
