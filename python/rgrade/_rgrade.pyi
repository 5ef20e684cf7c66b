"""The native half of rgrade: see rgrade's own functions for the API."""

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

__version__: str

class RgradeError(Exception):
    """rgrade could not grade: the message is the command line's."""

class UsageError(RgradeError):
    """An option of the call is not one rgrade takes."""

class LabelsError(RgradeError):
    """The answer key cannot be read, is invalid, or is refused by a check."""

class LogsError(RgradeError):
    """A log input (or a file read beside the logs) is missing, empty, corrupt or does not fit."""

class OutputError(RgradeError):
    """The output directory cannot be claimed or written."""

class ComparisonError(RgradeError):
    """Two gradings cannot be compared, the rules cannot be held, or nightly
    gradings cannot be watched as one series."""

class ShardError(RgradeError):
    """Partial gradings cannot be merged."""

def grade(
    labels: str,
    labels_table: Optional[object],
    logs: Sequence[str],
    log_tables: Sequence[Tuple[str, object, bool]],
    lines: Optional[Tuple[Sequence[str], object]],
    out: str,
    options: Mapping[str, Any],
    command: Sequence[str],
    shard: bool,
) -> Tuple[list[str], Optional[Tuple[pa.Schema, list[pa.RecordBatch]]]]: ...
def compare(
    baseline: str,
    candidate: str,
    out: str,
    rules: Optional[str],
    options: Mapping[str, Any],
) -> Tuple[bool, list[str]]: ...
def agree(key_a: str, key_b: str, out: str, options: Mapping[str, Any]) -> list[str]: ...
def merge(
    labels: str,
    labels_table: Optional[object],
    shards: Sequence[str],
    out: str,
    options: Mapping[str, Any],
    command: Sequence[str],
) -> Tuple[list[str], Tuple[pa.Schema, list[pa.RecordBatch]]]: ...
def trend(
    nights: Sequence[str], out: str, options: Mapping[str, Any], command: Sequence[str]
) -> Tuple[bool, list[str]]: ...
def log_files(paths: Sequence[str]) -> list[Path]: ...
def copy_result(source: str, target: str) -> None: ...
def main(args: Sequence[str]) -> int: ...
