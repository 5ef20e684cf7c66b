"""Log streams, graded batch by batch: a RecordBatchReader (one a
generator feeds included), any object with ``__arrow_c_stream__``, a
pyarrow Dataset or Scanner and a polars LazyFrame grade to the files the
command line writes for the same records in JSONL, at one thread and two;
a generator is pulled as the grading goes, its batches freed once graded;
a Dataset's Hive partition columns are fields; a reader is read once."""

import subprocess
from pathlib import Path
from typing import Callable, Dict, Iterator, NamedTuple

import polars
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rgrade
from test_tables import RGRADE, assert_same_tables, cli_grade, events

ROWS_PER_BATCH = 300


class Lake(NamedTuple):
    """Generated logs in the forms a test hands over, and what the command
    line writes for them."""

    labels: Path
    # The JSONL logs' events, and the command line's grading of the JSONL.
    table: pa.Table
    graded: Path
    # The events as one Parquet file of small row groups.
    parquet: Path


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    root = tmp_path_factory.mktemp("streams")
    gen = subprocess.run(
        [RGRADE, "gen", "--queries", "1000", "--seed", "5", "-o", str(root / "gen")],
        capture_output=True, text=True,
    )
    assert gen.returncode == 0, gen.stderr
    labels, logs = root / "gen/labels.jsonl", root / "gen/logs.jsonl"
    table = events(logs)
    parquet = root / "events.parquet"
    pq.write_table(table, parquet, row_group_size=ROWS_PER_BATCH)
    return Lake(labels, table, cli_grade(root, labels, logs, "1,10"), parquet)


def reader(table: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=ROWS_PER_BATCH))


def generated(table: pa.Table) -> pa.RecordBatchReader:
    def batches() -> Iterator[pa.RecordBatch]:
        yield from table.to_batches(max_chunksize=ROWS_PER_BATCH)

    return pa.RecordBatchReader.from_batches(table.schema, batches())


class Exported:
    """Neither pyarrow nor polars: only the Arrow C stream interface."""

    def __init__(self, table: pa.Table):
        self.reader = reader(table)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.reader.__arrow_c_stream__(requested_schema)


STREAMS: Dict[str, Callable[[Lake], object]] = {
    "reader": lambda lake: reader(lake.table),
    "generator": lambda lake: generated(lake.table),
    "c_stream": lambda lake: Exported(lake.table),
    "dataset": lambda lake: ds.dataset(lake.parquet),
    "scanner": lambda lake: ds.dataset(lake.parquet).scanner(batch_size=ROWS_PER_BATCH),
    "lazyframe": lambda lake: polars.scan_parquet(lake.parquet),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", STREAMS)
def test_a_stream_grades_as_its_jsonl_does(lake, tmp_path, kind, threads):
    graded = rgrade.grade(lake.labels, STREAMS[kind](lake), k=(1, 10), threads=threads)
    assert_same_tables(graded, lake.graded, tmp_path)
    (summary,) = graded.summary["inputs"]
    assert summary["path"] == "logs table 1"
    assert summary["records"] == lake.table.num_rows


def test_a_stream_counts_and_hashes_as_the_same_batches_held_whole(lake):
    whole = pa.Table.from_batches(lake.table.to_batches(max_chunksize=ROWS_PER_BATCH))
    inputs = [rgrade.grade(lake.labels, logs).summary["inputs"] for logs in (whole, reader(lake.table))]
    assert inputs[0] == inputs[1]


def test_a_generator_is_pulled_as_the_grading_goes_and_its_batches_freed(lake):
    """Each batch the generator makes is new memory; pyarrow's allocations
    when it makes the next one show how many the grading still holds: a
    few, not all the batches made before."""
    source = lake.table.slice(0, 2000).combine_chunks().to_batches()[0]
    rows = pa.array(range(source.num_rows))
    made, allocated = 120, []

    def batches() -> Iterator[pa.RecordBatch]:
        for _ in range(made):
            allocated.append(pa.total_allocated_bytes())
            yield pc.take(source, rows)

    before = pa.total_allocated_bytes()
    batch_bytes = pc.take(source, rows).get_total_buffer_size()
    stream = pa.RecordBatchReader.from_batches(source.schema, batches())
    graded = rgrade.grade(lake.labels, stream, repeats="last", threads=2)
    assert graded.summary["inputs"][0]["records"] == made * source.num_rows
    assert len(allocated) == made
    held = (max(allocated) - before) / batch_bytes
    assert held < made / 4, f"{held:.0f} of {made} batches held at once"


def test_a_datasets_hive_partitions_are_fields(lake, tmp_path):
    days = pa.array([f"2026-12-0{1 + i % 3}" for i in range(lake.table.num_rows)])
    ds.write_dataset(
        lake.table.append_column("dt", days), tmp_path / "lake", format="parquet",
        partitioning=["dt"], partitioning_flavor="hive", max_rows_per_group=ROWS_PER_BATCH,
    )
    dataset = ds.dataset(tmp_path / "lake", partitioning="hive")
    streamed = rgrade.grade(lake.labels, dataset, slice_by=["dt"])
    whole = rgrade.grade(lake.labels, dataset.to_table(), slice_by=["dt"])
    assert sorted(set(streamed.aggregates.column("dt").to_pylist()) - {"*"}) == [
        "2026-12-01", "2026-12-02", "2026-12-03"
    ]
    assert streamed.aggregates.equals(whole.aggregates)
    assert streamed.per_query.equals(whole.per_query)


def test_a_reader_is_read_once(lake):
    stream = reader(lake.table)
    rgrade.grade(lake.labels, stream)
    with pytest.raises(rgrade.LogsError, match="handed to a grading already, and a stream is read once"):
        rgrade.grade(lake.labels, stream)
    # A calibration reads the logs twice: a stream is refused before it is read.
    with pytest.raises(rgrade.UsageError, match="logs table 1 is a stream of record batches, read only once"):
        rgrade.grade(lake.labels, ds.dataset(lake.parquet), calibrate=str(lake.labels))


def test_a_generator_that_fails_fails_the_grading_with_its_message(lake):
    def batches() -> Iterator[pa.RecordBatch]:
        yield lake.table.to_batches(max_chunksize=ROWS_PER_BATCH)[0]
        raise RuntimeError("the warehouse went away")

    stream = pa.RecordBatchReader.from_batches(lake.table.schema, batches())
    with pytest.raises(rgrade.LogsError, match="logs table 1: record batch 1 cannot be read: .*the warehouse went away"):
        rgrade.grade(lake.labels, stream)


def test_shards_of_streams_merge_into_the_grading_of_all(lake):
    queries = lake.table.column("query_id")
    odd = [q for q in set(queries.to_pylist()) if int(q[1:]) % 2]
    in_odd = pc.is_in(queries, value_set=pa.array(odd))
    parts = [lake.table.filter(in_odd), lake.table.filter(pc.invert(in_odd))]
    shards = [rgrade.grade_shard(lake.labels, reader(part), k=(1, 10)) for part in parts]
    merged = rgrade.merge(lake.labels, shards)
    assert merged.per_query.equals(rgrade.grade(lake.labels, lake.table, k=(1, 10)).per_query)
