"""How often `rgrade compare`'s 95% intervals of the mean delta cover the
true mean delta on small slices
(benches/runs/2026-12-07-compare-intervals-on-small-slices.md), written
apart from rgrade's code.

    python benches/compare_sim.py [--trials 4000] [--resamples 1000]
                                  [--ns 10,15,20,30,50] [--seed 46] [--more]

Per query, a simulated baseline ranks each of its 1-4 relevant documents
(a geometric rank, or missed); the candidate keeps that ranking or, with
some probability, ranks the query afresh, the same way (no true change),
better or worse. rr@10, recall@10 and hit@10 of both rankings give the
per-query deltas: bounded, mostly exact zeros, few distinct values,
skewed when the change fixes a few queries outright. The true mean delta
is 0 where the candidate ranks like the baseline, else the mean over
2,000,000 simulated queries.

Each trial draws n queries and builds 95% intervals of the mean delta
from their deltas:

- percentile: the percentile bootstrap compare used before (type-7
  quantiles of the resample means, clamped to the deltas' range);
- with --more, BCa: the bias-corrected and accelerated bootstrap
  (jackknife acceleration), from the same resamples, and boot-t: the
  studentized bootstrap, from the same resamples (a resample of equal
  deltas gives t* = 0 or ±inf), bounds within [-1, 1];
- t: mean ± t(0.975, n-1) · sd / sqrt(n);
- hall: the same after Hall's (1992) transformation that removes the
  sample's skewness from the t statistic;
- compare: what `rgrade compare` prints now, the wider of t and hall on
  each side, and only when the deltas are not all equal (equal deltas say
  nothing of their spread: compare then prints no interval).

Coverage is over the trials where compare gives an interval, so the
methods are judged on the same samples; `none` is the share of trials
without one, and `pct_all` the percentile bootstrap's coverage over every
trial (it always printed an interval, a point when the deltas were
equal). Needs numpy and scipy.
"""

import argparse

import numpy as np
from scipy import stats

CUTOFF = 10
CONFIDENCE = 0.95
METRICS = ["rr@10", "recall@10", "hit@10"]
TRUTH_QUERIES = 2_000_000

# A system's ranking quality: each relevant document is missed (beyond
# rank 10) with probability `miss`, else ranked geometrically with `p`.
BASELINE = {"p": 0.25, "miss": 0.3}
BETTER = {"p": 0.45, "miss": 0.1}
WORSE = {"p": 0.15, "miss": 0.5}
# The relevant document at rank 1: a query fixed outright.
FIXED = {"p": 1.0, "miss": 0.0}

# name -> [(probability, quality the candidate ranks the query afresh with)];
# the rest of the queries keep the baseline's ranking (delta exactly 0).
SCENARIOS = {
    "no change, 15% reranked": [(0.15, BASELINE)],
    "no change, 80% reranked": [(0.80, BASELINE)],
    "broad gain, 60% reranked better": [(0.60, BETTER)],
    "gains and losses, 25% better, 10% worse": [(0.25, BETTER), (0.10, WORSE)],
    "skewed gain, 12% fixed outright": [(0.12, FIXED)],
    "rare gain, 5% fixed outright": [(0.05, FIXED)],
}


def rankings(rng, relevant, quality):
    """Ranks (inf = beyond the cutoff) of each query's relevant documents,
    one row per query, `relevant` of them finite at most; columns past a
    query's own count are inf."""
    queries, width = len(relevant), 4
    ranks = rng.geometric(quality["p"], size=(queries, width)).astype(float)
    ranks[rng.random((queries, width)) < quality["miss"]] = np.inf
    ranks[np.arange(width)[None, :] >= relevant[:, None]] = np.inf
    # Two documents cannot share a rank: push later ones down.
    ranks.sort(axis=1)
    for j in range(1, width):
        ranks[:, j] = np.maximum(ranks[:, j], ranks[:, j - 1] + 1)
    return ranks


