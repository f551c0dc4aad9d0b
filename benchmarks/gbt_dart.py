"""DART beside XGBoost's dart: test AUC on LightGBM's binary example (shared/data).

    python benchmarks/gbt_dart.py [--rounds 100] [--seeds 8] [--no-write] [--rank]

``--rank``: LambdaMART (objective lambdarank) beside XGBoost's ``rank:ndcg``, test NDCG@10 on
LightGBM's rank sample, the same DART settings (``run_rank``).

Both engines in ONE run, same params: depth 6, learning rate 0.1, 256 bins, logistic loss,
one thread, and per DART setting (rateDrop, skipDrop, oneDrop, normalizeType, sampleType)
the mean and spread of the test AUC over ``--seeds`` seeds (the two libraries draw their
drops from different generators, so single runs differ; their means are what compare), beside
plain gbtree. Two feature views:

* **raw**: the 28 features as they are; XGBoost bins them with its own sketch, we with ours,
  so even gbtree differs a little;
* **binned**: every feature replaced by its bin under our edges, so both libraries see the
  same candidate splits (gbtree: the same model) and what differs is DART's draws alone.

sparkxml is the engine in this process (``sparkxml_kernels.gbt.booster``: what each Spark
task runs).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jvm-free-udfs"))

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch  # noqa: E402
from sparkxml_kernels.gbt.booster import train  # noqa: E402
from sparkxml_kernels.gbt.metrics import auc_exact  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results  # noqa: E402

DATA = os.environ.get("SPARKXML_DATA") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data")
SETTINGS = [  # (rateDrop, skipDrop, oneDrop, normalizeType, sampleType)
    (0.1, 0.0, False, "tree", "uniform"),
    (0.1, 0.5, True, "tree", "uniform"),
    (0.2, 0.0, False, "forest", "uniform"),
    (0.2, 0.5, True, "forest", "weighted"),
]


def load(name):
    a = np.loadtxt(os.path.join(DATA, "lightgbm_binary", name))
    return np.ascontiguousarray(a[:, 1:]), a[:, 0]


def _with_dart(dart, p, xp):
    """Add one DART setting (or none: gbtree) to our params ``p`` and XGBoost's ``xp``."""
    if dart is not None:
        r, s, o, n, t = dart
        p.update(boosterType="dart", rateDrop=r, skipDrop=s, oneDrop=o, normalizeType=n,
                 sampleType=t)
        xp.update(booster="dart", rate_drop=r, skip_drop=s, one_drop=int(o),
                  normalize_type=n, sample_type=t)


def run(view, Xtr, ytr, Xte, yte, rounds, seeds, res):
    import xgboost as xgb

    edges = edges_from_sketch(sketch(Xtr, None, 256), 256)
    Xb = bin_data(Xtr, edges)
    dtr, dte = xgb.DMatrix(Xtr, label=ytr), xgb.DMatrix(Xte)
    common = dict(max_depth=6, eta=0.1, objective="binary:logistic", tree_method="hist",
                  max_bin=256, nthread=1)
    cases = [("gbtree", None)] + [(f"dart rate={r} skip={s} one={int(o)} {n}/{t}",
                                   (r, s, o, n, t)) for r, s, o, n, t in SETTINGS]
    for label, dart in cases:
        ours, xs, t_ours, t_xgb = [], [], 0.0, 0.0
        for seed in range(1 if dart is None else seeds):
            p = dict(maxIter=rounds, maxDepth=6, stepSize=0.1, objective="logistic", seed=seed)
            xp = dict(common, seed=seed)
            _with_dart(dart, p, xp)
            t0 = time.perf_counter()
            pred, _ = train(Xb, ytr, None, edges, p)
            t_ours += time.perf_counter() - t0
            ours.append(auc_exact(yte, pred.predict_raw(Xte)))
            t0 = time.perf_counter()
            bst = xgb.train(xp, dtr, rounds)
            t_xgb += time.perf_counter() - t0
            xs.append(auc_exact(yte, bst.predict(dte, output_margin=True)))
        n = len(ours)
        print(f"{view:6s} {label:42s} sparkxml {np.mean(ours):.4f} (sd {np.std(ours):.4f}) "
              f"xgboost {np.mean(xs):.4f} (sd {np.std(xs):.4f}) diff "
              f"{np.mean(ours) - np.mean(xs):+.4f}  fit s/run {t_ours / n:.2f} vs "
              f"{t_xgb / n:.2f}", flush=True)
        note = f"{view} features, {rounds} rounds, mean of {n} seed(s)"
        res.add(f"sparkxml {label} ({view})", "test AUC", float(np.mean(ours)), note=note)
        res.add(f"xgboost {label} ({view})", "test AUC", float(np.mean(xs)), note=note)


