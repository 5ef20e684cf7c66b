#!/usr/bin/env python3
"""Coverage and bias of `grade --calibrate`'s calibrated means, by simulation.

Written from docs/guide.md ("Means from a judge's labels, calibrated by a
human sample"), not from rgrade's code: a population of queries, each with
a ranking of ten documents out of forty candidates, relevance labels by
humans and by a judge; rr@10 and recall@10 under both; then, many times, a
random sample of n queries graded by the humans and the estimators below,
against the population's mean over the queries the humans find an answer
for.

- `old`: the estimator before the fix (the judge-only queries' values,
  uncapped power-tuned λ, the rectifier's sample variance, z quantile; a
  human-sampled query without a human answer reads as unsampled).
- `new`: the guide's estimator (ratio of two prediction-powered means,
  λ in [0, 1], the correction's variance at least p(1 − p) with
  p = 1/(n + 2), Student's t with n − 1 degrees of freedom).
- `humans alone`: `new` with λ = 0, the reviewers' own mean and interval,
  for reference.

Usage: python3 benches/calibrate_sim.py [--reps 2000] [--seed 1]
Prints a Markdown table (coverage of the 95% interval, mean bias, mean
half-width, the mean λ) for
benches/runs/2026-12-07-calibrated-means-by-simulation.md.
"""

import argparse

import numpy as np
from scipy import stats

QUERIES = 1000
CANDIDATES = 40
DEPTH = 10
LEVEL = 0.95


def population(rng, judge, empty_share):
    """Human and judge relevance of every candidate, and the retriever's
    ranking: boolean arrays (queries × candidates) and the top ten."""
    human = np.zeros((QUERIES, CANDIDATES), bool)
    n_rel = np.minimum(1 + rng.poisson(1.5, QUERIES), 6)
    for q in range(QUERIES):
        human[q, : n_rel[q]] = True
    empty = rng.random(QUERIES) < empty_share
    human[empty] = False
    # The retriever: relevant documents score higher, by a query's own
    # difficulty, so that the metrics spread over [0, 1].
    skill = rng.uniform(0.0, 3.0, QUERIES)[:, None]
    score = rng.normal(size=(QUERIES, CANDIDATES)) + skill * human
    top = np.argsort(-score, axis=1)[:, :DEPTH]
    if judge == "near-perfect":
        labels = human.copy()
        # 3% of the queries, among the hard ones (the humans' rr@10 below
        # 0.25): the judge calls the first document shown relevant and no
        # other, so that it scores them near 1 where the humans score
        # them near 0.
        hard = np.flatnonzero(metrics(human, top)[0]["rr@10"] < 0.25)
        for q in rng.choice(hard, min(len(hard), round(0.03 * QUERIES)), replace=False):
            labels[q] = False
            labels[q, top[q, 0]] = True
    else:
        miss, extra = {
            "good": (0.1, 0.03),
            "noisy": (0.3, 0.1),
            "biased": (0.02, 0.15),
        }[judge]
        draw = rng.random((QUERIES, CANDIDATES))
        labels = np.where(human, draw >= miss, draw < extra)
    if empty_share > 0:
        # The judge finds exactly one relevant document where the humans
        # find none.
        for q in np.flatnonzero(empty):
            labels[q] = False
            labels[q, top[q, rng.integers(0, DEPTH)]] = True
    return human, labels, top


def metrics(relevant, top):
    """rr@10 and recall@10 per query, and whether the query has an answer."""
    shown = np.take_along_axis(relevant, top, axis=1)
    answered = relevant.any(axis=1)
    first = np.where(shown.any(axis=1), shown.argmax(axis=1) + 1, np.inf)
    rr = np.where(answered, 1.0 / first, 0.0)
    recall = np.where(answered, shown.sum(axis=1) / np.maximum(relevant.sum(axis=1), 1), 0.0)
    return {"rr@10": rr, "recall@10": recall}, answered


def old_estimate(f, a, y, h_ans, sampled):
    """The estimator before the fix, as rgrade ran it."""
    counted = a  # the judge's answerable queries are the set
    paired = counted & sampled & h_ans
    alone = counted & ~paired
    fn, yn, fN = f[paired], y[paired], f[alone]
    n, big = len(fn), len(fN)
    if n < 10:
        return None
    cov = np.cov(yn, fn, ddof=1)[0, 1]
    var_j = np.var(fN, ddof=1) / big
    spread = var_j + np.var(fn, ddof=1) / n
    lam = cov / n / spread if spread > 0 else 0.0
    theta = lam * fN.mean() + yn.mean() - lam * fn.mean()
    var = lam**2 * var_j + np.var(yn - lam * fn, ddof=1) / n
    half = 1.959964 * np.sqrt(max(var, 0.0))
    return theta, theta - half, theta + half, lam