def metrics(ranks, relevant):
    """rr@10, recall@10 and hit@10 of each query, as rows of a (3, q) array."""
    first = ranks[:, 0]
    within = ranks <= CUTOFF
    rr = np.where(first <= CUTOFF, 1.0 / first, 0.0)
    recall = within.sum(axis=1) / relevant
    hit = (first <= CUTOFF).astype(float)
    return np.stack([rr, recall, hit])


def deltas(rng, queries, scenario):
    """Per-query deltas (candidate minus baseline), shape (3, queries)."""
    relevant = 1 + rng.binomial(3, 0.3, size=queries)
    base = rankings(rng, relevant, BASELINE)
    cand = base.copy()
    pick = rng.random(queries)
    start = 0.0
    for share, quality in scenario:
        chosen = (pick >= start) & (pick < start + share)
        cand[chosen] = rankings(rng, relevant[chosen], quality)
        start += share
    return metrics(cand, relevant) - metrics(base, relevant)


def truth(name, scenario, seed):
    """The true mean delta of each metric."""
    if all(quality is BASELINE for _, quality in scenario):
        return np.zeros(len(METRICS))
    rng = np.random.default_rng([seed, 1 + list(SCENARIOS).index(name)])
    return deltas(rng, TRUTH_QUERIES, scenario).mean(axis=1)


def resample_means(rng, sample, resamples, chunk=200):
    """Bootstrap means, shape (metrics, trials, resamples): each resample
    draws the same queries for every metric, as compare resamples queries."""
    _, trials, n = sample.shape
    means = np.empty((sample.shape[0], trials, resamples))
    sds = np.empty((sample.shape[0], trials, resamples))
    for start in range(0, trials, chunk):
        part = slice(start, min(start + chunk, trials))
        chosen = rng.integers(0, n, size=(part.stop - start, resamples, n))
        for m in range(sample.shape[0]):
            picked = np.take_along_axis(sample[m, part, None, :], chosen, axis=2)
            means[m, part] = picked.mean(axis=2)
            sds[m, part] = picked.std(axis=2, ddof=1)
    return means, sds


def percentile_and_bca(sample, boot_means):
    """Percentile and BCa bounds per trial; sample (T, n), boot_means (T, B)."""
    n = sample.shape[1]
    tail = (1 - CONFIDENCE) / 2
    lo, hi = sample.min(axis=1), sample.max(axis=1)
    pct_low = np.clip(np.quantile(boot_means, tail, axis=1), lo, hi)
    pct_high = np.clip(np.quantile(boot_means, 1 - tail, axis=1), lo, hi)

    mean = sample.mean(axis=1)
    resamples = boot_means.shape[1]
    below = (boot_means < mean[:, None]).mean(axis=1) + 0.5 * (boot_means == mean[:, None]).mean(axis=1)
    z0 = stats.norm.ppf(np.clip(below, 1 / (2 * resamples), 1 - 1 / (2 * resamples)))
    jack = (sample.sum(axis=1)[:, None] - sample) / (n - 1)
    spread = jack.mean(axis=1)[:, None] - jack
    denominator = 6 * (spread**2).sum(axis=1) ** 1.5
    accel = np.divide((spread**3).sum(axis=1), denominator,
                      out=np.zeros_like(mean), where=denominator > 0)
    bounds = []
    for z in (stats.norm.ppf(tail), stats.norm.ppf(1 - tail)):
        level = stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
        bounds.append(np.array([np.quantile(b, q) for b, q in zip(boot_means, level)]))
    return (pct_low, pct_high), tuple(bounds)


