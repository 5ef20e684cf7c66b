"""The native half of rgrade: see rgrade's own functions for the API."""

from typing import Optional, Sequence, Tuple

class RgradeError(Exception):
    """rgrade could not grade: the message is the command line's."""

def grade(
    labels: str,
    logs: Sequence[str],
    out: str,
    k: Sequence[str],
    partial: bool = ...,
    missing: str = ...,
    repeats: str = ...,
    duplicate_docs: str = ...,
    min_rel: int = ...,
    stages: Sequence[str] = ...,
    stage_order: Sequence[str] = ...,
    review_queue: bool = ...,
    pool_depth: Optional[int] = ...,
    collection_version: Optional[str] = ...,
    meta: Sequence[Tuple[str, str]] = ...,
    threads: Optional[int] = ...,
    command: Sequence[str] = ...,
) -> list[str]: ...
def compare(
    baseline: str,
    candidate: str,
    out: str,
    rules: Optional[str] = ...,
    baseline_run: Optional[str] = ...,
    candidate_run: Optional[str] = ...,
    metrics: Sequence[str] = ...,
    permutations: int = ...,
    bootstrap: int = ...,
    seed: int = ...,
    alpha: float = ...,
    threads: Optional[int] = ...,
) -> Tuple[bool, list[str]]: ...
def merge(
    labels: str,
    shards: Sequence[str],
    out: str,
    threads: Optional[int] = ...,
    command: Sequence[str] = ...,
) -> list[str]: ...
