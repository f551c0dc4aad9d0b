"""treeMethod "hist" / "approx" / "exact" of the GBT engine beside XGBoost's tree_method of the
same name: test AUC on the LightGBM binary sample, and fit time on synthetic rows; quantised
gradients beside LightGBM's on the same sample.

    python benchmarks/gbt_tree_methods.py [--rows 1000000] [--features 50] [--trees 20]
                                          [--depth 6] [--nthread 1] [--skip-timing]
                                          [--methods hist approx exact]

The engine is the one every Spark training task runs (``sparkxml_kernels.gbt.booster``), in
this process, as ``benchmarks/gbt_kernel_speed.py`` times it; a Spark fit adds the sketch and
the loading around it.

1. Accuracy: the LightGBM binary example (7000 train / 500 test rows, 28 features), 100
   rounds, maxDepth 6, stepSize 0.1, 256 bins (hist, approx); test AUC of each method and of
   XGBoost's. Then hist with ``useQuantizedGrad`` (4 and 16 levels, with and without
   ``quantTrainRenewLeaf``) beside LightGBM's ``use_quantized_grad`` with the same levels
   (``max_depth`` 6, ``num_leaves`` 63, ``min_data_in_leaf`` 1, ``min_sum_hessian_in_leaf``
   1, 255 bins), and each library's unquantised AUC.
2. Timing: ``--rows`` x ``--features`` synthetic binary rows, features rounded to 3 decimals
   of a standard normal (about 8,000 distinct values a feature, so that exact applies), a
   nonlinear logistic target; ``--trees`` rounds at ``--depth``. Each fit's time includes
   its binning (ours: edges and bins; XGBoost: its DMatrix) and is taken after a warm-up fit
   on 2,000 rows (numba compiles once). The CPU time is the fairer figure on a shared
   machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from _harness import Results

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

METHODS = ("hist", "approx", "exact")


def _ours(X, y, method, params, nthread):
    from sparkxml_kernels.gbt.binned import bin_matrix
    from sparkxml_kernels.gbt.booster import train
    from sparkxml_kernels.gbt.tree_methods import method_edges

    edges = method_edges(X, None, method, params.get("maxBins", 256))
    pred, _ = train(bin_matrix(X, edges, n_threads=nthread), y, None, edges,
                    dict(params, treeMethod=method, nthread=nthread))
    return pred


def _xgb(X, y, method, params, nthread):
    import xgboost as xgb

    xp = dict(tree_method=method, max_depth=params["maxDepth"], eta=params["stepSize"],
              max_bin=params.get("maxBins", 256), objective="binary:logistic", nthread=nthread)
    return xgb.train(xp, xgb.DMatrix(X, label=y, nthread=nthread), params["maxIter"])


def accuracy(res, methods, nthread):
    import xgboost as xgb
    from _data import data_path

    from sparkxml_kernels.gbt.metrics import auc_exact

    tr = np.loadtxt(data_path("lightgbm_binary", "binary.train"))
    te = np.loadtxt(data_path("lightgbm_binary", "binary.test"))
    X, y, Xt, yt = tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0]
    params = dict(maxIter=100, maxDepth=6, stepSize=0.1, objective="logistic", maxBins=256)
    print(f"{'method':8s} {'sparkxml AUC':>13s} {'xgboost AUC':>12s}")
    for m in methods:
        ours = auc_exact(yt, _ours(X, y, m, params, nthread).predict_raw(Xt).ravel())
        theirs = auc_exact(yt, _xgb(X, y, m, params, nthread).predict(xgb.DMatrix(Xt)))
        print(f"{m:8s} {ours:13.4f} {theirs:12.4f}")
        res.add(f"sparkxml {m} lightgbm_binary", "test AUC", ours)
        res.add(f"xgboost {m} lightgbm_binary", "test AUC", theirs)


QUANTIZED = ((4, False), (4, True), (16, False), (16, True))


def quantized_accuracy(res, nthread):
    import lightgbm as lgb
    from _data import data_path

    from sparkxml_kernels.gbt.metrics import auc_exact

    tr = np.loadtxt(data_path("lightgbm_binary", "binary.train"))
    te = np.loadtxt(data_path("lightgbm_binary", "binary.test"))
    X, y, Xt, yt = tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0]
    params = dict(maxIter=100, maxDepth=6, stepSize=0.1, objective="logistic", maxBins=256)
    lp = dict(objective="binary", max_depth=6, num_leaves=63, learning_rate=0.1,
              min_data_in_leaf=1, min_sum_hessian_in_leaf=1.0, max_bin=255,
              num_threads=nthread, verbose=-1, seed=0)
    print(f"\n{'quantised gradients':28s} {'sparkxml AUC':>13s} {'lightgbm AUC':>13s}")
    for bins, renew in ((None, False),) + QUANTIZED:
        extra = {} if bins is None else dict(useQuantizedGrad=True, numGradQuantBins=bins,
                                              quantTrainRenewLeaf=renew)
        lextra = {} if bins is None else dict(use_quantized_grad=True,
                                              num_grad_quant_bins=bins,
                                              quant_train_renew_leaf=renew)
        ours = auc_exact(yt, _ours(X, y, "hist", dict(params, **extra),
                                   nthread).predict_raw(Xt).ravel())
        theirs = auc_exact(yt, lgb.train(dict(lp, **lextra), lgb.Dataset(X, label=y),
                                         100).predict(Xt))
        name = "off" if bins is None else f"{bins} levels" + (", renew leaves" if renew else "")
        print(f"{name:28s} {ours:13.4f} {theirs:13.4f}")
        res.add(f"sparkxml hist quantised {name} lightgbm_binary", "test AUC", ours)
        res.add(f"lightgbm quantised {name} lightgbm_binary", "test AUC", theirs)


def synthetic(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, d)), 3)
    z = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * np.abs(X[:, 3]) + 0.3 * X[:, 4:10].sum(1)
    y = (z + 0.5 * rng.standard_normal(n) > 0.3).astype(float)
    return X, y


def timing(res, args):
    X, y = synthetic(args.rows, args.features)
    params = dict(maxIter=args.trees, maxDepth=args.depth, stepSize=0.1, objective="logistic",
                  maxBins=256)
    for m in args.methods:  # numba compiles on a small fit first
        _ours(X[:2000], y[:2000], m, dict(params, maxIter=2), args.nthread)
    res.check_quiet()
    label = f"{res.check.label}, load {res.check.load_before:.1f}" if res.check else ""
    print(f"\n{args.rows} x {args.features}, {args.trees} trees, depth {args.depth}, "
          f"nthread {args.nthread} ({label})")
    print(f"{'method':8s} {'sparkxml s':>10s} {'cpu s':>8s} {'xgboost s':>10s} {'cpu s':>8s}")
    for m in args.methods:
        out = []
        for fit in (_ours, _xgb):
            t0, c0 = time.perf_counter(), time.process_time()
            fit(X, y, m, params, args.nthread)
            out += [time.perf_counter() - t0, time.process_time() - c0]
        print(f"{m:8s} {out[0]:10.1f} {out[1]:8.1f} {out[2]:10.1f} {out[3]:8.1f}")
        case = f"{args.rows}x{args.features} {args.trees} trees depth {args.depth}"
        res.add(f"sparkxml {m} {case}", "fit wall", out[0], "s")
        res.add(f"sparkxml {m} {case}", "fit cpu", out[1], "s")
        res.add(f"xgboost {m} {case}", "fit wall", out[2], "s")
        res.add(f"xgboost {m} {case}", "fit cpu", out[3], "s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--nthread", type=int, default=1)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--skip-timing", action="store_true")
    args = ap.parse_args(argv)
    res = Results("gbt_tree_methods")
    accuracy(res, args.methods, args.nthread)
    quantized_accuracy(res, args.nthread)
    if not args.skip_timing:
        timing(res, args)
    res.write()


if __name__ == "__main__":
    main()