def bootstrap_t(sample, boot_means, boot_sds):
    """Studentized bootstrap bounds, within [-1, 1]."""
    n = sample.shape[1]
    mean = sample.mean(axis=1)[:, None]
    se = sample.std(axis=1, ddof=1)[:, None] / np.sqrt(n)
    diff = boot_means - mean
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(boot_sds > 0, diff / (boot_sds / np.sqrt(n)),
                     np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    tail = (1 - CONFIDENCE) / 2
    q_low = np.quantile(t, tail, axis=1, method="lower")
    q_high = np.quantile(t, 1 - tail, axis=1, method="higher")
    with np.errstate(invalid="ignore"):
        low = np.clip(mean[:, 0] - q_high * se[:, 0], -1, 1)
        high = np.clip(mean[:, 0] - q_low * se[:, 0], -1, 1)
    return low, high


def hall_t(sample):
    """Student t after Hall's (1992) skewness-removing transformation."""
    n = sample.shape[1]
    mean = sample.mean(axis=1)
    sd = sample.std(axis=1, ddof=1)
    centered = sample - mean[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(sd > 0, (centered**3).mean(axis=1) / sd**3, 0.0)
    a = skew / (3 * np.sqrt(n))
    b = skew / (6 * np.sqrt(n))
    def inverse(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a != 0, (np.cbrt(1 + 3 * a * (x - b)) - 1) / np.where(a != 0, a, 1), x - b)
    q = stats.t.ppf((1 + CONFIDENCE) / 2, n - 1)
    se = sd / np.sqrt(n)
    return mean - inverse(q) * se, mean - inverse(-q) * se


def t_interval(sample):
    """mean ± t · sd / sqrt(n), and whether it is given (the deltas differ)."""
    n = sample.shape[1]
    mean = sample.mean(axis=1)
    sd = sample.std(axis=1, ddof=1)
    half = stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * sd / np.sqrt(n)
    return (mean - half, mean + half), sd > 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--ns", default="10,15,20,30,50")
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("--more", action="store_true", help="also BCa and the studentized bootstrap")
    args = parser.parse_args()
    ns = [int(n) for n in args.ns.split(",")]
    methods = ["percentile", *(["BCa", "boot-t"] if args.more else []), "t", "hall", "compare"]

    print(f"{args.trials} trials per row, {args.resamples} bootstrap resamples, seed {args.seed}")
    print(f"{'scenario':<42} {'metric':<10} {'n':>3} {'true':>7}  {'pct_all':>7} "
          + " ".join(f"{m[:7]:>7}" for m in methods) + f" {'none':>6}")
    worst = dict.fromkeys(methods, 1.0)
    for s, (name, scenario) in enumerate(SCENARIOS.items()):
        true = truth(name, scenario, args.seed)
        for n in ns:
            rng = np.random.default_rng([args.seed, s, n])
            sample = deltas(rng, args.trials * n, scenario).reshape(len(METRICS), args.trials, n)
            boots, boot_sds = resample_means(rng, sample, args.resamples)
            for m, metric in enumerate(METRICS):
                d, boot, truth_m = sample[m], boots[m], true[m]
                bounds = {}
                (bounds["percentile"], bounds["BCa"]) = percentile_and_bca(d, boot)
                if args.more:
                    bounds["boot-t"] = bootstrap_t(d, boot, boot_sds[m])
                bounds["t"], given = t_interval(d)
                bounds["hall"] = hall_t(d)
                # What compare prints: the wider of the two on each side.
                (t_low, t_high), (h_low, h_high) = bounds["t"], bounds["hall"]
                bounds["compare"] = (np.minimum(t_low, h_low), np.maximum(t_high, h_high))
                covers = {k: (low <= truth_m) & (truth_m <= high) for k, (low, high) in bounds.items()}
                rates = {k: covers[k][given].mean() for k in methods}
                for k in methods:
                    worst[k] = min(worst[k], rates[k])
                print(f"{name:<42} {metric:<10} {n:>3} {truth_m:>+7.4f}  "
                      f"{covers['percentile'].mean():>7.1%} "
                      + " ".join(f"{rates[k]:>7.1%}" for k in methods)
                      + f" {1 - given.mean():>6.1%}", flush=True)
    print("lowest coverage: " + ", ".join(f"{k} {v:.1%}" for k, v in worst.items()))


if __name__ == "__main__":
    main()
