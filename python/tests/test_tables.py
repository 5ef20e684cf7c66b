"""Tables in: search events and labels as pyarrow Tables, pandas and
polars DataFrames grade to the files the command line writes for the
same records in JSONL; labels as tables as the labels file does; a table
without the columns it needs raises, naming the table and the column."""

import json
import os
import subprocess
from pathlib import Path

import pandas
import polars
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))

FRAMES = {
    "pyarrow": lambda table: table,
    "pandas": lambda table: table.to_pandas(),
    "polars": lambda table: polars.from_arrow(table),
}


def events(path: Path) -> pa.Table:
    """The search events of a JSONL log as a table: one row per line,
    results as lists of doc ids."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        row["results"] = [r if isinstance(r, str) else r.get("doc_id", r.get("id")) for r in row["results"]]
    return pa.Table.from_pylist(rows)


def cli_grade(tmp_path: Path, labels: Path, logs: Path, k: str, *flags: str) -> Path:
    out = tmp_path / "cli"
    args = [RGRADE, "grade", "--labels", str(labels), "-k", k, "-q", "-o", str(out), *flags, str(logs)]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return out


def assert_same_tables(graded: rgrade.Grading, out: Path, tmp_path: Path):
    graded.write(tmp_path / "api")
    for name in ("per_query.csv", "aggregates.csv", "attribution.csv"):
        if (out / name).exists():
            assert (tmp_path / "api" / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.parametrize("frame", FRAMES)
def test_events_in_a_table_grade_as_their_jsonl_does(tmp_path, frame):
    labels = SAMPLES / "traces/labels.jsonl"
    logs = SAMPLES / "traces/captures.jsonl"
    out = cli_grade(tmp_path, labels, logs, "1,5,10")
    graded = rgrade.grade(labels, FRAMES[frame](events(logs)), k=(1, 5, 10))
    assert_same_tables(graded, out, tmp_path)
    (summary,) = graded.summary["inputs"]
    assert summary["path"] == "logs table 1"
    assert summary["records"] == len(logs.read_text().splitlines())


def test_generated_events_in_a_table_grade_as_their_jsonl_does(tmp_path):
    """`rgrade gen` data: answers, stages, latencies and context sizes."""
    gen = subprocess.run(
        [RGRADE, "gen", "--queries", "2000", "--seed", "3", "-o", str(tmp_path / "gen")],
        capture_output=True, text=True,
    )
    assert gen.returncode == 0, gen.stderr
    labels, logs = tmp_path / "gen/labels.jsonl", tmp_path / "gen/logs.jsonl"
    out = cli_grade(tmp_path, labels, logs, "1,10", "-j", "2")
    table = events(logs)
    # Cut into small batches: the rows are read wherever they are.
    batches = pa.Table.from_batches(table.to_batches(max_chunksize=97))
    graded = rgrade.grade(labels, batches, k=(1, 10), threads=2)
    assert_same_tables(graded, out, tmp_path)


@pytest.mark.parametrize("frame", FRAMES)
def test_labels_in_a_table_grade_as_the_labels_file_does(tmp_path, frame):
    labels = SAMPLES / "traces/parquet/labels.parquet"
    logs = SAMPLES / "traces/captures.jsonl"
    out = cli_grade(tmp_path, labels, logs, "1,5,10")
    graded = rgrade.grade(FRAMES[frame](pq.read_table(labels)), logs, k=(1, 5, 10))
    assert_same_tables(graded, out, tmp_path)
    assert graded.summary["labels"]["path"] == "labels table"


def test_pandas_and_ranx_grades_in_floats_are_whole_numbers(tmp_path):
    """pandas turns an integer column with a missing value into floats, and
    ranx keeps its qrels' scores as floats: whole numbers read as grades,
    0 as judged not relevant; a missing grade is refused, not taken as 1."""
    logs = pa.table({"query_id": ["q1", "q2"], "results": [["b", "a"], ["x", "c"]]})
    for column in ("grade", "relevance", "score"):
        labels = pandas.DataFrame(
            {"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], column: [2.0, 0.0, 1.0]}
        )
        graded = rgrade.grade(labels, logs, k=(1, 2))
        rr = dict(zip(graded.per_query["query_id"].to_pylist(), graded.per_query["rr@2"].to_pylist()))
        assert rr == {"q1": 0.5, "q2": 0.5}, column
    labels = pandas.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "relevance": [2, None, 1]}
    )
    assert labels["relevance"].dtype == "float64"
    with pytest.raises(rgrade.RgradeError, match="labels table: row 2: relevance is null for doc 'b'"):
        rgrade.grade(labels, logs, k=(2,))
    labels.loc[1, "relevance"] = 1.5
    with pytest.raises(rgrade.RgradeError, match="labels table: column 'relevance'"):
        rgrade.grade(labels, logs, k=(2,))


def test_ranks_from_pandas_rank_are_whole_numbers(tmp_path):
    """pandas' rank() gives floats: a run of one row per result ranked by
    them grades as the same integer ranks do."""
    labels = pa.table({"query_id": ["q1", "q2"], "doc_id": ["a", "c"]})
    run = pandas.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["b", "a", "c", "x"], "score": [9.0, 3.0, 5.0, 7.0]}
    )
    run["rank"] = run.groupby("query_id")["score"].rank(ascending=False, method="first")
    assert run["rank"].dtype == "float64"
    floats = rgrade.grade(labels, run[["query_id", "doc_id", "rank"]], k=(1, 2))
    run["rank"] = run["rank"].astype("int64")
    integers = rgrade.grade(labels, run[["query_id", "doc_id", "rank"]], k=(1, 2))
    assert floats.per_query == integers.per_query
    rr = dict(zip(floats.per_query["query_id"].to_pylist(), floats.per_query["rr@2"].to_pylist()))
    assert rr == {"q1": 0.5, "q2": 0.5}


def test_a_scored_run_frame_is_ranked_by_score(tmp_path):
    """A run frame of scores and no ranks (query_id, doc_id, score) is
    ranked as trec_eval ranks it: score descending, then doc id
    descending."""
    labels = pa.table({"query_id": ["q1", "q2"], "doc_id": ["a", "c"]})
    run = pandas.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["z", "a", "y", "c"], "score": [2.5, 1.0, 2.5, 0.5]}
    )
    graded = rgrade.grade(labels, run, k=(3,))
    rank = dict(zip(graded.per_query["query_id"].to_pylist(), graded.per_query["first_rel_rank"].to_pylist()))
    assert rank == {"q1": 3, "q2": 1}


def test_a_table_without_its_columns_raises_naming_it():
    labels = SAMPLES / "seed/labels.jsonl"
    with pytest.raises(rgrade.RgradeError, match="logs table 1: .*'query_id'"):
        rgrade.grade(labels, pa.table({"qid": ["q_export"], "results": [["export_csv"]]}))
    renamed = pa.table({"qid": ["q_export"], "docs": [["export_csv"]]})
    graded = rgrade.grade(labels, renamed, k=(3,), query_field="qid", results_field="docs")
    assert graded.summary["counts"]["graded_records"] == 1
    with pytest.raises(TypeError, match="expected a path or a table"):
        rgrade.grade(labels, 42)


def test_a_bad_row_is_rejected_with_its_row():
    logs = pa.table({"query_id": ["q_export", None], "results": [["export_csv"], ["billing"]]})
    with pytest.warns(rgrade.RejectedRecordsWarning, match=r"^1 record\(s\) rejected, .*missing_query_id \(1\)"):
        graded = rgrade.grade(SAMPLES / "seed/labels.jsonl", logs, k=(3,))
    (reject,) = graded.rejects.to_pylist()
    assert (reject["file"], reject["line"], reject["reason"]) == ("logs table 1", 2, "missing_query_id")