def new_estimate(f, a, y, h_ans, sampled, min_n, lam_max=1.0):
    """The guide's estimator: θ = D̂ over T̂, two prediction-powered totals
    sharing one λ, from the pseudo-values u = A·(y − θ) (humans) and
    v = a·(f − θ) (judge)."""
    judge_a, judge_v = a.astype(float), np.where(a, f, 0.0)
    human_a, human_v = h_ans.astype(float), np.where(h_ans, y, 0.0)
    pn, pN = sampled, ~sampled
    n, big = pn.sum(), pN.sum()
    if n < min_n:
        return None

    def solve(lam):
        total = lam * judge_v[pN].mean() + human_v[pn].mean() - lam * judge_v[pn].mean()
        share = lam * judge_a[pN].mean() + human_a[pn].mean() - lam * judge_a[pn].mean()
        return total / share, share

    def pseudo(theta):
        return (human_a * (human_v - theta))[pn], judge_a * (judge_v - theta)

    theta0, share0 = solve(0.0)
    if share0 <= 0:
        return None
    u, v = pseudo(theta0)
    vn, vN = v[pn], v[pN]
    spread = np.var(vN, ddof=1) / big + np.var(vn, ddof=1) / n
    lam = np.cov(u, vn, ddof=1)[0, 1] / n / spread if spread > 0 else 0.0
    lam = min(max(lam, 0.0), lam_max)
    theta, share = solve(lam)
    u, v = pseudo(theta)
    vn, vN = v[pn], v[pN]
    p = 1.0 / (n + 2)
    floor = p * (1 - p)
    var_rest = max(np.var(u - lam * vn, ddof=1), floor)
    var = (lam**2 * np.var(vN, ddof=1) / big + var_rest / n) / share**2
    half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * np.sqrt(var)
    return theta, theta - half, theta + half, lam


def run(args):
    rng = np.random.default_rng(args.seed)
    cases = [(j, 0.0) for j in ("good", "noisy", "biased", "near-perfect")]
    cases.append(("good", 0.2))
    print("| judge | no answer | metric | n | estimator | coverage | bias | half-width | λ |")
    print("|---|---|---|---|---|---|---|---|---|")
    for judge, empty_share in cases:
        human, labels, top = population(rng, judge, empty_share)
        h_metrics, h_ans = metrics(human, top)
        j_metrics, j_ans = metrics(labels, top)
        for metric in ("rr@10", "recall@10"):
            y, f = h_metrics[metric], j_metrics[metric]
            truth = y[h_ans].mean()
            for n in args.n:
                rows = {"old": [], "new": [], "humans alone": []}
                for _ in range(args.reps):
                    sampled = np.zeros(QUERIES, bool)
                    sampled[rng.choice(QUERIES, n, replace=False)] = True
                    rows["old"].append(old_estimate(f, j_ans, y, h_ans, sampled))
                    rows["new"].append(new_estimate(f, j_ans, y, h_ans, sampled, args.min_n))
                    rows["humans alone"].append(new_estimate(f, j_ans, y, h_ans, sampled, args.min_n, lam_max=0.0))
                for name, got in rows.items():
                    got = np.array([g for g in got if g is not None])
                    if len(got) == 0:
                        print(f"| {judge} | {empty_share:.0%} | {metric} | {n} | {name} | too few | | | |")
                        continue
                    theta, low, high, lam = got.T
                    # The clamp to [0, 1] changes no coverage: the truth is there.
                    cover = np.mean((np.clip(low, 0, 1) <= truth) & (truth <= np.clip(high, 0, 1)))
                    print(
                        f"| {judge} | {empty_share:.0%} | {metric} | {n} | {name} | {cover:.1%} "
                        f"| {np.mean(theta) - truth:+.4f} | {np.mean(high - low) / 2:.3f} | {np.mean(lam):.2f} |"
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--n", type=int, nargs="+", default=[10, 20, 30, 100])
    parser.add_argument("--min-n", type=int, default=10)
    run(parser.parse_args())
