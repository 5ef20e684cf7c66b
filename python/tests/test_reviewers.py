"""Several reviewers in one key, on the judges sample's reviewers.jsonl
(three reviewers grade every document of 80 queries): the reviewers'
Fleiss' kappa equals statsmodels' and their ordinal alpha the krippendorff
package's, each way of combining their grades
grades exactly as a key holding the grades combined here, and two
reviewers of one key compare as scikit-learn says; the runs its labels
were pooled from are kept, and a run pooled alone is named."""

import json
import os
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

import rgrade

ROOT = Path(__file__).resolve().parents[2]
JUDGES = ROOT / "data-samples" / "judges"
REVIEWED = JUDGES / "reviewers.jsonl"
LOGS = JUDGES / "logs.jsonl"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))


def votes():
    """(query, doc) -> {reviewer: grade}, and each query's (task, language)
    and reviewers (some label no document: no-answer queries)."""
    given, slices, labeled = defaultdict(dict), {}, defaultdict(set)
    with open(REVIEWED, encoding="utf-8") as f:
        for line in f:
            label = json.loads(line)
            for doc, grade in label["relevant"].items():
                given[label["query_id"], doc][label["reviewer"]] = grade
            slices[label["query_id"]] = (label["task"], label["language"])
            labeled[label["query_id"]].add(label["reviewer"])
    return given, slices, labeled


def combined(policy, given):
    """The grade that counts for each pair, combined without rgrade."""
    if policy == "any":
        return {pair: max(g.values()) for pair, g in given.items()}
    if policy == "all":
        return {pair: min(g.values()) for pair, g in given.items()}
    if policy == "majority":
        out = {}
        for pair, g in given.items():
            counts = Counter(g.values())
            most = max(counts.values())
            out[pair] = min(grade for grade, n in counts.items() if n == most)
        return out
    return {pair: g[policy] for pair, g in given.items() if policy in g}


def test_fleiss_kappa_equals_statsmodels():
    given, _, labeled = votes()
    grading = rgrade.grade(REVIEWED, LOGS, reviewers="majority", min_rel=2)
    summary = grading.summary["labels"]["reviewers"]
    ratings = [list(g.values()) for g in given.values()]
    assert all(len(r) == 3 for r in ratings), "the sample has three reviewers on every pair"
    grades_table, _ = aggregate_raters(ratings)
    relevance_table, _ = aggregate_raters([[int(x >= 2) for x in r] for r in ratings])
    assert summary["fleiss_kappa_grade"] == pytest.approx(
        fleiss_kappa(grades_table, method="fleiss"), abs=1e-12
    )
    assert summary["fleiss_kappa_relevance"] == pytest.approx(
        fleiss_kappa(relevance_table, method="fleiss"), abs=1e-12
    )
    # Reviewers by row, pairs by column.
    by_reviewer = np.array(ratings, dtype=float).T
    assert summary["krippendorff_alpha_grade"] == pytest.approx(
        krippendorff.alpha(reliability_data=by_reviewer, level_of_measurement="ordinal"), abs=1e-12
    )
    assert summary["pairs_judged_by_several"] == len(given)
    assert summary["pairs_disputed"] == sum(len(set(g.values())) > 1 for g in given.values())
    assert summary["policy"] == "majority"
    for reviewer in summary["reviewers"]:
        theirs = [pair for pair, g in given.items() if reviewer["name"] in g]
        assert reviewer["pairs"] == len(theirs)
        assert reviewer["queries"] == sum(reviewer["name"] in r for r in labeled.values())


@pytest.mark.parametrize("policy", ["majority", "any", "all", "ben"])
def test_each_policy_grades_as_the_grades_combined_here(policy):
    given, slices, labeled = votes()
    grades = combined(policy, given)
    # A query without a pair (no-answer) is a row without a document.
    queries = [q for q, r in labeled.items() if policy in ("majority", "any", "all") or policy in r]
    rows = list(grades.items()) + [
        ((q, None), None) for q in queries if not any(p[0] == q for p in grades)
    ]
    key = pa.table(
        {
            "query_id": [q for (q, _), _ in rows],
            "doc_id": [d for (_, d), _ in rows],
            "grade": pa.array([g for _, g in rows], pa.int64()),
            "task": [slices[q][0] for (q, _), _ in rows],
            "language": [slices[q][1] for (q, _), _ in rows],
        }
    )
    by_rgrade = rgrade.grade(REVIEWED, LOGS, k=(3, 10), reviewers=policy)
    by_hand = rgrade.grade(key, LOGS, k=(3, 10))
    assert by_rgrade.per_query.equals(by_hand.per_query)
    assert by_rgrade.aggregates.equals(by_hand.aggregates)


