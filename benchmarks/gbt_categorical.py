"""Categorical GBT beside LightGBM's categorical handling: accuracy and time (issue 14).

    python benchmarks/gbt_categorical.py [--rows 1000000] [--trees 100] [--skip synthetic]

Both engines in ONE run, same settings: leaf-wise trees of 31 leaves, learning rate 0.1,
L2 1, minimum child hessian 1 (LightGBM: min_data_in_leaf 1, min_sum_hessian_in_leaf 1),
the categorical knobs at LightGBM's defaults (max_cat_to_onehot 4, cat_smooth 10, cat_l2 10,
max_cat_threshold 32) and LightGBM's min_data_per_group 1 (sparkxml has no such filter).
sparkxml is the GBT engine in this process, one thread (``sparkxml_kernels.gbt.booster`` on
bins from ``binned.bin_matrix``: what each Spark task runs); LightGBM with ``num_threads=1``
(per core) and 2. Times are fit wall times including binning (LightGBM: Dataset
construction), medians of ``--repeats`` runs.

Data sets:

* **Adult** (``a9a`` from ../shared/data): LIBSVM's 123 binary features are the one-hot
  encoding of 14 attributes (fields listed in the data README); decoded back to 14
  categorical codes (a missing attribute -> NaN). Categorical fits on the codes, and, for
  reference, numerical fits on the 123 one-hot columns. Test AUC / accuracy on a9a.t.
* **synthetic** (``--rows``): 8 categorical features of 10..5000 categories (the 5000 one
  needs maxBins 5001: uint16 bins) plus 4 normal features; the label's log-odds add a random
  effect per category of each feature plus a numeric part. 20% held out.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jvm-free-udfs"))

from sparkxml_kernels import binning
from sparkxml_kernels.formats import read_svmlight  # noqa: E402
from sparkxml_kernels.gbt import binned, booster  # noqa: E402
from sparkxml_kernels.gbt.metrics import auc_exact  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, load_average  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
# a9a's attribute fields, 1-based inclusive feature ids (shared/data/README.md)
FIELDS = [(1, 5), (6, 13), (14, 18), (19, 34), (35, 39), (40, 46), (47, 60), (61, 66),
          (67, 71), (72, 73), (74, 75), (76, 77), (78, 82), (83, 123)]
CAT = dict(max_cat_to_onehot=4, cat_smooth=10.0, cat_l2=10.0, max_cat_threshold=32)


def load_a9a(name):
    y, _, ip, ix, v, _ = read_svmlight(os.path.join(DATA, "a9a", name), num_features=123)
    n = len(y)
    onehot = np.zeros((n, 123))
    rows = np.repeat(np.arange(n), np.diff(ip))
    onehot[rows, ix] = v
    codes = np.full((n, len(FIELDS)), np.nan)
    for j, (a, b) in enumerate(FIELDS):
        block = onehot[:, a - 1:b]
        has = block.sum(axis=1) > 0
        codes[has, j] = block[has].argmax(axis=1)
    return codes, onehot, (np.asarray(y) > 0).astype(np.float64)


def synthetic(n, seed=0):
    rng = np.random.default_rng(seed)
    cards = [10, 30, 100, 200, 500, 1000, 2000, 5000]
    cols, logit = [], np.zeros(n)
    for k in cards:
        c = np.minimum(rng.zipf(1.3, n) - 1, k - 1)  # skewed category frequencies
        eff = rng.normal(size=k) * 0.8
        cols.append(c.astype(np.float64))
        logit += eff[c]
    Xn = rng.normal(size=(n, 4))
    logit += np.sin(2 * Xn[:, 0]) + Xn[:, 1] * Xn[:, 2] - 1.0
    y = (logit + rng.logistic(size=n) > 0).astype(np.float64)
    return np.column_stack(cols + [Xn]), y, len(cards)


def sparkxml_fit(X, y, cat_ids, trees, max_bins):
    t0 = time.perf_counter()
    wide = max_bins > 256
    size = binning.SKETCH_FACTOR * binning.n_real_bins(max_bins, wide) if wide else None
    sample = X[np.random.default_rng(0).permutation(X.shape[0])[:100_000]]  # as the driver
    sk = binning.sketch(sample, None, min(max_bins, 256), size)
    edges = binning.edges_from_sketch(sk, max_bins, wide=wide)
    cats = [None] * X.shape[1]
    for f in cat_ids:
        cats[f] = sk.feature(f)[0].copy()
        v = cats[f]
        edges[f] = binning._midpoints(v[:-1], v[1:]) if v.size > 1 else np.empty(0)
    Xb = binned.bin_matrix(X, edges, cats if cat_ids else None)
    params = dict(maxIter=trees, stepSize=0.1, growPolicy="lossguide", maxLeaves=31,
                  maxDepth=0, regLambda=1.0, minChildWeight=1.0, objective="logistic",
                  maxBins=max_bins, categoricalFeatures=list(cat_ids) or None,
                  maxCatToOnehot=CAT["max_cat_to_onehot"], catSmooth=CAT["cat_smooth"],
                  catL2=CAT["cat_l2"], maxCatThreshold=CAT["max_cat_threshold"])
    pred, _ = booster.train(Xb, y, None, edges, params, categories=cats)
    return pred, time.perf_counter() - t0


def lightgbm_fit(X, y, cat_ids, trees, threads, max_bins):
    import lightgbm as lgb

    t0 = time.perf_counter()
    params = dict(objective="binary", learning_rate=0.1, num_leaves=31, lambda_l2=1.0,
                  min_data_in_leaf=1, min_sum_hessian_in_leaf=1.0, min_data_per_group=1,
                  max_bin=max_bins - 1, num_threads=threads, verbose=-1, **CAT)
    ds = lgb.Dataset(X, y, categorical_feature=list(cat_ids) or "auto",
                     params={"max_bin": max_bins - 1, "verbose": -1,
                             "max_cat_to_onehot": CAT["max_cat_to_onehot"]})
    m = lgb.train(params, ds, trees)
    return m, time.perf_counter() - t0


def _scores(p, y):
    return auc_exact(y, p), float(np.mean((p > 0.5) == (y > 0.5)))


def run(name, X, y, Xt, yt, cat_ids, trees, repeats, max_bins=256, label=None, res=None):
    rows = []
    for engine, fit in (("sparkxml (1 thread)", lambda: sparkxml_fit(X, y, cat_ids, trees,
                                                                       max_bins)),
                        ("LightGBM (1 thread)", lambda: lightgbm_fit(X, y, cat_ids, trees, 1,
                                                                     max_bins)),
                        ("LightGBM (2 threads)", lambda: lightgbm_fit(X, y, cat_ids, trees, 2,
                                                                      max_bins))):
        times = []
        for _ in range(repeats):
            model, s = fit()
            times.append(s)
        if engine.startswith("sparkxml"):
            p = model.predict(Xt)[:, 1]
        else:
            p = model.predict(Xt)
        auc, acc = _scores(p, yt)
        rows.append((engine, float(np.median(times)), auc, acc))
    base = rows[0][1]
    print(f"\n### {label or name}: {X.shape[0]:,} train rows, {Xt.shape[0]:,} test rows, "
          f"{len(cat_ids)} categorical of {X.shape[1]} features, {trees} trees "
          f"(load average {load_average()[0]:.1f})\n")
    print("| engine | fit time | time / sparkxml | test AUC | test accuracy |")
    print("|---|---|---|---|---|")
    for engine, s, auc, acc in rows:
        print(f"| {engine} | {s:.2f} s | {s / base:.2f} | {auc:.4f} | {acc:.4f} |")
        if res is not None:
            case = f"{label or name}, {X.shape[0]} rows, {trees} trees: {engine}"
            res.add(case, "fit", s, "s", note=f"median of {repeats}, binning included")
            res.add(case, "test AUC", auc)
            res.add(case, "test accuracy", acc)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip", nargs="*", default=[], choices=["adult", "synthetic"])
    a = ap.parse_args(argv)
    res = Results("gbt_categorical")
    # warm-up: compile the numba kernels outside the timings
    Xw, yw, kw = synthetic(3000, seed=1)
    sparkxml_fit(Xw, yw, list(range(kw)), 2, 5001)
    sparkxml_fit(Xw[:, :3], yw, [0, 1], 2, 256)
    if "adult" not in a.skip:
        codes, onehot, y = load_a9a("a9a")
        codes_t, onehot_t, yt = load_a9a("a9a.t")
        run("adult", codes, y, codes_t, yt, list(range(codes.shape[1])), a.trees, a.repeats,
            label="Adult, 14 attributes as categorical features", res=res)
        run("adult", onehot, y, onehot_t, yt, [], a.trees, a.repeats,
            label="Adult, the 123 one-hot columns as numerical features (reference)", res=res)
    if "synthetic" not in a.skip:
        X, y, k = synthetic(a.rows)
        cut = int(0.8 * a.rows)
        run("synthetic", X[:cut], y[:cut], X[cut:], y[cut:], list(range(k)), a.trees,
            a.repeats, max_bins=5001,
            label="synthetic, 8 categorical features (10..5000 categories, uint16 bins) + 4 "
                  "numerical", res=res)
    res.write()


if __name__ == "__main__":
    main()
