"""The shapes other evaluation libraries keep qrels and runs in, as the
tables rgrade reads: pytrec_eval's dicts ``{query: {doc: grade}}`` and
``{query: {doc: score}}``, and ranx's ``Qrels`` and ``Run`` objects,
recognised by what they offer (``to_dict()`` beside ``qrels`` or ``run``)
so that ranx need not be installed. Tables and paths pass through."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import pyarrow as pa

Nested = Mapping[Any, Mapping[Any, Any]]


def _is_ranx(value: object, store: str) -> bool:
    """Whether ``value`` looks like a ranx object keeping its pairs in
    ``store`` (``qrels`` for a Qrels, ``run`` for a Run). A data frame
    with a column of that name has the attribute too: tables are not."""
    is_table = (
        hasattr(value, "__arrow_c_stream__")
        or hasattr(value, "to_arrow")
        or type(value).__module__.split(".")[0] in ("pandas", "polars", "pyarrow")
    )
    return not is_table and hasattr(value, store) and callable(getattr(value, "to_dict", None))


def _key(value: object, what: str) -> str:
    """A query or doc id as rgrade reads ids: a string, or an integer's
    decimal text."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"{what} {value!r} is a {type(value).__name__}, expected a string or an integer")


def _pairs(
    nested: Nested, name: str, value: Callable[[Any, str], Any]
) -> Tuple[List[str], List[Optional[str]], List[Any]]:
    """The (query, doc, value) rows of a nested mapping; a query with no
    document is a row without one."""
    queries: List[str] = []
    docs: List[Optional[str]] = []
    values: List[Any] = []
    for query, inner in nested.items():
        query_id = _key(query, f"{name}: query id")
        if not isinstance(inner, Mapping):
            raise TypeError(
                f"{name}: query {query_id!r} maps to a {type(inner).__name__}, expected a mapping of doc ids"
            )
        if not inner:
            queries.append(query_id)
            docs.append(None)
            values.append(None)
        for doc, number in inner.items():
            doc_id = _key(doc, f"{name}: query {query_id!r}: doc id")
            queries.append(query_id)
            docs.append(doc_id)
            values.append(value(number, f"{name}: query {query_id!r}, doc {doc_id!r}"))
    return queries, docs, values


def _grade(number: object, where: str) -> int:
    """A grade: an integer, or a float holding one (ranx keeps floats)."""
    if isinstance(number, bool):
        raise TypeError(f"{where}: grade {number!r} is a bool, expected an integer")
    if isinstance(number, int):
        return number
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise TypeError(f"{where}: grade {number!r} is no whole number")


def _score(number: object, where: str) -> float:
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        return float(number)
    raise TypeError(f"{where}: score {number!r} is a {type(number).__name__}, expected a number")


def labels_table(labels: Any) -> Any:
    """``labels`` as rgrade takes them: a pytrec_eval qrels dict or a ranx
    Qrels becomes a table of ``query_id``, ``doc_id``, ``grade`` (a query
    judging no document, a no-answer query, has a row without a doc id);
    anything else is returned as it is."""
    if _is_ranx(labels, "qrels"):
        labels = labels.to_dict()
    if not isinstance(labels, Mapping):
        return labels
    queries, docs, grades = _pairs(labels, "labels", _grade)
    return pa.table(
        {
            "query_id": pa.array(queries, pa.string()),
            "doc_id": pa.array(docs, pa.string()),
            "grade": pa.array(grades, pa.int64()),
        }
    )


def run_table(run: Any) -> Any:
    """A log as rgrade takes it: a pytrec_eval run dict or a ranx Run
    becomes a table of one row per result (``query_id``, ``doc_id``,
    ``score``, and ``run`` when the ranx Run has a name), ranked as
    trec_eval ranks a run; anything else is returned as it is."""
    name: Optional[str] = None
    if _is_ranx(run, "run"):
        name = getattr(run, "name", None)
        run = run.to_dict()
    if not isinstance(run, Mapping):
        return run
    queries, docs, scores = _pairs(run, "logs", _score)
    # A query with no results has no row: it is a query the run missed.
    kept = [i for i, doc in enumerate(docs) if doc is not None]
    columns: Dict[str, "pa.Array[Any]"] = {
        "query_id": pa.array([queries[i] for i in kept], pa.string()),
        "doc_id": pa.array([docs[i] for i in kept], pa.string()),
        "score": pa.array([scores[i] for i in kept], pa.float64()),
    }
    if name:
        columns["run"] = pa.array([str(name)] * len(kept), pa.string())
    return pa.table(columns)