def test_two_reviewers_of_one_key_agree_as_scikit_learn_says():
    given, _, _ = votes()
    agreement = rgrade.agree(REVIEWED, REVIEWED, reviewers_a="ana", reviewers_b="ben")
    pairs = [(g["ana"], g["ben"]) for g in given.values()]
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    summary = agreement.summary
    assert summary["pairs_both"] == len(pairs)
    assert summary["relevance_kappa"] == pytest.approx(
        cohen_kappa_score([x >= 1 for x in a], [x >= 1 for x in b]), abs=1e-12
    )
    assert summary["grade_kappa"] == pytest.approx(
        cohen_kappa_score(a, b, labels=summary["grades"], weights="linear"), abs=1e-12
    )
    assert summary["key_a"]["reviewers"]["policy"] == "ana"
    with pytest.raises(rgrade.UsageError, match="not both"):
        rgrade.agree(REVIEWED, REVIEWED, reviewers="majority", reviewers_a="ana")


def test_a_pair_several_judged_needs_a_policy_and_the_cli_says_the_same(tmp_path):
    with pytest.raises(rgrade.LabelsError, match='say whose grade counts with reviewers="majority", any, all'):
        rgrade.grade(REVIEWED, LOGS)
    out = tmp_path / "cli"
    cli = subprocess.run(
        [RGRADE, "grade", "--labels", str(REVIEWED), "--reviewers", "majority", "-q", "-o", str(out), str(LOGS)],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    with open(out / "summary.json", encoding="utf-8") as f:
        from_cli = json.load(f)["labels"]["reviewers"]
    assert from_cli == rgrade.grade(REVIEWED, LOGS, reviewers="majority").summary["labels"]["reviewers"]


def test_a_run_pooled_alone_is_counted_and_warned_of():
    """A quarter of the sample's queries were pooled from bm25 alone: the
    count and share equal those read from the key itself."""
    pools = {}
    with open(REVIEWED, encoding="utf-8") as f:
        for line in f:
            label = json.loads(line)
            pools.setdefault(label["query_id"], set()).update(label["pooled_from"])
    alone = sum(pool == {"bm25"} for pool in pools.values())
    with pytest.warns(rgrade.RgradeWarning, match="run 'bm25' is the only run the judging pools"):
        grading = rgrade.grade(REVIEWED, LOGS, reviewers="majority")
    assert grading.summary["labels"]["pooled_queries"] == len(pools)
    assert grading.summary["self_pooled"] == [
        {"run": "bm25", "queries": alone, "share": alone / len(pools)}
    ]
    assert grading.summary["labels"]["sources"] == [
        {"source": "human", "labels": 240, "judgments": 3 * 142}
    ]


def test_messages_keep_commands_and_ids_as_typed(tmp_path):
    """A message's flags become keyword arguments, but not a command to
    type (in backticks) nor an id that begins with two dashes."""
    key = tmp_path / "majority.key"
    subprocess.run([RGRADE, "index", str(REVIEWED), "--reviewers", "majority", "-o", str(key)],
                   check=True, capture_output=True)
    with pytest.raises(rgrade.LabelsError) as refused:
        rgrade.grade(key, LOGS, reviewers="any")
    assert 'compiled with reviewers="majority"' in str(refused.value)
    assert "`rgrade index --reviewers any`" in str(refused.value)
    dashed = tmp_path / "dashed.jsonl"
    dashed.write_text(
        '{"query_id": "--q", "relevant": ["d"]}\n{"query_id": "--q", "relevant": ["e"]}\n')
    with pytest.raises(rgrade.LabelsError, match="'--q'"):
        rgrade.grade(dashed, LOGS)
