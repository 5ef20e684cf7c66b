"""Benchmark of the Python API and rgrade.spark against the command line,
on `rgrade gen` data (M by default: 1,000,000 queries x 10 results).

    python benches/python_api.py [--queries N] [--results M] [--runs R] [--spark] [--data DIR]

Times, each the median of R runs (3 by default; the Spark job runs once):
`rgrade grade -j 2 -o` on the JSONL log; `rgrade.grade` on the same log
file; `rgrade.grade` on the same events as a pyarrow Table already in
memory (read from `gen --format parquet`, not timed); and with --spark
`python -m rgrade.spark` in local mode on two cores, on the JSONL and the
Parquet log (each checked to write the command line's per_query.csv and
aggregates.csv). Prints a Markdown table with
seconds, the ratio to the command line and peak memory
(benches/runs/2026-12-02-python-and-spark.md shows it). Needs the release
binary (`cargo build --release`) and the package (`pip install
./python`); data lives in --data, never in the repository.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

import rgrade

ROOT = Path(__file__).resolve().parents[1]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "release" / "rgrade"))
K = ("1", "10")


def gen(data: Path, queries: int, results: int):
    for fmt in ("jsonl", "parquet"):
        out = data / fmt
        if not (out / "labels.jsonl").exists():
            subprocess.run(
                [RGRADE, "gen", "--queries", str(queries), "--results", str(results), "--seed", "1",
                 "--format", fmt, "-o", str(out)],
                check=True, capture_output=True,
            )


def timed(runs: int, work) -> float:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def child_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--results", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--spark", action="store_true")
    parser.add_argument("--data", default="/tmp/rgrade-bench/python")
    args = parser.parse_args()
    data = Path(args.data) / f"{args.queries}x{args.results}"
    gen(data, args.queries, args.results)
    labels, logs = data / "jsonl/labels.jsonl", data / "jsonl/logs.jsonl"
    rows = []
    scratch = tempfile.mkdtemp(prefix="rgrade-bench-")

    def cli():
        subprocess.run(
            [RGRADE, "grade", "--labels", str(labels), "-k", ",".join(K), "-j", "2", "-q",
             "-o", f"{scratch}/cli", str(logs)],
            check=True,
        )

    cli_seconds = timed(args.runs, cli)
    rows.append(("rgrade grade -j 2 -o, JSONL file", cli_seconds, child_peak_mb()))

    def api_file():
        rgrade.grade(labels, logs, k=K, threads=2).write(f"{scratch}/api-file")

    rows.append(("rgrade.grade, JSONL file", timed(args.runs, api_file), None))

    table = pq.read_table(data / "parquet/logs.parquet")
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def api_table():
        rgrade.grade(labels, table, k=K, threads=2).write(f"{scratch}/api-table")

    rows.append((f"rgrade.grade, pyarrow Table ({table.nbytes / 1e6:.0f} MB in memory)",
                 timed(args.runs, api_table), None))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    same = all(
        Path(f"{scratch}/cli/{name}").read_bytes() == Path(f"{scratch}/api-table/{name}").read_bytes()
        for name in ("per_query.csv", "aggregates.csv")
    )

    if args.spark:
        def spark_job(log: Path, out: str):
            def run():
                done = subprocess.run(
                    [sys.executable, "-m", "rgrade.spark", "--master", "local[2]", "--labels", str(labels),
                     "--logs", str(log), "-k", ",".join(K), "-q", "-o", f"{scratch}/{out}"],
                    capture_output=True, text=True,
                )
                if done.returncode != 0:
                    sys.exit(f"rgrade.spark failed:\n{done.stderr[-3000:]}")
                same_as_cli = all(
                    Path(f"{scratch}/cli/{name}").read_bytes() == Path(f"{scratch}/{out}/{name}").read_bytes()
                    for name in ("per_query.csv", "aggregates.csv")
                )
                if not same_as_cli:
                    sys.exit(f"rgrade.spark on {log} wrote other results than the command line")
            return run

        rows.append(("rgrade.spark, local[2], JSONL file", timed(1, spark_job(logs, "spark-jsonl")), None))
        rows.append(("rgrade.spark, local[2], Parquet file",
                     timed(1, spark_job(data / "parquet/logs.parquet", "spark-parquet")), None))

    print(f"{args.queries:,} queries x {args.results} results, JSONL {logs.stat().st_size / 1e6:.0f} MB, "
          f"-k {','.join(K)}, median of {args.runs}")
    print()
    print("| what | seconds | vs the command line |")
    print("|---|---:|---:|")
    for what, seconds, _ in rows:
        print(f"| {what} | {seconds:.2f} | {seconds / cli_seconds:.2f}x |")
    print()
    print(f"command line peak RSS {rows[0][2]:.0f} MB; Python process peak RSS {peak:.0f} MB "
          f"({loaded:.0f} MB once the table was loaded)")
    print(f"table grading's per_query.csv and aggregates.csv equal the command line's: {same}")


if __name__ == "__main__":
    main()
