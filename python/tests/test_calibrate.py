"""``rgrade.grade(..., calibrate=HUMAN)`` on the judges sample: every
calibrated mean and interval equals a numpy computation of power-tuned
prediction-powered inference on the per-query values of two plain
gradings, one under the judge's key and one under the human key."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import rgrade

ROOT = Path(__file__).resolve().parents[2]
JUDGES = ROOT / "data-samples" / "judges"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
METRICS = [f"{m}@{k}" for k in (5, 10) for m in ("recall", "rr", "hit", "precision", "ndcg", "ap")]
MIN_HUMAN = 10


def ppi(f_alone, f_paired, y):
    """θ, the interval's ends and λ as docs/guide.md defines them: the
    mean over the queries the humans answer, a ratio of two power-tuned
    prediction-powered means, the judge-only queries (``f_alone``) apart
    from the n human-graded ones; NaN is no answer under that key."""
    big, n = len(f_alone), len(y)
    value = lambda x: np.nan_to_num(x, nan=0.0)
    answered = lambda x: (~np.isnan(x)).astype(float)

    def ratio(lam):
        total = lam * value(f_alone).mean() + np.mean(value(y) - lam * value(f_paired))
        share = lam * answered(f_alone).mean() + np.mean(answered(y) - lam * answered(f_paired))
        return total / share, share

    pseudo = lambda x, theta: np.where(np.isnan(x), 0.0, x - theta)
    theta0, _ = ratio(0.0)
    u, v, v_alone = pseudo(y, theta0), pseudo(f_paired, theta0), pseudo(f_alone, theta0)
    spread = np.var(v_alone, ddof=1) / big + np.var(v, ddof=1) / n
    lam = float(np.clip(np.cov(u, v, ddof=1)[0, 1] / n / spread, 0.0, 1.0)) if spread > 0 else 0.0
    theta, share = ratio(lam)
    rest = pseudo(y, theta) - lam * pseudo(f_paired, theta)
    p = 1 / (n + 2)
    var = (lam**2 * np.var(pseudo(f_alone, theta), ddof=1) / big
           + max(np.var(rest, ddof=1), p * (1 - p)) / n) / share**2
    half = stats.t.ppf(0.975, n - 1) * np.sqrt(var)
    return [float(np.clip(x, 0, 1)) for x in (theta, theta - half, theta + half)] + [lam]


def values(grading, run):
    """query_id -> (task, language, {metric: value or NaN}) of the rows in
    the calibration: those that count in the means and those that would
    but for having no answer (NaN)."""
    rows = grading.per_query.to_pylist()
    return {
        r["query_id"]: (
            r["task"],
            r["language"],
            {m: np.nan if r["status"] == "no_answer" else r[m] for m in METRICS},
        )
        for r in rows
        if r["run"] == run and r["status"] != "missing" and (r["status"] != "no_answer" or r["captures"] > 0)
    }


@pytest.fixture(scope="module")
def gradings():
    logs = JUDGES / "logs.jsonl"
    judge_key, human_key = JUDGES / "judge.jsonl", JUDGES / "human.jsonl"
    calibrated = rgrade.grade(judge_key, logs, k=(5, 10), calibrate=human_key)
    return calibrated, rgrade.grade(judge_key, logs, k=(5, 10)), rgrade.grade(human_key, logs, k=(5, 10))


def test_every_calibrated_mean_equals_numpys(gradings):
    calibrated, judge, human = gradings
    checked = too_few = 0
    for row in calibrated.aggregates.to_pylist():
        if row["split"] != "*":
            continue
        f = values(judge, row["run"])
        y = values(human, row["run"])
        in_set = [
            q
            for q, (task, language, _) in f.items()
            if row["task"] in ("*", task) and row["language"] in ("*", language)
        ]
        paired = [q for q in in_set if q in y]
        assert row["calibration_queries"] == len(paired)
        for metric in METRICS:
            got = [row[f"{metric}_calibrated{end}"] for end in ("", "_low", "_high", "_weight")]
            if len(paired) < MIN_HUMAN:
                assert got == [None] * 4, (row["task"], row["language"], metric)
                too_few += 1
                continue
            expected = ppi(
                np.array([f[q][2][metric] for q in in_set if q not in y]),
                np.array([f[q][2][metric] for q in paired]),
                np.array([y[q][2][metric] for q in paired]),
            )
            assert got == pytest.approx(expected, abs=1e-12), (row["task"], row["language"], metric)
            checked += 1
    # Four runs × twelve metrics over the overall set, tasks, languages
    # and the task × language sets with enough reviewed queries.
    assert checked >= 4 * len(METRICS) * 5
    assert too_few > 0, "some task × language sets have too few reviewed queries"


def test_the_judge_alone_overrates_what_the_humans_see(gradings):
    calibrated, _, _ = gradings
    overall = [r for r in calibrated.aggregates.to_pylist() if r["task"] == r["language"] == r["split"] == "*"]
    for row in overall:
        assert row["recall@10_calibrated"] < row["recall@10"], row["run"]
        assert row["recall@10_calibrated_low"] < row["recall@10_calibrated"] < row["recall@10_calibrated_high"]
    assert calibrated.summary["calibration"]["shared_queries"] == 80
    assert calibrated.summary["calibration"]["labels"]["queries"] == 80


def test_the_command_line_writes_the_same_aggregates(gradings, tmp_path):
    calibrated, _, _ = gradings
    calibrated.write(tmp_path / "py")
    subprocess.run(
        [RGRADE, "grade", "--labels", str(JUDGES / "judge.jsonl"), "-k", "5,10",
         "--calibrate", str(JUDGES / "human.jsonl"), "-q", "-o", str(tmp_path / "cli"),
         str(JUDGES / "logs.jsonl")],
        check=True,
    )
    for name in ("aggregates.csv", "per_query.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


@pytest.mark.filterwarnings("ignore::rgrade.RgradeWarning")
def test_logs_handed_over_as_a_table_calibrate_alike(gradings):
    calibrated, _, _ = gradings
    with open(JUDGES / "logs.jsonl", encoding="utf-8") as f:
        events = pa.Table.from_pylist([json.loads(line) for line in f])
    from_table = rgrade.grade(
        JUDGES / "judge.jsonl", events, k=(5, 10), calibrate=JUDGES / "human.jsonl"
    )
    assert from_table.aggregates.equals(calibrated.aggregates)


def test_a_shard_cannot_be_calibrated():
    with pytest.raises(rgrade.UsageError, match="calibrate= cannot grade a shard"):
        rgrade.grade_shard(
            JUDGES / "judge.jsonl", JUDGES / "logs.jsonl", calibrate=JUDGES / "human.jsonl",
        )


def test_a_human_key_of_several_reviewers_asks_for_calibrate_reviewers():
    """The message names the keyword that says whose grade counts in the
    human key, not the judge key's ``reviewers``."""
    with pytest.raises(rgrade.LabelsError, match='say whose grade counts with calibrate_reviewers="majority"'):
        rgrade.grade(JUDGES / "judge.jsonl", JUDGES / "logs.jsonl", calibrate=JUDGES / "reviewers.jsonl")
    calibrated = rgrade.grade(JUDGES / "judge.jsonl", JUDGES / "logs.jsonl",
                              calibrate=JUDGES / "reviewers.jsonl", calibrate_reviewers="majority")
    assert calibrated.summary["calibration"]["labels"]["reviewers"]["policy"] == "majority"


def test_calibrate_reviewers_without_calibrate_raises():
    """As the command line refuses --calibrate-reviewers without --calibrate."""
    with pytest.raises(rgrade.UsageError, match="give calibrate= with calibrate_reviewers="):
        rgrade.grade(JUDGES / "judge.jsonl", JUDGES / "logs.jsonl", calibrate_reviewers="majority")
