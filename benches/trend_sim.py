"""How `rgrade trend`'s alarms behave, against the rules users set by hand,
on simulated nightly series (benches/runs/2026-12-07-alarms-across-nights.md).

    python benches/trend_sim.py [--stable 200] [--dropped 40] [--queries 2000]
                                [--rates 0.045,0.09] [--drop-from 8,20]
                                [--changes revert,persist] [--work DIR] [--jobs 2]

Each history is `rgrade gen --nights 30 --changes C --seed S` (each night
one query in twenty draws its rankings afresh: with `revert` they are
back the next night, with `persist` they stay until drawn again, as an
index that changes and stays changed), every night graded with
`grade -k 10 --as-of`, then watched three ways over the same family of
series (run, stage, grouping set, metric), with the first 7 nights as
baseline:

- rgrade trend (alpha 0.05, every series and night);
- a fixed threshold: alarm when a series' nightly mean falls more than 3
  points below its baseline nights' mean;
- a naive nightly test: a one-sided paired t-test of each query's value
  against its baseline mean, p < 0.05, per series and night, uncorrected.

Stable histories (no drop) of each kind of change give each rule's
false-alarm rate: the share of histories with any alarm. Dropped
histories (persisting changes; from night 8, the first watched, or night
20, each relevant document of the billing task lost with probability
RATE; 0.045 is about a 3-point drop of billing's recall@10, measured and
printed) give the nights of the drop up to and including the first
alarm on billing's own series (billing, any language), and how many of
those histories alarmed before the drop or on a series holding no
billing query. Needs
the release binary (`cargo build --release`), numpy, pandas and scipy;
data lives in --work, never in the repository.
"""

import argparse
import json
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
RGRADE = str(ROOT / "target" / "release" / "rgrade")
NIGHTS = 30
BASELINE = 7
ALPHA = 0.05
THRESHOLD = 0.03
METRICS = ["recall@10", "rr@10", "hit@10", "precision@10", "ndcg@10", "ap@10"]


def run(*args):
    subprocess.run([RGRADE, *args], check=False, capture_output=True)


def history(work: Path, seed: int, queries: int, changes: str, drop):
    """Generate and grade one history, with `drop` = (from, rate) planted
    if given; return its night directories."""
    data = work / f"h{seed}-{changes}"
    gen = ["gen", "--queries", str(queries), "--nights", str(NIGHTS), "--seed", str(seed),
           "--changes", changes, "-o", str(data / "data")]
    if drop is not None:
        gen += ["--drop-from", str(drop[0]), "--drop-task", "billing", "--drop-rate", str(drop[1])]
    run(*gen)
    nights = []
    for n in range(1, NIGHTS + 1):
        out = data / "graded" / f"night-{n:02}"
        run("grade", "--labels", str(data / "data" / "labels.jsonl"), "-k", "10", "-q",
            "--as-of", f"2026-11-{n:02}", "-o", str(out), str(data / "data" / f"night-{n:02}"))
        nights.append(out)
    return data, nights


def long_values(nights):
    """Every counted (night, stage, task, language, query, metric) value."""
    frames = []
    for n, night in enumerate(nights, start=1):
        df = pd.read_csv(night / "per_query.csv", keep_default_na=False,
                         usecols=["stage", "query_id", "task", "language", "status", *METRICS])
        df = df[df.status != "no_answer"].drop(columns="status")
        df[METRICS] = df[METRICS].astype(float)
        df["night"] = n
        frames.append(df)
    wide = pd.concat(frames)
    return wide.melt(id_vars=["night", "stage", "query_id", "task", "language"],
                     value_vars=METRICS, var_name="metric", value_name="value")


def by_set(values):
    """The values once per grouping set each query is in (overall, task,
    language, task x language)."""
    parts = []
    for task_any, language_any in [(True, True), (False, True), (True, False), (False, False)]:
        part = values.copy()
        if task_any:
            part["task"] = "*"
        if language_any:
            part["language"] = "*"
        parts.append(part)
    return pd.concat(parts)


