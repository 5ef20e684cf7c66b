"""The Spark job (python/examples/spark_grade.py), with pyspark in local
mode, writes what `rgrade grade -o` writes for the same logs: every file
byte for byte, and summary.json but for its inputs, command and timing
(the report lists the inputs too), on the realistic sample (two files, one
gzip, with the flaws real captures have) and on `rgrade gen` data."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark  # noqa: F401  (the job needs it; CI installs it)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
JOB = ROOT / "python" / "examples" / "spark_grade.py"


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def assert_spark_equals_cli(tmp_path: Path, labels: Path, logs: Path, flags: list, expect: int):
    cli = run([RGRADE, "grade", "--labels", str(labels), *flags, "-q", "-o", str(tmp_path / "cli"), str(logs)])
    assert cli.returncode == expect, cli.stderr
    job = run(
        [sys.executable, str(JOB), "--master", "local[2]", "--partitions", "3",
         "--labels", str(labels), "--logs", str(logs), "-o", str(tmp_path / "spark"), *flags],
        cwd=tmp_path,
    )
    assert job.returncode == expect, job.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "cli").iterdir() if not p.name.startswith("."))
    assert names == sorted(p.name for p in (tmp_path / "spark").iterdir() if not p.name.startswith("."))
    for name in names:
        if name.endswith((".csv", ".jsonl")):
            assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name

    def inputless(directory):
        summary = json.loads((tmp_path / directory / "summary.json").read_text())
        inputs = summary.pop("inputs")
        for key in ("command", "as_of", "elapsed_seconds", "throughput", "outputs"):
            summary.pop(key)
        return summary, [(i["path"], i["lines"], i["records"], i["rejected"]) for i in inputs]

    assert inputless("spark") == inputless("cli")
    return job


def test_the_spark_job_grades_the_realistic_sample_as_the_cli_does(tmp_path):
    """The sample's five rejects exceed --max-rejects 0: exit status 1, and
    stderr says why, naming the first."""
    flags = ["-k", "1,5,10", "--repeats", "last", "--stage-order", "retrieve,final"]
    job = assert_spark_equals_cli(
        tmp_path, SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs", flags, 1
    )
    first = json.loads((tmp_path / "cli/rejects.jsonl").read_text().splitlines()[0])
    assert "rejected record(s) exceed --max-rejects 0; the first is " in job.stderr, job.stderr[-3000:]
    assert f"{first['file']}:{first['line']}: {first['reason']}" in job.stderr


def test_the_spark_job_grades_generated_logs_as_the_cli_does(tmp_path):
    gen = run([RGRADE, "gen", "--queries", "3000", "--seed", "5", "--unlabeled", "500", "-o", str(tmp_path / "gen")])
    assert gen.returncode == 0, gen.stderr
    flags = ["-k", "1,10", "--stage-order", "retrieve,rerank,final", "--review-queue"]
    assert_spark_equals_cli(tmp_path, tmp_path / "gen/labels.jsonl", tmp_path / "gen/logs.jsonl", flags, 0)
