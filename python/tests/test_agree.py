"""``rgrade.agree`` on the judges sample: every kappa equals
scikit-learn's and the ordinal alpha the krippendorff package's on the
same pairs, read here from the keys themselves, and the Python API writes
what the command line writes."""

import json
import math
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

import rgrade

ROOT = Path(__file__).resolve().parents[2]
JUDGES = ROOT / "data-samples" / "judges"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))


def human_key():
    """(query, doc) -> grade, and query -> (task, language), of human.jsonl."""
    grades, slices = {}, {}
    with open(JUDGES / "human.jsonl", encoding="utf-8") as f:
        for line in f:
            label = json.loads(line)
            relevant = label["relevant"]
            docs = relevant if isinstance(relevant, dict) else dict.fromkeys(relevant, 1)
            for doc, grade in docs.items():
                grades[label["query_id"], doc] = grade
            slices[label["query_id"]] = (label["task"], label["language"])
    return grades, slices


def judge_key():
    """(query, doc) -> grade of judge.jsonl."""
    with open(JUDGES / "judge.jsonl", encoding="utf-8") as f:
        labels = [json.loads(line) for line in f]
    return {(l["query_id"], d): g for l in labels for d, g in l["relevant"].items()}


def sklearn_kappas(pairs, grades, min_rel=1):
    """Both kappas of (grade_a, grade_b) pairs, the matrix's categories
    being ``grades``, as scikit-learn computes them."""
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    relevance = cohen_kappa_score([g >= min_rel for g in a], [g >= min_rel for g in b])
    graded = cohen_kappa_score(a, b, labels=grades, weights="linear")
    return relevance, graded


def other_agreements(pairs, grades):
    """Unweighted and quadratic-weighted kappa on the grades (scikit-learn)
    and Krippendorff's ordinal alpha (the krippendorff package)."""
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    return {
        "grade_kappa_unweighted": cohen_kappa_score(a, b, labels=grades),
        "grade_kappa_quadratic": cohen_kappa_score(a, b, labels=grades, weights="quadratic"),
        "grade_alpha_ordinal": krippendorff.alpha(
            reliability_data=np.array([a, b], dtype=float), level_of_measurement="ordinal"
        ),
    }


def same(value, expected):
    """rgrade's kappa against scikit-learn's: undefined is None here, NaN there."""
    if math.isnan(expected):
        return value is None
    return value == pytest.approx(expected, abs=1e-12)


# scikit-learn warns of the slices where kappa is undefined.
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_kappas_equal_scikit_learns():
    human, slices = human_key()
    judge = judge_key()
    both = sorted(set(human) & set(judge))
    pairs = [(human[p], judge[p]) for p in both]
    agreement = rgrade.agree(JUDGES / "human.jsonl", JUDGES / "judge.jsonl")
    s = agreement.summary
    assert s["pairs_both"] == len(both)
    assert s["pairs_a_only"] == len(set(human) - set(judge))
    assert s["pairs_b_only"] == len(set(judge) - set(human))
    grades = sorted({g for p in pairs for g in p})
    assert s["grades"] == grades
    relevance, graded = sklearn_kappas(pairs, grades)
    assert same(s["relevance_kappa"], relevance)
    assert same(s["grade_kappa"], graded)
    for field, expected in other_agreements(pairs, grades).items():
        assert same(s[field], expected), field
    # The sample is built so the judge mostly agrees, not always.
    assert 0.3 < s["grade_kappa"] < 0.95

    # Per task: the same computation over the task's pairs, with the
    # overall categories.
    by_task = defaultdict(list)
    for p in both:
        by_task[slices[p[0]][0]].append((human[p], judge[p]))
    rows = {(r["task"], r["language"]): r for r in agreement.slices.to_pylist()}
    for task, task_pairs in by_task.items():
        row = rows[task, "*"]
        relevance, graded = sklearn_kappas(task_pairs, grades)
        assert row["pairs"] == len(task_pairs)
        assert same(row["relevance_kappa"], relevance), task
        assert same(row["grade_kappa"], graded), task
        for field, expected in other_agreements(task_pairs, grades).items():
            assert same(row[field], expected), (task, field)

    differ = [p for p in both if human[p] != judge[p]]
    listed = agreement.pairs.to_pylist()
    assert sorted((r["query_id"], r["doc_id"]) for r in listed) == differ
    shifts = [r["recall_shift"] for r in listed]
    assert shifts == sorted(shifts, reverse=True)
    assert "pairs judged by both" in repr(agreement)
    assert "<table>" in agreement._repr_html_()