def run_rank(rounds, seeds, res):
    """LambdaMART's DART beside XGBoost's dart ``rank:ndcg`` on LightGBM's rank sample: test
    NDCG@10 (file order breaks ties for both), mean over seeds. The lambdas differ (ours are
    LightGBM's lambdarank, XGBoost's its own topk pairs), so even gbtree differs a little."""
    import xgboost as xgb

    from sparkxml_kernels.formats import read_svmlight
    from sparkxml_kernels.metrics import ranking_metric

    folder = os.path.join(DATA, "lightgbm_rank")
    tr = read_svmlight(os.path.join(folder, "rank.train"), os.path.join(folder, "rank.train.query"))
    te = read_svmlight(os.path.join(folder, "rank.test"), os.path.join(folder, "rank.test.query"),
                       tr[5])

    def dense(part):
        from scipy.sparse import csr_matrix

        y, q, indptr, indices, data, _ = part
        X = csr_matrix((data, indices, indptr), shape=(y.size, tr[5]))
        return X.toarray(), np.asarray(y, float), np.asarray(q, np.int64)

    Xtr, ytr, qtr = dense(tr)
    Xte, yte, qte = dense(te)
    gp = np.concatenate([[0], np.flatnonzero(np.diff(qtr)) + 1, [qtr.size]])
    edges = edges_from_sketch(sketch(Xtr, None, 256), 256)
    Xb = bin_data(Xtr, edges)
    dtr = xgb.DMatrix(Xtr, label=ytr)
    dtr.set_group(np.diff(gp))
    dte = xgb.DMatrix(Xte)
    for label, dart in [("gbtree", None)] + [(f"dart rate={r} skip={s} one={int(o)} {n}/{t}",
                                             (r, s, o, n, t)) for r, s, o, n, t in SETTINGS]:
        ours, xs = [], []
        for seed in range(1 if dart is None else seeds):
            p = dict(maxIter=rounds, maxDepth=6, stepSize=0.1, objective="lambdarank", seed=seed)
            xp = dict(max_depth=6, eta=0.1, objective="rank:ndcg", tree_method="hist",
                      max_bin=256, nthread=1, seed=seed)
            _with_dart(dart, p, xp)
            pred, _ = train(Xb, ytr, None, edges, p, group_ptr=gp)
            ours.append(ranking_metric("ndcgAtK", pred.predict_raw(Xte), yte, qte, 10))
            bst = xgb.train(xp, dtr, rounds)
            xs.append(ranking_metric("ndcgAtK", bst.predict(dte, output_margin=True), yte,
                                     qte, 10))
        print(f"rank   {label:42s} sparkxml {np.mean(ours):.4f} (sd {np.std(ours):.4f}) "
              f"xgboost {np.mean(xs):.4f} (sd {np.std(xs):.4f}) diff "
              f"{np.mean(ours) - np.mean(xs):+.4f}", flush=True)
        note = f"LightGBM rank sample, {rounds} rounds, mean of {len(ours)} seed(s)"
        res.add(f"sparkxml lambdarank {label}", "test NDCG@10", float(np.mean(ours)), note=note)
        res.add(f"xgboost rank:ndcg {label}", "test NDCG@10", float(np.mean(xs)), note=note)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--rank", action="store_true",
                    help="LambdaMART's DART beside XGBoost's dart rank:ndcg instead")
    a = ap.parse_args()
    res = Results("gbt_dart")
    if a.rank:
        run_rank(a.rounds, a.seeds, res)
        if not a.no_write:
            res.write()
        return
    Xtr, ytr = load("binary.train")
    Xte, yte = load("binary.test")
    run("raw", Xtr, ytr, Xte, yte, a.rounds, a.seeds, res)
    edges = edges_from_sketch(sketch(Xtr, None, 256), 256)
    Btr, Bte = (bin_data(X, edges).astype(float) for X in (Xtr, Xte))
    run("binned", Btr, ytr, Bte, yte, a.rounds, a.seeds, res)
    if not a.no_write:
        res.write()


if __name__ == "__main__":
    main()
