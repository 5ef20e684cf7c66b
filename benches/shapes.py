"""Search logs and labels of shapes `rgrade gen` does not write, for
benchmarks: a generator that shares no code and no habits with rgrade's own.

    python3 benches/shapes.py --queries N --results M -o DIR [knobs]

Writes DIR/labels.jsonl or DIR/labels.qrels, and DIR/logs.jsonl or
DIR/run.trec. Knobs (defaults in brackets):

  --query-ids seq|hex|uuid|int   q17, q-53a59b5f2176, a UUID, 1037798 [hex]
  --doc-ids chunk|int|uuid|url   kb/reference/export-account#chunk-0028,
                                 8123456, a UUID, a URL with a fragment [chunk]
  --labels-order sorted|shuffled labels in byte order of their ids or not [shuffled]
  --events-order sorted|shuffled events in the labels' order or not [shuffled]
  --score-digits D               significant digits of each score, 2 to 17 [4]
  --results objects|strings      JSONL results as {"doc_id", "score"} or bare ids [objects]
  --format jsonl|trec            the log [jsonl]
  --tags N, --tags-layout grouped|interleaved
                                 TREC: N runs in one file, each run's lines
                                 together, or the runs' lines of each query
                                 one after the other [1, grouped]
  --labels-format jsonl|qrels    [jsonl]
  --seed S                       [7]

Each query has one to four relevant documents (grades 1 to 3) and up to
three judged not relevant; a ranking holds each judged document with
probability 0.6, near the top more often than deep down, the rest drawn from a corpus of
max(100,000, 10 x queries) documents, never one twice.
"""
import argparse
import json
import os
import random
import uuid


def query_id(shape, i, rng):
    if shape == "seq":
        return f"q{i + 1}"
    if shape == "hex":
        return f"q-{rng.getrandbits(48):012x}"
    if shape == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if shape == "int":
        return str(1_000_000 + i * 37 + rng.randrange(37))
    raise SystemExit(f"unknown --query-ids {shape}")


SECTIONS = ["reference", "guides", "billing", "admin", "api", "faq", "release-notes"]
TOPICS = ["export-account", "reset-password", "share-roles", "invoice-limits",
          "sso-setup", "audit-log", "webhooks", "rate-limits", "data-retention"]


def doc_namer(shape):
    """A function from corpus position to doc id."""
    if shape == "chunk":
        return lambda n: (f"kb/{SECTIONS[n % 7]}/{TOPICS[(n // 7) % 9]}"
                          f"#chunk-{n // 63:04d}")
    if shape == "int":
        return lambda n: str(n * 7 + 3)
    if shape == "uuid":
        return lambda n: str(uuid.UUID(int=(n * 0x9E3779B97F4A7C15F39CC0605CEDC835)
                                       % (1 << 128)))
    if shape == "url":
        return lambda n: (f"https://docs.example.com/{SECTIONS[n % 7]}/"
                          f"{TOPICS[(n // 7) % 9]}-{n // 63}.html#section-{n % 5}")
    raise SystemExit(f"unknown --doc-ids {shape}")


def score_text(value, digits):
    """`value` written with `digits` significant digits, as a logger would."""
    text = f"{value:.{digits}g}"
    return text if "e" not in text else f"{value:.{digits}f}"