def test_the_api_writes_what_the_command_writes(tmp_path):
    agreement = rgrade.agree(JUDGES / "human.jsonl", JUDGES / "judge.jsonl", min_rel=2)
    agreement.write(tmp_path / "api")
    run = subprocess.run(
        [RGRADE, "agree", str(JUDGES / "human.jsonl"), str(JUDGES / "judge.jsonl"),
         "--min-rel", "2", "-o", str(tmp_path / "cli"), "-q"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    for name in ["agreement.csv", "agreement_slices.csv"]:
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    api = json.loads((tmp_path / "api" / "agreement.json").read_text())
    cli = json.loads((tmp_path / "cli" / "agreement.json").read_text())
    assert api["min_rel"] == cli["min_rel"] == 2
    assert api["confusion"] == cli["confusion"]


def test_a_bad_option_raises_with_or_without_logs():
    with pytest.raises(rgrade.UsageError, match="missing"):
        rgrade.agree(JUDGES / "human.jsonl", JUDGES / "judge.jsonl", missing="maybe")  # type: ignore[arg-type]


def test_a_bad_key_raises_a_labels_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1", "relevant": ["d1"]}\n{"query_id": \n')
    with pytest.raises(rgrade.LabelsError, match="bad.jsonl:2"):
        rgrade.agree(JUDGES / "human.jsonl", bad)


# scipy warns of the sets where all runs tie under one key.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_runs_under_both_keys_are_ordered_as_scipy_orders_them():
    from scipy.stats import kendalltau

    agreement = rgrade.agree(
        JUDGES / "human.jsonl", JUDGES / "judge.jsonl", logs=JUDGES / "logs.jsonl", k=(5, 10)
    )
    means = agreement.runs.to_pylist()
    orders = agreement.run_orders.to_pylist()
    assert agreement.summary["logs"]["runs"] == 4
    for order in orders:
        rows = [
            m for m in means
            if (m["stage"], m["task"], m["language"], m["metric"])
            == (order["stage"], order["task"], order["language"], order["metric"])
            and m["mean_a"] is not None and m["mean_b"] is not None
        ]
        assert order["runs"] == len(rows)
        if len(rows) < 2:
            assert order["kendall_tau"] is None
            continue
        # rgrade ties means within 1e-12 (apart by summation order alone).
        a, b = ([round(r[side], 12) for r in rows] for side in ("mean_a", "mean_b"))
        expected = kendalltau(a, b).statistic
        assert same(order["kendall_tau"], expected), order
    assert rgrade.agree(JUDGES / "human.jsonl", JUDGES / "judge.jsonl").runs is None


def test_logs_whose_every_record_was_rejected_warn(tmp_path):
    """Two TREC runs written with one tag fuse into rankings of duplicates
    and every line is rejected: an RgradeWarning with grade's hint (the
    command line exits 1); ``run_name="file"`` keeps the runs apart."""
    (tmp_path / "a.qrels").write_text("q1 0 d1 1\nq1 0 d3 0\n", encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.trec").write_text("q1 Q0 d1 1 2.0 run\nq1 Q0 d3 2 1.0 run\n", encoding="utf-8")
    (runs / "b.trec").write_text("q1 Q0 d3 1 2.0 run\nq1 Q0 d1 2 1.0 run\n", encoding="utf-8")
    key = tmp_path / "a.qrels"
    with pytest.warns(rgrade.RgradeWarning, match="every one of the 4 records read was rejected"):
        agreed = rgrade.agree(key, key, logs=runs)
    assert any('run_name="file" keeps them apart' in w for w in agreed.warnings), agreed.warnings
    apart = rgrade.agree(key, key, logs=runs, run_name="file")
    assert not any("rejected" in w for w in apart.warnings)


@pytest.mark.parametrize(
    "option",
    [{"k": 10}, {"k": (5, 10)}, {"logs_format": "jsonl"}, {"missing": "skip"}, {"repeats": "first"},
     {"run_name": "file"}],
)
def test_options_of_the_logs_without_logs_raise(option):
    """As the command line refuses -k, --logs-format, --missing, --repeats and
    --run-name without --logs, even at their defaults."""
    name = next(iter(option))
    with pytest.raises(rgrade.UsageError, match=f"{name}= says how the logs are graded, and no logs= were given"):
        rgrade.agree(JUDGES / "human.jsonl", JUDGES / "judge.jsonl", **option)


def test_options_of_the_logs_left_out_take_the_command_lines_defaults():
    keys = (JUDGES / "human.jsonl", JUDGES / "judge.jsonl")
    left_out = rgrade.agree(*keys, logs=JUDGES / "logs.jsonl")
    given = rgrade.agree(
        *keys, logs=JUDGES / "logs.jsonl", k=10, logs_format="auto", missing="fail", repeats="error",
        run_name="tag",
    )
    assert left_out.runs is not None and left_out.runs.equals(given.runs)
    assert [str(k) for k in left_out.summary["logs"]["k"]] == ["10"]
