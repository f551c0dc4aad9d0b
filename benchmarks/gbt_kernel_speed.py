"""Speed of the sparkxml_kernels.gbt engine beside XGBoost hist, single process.

    python benchmarks/gbt_kernel_speed.py [--rows 1000000] [--features 50] [--trees 100]
                                          [--depth 6] [--threads 1 2] [--repeat 1]
                                          [--nthread 1]

Data: dense synthetic regression (standard normal features, a nonlinear target plus noise,
5% missing values in 5 features). Both engines: squared error, maxDepth 6, stepSize 0.1,
lambda 1, min_child_weight 1, 256 bins, same trees. Prints wall and CPU (process) times
(median of --repeat), the histogram pass time of one 1M-row node, and the fit ratios. On a
shared machine the CPU times of single-threaded runs are the fairer comparison: they leave
out the time the process waited for a core. The numba kernels are compiled (and cached) by a
warm-up fit on a small sample first, so compilation is not timed.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _harness import Results


def make_data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * np.abs(X[:, 3]) + 0.3 * X[:, 4:10].sum(1)
         + 0.1 * rng.standard_normal(n))
    X[rng.random((n, d)) < 0.05 * (np.arange(d) >= d - 5)] = np.nan
    return X, y


def time_ours(X, y, args):
    from sparkxml_kernels.gbt import bin_data, edges_from_sketch, sketch, train
    from sparkxml_kernels.threads import use_threads

    params = dict(maxIter=args.trees, maxDepth=args.depth, stepSize=0.1, regLambda=1.0,
                  maxBins=256, objective="squared_error", nthread=args.nthread)
    t0 = time.perf_counter()
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    Xb = bin_data(X, edges, use_threads(args.nthread))
    t_bin = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    pred, _ = train(Xb, y, None, edges, params)
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    return t_bin, t_fit, c_fit, pred, Xb


def time_xgb(X, y, args, threads):
    import xgboost as xgb

    params = dict(objective="reg:squarederror", tree_method="hist", max_depth=args.depth,
                  eta=0.1, reg_lambda=1.0, max_bin=256, nthread=threads)
    t0 = time.perf_counter()
    dm = xgb.QuantileDMatrix(X, label=y, max_bin=256, nthread=threads)
    t_bin = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    bst = xgb.train(params, dm, args.trees)
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    return t_bin, t_fit, c_fit, bst


def time_hist_pass(Xb, y, repeat=7):
    """CPU time of one histogram pass over all rows (the kernel alone: gradients already
    interleaved as the grower keeps them)."""
    from sparkxml_kernels.gbt.histogram import build_histograms, interleave, n_hist_slots

    n, d = Xb.shape
    rows = np.arange(n, dtype=np.int32)
    gh = interleave(np.ascontiguousarray(y - y.mean()), np.ones(n))
    nb = np.array([int(Xb[:, f][Xb[:, f] != 255].max()) + 1 for f in range(d)], np.int32)
    out = np.zeros((1, d, n_hist_slots(nb), 2))
    build_histograms(Xb, rows, [0], [n], gh, out)
    ts = []
    for _ in range(repeat):
        out[:] = 0
        t0 = time.process_time()
        build_histograms(Xb, rows, [0], [n], gh, out)
        ts.append(time.process_time() - t0)
    return float(np.median(ts)), float(np.min(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--nthread", type=int, default=1, help="sparkxml's threads (nthread)")
    ap.add_argument("--no-xgb", action="store_true")
    args = ap.parse_args()
    rec = Results("gbt_kernel_speed")

    X, y = make_data(args.rows, args.features)
    Xs, ys = make_data(40_000, args.features, seed=1)  # >= MIN_PARALLEL_ROWS: threads too
    from sparkxml_kernels.gbt import bin_data, edges_from_sketch, sketch, train
    e = edges_from_sketch(sketch(Xs, None, 256), 256)
    train(bin_data(Xs, e), ys, None, e, dict(maxIter=2, maxDepth=3, nthread=args.nthread))

    res = [time_ours(X, y, args) for _ in range(args.repeat)]
    t_bin = np.median([r[0] for r in res])
    t_fit = np.median([r[1] for r in res])
    c_fit = np.median([r[2] for r in res])
    pred, Xb = res[-1][3], res[-1][4]
    med, mn = time_hist_pass(Xb, y)
    rmse = float(np.sqrt(np.mean((pred.predict_raw(X) - y) ** 2)))
    print(f"data: {args.rows} x {args.features}, {args.trees} trees, depth {args.depth}, "
          f"median of {args.repeat}")
    print(f"histogram pass, 1 node of {args.rows} rows (CPU): median {med * 1e3:.1f} ms, "
          f"min {mn * 1e3:.1f} ms")
    print(f"sparkxml nthread={args.nthread}  bin {t_bin:6.2f} s  fit wall {t_fit:6.2f} s  "
          f"cpu {c_fit:6.2f} s  train rmse {rmse:.4f}")
    data = f"{args.rows} x {args.features}, {args.trees} trees, depth {args.depth}"
    rec.add(f"histogram pass, 1 node of {args.rows} rows", "CPU (median)", med * 1e3, "ms")
    ours = f"sparkxml nthread={args.nthread}, {data}"
    rec.add(ours, "bin", t_bin, "s", note=f"median of {args.repeat}")
    rec.add(ours, "fit wall", t_fit, "s", note=f"median of {args.repeat}")
    rec.add(ours, "fit CPU", c_fit, "s", note=f"median of {args.repeat}")
    rec.add(ours, "train rmse", rmse)
    if args.no_xgb:
        rec.write()
        return
    for th in args.threads:
        xr = [time_xgb(X, y, args, th) for _ in range(args.repeat)]
        xb = np.median([r[0] for r in xr])
        xf = np.median([r[1] for r in xr])
        xc = np.median([r[2] for r in xr])
        xrmse = float(np.sqrt(np.mean((xr[-1][3].inplace_predict(X) - y) ** 2)))
        print(f"xgboost(n_jobs={th})   bin {xb:6.2f} s  fit wall {xf:6.2f} s  cpu {xc:6.2f} s  "
              f"train rmse {xrmse:.4f}  sparkxml/xgboost fit: wall {t_fit / xf:.2f}, "
              f"cpu {c_fit / xc:.2f}")
        theirs = f"xgboost hist n_jobs={th}, {data}"
        rec.add(theirs, "bin", xb, "s", note=f"median of {args.repeat}")
        rec.add(theirs, "fit wall", xf, "s", note=f"median of {args.repeat}")
        rec.add(theirs, "fit CPU", xc, "s", note=f"median of {args.repeat}")
        rec.add(theirs, "train rmse", xrmse)
        rec.add(f"sparkxml / xgboost n_jobs={th}, {data}", "fit CPU ratio", c_fit / xc, "x")
    rec.write()


if __name__ == "__main__":
    main()
