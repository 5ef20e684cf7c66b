"""rgrade's Python API against its command line: the same files, byte for
byte, on the shipped samples; errors with the command line's messages;
shards graded apart and merged as one grading."""

import filecmp
import json
import os
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
# The command line to compare with: RGRADE_BIN, else the debug build
# `cargo test` leaves.
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))

# (sample, labels, logs, k, keyword options, the same as CLI flags)
CASES = [
    ("seed", "seed/labels.jsonl", ["seed/logs.jsonl"], (3,), {}, []),
    (
        "realistic",
        "realistic/labels.jsonl",
        ["realistic/logs"],
        (1, 5, 10),
        {"repeats": "last"},
        ["--repeats", "last", "--max-rejects", "10"],
    ),
    (
        "diagnostics",
        "diagnostics/labels.jsonl",
        ["diagnostics/logs.jsonl"],
        (1, 5, 10),
        {"stage_order": ("retrieve", "rerank", "final")},
        ["--stage-order", "retrieve,rerank,final", "--max-leaks", "100"],
    ),
    (
        "questions",
        "questions/labels.jsonl",
        ["questions/logs.jsonl"],
        (1, 5, 10),
        {"review_queue": True, "pool_depth": 5},
        ["--review-queue", "--pool-depth", "5"],
    ),
    (
        "traces",
        "traces/labels.jsonl",
        ["traces/otlp/openinference.jsonl"],
        (1, 5, 10),
        {"join": "text", "stage_order": ("retrieve", "rerank")},
        ["--join", "text", "--stage-order", "retrieve,rerank"],
    ),
    (
        "ubi",
        "ubi/labels.jsonl",
        ["ubi/ubi_queries.jsonl"],
        (1, 3),
        {"query_field": "user_query", "results_field": "query_response_hit_ids", "run_field": "application"},
        ["--query-field", "user_query", "--results-field", "query_response_hit_ids", "--run-field", "application"],
    ),
    ("hostile", "hostile/labels.jsonl", ["hostile/logs.jsonl"], (10,), {}, ["--max-rejects", "1"]),
    (
        "compare",
        "compare/labels.jsonl",
        ["compare/candidate"],
        (1, 5, 10),
        {"repeats": "last"},
        ["--repeats", "last", "--max-rejects", "10"],
    ),
]


def cli(args, cwd):
    return subprocess.run([RGRADE, *args], cwd=cwd, capture_output=True, text=True)


def timeless(path):
    summary = json.loads(Path(path).read_text())
    for key in ("command", "as_of", "elapsed_seconds", "throughput"):
        summary.pop(key)
    return summary


def assert_same_outputs(expected: Path, got: Path):
    names = sorted(p.name for p in expected.iterdir() if not p.name.startswith("."))
    assert names == sorted(p.name for p in got.iterdir() if not p.name.startswith("."))
    for name in names:
        if name == "summary.json":
            assert timeless(expected / name) == timeless(got / name)
        else:
            assert filecmp.cmp(expected / name, got / name, shallow=False), name


@pytest.mark.parametrize("name,labels,logs,k,options,flags", CASES, ids=[c[0] for c in CASES])
def test_the_api_writes_the_command_lines_files(tmp_path, name, labels, logs, k, options, flags):
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        graded = rgrade.grade(SAMPLES / labels, [SAMPLES / log for log in logs], k=k, threads=2, **options)
    graded.write(tmp_path / "api")
    # A grading that rejected records says so once; one that did not, never.
    rejected = [w for w in warned if w.category is rgrade.RejectedRecordsWarning]
    assert len(rejected) == (graded.summary["counts"]["rejected"] > 0)
    ks = ",".join(str(cutoff) for cutoff in k)
    args = ["grade", "--labels", str(SAMPLES / labels), "-k", ks, "-j", "2", "-q", *flags]
    run = cli([*args, "-o", str(tmp_path / "cli"), *[str(SAMPLES / log) for log in logs]], ROOT)
    assert run.returncode in (0, 1), run.stderr
    assert_same_outputs(tmp_path / "cli", tmp_path / "api")
    # The tables hold the CSV files' columns and rows.
    per_query = graded.per_query
    assert isinstance(per_query, pa.Table)
    with open(tmp_path / "cli" / "per_query.csv") as f:
        header = f.readline().strip().split(",")
        rows = sum(1 for _ in f)
    assert per_query.column_names == header
    assert per_query.num_rows == rows
    assert per_query.schema.field("query_id").type == pa.string()
    assert graded.aggregates.column_names[:4] == ["run", "stage", "task", "language"]


