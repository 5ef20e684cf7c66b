"""Gradings, comparisons and shards show themselves in a notebook: a repr
of a few lines, and HTML tables of the counts, the rejects by reason and
the means with their intervals, every value escaped (the hostile sample's
run and stage names are markup)."""

import csv
import json
import math
import statistics
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
METRICS = ["recall", "rr", "hit", "precision", "ndcg", "ap"]


def quietly(function, *args, **kwargs):
    """Grade the samples that hold rejects without warning of them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rgrade.RejectedRecordsWarning)
        return function(*args, **kwargs)


def tables(markup: str) -> dict:
    """The HTML's tables by caption, each a list of rows of cell texts.
    Parsing it as XML fails on any markup left unescaped."""
    root = ET.fromstring(markup)
    return {
        table.find("caption").text: [[cell.text or "" for cell in row] for row in table.iter("tr")]
        for table in root.iter("table")
    }


@pytest.fixture(scope="module")
def realistic():
    labels, logs = SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs"
    return quietly(rgrade.grade, labels, logs, k=(1, 5, 10), repeats="last")


@pytest.fixture(scope="module")
def compared():
    labels = SAMPLES / "compare/labels.jsonl"
    options = {"k": (1, 5, 10), "repeats": "last"}
    baseline = quietly(rgrade.grade, labels, SAMPLES / "realistic/logs", **options)
    candidate = quietly(rgrade.grade, labels, SAMPLES / "compare/candidate", **options)
    return baseline, candidate, rgrade.compare(baseline, candidate, SAMPLES / "compare/rules.toml", seed=1)


def test_a_gradings_repr_has_its_counts_and_headline_means(realistic):
    first, *lines = repr(realistic).splitlines()
    assert first == (
        "<rgrade.Grading k=1,5,10: 300 labeled queries, 572 graded rows, 5 rejected records, 40 unlabeled events"
    )
    assert lines[0].startswith("  bm25-v3 final: 300 queries; recall@10 0.657, rr@10 0.607, hit@10 0.783,")
    assert len(lines) == len(realistic.summary["overall"]) == 2
    for line, row in zip(lines, realistic.summary["overall"]):
        means = ", ".join(f"{m}@10 {row['metrics'][f'{m}@10']:.3f}" for m in METRICS)
        assert line.removesuffix(">") == f"  {row['run']} {row['stage']}: {row['queries']} queries; {means}"
    assert lines[-1].endswith(">")


def test_the_headline_intervals_are_normal_approximations_from_per_query(realistic):
    """Recomputed here from per_query's rows with the statistics module:
    the mean of the queries with a value (summary.json's mean), ± 1.96
    standard errors, kept within the values' range."""
    rows = realistic.per_query.to_pylist()
    headline = realistic.headline()
    assert [(h["run"], h["stage"], h["queries"]) for h in headline] == [
        (o["run"], o["stage"], o["queries"]) for o in realistic.summary["overall"]
    ]
    for h, overall in zip(headline, realistic.summary["overall"]):
        assert list(h["metrics"]) == [f"{m}@10" for m in METRICS]
        for metric, (mean, low, high) in h["metrics"].items():
            values = [r[metric] for r in rows if (r["run"], r["stage"]) == (h["run"], h["stage"])]
            values = [v for v in values if v is not None]
            assert len(values) == overall["ok"] == 286
            assert mean == pytest.approx(overall["metrics"][metric], abs=1e-12)
            half = 1.959964 * statistics.stdev(values) / math.sqrt(len(values))
            assert low == pytest.approx(max(mean - half, min(values)), abs=1e-6)
            assert high == pytest.approx(min(mean + half, max(values)), abs=1e-6)
            assert low < mean < high


def test_the_headline_of_a_whole_ranking_and_of_one_query():
    """At `-k all` the metrics are those @all; a mean of one value has no
    spread; logs without runs name their (run, stage) by the stage."""
    labels, logs = SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl"
    graded = rgrade.grade(labels, logs, k=[3, "all"])
    (headline,) = graded.headline()
    assert list(headline["metrics"]) == [f"{m}@all" for m in METRICS]
    assert headline["metrics"]["hit@all"] == (1.0, 1.0, 1.0)
    assert repr(graded).splitlines()[1].startswith("  final: 3 queries; recall@all 0.833, rr@all 0.667,")
    events = pa.table({"query_id": ["q_reset"], "results": [["billing", "reset_steps"]]})
    (headline,) = rgrade.grade(labels, events, k=2, missing="skip").headline()
    assert headline["metrics"]["rr@2"] == (0.5, 0.5, 0.5)


def test_a_gradings_html_holds_counts_rejects_and_intervals(realistic, tmp_path):
    found = tables(realistic._repr_html_())
    counts = realistic.summary["counts"]
    assert found["rgrade grading"] == [
        ["labeled queries", "graded rows", "rejected records", "unlabeled events"],
        [str(counts["labeled"]), str(counts["graded"]), str(counts["rejected"]), str(counts["unlabeled_events"])],
    ]
    realistic.write(tmp_path)
    lines = (tmp_path / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    reasons = Counter(json.loads(line)["reason"] for line in lines)
    assert found["Rejected records by reason"] == [["reason", "records"]] + [
        [reason, str(n)] for reason, n in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    ]
    means = found["Means over the queries that count, with 95% intervals (normal approximation)"]
    assert means[0] == ["run", "stage", "queries", *(f"{m}@10" for m in METRICS)]
    assert len(means) == 3
    for row, h in zip(means[1:], realistic.headline()):
        cells = [f"{mean:.3f} [{low:.3f}, {high:.3f}]" for mean, low, high in h["metrics"].values()]
        assert row == [h["run"], h["stage"], str(h["queries"]), *cells]
    assert means[1][3] == "0.657 [0.610, 0.704]"


def test_markup_in_names_is_escaped():
    """The hostile sample's runs and stages are markup: the HTML holds them
    as text (parsed back, the cells are the names), never as tags."""
    graded = quietly(rgrade.grade, SAMPLES / "hostile/labels.jsonl", SAMPLES / "hostile/logs.jsonl")
    markup = graded._repr_html_()
    assert "<script" not in markup and "<iframe" not in markup and "<b>" not in markup
    means = tables(markup)["Means over the queries that count, with 95% intervals (normal approximation)"]
    names = [(o["run"], o["stage"]) for o in graded.summary["overall"]]
    assert ("<b>run</b><iframe src=http://example.invalid>", "</title><script>console.error(3)</script>") in names
    assert [tuple(row[:2]) for row in means[1:]] == names


def overall_rows(compared_dir: Path) -> list:
    """comparison.csv's rows over every task, language and split."""
    with open(compared_dir / "comparison.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if r["task"] == r["language"] == r["split"] == "*"]


def change(row: dict) -> str:
    delta, low, high = (float(row[c]) for c in ("delta", "ci_low", "ci_high"))
    return f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]"


def test_a_comparisons_repr_has_the_verdict_and_the_changes(compared, tmp_path):
    _, _, comparison = compared
    comparison.write(tmp_path)
    first, *lines = repr(comparison).splitlines()
    assert first == "<rgrade.Comparison bm25-v3 -> hybrid-v2: gate failed (2 of 6 rules)"
    deepest = [r for r in overall_rows(tmp_path) if r["metric"].endswith("@10")]
    assert len(lines) == len(deepest) == 12
    for line, row in zip(lines, deepest):
        p = float(row["p_holm"])
        assert line.rstrip(">") == f"  {row['stage']} {row['metric']}: {change(row)}, p_holm {p:.4g}"
    # Holm over 15 distinct hypotheses of the 18 metrics (hit@1, precision@1
    # and ap@1 repeat rr@1 and recall@1 query by query): 15 × 0.0001.
    assert lines[0] == "  final recall@10: +0.092 [+0.062, +0.126], p_holm 0.0015"


def test_a_comparisons_html_has_the_rules_and_every_metric(compared, tmp_path):
    _, _, comparison = compared
    comparison.write(tmp_path)
    root = ET.fromstring(comparison._repr_html_())
    assert root.find("p").text == "bm25-v3 -> hybrid-v2: gate failed (2 of 6 rules)"
    found = tables(comparison._repr_html_())
    rules = json.loads((tmp_path / "gate.json").read_text())["rules"]
    assert found["Rules"][1:] == [[r["name"], "yes" if r["passed"] else "no", r["detail"]] for r in rules]
    (changes,) = [rows for caption, rows in found.items() if caption.startswith("Change over all queries")]
    overall = overall_rows(tmp_path)
    assert len(changes) - 1 == len(overall) == 36
    for cells, row in zip(changes[1:], overall):
        means = [f"{float(row[side]):.3f}" for side in ("baseline", "candidate")]
        assert cells[:5] == [row["stage"], row["metric"], row["queries"], *means]
        assert cells[5:] == [change(row), row["wins"], row["ties"], row["losses"], f"{float(row['p_holm']):.4g}"]


def test_a_comparison_without_rules_and_with_markup_in_a_rule(compared, tmp_path):
    baseline, candidate, _ = compared
    fast = {"permutations": 100, "bootstrap": 100}
    unruled = rgrade.compare(baseline, candidate, **fast)
    assert repr(unruled).splitlines()[0] == "<rgrade.Comparison bm25-v3 -> hybrid-v2: no rules"
    assert "Rules" not in tables(unruled._repr_html_())
    rules = tmp_path / "rules.toml"
    name = "<script>alert('x')</script> & \"y\""
    rules.write_text(f'[[rule]]\nname = {json.dumps(name)}\nmetric = "recall@10"\nmin = 0.0\n')
    ruled = rgrade.compare(baseline, candidate, rules, **fast)
    assert "<script>" not in ruled._repr_html_()
    assert tables(ruled._repr_html_())["Rules"][1][:2] == [name, "yes"]
    assert repr(ruled).splitlines()[0] == "<rgrade.Comparison bm25-v3 -> hybrid-v2: gate passed"


def test_a_shards_repr_and_html():
    shard = rgrade.grade_shard(SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs", repeats="last")
    assert repr(shard) == "<rgrade.Shard: 300 captured queries, 5 rejected records, 2 inputs>"
    (rows,) = tables(shard._repr_html_()).values()
    assert rows[1:] == [[i["path"], str(i["records"]), str(i["rejected"])] for i in shard.summary["inputs"]]
    assert [row[2] for row in rows[1:]] == ["0", "5"]
