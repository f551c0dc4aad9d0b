"""LambdaMART on LightGBM's learning-to-rank sample beside LightGBM and XGBoost, one run.

    python benchmarks/lambdamart_rank.py [--data ../shared/data/lightgbm_rank]
                                         [--iters 100] [--depth 6] [--step 0.1]
                                         [--workers 2] [--threads 1] [--no-spark]

Data: LightGBM's ``examples/lambdarank`` files (rank.train 3005 rows / 201 queries, rank.test
768 / 50, 300 features, relevance 0-4, svmlight + ``.query`` group files).

Engines, all 100 rounds at learning rate 0.1 by default:

* ``sparkxml LambdaMART`` -- Spark local[2], ``numWorkers`` barrier tasks (``--workers``),
  maxDepth 6, everything else default (depth-wise, lambda 1, min_child_weight 1, 256 bins,
  lambdarank truncation 30, lambdarank_norm). Fit time = the whole ``fit`` call (check job,
  sketch job, barrier stage), after a warm-up fit that starts the Python workers and loads
  the numba cache;
* ``sparkxml kernels`` -- the same booster in this process (no Spark): file row order, one
  worker;
* ``LightGBM lambdarank`` -- defaults (31 leaves leaf-wise, min_data_in_leaf 20, lambda 0),
  ``num_threads`` = --threads;
* ``XGBoost rank:ndcg`` -- hist, max_depth 6, lambda 1 (its defaults), ``nthread`` = --threads.

NDCG@k is computed here for every engine the same way: per query, gain 2^rel - 1, discount
1/log2(rank + 2), ties in score in file order, a query without relevant documents counts 1,
averaged over the 50 test queries (``sparkxml_kernels.metrics.ranking_metric``, which agrees
with LightGBM's ``ndcg@k`` to 1e-9: tests/kernels/test_core_metrics.py). The LambdaMART row also
shows ``RankingEvaluator``'s NDCG@10 on the Spark predictions.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _harness import Results, session

KS = (1, 3, 5, 10)


def load(data):
    from sparkxml_kernels.formats import read_svmlight

    tr = read_svmlight(os.path.join(data, "rank.train"), os.path.join(data, "rank.train.query"))
    d = tr[5]
    te = read_svmlight(os.path.join(data, "rank.test"), os.path.join(data, "rank.test.query"),
                       d)
    return tr, te


def ndcgs(score, y, q):
    from sparkxml_kernels.metrics import ranking_metric

    return [ranking_metric("ndcgAtK", score, y, q, k) for k in KS]


def run_spark(args, data):
    from sparkxml import LambdaMART, RankingEvaluator
    from sparkxml.datasets import read_svmlight

    spark = session(master=f"local[{max(2, args.workers)}]", app="lambdamart-bench",
                    conf={"spark.sql.shuffle.partitions": "4"})
    train = read_svmlight(spark, os.path.join(data, "rank.train"),
                          os.path.join(data, "rank.train.query")).cache()
    test = read_svmlight(spark, os.path.join(data, "rank.test"),
                         os.path.join(data, "rank.test.query"), num_features=300).cache()
    train.count()
    test.count()
    est = LambdaMART(maxIter=args.iters, stepSize=args.step, maxDepth=args.depth,
                     numWorkers=args.workers)
    LambdaMART(maxIter=2, maxDepth=2, numWorkers=args.workers).fit(train)  # warm-up
    t0 = time.perf_counter()
    model = est.fit(train)
    fit = time.perf_counter() - t0
    out = model.transform(test).select("qid", "label", "prediction").toPandas()
    ev = RankingEvaluator(k=10).evaluate(model.transform(test))
    s = model.summary
    detail = (f"checks {s.checksSeconds:.2f}s, sketch {s.sketchSeconds:.2f}s, barrier stage "
              f"{s.trainingSeconds:.2f}s (boosting {max(i['train_seconds'] for i in s.workerInfo):.2f}s)")
    spark.stop()
    return (out["prediction"].to_numpy(), out["label"].to_numpy(), out["qid"].to_numpy(),
            fit, ev, detail)


def run_kernels(args, tr, te):
    from sparkxml_kernels.gbt import bin_data, edges_from_sketch, sketch, train
    from sparkxml_kernels.gbt.ranking import group_ptr_from_sorted_ids

    y, q, ip, ix, dv, d = tr
    X = (ip, ix, dv, d)
    t0 = time.perf_counter()
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(maxIter=args.iters, stepSize=args.step, maxDepth=args.depth,
                         objective="lambdarank"), group_ptr=group_ptr_from_sorted_ids(q))
    fit = time.perf_counter() - t0
    yt, qt, ipt, ixt, dvt, _ = te
    return pred.predict_raw((ipt, ixt, dvt, d)), fit


def _csr(t):
    import scipy.sparse as sp

    y, q, ip, ix, dv, d = t
    return sp.csr_matrix((dv, ix, ip), shape=(len(y), d)), y, np.bincount(q)


def run_lightgbm(args, tr, te):
    import lightgbm as lgb

    X, y, groups = _csr(tr)
    Xt, _, _ = _csr(te)
    params = dict(objective="lambdarank", learning_rate=args.step, num_threads=args.threads,
                  verbose=-1, seed=0)
    t0 = time.perf_counter()
    bst = lgb.train(params, lgb.Dataset(X, y, group=groups), num_boost_round=args.iters)
    fit = time.perf_counter() - t0
    return bst.predict(Xt), fit


def run_xgboost(args, tr, te):
    import xgboost as xgb

    X, y, groups = _csr(tr)
    Xt, _, _ = _csr(te)
    params = dict(objective="rank:ndcg", tree_method="hist", eta=args.step,
                  max_depth=args.depth, nthread=args.threads, seed=0)
    t0 = time.perf_counter()
    dm = xgb.DMatrix(X, label=y)
    dm.set_group(groups)
    bst = xgb.train(params, dm, args.iters)
    fit = time.perf_counter() - t0
    return bst.predict(xgb.DMatrix(Xt)), fit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data", "lightgbm_rank"))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    res = Results("lambdamart_rank")
    data = os.path.abspath(args.data)
    tr, te = load(data)
    yt, qt = te[0], te[1]
    rows = []
    if not args.no_spark:
        score, ys, qs, fit, ev, detail = run_spark(args, data)
        rows.append((f"sparkxml LambdaMART (Spark, {args.workers} workers)", ndcgs(score, ys, qs),
                     fit, f"RankingEvaluator NDCG@10 {ev:.4f}; {detail}"))
    score, fit = run_kernels(args, tr, te)
    rows.append(("sparkxml kernels (1 process)", ndcgs(score, yt, qt), fit, ""))
    for name, fn in (("LightGBM lambdarank (31 leaves)", run_lightgbm),
                     ("XGBoost rank:ndcg (depth 6)", run_xgboost)):
        try:
            score, fit = fn(args, tr, te)
            rows.append((name, ndcgs(score, yt, qt), fit, ""))
        except ImportError as e:
            rows.append((name, [float("nan")] * 4, float("nan"), f"not installed: {e}"))
    print(f"\nLightGBM rank sample: {len(tr[0])} train rows / {len(set(tr[1]))} queries, "
          f"{len(yt)} test rows / {len(set(qt))} queries; {args.iters} rounds, step "
          f"{args.step}, depth {args.depth}, {args.threads} thread(s) for LightGBM/XGBoost\n")
    head = f"{'engine':<40}" + "".join(f"{'NDCG@' + str(k):>9}" for k in KS) + f"{'fit s':>9}"
    print(head)
    print("-" * len(head))
    for name, v, fit, note in rows:
        print(f"{name:<40}" + "".join(f"{x:9.4f}" for x in v) + f"{fit:9.2f}")
        if note:
            print(f"{'':<4}{note}")
        case = (f"{name}, {args.iters} rounds, step {args.step}, depth {args.depth}, "
                f"{args.threads} thread(s)")
        for k, x in zip(KS, v):
            res.add(case, f"NDCG@{k}", x)
        res.add(case, "fit", fit, "s", note=note or None)
    res.write()


if __name__ == "__main__":
    main()
