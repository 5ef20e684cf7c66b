"""``rgrade.grade(..., unit="doc", doc_of=...)``: chunk rankings graded as
their documents equal a grading of rankings mapped here, in Python, and a
pattern without its unit (or the reverse) raises."""

import json
from pathlib import Path

import pyarrow as pa
import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
JUDGES = ROOT / "data-samples" / "judges"


def document(chunk: str) -> str:
    return chunk.rsplit("#", 1)[0] if "#" in chunk else chunk


def document_key() -> pa.Table:
    """The judge's key with each label moved to its document (its chunks' highest grade)."""
    rows = {}
    with open(JUDGES / "judge.jsonl", encoding="utf-8") as f:
        for line in f:
            label = json.loads(line)
            for chunk, grade in label["relevant"].items():
                key = (label["query_id"], document(chunk))
                rows[key] = max(rows.get(key, grade), grade)
    return pa.table({
        "query_id": [q for q, _ in rows],
        "doc_id": [d for _, d in rows],
        "grade": list(rows.values()),
    })


def events():
    with open(JUDGES / "logs.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_documents_grade_as_their_first_chunks():
    chunks = events()
    # The same document twice in the first ranking.
    chunks[0]["results"].insert(1, document(chunks[0]["results"][0]) + "#chunk-9999")
    mapped, later = [], 0
    for event in chunks:
        seen = []
        for chunk in event["results"]:
            if document(chunk) in seen:
                later += 1
            else:
                seen.append(document(chunk))
        mapped.append({**event, "results": seen})
    key = document_key()
    expected = rgrade.grade(key, pa.Table.from_pylist(mapped), k=(1, 5, 10))
    for pattern in ("#", r"^(.+)#chunk-\d+$"):
        got = rgrade.grade(key, pa.Table.from_pylist(chunks), k=(1, 5, 10), unit="doc", doc_of=pattern)
        assert got.per_query.equals(expected.per_query), pattern
        assert got.aggregates.equals(expected.aggregates), pattern
        assert got.summary["counts"]["later_chunks"] == later
        assert got.summary["settings"]["doc_of"] == pattern
    assert later > 0


def test_a_pattern_needs_its_unit_and_the_reverse():
    logs = JUDGES / "logs.jsonl"
    with pytest.raises(rgrade.UsageError, match="doc_of= only applies with unit="):
        rgrade.grade(JUDGES / "judge.jsonl", logs, doc_of="#")
    with pytest.raises(rgrade.UsageError, match="needs doc_of="):
        rgrade.grade(JUDGES / "judge.jsonl", logs, unit="doc")
    with pytest.raises(rgrade.UsageError, match="capture group"):
        rgrade.grade(JUDGES / "judge.jsonl", logs, unit="doc", doc_of="(a)(b)")