def hand_rules(nights):
    """Per rule, the alarms: (night, task) of every (series, night) alarm."""
    values = by_set(long_values(nights))
    series = ["stage", "task", "language", "metric"]
    base = values[values.night <= BASELINE]
    per_query = base.groupby(series + ["query_id"]).value.mean().rename("base").reset_index()
    watched = values[values.night > BASELINE].merge(per_query, on=series + ["query_id"])
    watched["diff"] = watched.value - watched.base
    grouped = watched.groupby(series + ["night"])["diff"]
    summary = grouped.agg(["mean", "std", "count"]).reset_index()
    # Fixed threshold: the night's mean more than 3 points under the
    # baseline nights' mean, over the same queries.
    fixed = summary[summary["mean"] < -THRESHOLD]
    # Naive t-test, one-sided, uncorrected.
    with np.errstate(divide="ignore", invalid="ignore"):
        t = summary["mean"] / (summary["std"] / np.sqrt(summary["count"]))
    p = stats.t.cdf(t, summary["count"] - 1)
    naive = summary[(p < ALPHA) & (summary["std"] > 0)]
    return {
        "fixed": list(zip(fixed.night, fixed.task)),
        "naive": list(zip(naive.night, naive.task)),
    }


def rgrade_alarms(data, nights):
    out = data / "trend"
    run("trend", "-o", str(out), *map(str, nights))
    alarms = json.loads((out / "alarms.json").read_text())["alarms"]
    return [(int(a["as_of"][8:10]), a["task"]) for a in alarms]


def watch(work, seed, queries, changes, drop):
    data, nights = history(work, seed, queries, changes, drop)
    found = {"rgrade trend": rgrade_alarms(data, nights), **hand_rules(nights)}
    shutil.rmtree(data)
    return found


def drop_size(work, rate, queries):
    """The mean drop of billing's recall@10 (final stage) a rate makes, on
    one history whose changes revert (so that the rankings' own drift,
    which persisting changes let wander, does not blur it): its nights
    from the drop on against the baseline nights."""
    data, nights = history(work, 99_999, queries, "revert", (20, rate))
    values = long_values(nights)
    billing = values[(values.task == "billing") & (values.stage == "final")
                     & (values.metric == "recall@10")]
    means = billing.groupby("night").value.mean()
    shutil.rmtree(data)
    return means[means.index <= BASELINE].mean() - means[means.index >= 20].mean()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stable", type=int, default=200)
    parser.add_argument("--dropped", type=int, default=40)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rates", default="0.045,0.09")
    parser.add_argument("--drop-from", default="8,20")
    parser.add_argument("--changes", default="revert,persist")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="rgrade-trend-sim-"))
    work.mkdir(parents=True, exist_ok=True)
    rates = [float(rate) for rate in args.rates.split(",")]
    starts = [int(night) for night in args.drop_from.split(",")]
    kinds = args.changes.split(",")
    rules = {"rgrade trend": "rgrade trend (α = 0.05)",
             "fixed": f"fixed threshold ({THRESHOLD * 100:.0f} points)",
             "naive": "nightly paired t-test (p < 0.05)"}
    with ThreadPoolExecutor(args.jobs) as pool:
        stable = {kind: list(pool.map(lambda s: watch(work, s, args.queries, kind, None),
                                      range(1, args.stable + 1)))
                  for kind in kinds}
        dropped = {(start, rate): list(pool.map(
                       lambda s: watch(work, s, args.queries, "persist", (start, rate)),
                       range(10_001, 10_001 + args.dropped)))
                   for start in starts for rate in rates}
    print(f"{NIGHTS} nights, {args.queries} queries, baseline {BASELINE} nights; "
          f"{args.stable} stable histories of each kind, {args.dropped} per drop")
    print()
    print("| changes | rule | stable histories with a false alarm |")
    print("|---|---|---|")
    for kind in kinds:
        for rule, name in rules.items():
            false_alarms = sum(1 for h in stable[kind] if h[rule])
            n = len(stable[kind])
            print(f"| {kind} | {name} | {false_alarms}/{n} ({false_alarms / n:.3f}) |")
    print()
    print("| drop (billing recall@10) | from night | rule | detected by night 30 | nights to detection, median [min, max] | histories with an alarm elsewhere |")
    print("|---|---|---|---|---|---|")
    sizes = {rate: drop_size(work, rate, args.queries) for rate in rates}
    for (start, rate), histories in dropped.items():
        for rule, name in rules.items():
            delays, elsewhere = [], 0
            for h in histories:
                hits = [night for night, task in h[rule] if task == "billing" and night >= start]
                if hits:
                    delays.append(min(hits) - start + 1)
                if any(task not in ("billing", "*") or night < start for night, task in h[rule]):
                    elsewhere += 1
            n = len(histories)
            delay = f"{np.median(delays):.0f} [{min(delays)}, {max(delays)}]" if delays else "-"
            print(f"| {sizes[rate] * 100:.1f} points (rate {rate}) | {start} | {name} | {len(delays)}/{n} | {delay} | {elsewhere}/{n} |")


if __name__ == "__main__":
    main()
