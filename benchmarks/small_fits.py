"""Small fits on local Spark, warm: GBTClassifier on lightgbm_binary (its vectors from
``array_to_vector``, then from ``VectorAssembler``) and LambdaMART on lightgbm_rank, each beside
XGBoost on the same rows (one thread), with the Spark jobs each fit runs.

    .venv/bin/python benchmarks/small_fits.py [--data ../shared/data] [--repeats 5]
                                              [--workers 1]

A fit's time is the whole ``fit`` call on a cached DataFrame, the best of ``--repeats`` after
two warm-up fits (which start the Python workers and load the numba cache). Jobs are counted
from the context's status store (this script's own classic session). 100 rounds, depth 6,
learning rate 0.1, 256 bins, for both engines. Results: ``benchmarks/results/small_fits.json``.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from _harness import ROOT, Results, best_of, session


def _job_ids(sc):
    store = sc._jsc.sc().statusStore()  # a benchmark's own classic session: counting jobs
    it, ids = store.jobsList(None).iterator(), []
    while it.hasNext():
        ids.append(it.next().jobId())
    return set(ids)


def _load_binary(data):
    a = np.loadtxt(os.path.join(data, "lightgbm_binary", "binary.train"))
    return a[:, 1:], a[:, 0]


def _load_rank(data):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(os.path.join(data, "lightgbm_rank", "rank.train"), n_features=300)
    q = np.loadtxt(os.path.join(data, "lightgbm_rank", "rank.train.query"), dtype=np.int64)
    return X.toarray(), y, np.repeat(np.arange(q.size), q), q


def _frame(spark, X, y, group=None, assembled=False):
    """A cached frame of ``features`` (a vector column) and ``label`` (and ``qid``). The
    vectors come from ``array_to_vector``, which gives the column no size metadata (the checks
    job then sizes the first rows of each partition), or, with ``assembled``, from
    ``VectorAssembler`` over one column per feature, as a frame read from a table would be
    assembled (the column then carries its size)."""
    import pandas as pd
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import array_to_vector

    if assembled:
        cols = [f"f{j}" for j in range(X.shape[1])]
        pdf = pd.DataFrame(X, columns=cols)
        pdf.insert(0, "label", y)
        df = VectorAssembler(inputCols=cols, outputCol="features").transform(
            spark.createDataFrame(pdf)).select("label", "features")
    else:
        pdf = pd.DataFrame({"label": y, "f": list(X)})
        if group is not None:
            pdf["qid"] = group
        df = spark.createDataFrame(pdf).withColumn("features", array_to_vector("f")).drop("f")
    df = df.cache()
    df.count()
    return df


def _spark_fit(spark, est, df, repeats):
    """(best warm fit seconds, jobs of one fit)."""
    for _ in range(2):
        est.fit(df)
    before = _job_ids(spark.sparkContext)
    est.fit(df)
    jobs = len(_job_ids(spark.sparkContext) - before)
    return best_of(lambda: est.fit(df), repeats), jobs


def _case(res, spark, args, est, df, dmatrix, xgb_params, name, xgb_name):
    """Time ``est`` on ``df`` and XGBoost on ``dmatrix`` (100 rounds each); record and print."""
    import xgboost as xgb

    fit, jobs = _spark_fit(spark, est, df, args.repeats)
    xfit = best_of(lambda: xgb.train(xgb_params, dmatrix, 100), args.repeats)
    case = f"{name}, 100 trees, numWorkers {args.workers}"
    res.add(case, "fit", fit, "s")
    res.add(case, "spark jobs", jobs)
    res.add(f"{xgb_name}, 100 trees, 1 thread", "fit", xfit, "s")
    res.add(case, "ratio to XGBoost", fit / xfit)
    print(f"{case}: {fit:.3f} s in {jobs} Spark jobs; XGBoost {xfit:.3f} s "
          f"({fit / xfit:.2f}x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    import xgboost as xgb

    from sparkxml import GBTClassifier, LambdaMART

    spark = session("local[2]", "sparkxml-small-fits")
    res = Results("small_fits")
    params = dict(maxIter=100, maxDepth=6, stepSize=0.1, maxBins=256, numWorkers=args.workers,
                  seed=0)
    xgb_params = dict(max_depth=6, eta=0.1, max_bin=256, tree_method="hist", nthread=1)

    X, y = _load_binary(args.data)
    _case(res, spark, args, GBTClassifier(**params), _frame(spark, X, y),
          xgb.DMatrix(X, label=y), {**xgb_params, "objective": "binary:logistic"},
          "GBTClassifier, lightgbm_binary 7000 rows", "XGBoost binary:logistic, lightgbm_binary")
    _case(res, spark, args, GBTClassifier(**params), _frame(spark, X, y, assembled=True),
          xgb.DMatrix(X, label=y), {**xgb_params, "objective": "binary:logistic"},
          "GBTClassifier, lightgbm_binary 7000 rows, VectorAssembler input",
          "XGBoost binary:logistic, lightgbm_binary")
    Xr, yr, g, q = _load_rank(args.data)
    dr = xgb.DMatrix(Xr, label=yr)
    dr.set_group(q)
    _case(res, spark, args, LambdaMART(groupCol="qid", **params), _frame(spark, Xr, yr, g),
          dr, {**xgb_params, "objective": "rank:ndcg"},
          "LambdaMART, lightgbm_rank 3005 rows", "XGBoost rank:ndcg, lightgbm_rank")
    res.write()
    spark.stop()


if __name__ == "__main__":
    main()
