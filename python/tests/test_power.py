"""compare's power figures (comparison.csv's ``mde`` and
``queries_for_mde``): equal to topic set size design's formula computed
here with scipy from per_query_delta.csv's differences, and within a query
(or 2% of the change) of the exact noncentral-t answer of statsmodels'
paired t-test power."""

import csv
import math
import os
import subprocess
from pathlib import Path

import numpy as np
from scipy.stats import norm
from statsmodels.stats.power import TTestPower

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
ALPHA, POWER, MDE = 0.05, 0.8, 0.05


def rows(path: Path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_power_figures_follow_the_formula_and_the_exact_test(tmp_path):
    grade = [RGRADE, "grade", "--labels", str(SAMPLES / "compare/labels.jsonl"), "-k", "1,10",
             "--repeats", "last", "--max-rejects", "10", "-q"]
    for out, logs in [("baseline", SAMPLES / "realistic/logs"),
                      ("candidate", SAMPLES / "compare/candidate")]:
        subprocess.run([*grade, "-o", out, str(logs)], cwd=tmp_path, check=True)
    subprocess.run([RGRADE, "compare", "baseline", "candidate", "--mde", str(MDE), "-q",
                    "-o", "compared"], cwd=tmp_path, check=True)
    counted = {(r["stage"], r["query_id"]) for r in rows(tmp_path / "baseline/per_query.csv")
               if r["status"] != "no_answer"}
    deltas = [r for r in rows(tmp_path / "compared/per_query_delta.csv")
              if (r["stage"], r["query_id"]) in counted]
    z = norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER)
    correction = norm.ppf(1 - ALPHA / 2) ** 2 / 2
    exact = TTestPower()
    checked = 0
    for row in rows(tmp_path / "compared/comparison.csv"):
        members = [d for d in deltas if d["stage"] == row["stage"]
                   and all(row[c] in ("*", d[c]) for c in ("task", "language", "split"))]
        values = np.array([float(d[f"{row['metric']}_delta"]) for d in members])
        assert len(values) == int(row["queries"])
        n, sd = len(values), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        if n - correction <= 0 or n < 2:
            assert row["mde"] == ""
            continue
        mde = float(row["mde"])
        assert math.isclose(mde, z * sd / math.sqrt(n - correction), rel_tol=1e-9, abs_tol=1e-12)
        needed = int(row["queries_for_mde"])
        assert needed == max(2, math.ceil((z * sd / MDE) ** 2 + correction))
        if sd > 0 and n >= 10:
            # Against the exact paired t-test's power (noncentral t).
            effect = exact.solve_power(nobs=n, alpha=ALPHA, power=POWER)
            assert math.isclose(mde, effect * sd, rel_tol=0.02), (row, effect * sd)
            if needed >= 10:
                nobs = exact.solve_power(effect_size=MDE / sd, alpha=ALPHA, power=POWER)
                assert abs(needed - math.ceil(nobs)) <= 1, (row, nobs)
            checked += 1
    assert checked > 50