def test_write_refuses_a_directory_of_another_kind_and_replaces_its_own(tmp_path):
    """``write`` claims its directory as the command line does: another
    kind of result there is refused, an earlier result of its kind (with
    an optional file this one lacks) is replaced whole."""
    seed = ROOT / "data-samples" / "seed"
    graded = rgrade.grade(seed / "labels.jsonl", seed / "logs.jsonl", k=3)
    agreement = rgrade.agree(seed / "labels.jsonl", seed / "labels.jsonl")
    graded.write(tmp_path / "graded")
    with pytest.raises(rgrade.OutputError, match="holds a grade output"):
        agreement.write(tmp_path / "graded")
    agreement.write(tmp_path / "agreed")
    with pytest.raises(rgrade.OutputError, match="holds an agreement of answer keys"):
        graded.write(tmp_path / "agreed")
    (tmp_path / "graded" / "review_queue.csv").write_text("an earlier run's\n")
    graded.write(tmp_path / "graded")
    assert not (tmp_path / "graded" / "review_queue.csv").exists()
    assert sorted(p.name for p in (tmp_path / "graded").iterdir() if not p.name.startswith(".")) == sorted(
        [f["name"] for f in graded.summary["outputs"]] + ["summary.json", "report.html"]
    )


def test_per_query_rows_are_the_cli_files_cell_for_cell(tmp_path):
    """The per-query table comes from the grading's memory, not from the
    file; every cell holds what per_query.csv writes, typed."""
    import csv

    sample = ROOT / "data-samples" / "diagnostics"
    options = dict(repeats="mean", stage_order=["retrieve", "rerank", "final"])
    graded = rgrade.grade(sample / "labels.jsonl", sample / "logs.jsonl", k=[3, "all"], **options)
    graded.write(tmp_path / "py")
    with open(tmp_path / "py" / "per_query.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    table = graded.per_query
    assert table.column_names == rows[0]
    assert table.num_rows == len(rows) - 1
    types = {pa.string(), pa.int64(), pa.float64(), pa.bool_()}
    assert {field.type for field in table.schema} <= types
    for c, name in enumerate(table.column_names):
        for cell, value in zip((row[c] for row in rows[1:]), table.column(name).to_pylist()):
            if value is None:
                assert cell == "", name
            elif isinstance(value, bool):
                assert cell == str(value).lower(), name
            elif isinstance(value, float):
                assert float(cell) == value, name
            else:
                assert cell == str(value), name


def test_the_seed_example_grades_as_the_tutorial_says():
    graded = rgrade.grade(SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl", k=(3,))
    overall = graded.aggregates.filter(pc.equal(graded.aggregates["task"], "*")).to_pylist()[0]
    assert round(overall["recall@3"], 3) == 0.833
    assert round(overall["rr@3"], 3) == 0.667
    recall = dict(zip(graded.per_query["query_id"].to_pylist(), graded.per_query["recall@3"].to_pylist()))
    assert recall == {"q_export": 1.0, "q_reset": 1.0, "q_sharing": 0.5}
    # One cutoff may be given bare.
    bare = rgrade.grade(SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl", k=3)
    assert bare.per_query == graded.per_query


# Each function with arguments that name nothing to read: a plan's
# options are read, and refused, before any file is.
CALLS = {
    "grade": (rgrade.grade, ("labels.jsonl", "logs.jsonl"), rgrade.GradeOptions),
    "compare": (rgrade.compare, ("a", "b"), rgrade.CompareOptions),
    "agree": (rgrade.agree, ("a", "b"), rgrade.AgreeOptions),
    "trend": (rgrade.trend, (["a"],), rgrade.TrendOptions),
    "merge": (rgrade.merge, ("labels.jsonl", ["a"]), rgrade.MergeOptions),
}


@pytest.mark.parametrize(
    "function, keyword",
    [("compare", "permutation"), ("agree", "reviewer"), ("trend", "baselines"), ("merge", "thread")],
)
def test_a_keyword_that_is_no_option_raises_naming_it(function, keyword):
    """As grade's: the library's plan refuses a name it does not hold."""
    call, args, _ = CALLS[function]
    with pytest.raises(rgrade.UsageError, match=f"unknown field `{keyword}`"):
        call(*args, **{keyword: 1})


@pytest.mark.parametrize("function", sorted(CALLS))
def test_every_typed_option_is_the_plans_and_a_wrong_type_names_it(function):
    """Each keyword the TypedDict lists is an option of the library's plan
    (none is refused as unknown), and a value of the wrong type raises a
    UsageError that names it (a log field's, the plan's ``fields``);
    ``bootstrap`` alone is accepted and ignored, and a flag reads any
    value by its truth, as Python's ``if`` does."""
    call, args, options = CALLS[function]
    for keyword, hint in typing.get_type_hints(options).items():
        if keyword == "bootstrap" or hint is bool:
            continue
        with pytest.raises(rgrade.UsageError) as raised:
            call(*args, **{keyword: [[[]]]})
        message = str(raised.value)
        named = "fields" if keyword.endswith("_field") else keyword
        assert message.startswith(f"{named}: ") and "unknown field" not in message, message


def test_errors_raise_with_the_command_lines_message(tmp_path):
    seed_labels, seed_logs = SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl"
    with pytest.raises(rgrade.LabelsError, match="missing.jsonl: cannot read labels"):
        rgrade.grade(tmp_path / "missing.jsonl", seed_logs)
    with pytest.raises(rgrade.UsageError, match="cutoffs must be at least 1, got 0"):
        rgrade.grade(seed_labels, seed_logs, k=(0,))
    with pytest.raises(rgrade.UsageError, match="k: 'most' is not a cutoff"):
        rgrade.grade(seed_labels, seed_logs, k="most")
    with pytest.raises(rgrade.UsageError, match="repeats: \"often\": expected one of error, first, last, mean"):
        rgrade.grade(seed_labels, seed_logs, repeats="often")
    with pytest.raises(rgrade.UsageError, match="span_stages= gives span kind RERANKER no stage name"):
        rgrade.grade(seed_labels, seed_logs, span_stages={"RERANKER": ""})
    with pytest.raises(rgrade.UsageError, match="unknown field `repeat`"):
        rgrade.grade(seed_labels, seed_logs, repeat="last")  # type: ignore[call-arg]
    with pytest.raises(rgrade.LogsError, match="absent.jsonl: cannot open log input"):
        rgrade.grade(seed_labels, tmp_path / "absent.jsonl")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("export_csv\n")
    with pytest.raises(rgrade.LabelsError, match="4 of 5 labeled doc ids are not in the corpus"):
        rgrade.grade(seed_labels, seed_logs, corpus=corpus)
    # Each class is an RgradeError, as every error of rgrade is.
    for error in (rgrade.UsageError, rgrade.LabelsError, rgrade.LogsError, rgrade.OutputError,
                  rgrade.ComparisonError, rgrade.ShardError):
        assert issubclass(error, rgrade.RgradeError)


def test_errors_name_keyword_arguments_not_flags():
    """A message the command line words with its flags names the keyword
    arguments in Python: `--join text` is join="text", `--rank-field` is
    rank_field=."""
    labels = pa.table({"query_id": ["q1"], "doc_id": ["a"]})
    logs = pa.table({"query_id": ["q1"], "doc_id": ["a"]})
    with pytest.raises(rgrade.LogsError) as raised:
        rgrade.grade(labels, logs)
    assert "rank_field=" in str(raised.value) and "--" not in str(raised.value), raised.value
    events = pa.table({"query_id": ["q1"], "results": [["a"]]})
    with pytest.raises(rgrade.LabelsError) as raised:
        rgrade.grade(labels, events, join="text")
    assert 'join="text" matches captures' in str(raised.value), raised.value


def test_warnings_name_keyword_arguments_not_flags():
    """A warning names the options it concerns as keyword arguments, as
    errors do: the command line's `--doc-of` is doc_of=, `--query-field`
    query_field=."""
    labels = pa.table({"query_id": ["q1"], "doc_id": ["a"]})
    chunks = pa.table({"query_id": ["q1"], "results": [["a#1", "whole"]]})
    graded = rgrade.grade(labels, chunks, unit="doc", doc_of="#")
    assert any(w.startswith("doc_of= found no document in 1 id") for w in graded.warnings), graded.warnings
    other = pa.table({"query_id": ["q9"], "results": [["a"]]})
    graded = rgrade.grade(labels, other, missing="skip")
    assert any("; check query_field= and" in w for w in graded.warnings), graded.warnings
    assert not any("--" in w for w in graded.warnings), graded.warnings


def test_a_comparisons_errors_name_keyword_arguments(tmp_path):
    """Gradings graded unlike name the setting they differ in, and a rule
    that cannot fail the permutations, as keyword arguments."""
    seed_labels, seed_logs = SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl"
    strict = rgrade.grade(seed_labels, seed_logs, k=3, min_rel=2)
    graded = rgrade.grade(seed_labels, seed_logs, k=3)
    with pytest.raises(rgrade.ComparisonError, match=r"graded with different min_rel= \(1 vs 2\)"):
        rgrade.compare(graded, strict)
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nname = "nsl"\nmetric = "recall@3"\nno_significant_loss = true\n')
    with pytest.raises(rgrade.ComparisonError, match=r"with permutations=10 and .* raise permutations=$"):
        rgrade.compare(graded, graded, rules, permutations=10)


def test_rejects_name_options_as_the_plan_does(tmp_path):
    """rejects.jsonl, a file whichever front end graded, names an option
    as the plan does."""
    logs = tmp_path / "logs.jsonl"
    logs.write_text('{"query_id": "q_export", "results": ["export_csv"]}\n' * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graded = rgrade.grade(SAMPLES / "seed/labels.jsonl", logs, k=3, repeats="error")
    details = graded.rejects.column("detail").to_pylist()
    assert details[0].endswith("was captured 2 times (`repeats` error)"), details


def test_rejected_records_never_raise_but_warn(tmp_path):
    """Rejects are a table and a warning naming the count and the most
    common reasons, blamed on the caller's line; a shard leaves the
    warning to the merge, which grades its rejects."""
    logs = tmp_path / "logs.jsonl"
    bad = b"{not json\n" + b'{"results": ["billing"]}\n' + b"[1,\n"
    logs.write_bytes((SAMPLES / "seed/logs.jsonl").read_bytes() + bad)
    labels = SAMPLES / "seed/labels.jsonl"
    with pytest.warns(rgrade.RejectedRecordsWarning) as warned:
        graded = rgrade.grade(labels, logs, k=(3,))
    (warning,) = [w for w in warned if w.category is rgrade.RejectedRecordsWarning]
    assert str(warning.message) == (
        "3 record(s) rejected, not graded: invalid_json (2), missing_query_id (1); see the grading's .rejects"
    )
    assert warning.filename == __file__
    assert graded.summary["counts"]["rejected"] == 3
    rejects = graded.rejects
    assert rejects.schema == pa.schema(
        [("file", pa.string()), ("line", pa.int64()), ("reason", pa.string()),
         ("detail", pa.string()), ("record", pa.string())]
    )
    assert rejects["line"].to_pylist() == [4, 5, 6]
    assert rejects["reason"].to_pylist() == ["invalid_json", "missing_query_id", "invalid_json"]
    assert rejects["record"].to_pylist() == ["{not json", '{"results": ["billing"]}', "[1,"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", rgrade.RejectedRecordsWarning)
        shard = rgrade.grade_shard(labels, logs, k=(3,))
    with pytest.warns(rgrade.RejectedRecordsWarning, match="^3 record"):
        merged = rgrade.merge(labels, [shard])
    assert merged.rejects == rejects


def test_rejects_are_rejects_jsonl_as_a_table(tmp_path):
    """Every key and value of the file, in its order; no rows, and no
    warning, when nothing was rejected."""
    with pytest.warns(rgrade.RejectedRecordsWarning, match="^5 record"):
        graded = rgrade.grade(SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs", repeats="last")
    graded.write(tmp_path)
    lines = (tmp_path / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5
    assert graded.rejects.to_pylist() == [json.loads(line) for line in lines]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = rgrade.grade(SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl", k=(3,))
    assert clean.rejects.num_rows == 0
    assert clean.rejects.schema == graded.rejects.schema


def test_rgrades_warnings_are_python_warnings():
    """A warning the command line prints is an RgradeWarning, and stays in
    ``.warnings``."""
    seed_labels, seed_logs = SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl"
    with pytest.warns(rgrade.RgradeWarning) as warned:
        graded = rgrade.grade(seed_labels, seed_logs, k=(3,), stages=["final", "nosuch"])
    assert graded.warnings == ['no record of stages="nosuch" was read; check the name']
    ours = [w for w in warned if w.category is rgrade.RgradeWarning]
    assert [str(w.message) for w in ours] == graded.warnings
    assert ours[0].filename == __file__


def test_labels_most_of_whose_queries_went_uncaptured_warn(tmp_path):
    """Labels of four more queries than the seed logs capture: 4 of 7 have
    no capture, a warning in ``.warnings`` and summary.json's
    ``mostly_missing``, after a merge too."""
    seed_labels, seed_logs = SAMPLES / "seed/labels.jsonl", SAMPLES / "seed/logs.jsonl"
    labels = tmp_path / "labels.jsonl"
    extra = [json.dumps({"query_id": f"q_other{i}", "relevant": ["billing"]}) for i in range(4)]
    labels.write_text(seed_labels.read_text(encoding="utf-8") + "\n".join(extra) + "\n", encoding="utf-8")
    with pytest.warns(rgrade.RgradeWarning, match="4 of 7 labeled queries .57.1%. have no capture"):
        graded = rgrade.grade(labels, seed_logs, k=(3,))
    assert graded.summary["mostly_missing"] == [
        {"run": "", "stage": "final", "queries": 7, "missing": 4, "share": 4 / 7}
    ]
    with pytest.warns(rgrade.RgradeWarning, match="4 of 7 labeled queries"):
        shard = rgrade.grade_shard(labels, seed_logs, k=(3,))
        merged = rgrade.merge(labels, [shard])
    assert merged.summary["mostly_missing"] == graded.summary["mostly_missing"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        covered = rgrade.grade(seed_labels, seed_logs, k=(3,))
    assert "mostly_missing" not in covered.summary


def test_shards_merge_into_one_grading(tmp_path):
    """The questions sample split by query id into two shards, graded
    partially (one shard written to a directory first) and merged: the
    files of one grading of both shards."""
    shards = [tmp_path / "shard0.jsonl", tmp_path / "shard1.jsonl"]
    parts = [bytearray(), bytearray()]
    for line in (SAMPLES / "questions/logs.jsonl").read_bytes().splitlines(keepends=True):
        query = json.loads(line)["query_id"]
        parts[sum(query.encode()) % 2] += line
    for path, part in zip(shards, parts):
        path.write_bytes(bytes(part))
    labels = SAMPLES / "questions/labels.jsonl"
    one = rgrade.grade(labels, shards, k=(1, 10), review_queue=True)
    partials = [rgrade.grade_shard(labels, shard, k=(1, 10), review_queue=True) for shard in shards]
    assert sum(p.summary["captured_queries"] for p in partials) > 0
    partials[1].write(tmp_path / "written")
    merged = rgrade.merge(labels, [partials[0], tmp_path / "written"])
    one.write(tmp_path / "one")
    merged.write(tmp_path / "merged")
    assert_same_outputs(tmp_path / "one", tmp_path / "merged")
    partials[0].write(tmp_path / "copy")
    with pytest.raises(rgrade.ShardError, match="shard0.jsonl was graded by two shards"):
        rgrade.merge(labels, [partials[0], tmp_path / "copy"])
    # The same queries in another file: captured in two shards.
    respaced = tmp_path / "respaced.jsonl"
    respaced.write_bytes(shards[0].read_bytes().replace(b"}\n", b"} \n"))
    again = rgrade.grade_shard(labels, respaced, k=(1, 10), review_queue=True)
    with pytest.raises(rgrade.ShardError, match="captured in two shards"):
        rgrade.merge(labels, [partials[0], again])
    with pytest.raises(rgrade.ShardError, match="shard is given twice"):
        rgrade.merge(labels, [partials[0], partials[0]])


def test_compare_writes_the_command_lines_comparison(tmp_path):
    """The compare sample: a candidate that wins on average but fails two
    of its acceptance rules, from Gradings and from directories alike."""
    labels = SAMPLES / "compare/labels.jsonl"
    options = {"k": (1, 5, 10), "repeats": "last"}
    with pytest.warns(rgrade.RejectedRecordsWarning):
        baseline = rgrade.grade(labels, SAMPLES / "realistic/logs", **options)
    candidate = rgrade.grade(labels, SAMPLES / "compare/candidate", **options)
    rules = SAMPLES / "compare/rules.toml"
    compared = rgrade.compare(baseline, candidate, rules, seed=1)
    assert not compared.passed
    assert [r["passed"] for r in compared.gate["rules"]].count(False) == 2
    assert compared.comparison.num_rows > 0
    assert compared.per_query_delta.schema.field("query_id").type == pa.string()

    baseline.write(tmp_path / "baseline")
    candidate.write(tmp_path / "candidate")
    compared.write(tmp_path / "api")
    run = cli(
        ["compare", str(tmp_path / "baseline"), str(tmp_path / "candidate"),
         "--rules", str(rules), "--seed", "1", "-o", str(tmp_path / "cli")],
        ROOT,
    )
    assert run.returncode == 1, run.stderr
    for name in ("comparison.csv", "per_query_delta.csv", "gate.json"):
        assert filecmp.cmp(tmp_path / "cli" / name, tmp_path / "api" / name, shallow=False), name
    with pytest.raises(rgrade.UsageError, match="alpha"):
        rgrade.compare(baseline, candidate, alpha=2.0)
    with pytest.warns(rgrade.RejectedRecordsWarning):
        other = rgrade.grade(SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs", **options)
    with pytest.raises(rgrade.ComparisonError, match="labels"):
        rgrade.compare(baseline, other)


def test_compare_takes_the_same_labels_as_a_file_a_frame_or_resorted():
    """Labels are compared by what they judge: the same key read from its
    file, as a table in another order, or as a pytrec_eval dict compares."""
    labels = SAMPLES / "compare/labels.jsonl"
    options = {"k": (1, 5, 10), "repeats": "last"}
    candidate = rgrade.grade(labels, SAMPLES / "compare/candidate", **options)
    rows = [json.loads(line) for line in labels.read_text().splitlines() if line.strip()]
    judged = [
        {"query_id": row["query_id"], "doc_id": doc, "grade": grade, "task": row.get("task"),
         "language": row.get("language"), "split": row.get("split"), "required": row.get("required", False)}
        for row in rows
        # A no-answer query is a row without a document.
        for doc, grade in (list(row["relevant"].items()) if isinstance(row["relevant"], dict)
                           else [(doc, 1) for doc in row["relevant"]]) or [(None, None)]
    ]
    table = pa.Table.from_pylist(judged[::-1])
    with pytest.warns(rgrade.RejectedRecordsWarning):
        baseline = rgrade.grade(table, SAMPLES / "realistic/logs", **options)
    compared = rgrade.compare(baseline, candidate, seed=1)
    assert compared.comparison.num_rows > 0
    assert baseline.summary["labels"]["content_hash"] == candidate.summary["labels"]["content_hash"]
    assert baseline.summary["labels"]["hash"] != candidate.summary["labels"]["hash"]


def test_results_leave_no_directory_and_no_warning_behind(tmp_path):
    """Every result's files go with it, without the ResourceWarning an
    implicitly cleaned TemporaryDirectory gives under `-X dev`; a call
    that raises leaves nothing either."""
    script = f"""
import gc, os, tempfile, warnings
import rgrade
warnings.simplefilter("error")
tempfile.tempdir = {str(tmp_path)!r}
seed = {str(SAMPLES / "seed")!r}
graded = rgrade.grade(seed + "/labels.jsonl", seed + "/logs.jsonl", k=3)
shard = rgrade.grade_shard(seed + "/labels.jsonl", seed + "/logs.jsonl", k=3)
merged = rgrade.merge(seed + "/labels.jsonl", [shard])
assert len(os.listdir({str(tmp_path)!r})) == 3
del graded, shard, merged
gc.collect()
assert os.listdir({str(tmp_path)!r}) == [], os.listdir({str(tmp_path)!r})
try:
    rgrade.grade(seed + "/none.jsonl", seed + "/logs.jsonl")
except rgrade.LabelsError:
    pass
assert os.listdir({str(tmp_path)!r}) == []
kept = rgrade.grade(seed + "/labels.jsonl", seed + "/logs.jsonl", k=3)
"""
    run = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stderr, run.stderr
    assert os.listdir(tmp_path) == []


def test_the_package_says_its_version():
    pyproject = (ROOT / "python" / "pyproject.toml").read_text()
    assert f'version = "{rgrade.__version__}"' in pyproject


def test_measures_by_their_names_grade_as_the_command_line(tmp_path):
    """`measures=` takes ir_measures' and ranx's names, as `--measures`
    does: the same columns and values, under rgrade's names."""
    labels, logs = SAMPLES / "compare/labels.jsonl", SAMPLES / "compare/candidate"
    asked = ["nDCG@10", "P(rel=2)@5", "map", "Bpref", "RBP(p=0.8)"]
    graded = rgrade.grade(labels, logs, k=10, measures=asked, repeats="last")
    graded.write(tmp_path / "api")
    run = cli(["grade", "--labels", str(labels), "-k", "10", "--measures", ",".join(asked), "--repeats", "last",
               "-q", "-o", str(tmp_path / "cli"), str(logs)], ROOT)
    assert run.returncode == 0, run.stderr
    for name in ("per_query.csv", "aggregates.csv"):
        assert filecmp.cmp(tmp_path / "cli" / name, tmp_path / "api" / name, shallow=False), name
    columns = graded.per_query.column_names
    for column in ("ndcg@10", "precision(rel=2)@5", "ap@all", "bpref", "rbp(p=0.8)", "rbp_residual(p=0.8)"):
        assert column in columns, columns
    assert "recall@10" not in columns
    assert set(graded.headline()[0]["metrics"]) >= {"ndcg@10", "bpref"}
    with pytest.raises(rgrade.UsageError, match="nDCG@ten"):
        rgrade.grade(labels, logs, measures=["nDCG@ten"])