def ranking(rng, judged, depth, corpus):
    """`depth` distinct corpus positions holding some of `judged`."""
    chosen = {}
    for doc in judged:
        if rng.random() < 0.6:
            # Found documents sit near the top more often than deep down.
            chosen[doc] = min(depth - 1, int(rng.expovariate(0.15)))
    taken = set(chosen)
    others = []
    while len(others) < depth - len(chosen):
        doc = rng.randrange(corpus)
        if doc not in taken:
            taken.add(doc)
            others.append(doc)
    docs = [None] * depth
    for doc, place in sorted(chosen.items(), key=lambda item: item[1]):
        while docs[place] is not None:
            place = (place + 1) % depth
        docs[place] = doc
    rest = iter(others)
    return [doc if doc is not None else next(rest) for doc in docs]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, required=True)
    p.add_argument("--results", type=int, default=100)
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--query-ids", default="hex")
    p.add_argument("--doc-ids", default="chunk")
    p.add_argument("--labels-order", default="shuffled", choices=["sorted", "shuffled"])
    p.add_argument("--events-order", default="shuffled", choices=["sorted", "shuffled"])
    p.add_argument("--score-digits", type=int, default=4, choices=range(2, 18))
    p.add_argument("--results-as", default="objects", choices=["objects", "strings"])
    p.add_argument("--format", default="jsonl", choices=["jsonl", "trec"])
    p.add_argument("--tags", type=int, default=1)
    p.add_argument("--tags-layout", default="grouped", choices=["grouped", "interleaved"])
    p.add_argument("--labels-format", default="jsonl", choices=["jsonl", "qrels"])
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    rng = random.Random(args.seed)
    corpus = max(100_000, 10 * args.queries)
    name = doc_namer(args.doc_ids)
    queries = []
    seen = set()
    while len(queries) < args.queries:
        q = query_id(args.query_ids, len(queries), rng)
        if q not in seen:
            seen.add(q)
            queries.append(q)
    judged = {q: [(rng.randrange(corpus), rng.randint(1, 3)) for _ in range(rng.randint(1, 4))]
              + [(rng.randrange(corpus), 0) for _ in range(rng.randint(0, 3))]
              for q in queries}
    for q, docs in judged.items():
        unique = {}
        for doc, grade in docs:
            unique.setdefault(doc, grade)
        judged[q] = list(unique.items())

    os.makedirs(args.out, exist_ok=True)
    label_order = sorted(queries) if args.labels_order == "sorted" else rng.sample(queries, len(queries))
    write_labels(args, label_order, judged, name, rng)
    event_order = label_order if args.events_order == "sorted" else rng.sample(queries, len(queries))
    if args.format == "jsonl":
        write_jsonl(args, event_order, judged, name, corpus, rng)
    else:
        write_trec(args, event_order, judged, name, corpus, rng)


def write_labels(args, order, judged, name, rng):
    integer = args.query_ids == "int"
    if args.labels_format == "qrels":
        with open(os.path.join(args.out, "labels.qrels"), "w") as f:
            for q in order:
                for doc, grade in judged[q]:
                    f.write(f"{q} 0 {name(doc)} {grade}\n")
        return
    with open(os.path.join(args.out, "labels.jsonl"), "w") as f:
        for q in order:
            label = {
                "query_id": int(q) if integer else q,
                "relevant": {name(doc): grade for doc, grade in judged[q]},
                "task": rng.choice(["howto", "billing", "permissions", "troubleshooting"]),
                "language": rng.choice(["en", "en", "de", "fr"]),
                "reviewer": "shapes",
            }
            f.write(json.dumps(label, separators=(",", ":")) + "\n")


def scores(rng, depth, digits):
    """Descending scores for one ranking, as texts."""
    value = 20 + rng.random() * 10
    out = []
    for _ in range(depth):
        value -= rng.random() * 0.2
        out.append(score_text(value, digits))
    return out


def write_jsonl(args, order, judged, name, corpus, rng):
    integer = args.query_ids == "int"
    with open(os.path.join(args.out, "logs.jsonl"), "w") as f:
        for q in order:
            docs = ranking(rng, [doc for doc, _ in judged[q]], args.results, corpus)
            if args.results_as == "strings":
                results = ",".join(f'"{name(d)}"' for d in docs)
            else:
                texts = scores(rng, len(docs), args.score_digits)
                results = ",".join(f'{{"doc_id":"{name(d)}","score":{s}}}'
                                   for d, s in zip(docs, texts))
            query = q if integer else f'"{q}"'
            latency = score_text(5 + rng.random() * 200, args.score_digits)
            f.write(f'{{"ts":"2026-11-30T02:{rng.randrange(60):02d}:00Z","query_id":{query},'
                    f'"service":"search-api","results":[{results}],"latency_ms":{latency}}}\n')


def write_trec(args, order, judged, name, corpus, rng):
    tags = [f"run-{t}" for t in range(args.tags)]

    def lines(q, tag):
        docs = ranking(rng, [doc for doc, _ in judged[q]], args.results, corpus)
        texts = scores(rng, len(docs), args.score_digits)
        return "".join(f"{q} Q0 {name(d)} {rank} {s} {tag}\n"
                       for rank, (d, s) in enumerate(zip(docs, texts), start=1))

    with open(os.path.join(args.out, "run.trec"), "w") as f:
        if args.tags_layout == "grouped":
            for tag in tags:
                for q in order:
                    f.write(lines(q, tag))
        else:
            for q in order:
                for tag in tags:
                    f.write(lines(q, tag))


if __name__ == "__main__":
    main()
