"""Peak memory of `rgrade.grade` on a log stream as the stream grows: one
Parquet lake (`rgrade gen --format parquet`, 100,000 queries x 20 results
by default) fed 1, 2 and 4 times through one RecordBatchReader over a
pyarrow Dataset, each grading in a fresh process (its peak RSS from
getrusage; the median of R runs, 3 by default, as the dataset's read-ahead
makes it vary by tens of MB from run to run). With --whole the stream is read into a table first, as
rgrade.grade read every stream before it graded batch by batch: the
figures to compare with.

    python benches/python_streams.py [--queries N] [--results M] [--times 1,2,4] [--runs R] [--whole] [--data DIR]

Prints a Markdown table with each grading's seconds and peak memory (the
medians, and the runs' peaks), and each peak's ratio to the first (benches/runs/2026-12-08-python-streams.md
shows it). Needs a built binary for `rgrade gen` (target/release, else
target/debug) and the package (`pip install ./python`); data lives in
--data, never in the repository.
"""

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rgrade_binary() -> str:
    for profile in ("release", "debug"):
        binary = ROOT / "target" / profile / "rgrade"
        if binary.exists():
            return str(binary)
    sys.exit("no rgrade binary: cargo build --release")


def gen(data: Path, queries: int, results: int) -> None:
    if not (data / "logs.parquet").exists():
        subprocess.run(
            [rgrade_binary(), "gen", "--queries", str(queries), "--results", str(results), "--seed", "1",
             "--format", "parquet", "-o", str(data)],
            check=True, capture_output=True,
        )


def grade_once(data: Path, times: int, whole: bool) -> None:
    """The child: grade the lake fed `times` times, then print seconds and
    peak memory in MB."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    import rgrade

    dataset = ds.dataset(data / "logs.parquet")

    def batches():
        for _ in range(times):
            yield from dataset.to_batches()

    stream = pa.RecordBatchReader.from_batches(dataset.schema, batches())
    logs = stream.read_all() if whole else stream
    start = time.perf_counter()
    graded = rgrade.grade(data / "labels.jsonl", logs, k=(1, 10), repeats="last", threads=2)
    seconds = time.perf_counter() - start
    records = graded.summary["inputs"][0]["records"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{seconds:.2f} {peak:.0f} {records}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--results", type=int, default=20)
    parser.add_argument("--times", default="1,2,4")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--whole", action="store_true")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--child", nargs=2, metavar=("DATA", "TIMES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        grade_once(Path(args.child[0]), int(args.child[1]), args.whole)
        return
    with tempfile.TemporaryDirectory(prefix="rgrade-streams-") as scratch:
        data = args.data or Path(scratch)
        gen(data, args.queries, args.results)
        size = (data / "logs.parquet").stat().st_size / 1e6
        how = "read whole first" if args.whole else "streamed"
        print(f"{args.queries} queries x {args.results} results, logs.parquet {size:.0f} MB, {how}\n")
        print("| lake fed | records | seconds | peak RSS (median) | runs' peaks | vs 1x |")
        print("|---|---:|---:|---:|---|---:|")
        first = None
        for times in (int(t) for t in args.times.split(",")):
            child = [sys.executable, __file__, "--child", str(data), str(times)] + ["--whole"] * args.whole
            runs = [subprocess.run(child, check=True, capture_output=True, text=True).stdout.split()
                    for _ in range(args.runs)]
            seconds = statistics.median(float(run[0]) for run in runs)
            peaks = [float(run[1]) for run in runs]
            peak = statistics.median(peaks)
            first = first or peak
            shown = ", ".join(f"{p:.0f}" for p in peaks)
            print(f"| {times}x | {int(runs[0][2]):,} | {seconds:.2f} | {peak:,.0f} MB | {shown} | "
                  f"{peak / first:.2f} |")

if __name__ == "__main__":
    main()
