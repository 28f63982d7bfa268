#!/usr/bin/env python3
"""Fit three shapes of time against size to nccl-tests logs.

    clustersim calibrate nccl --inplace --json LOG... | \
        python3 tools/nccl_shape.py --min-bytes 33554432

It reads the JSON of `clustersim calibrate nccl --json` (so the logs are
parsed once, by clustersim: its "rows" give each size's measured time,
ranks and collective) and fits each shape by weighted least squares
(weights 1/t^2, as `calibrate` does) to the sizes from --min-bytes up, with
x = size x nccl-tests' bus-bandwidth factor (2(n-1)/n for all-reduce,
(n-1)/n for the others), the bytes a ring moves per GPU:

    ring    t = a + x / B                 clustersim's closed form
    sqrt    t = a + x / B + c sqrt(x)
    log     t = a + x / B + c ln(x)

and prints B, the intercept a (the whole latency, all ring steps of it;
`calibrate` prints it per step), c, and the median and worst
|t_fit/t - 1|. A shape with three parameters holds the ring's two, so it
fits at least as well by construction. It is an analysis aid for
docs/validation-notes.md: only the first shape is clustersim's model.
Plain Python, no packages.
"""
import argparse
import json
import math
import sys


def points(doc, min_bytes):
    """(x, t) of every row from min_bytes up: x the bytes a ring moves per GPU."""
    out = []
    for r in doc["rows"]:
        n = r["ranks"]
        f = 2 * (n - 1) / n if r["op"] == "allreduce" else (n - 1) / n
        if r["bytes"] >= min_bytes:
            out.append((r["bytes"] * f, r["time_s"] * 1e6))
    return out


def median(sorted_vals):
    n = len(sorted_vals)
    return (sorted_vals[(n - 1) // 2] + sorted_vals[n // 2]) / 2


def solve(a, b):
    """Gauss-Jordan with partial pivoting; a is k x k."""
    k = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for i in range(k):
        p = max(range(i, k), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(k):
            if r != i:
                f = m[r][i] / m[i][i]
                for j in range(i, k + 1):
                    m[r][j] -= f * m[i][j]
    return [m[i][k] / m[i][i] for i in range(k)]


def wls(xs, ts):
    k = len(xs[0])
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for x, t in zip(xs, ts):
        w = 1 / (t * t)
        for i in range(k):
            b[i] += w * x[i] * t
            for j in range(k):
                a[i][j] += w * x[i] * x[j]
    return solve(a, b)


SHAPES = [
    ("ring", lambda x: [1.0, x]),
    ("sqrt", lambda x: [1.0, x, math.sqrt(x)]),
    ("log", lambda x: [1.0, x, math.log(x)]),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-bytes", type=int, default=0, help="smallest size fitted, in bytes")
    p.add_argument("json", nargs="?", default="-",
                   help="calibrate nccl --json output (default: standard input)")
    args = p.parse_args()
    src = sys.stdin if args.json == "-" else open(args.json)
    with src:
        try:
            doc = json.load(src)
        except ValueError as e:
            raise SystemExit("nccl_shape.py: expected the JSON of clustersim calibrate "
                             "nccl --json (%s)" % e)
    pts = points(doc, args.min_bytes)
    if len({x for x, _ in pts}) < 4:
        raise SystemExit("nccl_shape.py: fewer than 4 distinct sizes to fit")
    ts = [t for _, t in pts]
    print("# %d times, sizes from %d B" % (len(pts), args.min_bytes))
    for name, fx in SHAPES:
        xs = [fx(x) for x, _ in pts]
        c = wls(xs, ts)
        err = sorted(abs(sum(a * b for a, b in zip(x, c)) / t - 1) for x, t in zip(xs, ts))
        extra = "  c %.4g" % c[2] if len(c) > 2 else ""
        print("%-5s B %6.1f GB/s  a %8.2f us%s  median %4.1f %%  worst %4.1f %%" %
              (name, 1e-3 / c[1], c[0], extra, 100 * median(err), 100 * err[-1]))


if __name__ == "__main__":
    main()
