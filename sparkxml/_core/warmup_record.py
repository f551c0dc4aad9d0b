"""Record the numba signatures the estimators use into ``sparkxml_kernels/_warm_signatures.txt``
(the list ``sparkxml precompile`` and the build compile; see ``sparkxml_kernels.precompile``).

    python -m sparkxml._core.warmup_record            # all profiles, rewrites the list
    python -m sparkxml._core.warmup_record --check    # print what would change, write nothing

Each profile (a group of the list) runs in a new process, on local[2] Spark, with an empty
numba cache of its own: it fits and applies its estimators on small generated data, with the
options that select other kernels (threads, monotone constraints, ranking, ...). Every
signature numba compiled there, in the driver or in a Python worker, callees included, is read
back from that cache's index files. A signature goes to the first profile (in ``PROFILES``
order) that compiled it, so a fit that warms ``gbt_threads`` warms ``gbt`` too.

Rerun it when a kernel's signature changes or a kernel is added (test_core_jit.py says when).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def _vectors(spark, X, y, extra=None):
    import pandas as pd
    from pyspark.ml.feature import VectorAssembler

    cols = [f"f{j}" for j in range(X.shape[1])]
    pdf = pd.DataFrame(X, columns=cols)
    pdf["label"] = y
    for k, v in (extra or {}).items():
        pdf[k] = v
    return VectorAssembler(inputCols=cols, outputCol="features").transform(
        spark.createDataFrame(pdf)).drop(*cols)


def _dense(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


def _multilabel(spark):
    from sparkxml.synthetic import make_multilabel, rows_frame

    X, Y = make_multilabel(n_rows=1200, n_features=500, n_labels=60, seed=0)
    return rows_frame(spark, X, Y, 0, 1000, 500).cache(), rows_frame(spark, X, Y, 1000, 1200,
                                                                     500)


def profile_fastxml(spark):
    """What a FastXML fit and transform use (the training tasks warm this group)."""
    from sparkxml import FastXML

    train, test = _multilabel(spark)
    for est in (FastXML(numTrees=2, numWorkers=2, rowOrder="input"),
                FastXML(numTrees=2, numWorkers=2)):
        est.fit(train).transform(test).collect()


def profile_labeltree(spark):
    """What Parabel and Bonsai fits and transforms use (squared hinge and logistic nodes, and
    split nodes in both training modes)."""
    from sparkxml import Bonsai, Parabel
    from sparkxml_kernels.labeltree import forest as kforest

    train, test = _multilabel(spark)
    for est in (Parabel(numTrees=2, numWorkers=2, maxLeafLabels=20),
                Bonsai(numTrees=2, numWorkers=2, maxLeafLabels=20, loss="logistic")):
        est.fit(train).transform(test).collect()
    # every squared-hinge node is split (this process only)
    kforest.DEFAULTS.update(split_nodes=True, split_rows=0, split_share=0.0)
    for mode in ("replicated", "distributed"):
        Parabel(numTrees=1, numWorkers=2, maxLeafLabels=20, trainingMode=mode).fit(train)


def profile_gbt(spark):
    """A dense GBT classifier / regressor fit and transform, one thread a task (the training
    tasks warm this group)."""
    from sparkxml import GBTClassifier, GBTRegressor

    X, y = _dense(3000, 8)
    df = _vectors(spark, X, y).cache()
    GBTClassifier(maxIter=3, maxDepth=3).fit(df).transform(df).collect()
    GBTClassifier(maxIter=3, maxDepth=3, numWorkers=2).fit(df).transform(df).collect()
    GBTRegressor(maxIter=3, maxDepth=3, numWorkers=2).fit(df).transform(df).collect()


def profile_gbt_threads(spark):
    """The parallel kernels (a task with nthread > 1 warms this group too)."""
    from sparkxml import GBTClassifier
    from sparkxml_kernels.threads import MIN_PARALLEL_ROWS

    X, y = _dense(MIN_PARALLEL_ROWS + 2000, 8)  # enough rows for the parallel kernels
    df = _vectors(spark, X, y).cache()
    GBTClassifier(maxIter=2, maxDepth=3, numWorkers=1, nthread=2).fit(df).transform(df) \
        .collect()
    GBTClassifier(maxIter=2, maxDepth=3, numWorkers=1, nthread=2, treeMethod="approx") \
        .fit(df)
    GBTClassifier(maxIter=2, maxDepth=3, numWorkers=1, nthread=2, useQuantizedGrad=True) \
        .fit(df)


def profile_fastxml_more(spark):
    """PfastreXML, distributed FastXML training, the serving predictor."""
    from sparkxml import FastXML, PfastreXML

    train, test = _multilabel(spark)
    FastXML(numTrees=2, numWorkers=2, trainingMode="distributed").fit(train).transform(test) \
        .collect()
    PfastreXML(numTrees=2, numWorkers=2, rowOrder="input").fit(train).transform(test).collect()
    PfastreXML(numTrees=2, numWorkers=2, tailClassifiers=False).fit(train).transform(test) \
        .collect()


def profile_gbt_more(spark):
    """Monotone constraints, multiclass, ranking, sparse and categorical data, uint16 bins,
    treeMethod approx and exact, quantised gradients, SHAP contributions and leaf indices."""
    from pyspark.ml.linalg import Vectors

    from sparkxml import GBTClassifier, GBTRegressor, LambdaMART

    X, y = _dense(3000, 8)
    qid = np.arange(len(y)) // 20
    df = _vectors(spark, X, y, {"qid": qid, "y3": (X[:, 0] > 0).astype(float) +
                                (X[:, 1] > 0.5), "c": (np.abs(X[:, 3]) * 4).astype(np.int64),
                                "x": X[:, 0]}).cache()
    GBTRegressor(maxIter=3, maxDepth=3, monotoneConstraints=[1] + [0] * 7,
                 predContribCol="contrib", leafCol="leaf").fit(df).transform(df).collect()
    GBTClassifier(maxIter=3, maxDepth=3, labelCol="y3").fit(df).transform(df).collect()
    for obj in ("lambdarank", "pairwise"):
        LambdaMART(maxIter=3, maxDepth=3, groupCol="qid", objective=obj).fit(df) \
            .transform(df).collect()
    GBTClassifier(featuresCols=["c", "x"], categoricalCols=["c"], maxIter=3, maxDepth=3) \
        .fit(df).transform(df).collect()
    GBTClassifier(featuresCols=["c", "x"], categoricalCols=["c"], maxIter=3, maxDepth=3,
                  numWorkers=1, nthread=2).fit(df).transform(df).collect()
    GBTClassifier(maxIter=3, maxDepth=3, maxBins=1000).fit(df).transform(df).collect()
    for method in ("approx", "exact"):  # per-tree candidates; one bin per value
        GBTClassifier(maxIter=3, maxDepth=3, treeMethod=method).fit(df)
    for bins in (256, 1000):  # quantised gradients on uint8 and uint16 bins
        GBTClassifier(maxIter=3, maxDepth=3, maxBins=bins, useQuantizedGrad=True,
                      quantTrainRenewLeaf=True).fit(df)
    rng = np.random.default_rng(0)
    idx = [np.unique(rng.integers(0, 2000, 10)) for _ in range(2000)]
    rows = [(Vectors.sparse(2000, ix.tolist(), rng.random(len(ix)).tolist()),
             float(ix[0] < 1000)) for ix in idx]
    sp = spark.createDataFrame(rows, ["features", "label"]).cache()
    for kw in ({}, {"numWorkers": 1, "nthread": 2}):
        GBTClassifier(maxIter=3, maxDepth=3, **kw).fit(sp).transform(sp).collect()


def profile_linear(spark):
    from sparkxml import LinearSVC

    X, y = _dense(2000, 8)
    df = _vectors(spark, X, y, {"y3": (X[:, 0] > 0).astype(float) + (X[:, 1] > 0.5)}).cache()
    LinearSVC(numWorkers=2).fit(df).transform(df).collect()
    LinearSVC(loss="squared_hinge", schedule="permutation").fit(df).transform(df).collect()
    LinearSVC(labelCol="y3", multiClass="crammer_singer").fit(df).transform(df).collect()
    LinearSVC(labelCol="y3").fit(df).transform(df).collect()


def profile_fm(spark):
    from sparkxml import (
        FFMClassifier,
        FFMRegressor,
        FMClassifier,
        FMRanker,
        FMRegressor,
        GBFMClassifier,
    )

    X, y = _dense(1000, 8)
    df = _vectors(spark, X, y).cache()
    FMClassifier(maxIter=20).fit(df).transform(df).collect()
    FMRegressor(maxIter=20).fit(df).transform(df).collect()
    for solver in ("als", "adamw"):
        FMRegressor(maxIter=5, solver=solver).fit(df).transform(df).collect()
    FMRegressor(maxIter=5, burnIn=1, loss="ordinal").fit(df).transform(df).collect()
    valid = _vectors(spark, X, y, {"v": np.arange(X.shape[0]) % 4 == 0})
    FMClassifier(maxIter=5, solver="als", validationIndicatorCol="v").fit(valid)
    GBFMClassifier(maxIter=3, fieldStarts=[0, 4]).fit(df).transform(df).collect()
    FFMClassifier(maxIter=2, fieldStarts=[0, 4]).fit(df).transform(df).collect()
    FFMRegressor(maxIter=2, fieldStarts=[0, 4], normalize=False).fit(df).transform(df).collect()
    pairs = spark.createDataFrame([(u, i) for u in range(20) for i in range(6) if (u + i) % 2],
                                  "user int, item int")
    ranker = FMRanker(maxIter=2, miniBatchFraction=0.5).fit(pairs)
    ranker.transform(pairs).collect()
    ranker.recommendForAllUsers(3).collect()


def profile_forest(spark):
    from sparkxml import DecisionTreeClassifier, RandomForestClassifier, RandomForestRegressor

    X, y = _dense(1000, 8)
    df = _vectors(spark, X, y).cache()
    DecisionTreeClassifier(maxDepth=4).fit(df).transform(df).collect()
    RandomForestRegressor(numTrees=3, maxDepth=4,
                          quantiles=[0.5]).fit(df).transform(df).collect()
    RandomForestRegressor(numTrees=2, maxDepth=4, criterion="absolute_error").fit(df) \
        .transform(df).collect()
    RandomForestClassifier(numTrees=3, maxDepth=4, criterion="entropy", oobScore=True,
                           bootstrap=True).fit(df).transform(df).collect()
    # categorical splits (their kernels are callees of the same entry points)
    cats = spark.createDataFrame([(float(int(abs(a) * 3) % 10), float(b), float(v))
                                  for a, b, v in zip(X[:, 0], X[:, 1], y)], ["c", "x", "label"])
    for est in (DecisionTreeClassifier(maxDepth=4),
                RandomForestClassifier(numTrees=3, maxDepth=4, oobScore=True)):
        est.setParams(featuresCols=["c", "x"], categoricalCols=["c"])
        est.fit(cats).transform(cats).collect()


PROFILES = {"fastxml": profile_fastxml, "gbt": profile_gbt, "gbt_threads": profile_gbt_threads,
            "fastxml_more": profile_fastxml_more, "gbt_more": profile_gbt_more,
            "linear": profile_linear, "fm": profile_fm, "forest": profile_forest,
            "labeltree": profile_labeltree}


def _run_profile(name: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from sparkxml.session import get_session

    spark = get_session(master="local[2]", app_name=f"sparkxml-warmup-{name}")
    try:
        PROFILES[name](spark)
    finally:
        spark.stop()


def record(names=None, jobs: int = 1, seen=None) -> list:
    """Run the profiles (each in a new process with an empty cache); returns manifest lines.
    ``seen``: (module, kernel, signature) already listed by groups not run, left out."""
    from sparkxml_kernels.precompile import cached_signatures

    names = list(names or PROFILES)
    seen, lines = set(seen or ()), []
    with tempfile.TemporaryDirectory(prefix="sparkxml-warmup-") as tmp:
        for name in names:
            # SPARKXML_WARMUP=0: the old list's warm-ups must not record themselves again
            env = dict(os.environ, SPARKXML_NUMBA_CACHE_DIR=os.path.join(tmp, name),
                       SPARKXML_WARMUP="0",
                       PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
            print(f"profile {name} ...", flush=True)
            r = subprocess.run([sys.executable, "-m", "sparkxml._core.warmup_record", "--profile",
                                name], env=env)
            if r.returncode != 0:  # what ran before the failure is still recorded
                print(f"profile {name} FAILED (rc {r.returncode}); its list is partial",
                      flush=True)
        for name in names:
            for module, qualname, sig in cached_signatures(os.path.join(tmp, name)):
                if (module, qualname, sig) not in seen:
                    seen.add((module, qualname, sig))
                    lines.append(f"{name}\t{module}\t{qualname}\t{sig}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", choices=sorted(PROFILES), default=None)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.profile:
        _run_profile(args.profile)
        return 0
    from sparkxml_kernels.precompile import MANIFEST, read_manifest

    old = {"\t".join(e) for e in read_manifest(MANIFEST)}
    # with --only, the other groups' lines stay, and a signature they list is not repeated
    kept = sorted(ln for ln in old if args.only and ln.split("\t")[0] not in args.only)
    lines = record(args.only, seen={tuple(ln.split("\t")[1:]) for ln in kept}) + kept
    order = {g: i for i, g in enumerate(PROFILES)}  # the groups in profile order (stable)
    lines.sort(key=lambda ln: order.get(ln.split("\t")[0], len(order)))
    new = set(lines)
    print(f"{len(new)} signatures ({len(new - old)} new, {len(old - new)} gone)")
    if not args.check:
        with open(MANIFEST, "w") as f:
            f.write("# group\tmodule\tkernel\tnumba argument types (python -m "
                    "sparkxml._core.warmup_record writes this file)\n")
            f.write("\n".join(lines) + "\n")
        print(f"wrote {MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
