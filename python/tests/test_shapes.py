"""Qrels and runs in the shapes other evaluation libraries keep them
(pytrec_eval's dicts, ir_measures' and ranx's data frames, ranx's Qrels
and Run objects, pandas' float ranks) grade exactly as the same qrels and
run given to the command line as TREC files."""

import os
import random
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
K = (1, 5, "all")


def make_data():
    """Graded qrels (a query judged all 0: no answer) and a scored run with
    ties, scores equal as 32-bit floats, and a query the qrels lack."""
    rng = random.Random(7)
    qrels, run = {}, {}
    for q in range(25):
        query = f"q{q}"
        qrels[query] = {f"d{d}": rng.choice([0, 1, 2, 3]) for d in rng.sample(range(40), 6)}
        scores = {}
        for d in rng.sample(range(40), 15):
            kind = rng.randrange(3)
            if kind == 0:
                scores[f"d{d}"] = float(rng.randrange(3))
            elif kind == 1:
                scores[f"d{d}"] = 5.0 + rng.randrange(3) * 1e-9
            else:
                scores[f"d{d}"] = rng.uniform(-2, 2)
        run[query] = scores
    qrels["q0"] = {doc: 0 for doc in qrels["q0"]}
    run["unlabeled"] = {"d1": 1.0}
    return qrels, run


QRELS, RUN = make_data()


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """per_query.csv of the command line on the TREC files of the data."""
    tmp = tmp_path_factory.mktemp("cli")
    with open(tmp / "qrels.txt", "w") as f:
        for query, judged in QRELS.items():
            for doc, grade in judged.items():
                f.write(f"{query} 0 {doc} {grade}\n")
    with open(tmp / "run.trec", "w") as f:
        for query, scores in RUN.items():
            for doc, score in scores.items():
                f.write(f"{query} Q0 {doc} 0 {score!r} bm25\n")
    args = ["grade", "--labels", "qrels.txt", "-k", ",".join(map(str, K)), "-q", "-o", "out", "run.trec"]
    done = subprocess.run([RGRADE, *args], cwd=tmp, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return (tmp / "out" / "per_query.csv").read_text()


def per_query(graded, tmp_path):
    graded.write(tmp_path / "py")
    return (tmp_path / "py" / "per_query.csv").read_text()


def unnamed(csv):
    """The rows of a run without a name: an empty run column."""
    return csv.replace("\nbm25,", "\n,")


class Qrels:
    """What rgrade reads of a ranx Qrels, as ranx documents it: ``qrels``
    and ``to_dict()``."""

    def __init__(self, qrels):
        self.qrels = qrels

    def to_dict(self):
        return {q: dict(docs) for q, docs in self.qrels.items()}


class Run:
    """What rgrade reads of a ranx Run: ``run``, ``name`` and ``to_dict()``."""

    def __init__(self, run, name=None):
        self.run, self.name = run, name

    def to_dict(self):
        return {q: dict(docs) for q, docs in self.run.items()}


def long_frame(nested, query, value):
    rows = [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=[query, "doc_id", value])


def test_pytrec_eval_dicts(cli, tmp_path):
    graded = rgrade.grade(QRELS, RUN, k=K)
    assert per_query(graded, tmp_path) == unnamed(cli)


def test_ranx_objects_without_ranx(cli, tmp_path):
    graded = rgrade.grade(Qrels(QRELS), Run(RUN, name="bm25"), k=K)
    assert per_query(graded, tmp_path) == cli


def test_ranx_frames(cli, tmp_path):
    qrels, run = long_frame(QRELS, "q_id", "score"), long_frame(RUN, "q_id", "score")
    run["run"] = "bm25"
    assert per_query(rgrade.grade(qrels, run, k=K), tmp_path) == cli


def test_ir_measures_frames(cli, tmp_path):
    qrels = long_frame(QRELS, "query_id", "relevance")
    qrels["iteration"] = "0"
    run = long_frame(RUN, "query_id", "score")
    assert per_query(rgrade.grade(qrels, run, k=K), tmp_path) == unnamed(cli)


def test_pandas_float_ranks(cli, tmp_path):
    """Ranks from pandas' rank(), floats, in place of the scores: ties
    broken by doc id descending first, as trec_eval breaks them."""
    run = long_frame(RUN, "query_id", "score")
    run["score32"] = run["score"].astype("float32")
    run = run.sort_values(["query_id", "score32", "doc_id"], ascending=[True, False, False])
    run["rank"] = run.groupby("query_id").cumcount().astype(float) + 1.0
    assert run["rank"].dtype == float
    run = run.drop(columns=["score", "score32"]).sample(frac=1.0, random_state=3)
    assert per_query(rgrade.grade(QRELS, run, k=K), tmp_path) == unnamed(cli)


def test_bad_shapes_raise_naming_the_place():
    with pytest.raises(TypeError, match=r"labels: query 'q1', doc 'd1': grade 0.5 is no whole number"):
        rgrade.grade({"q1": {"d1": 0.5}}, RUN)
    with pytest.raises(TypeError, match=r"logs: query 'q1' maps to a list"):
        rgrade.grade(QRELS, {"q1": ["d1"]})
    with pytest.raises(TypeError, match=r"logs: query 'q1', doc 'd1': score 'x' is a str"):
        rgrade.grade(QRELS, {"q1": {"d1": "x"}})


def test_real_ranx_objects(cli, tmp_path):
    import ranx
    graded = rgrade.grade(ranx.Qrels(QRELS), ranx.Run(RUN, name="bm25"), k=K)
    assert per_query(graded, tmp_path) == cli
