"""Decision trees and random forests: sparkxml beside scikit-learn and Spark MLlib, one run.

    python benchmarks/forests.py [--workers 2] [--repeats 3] [--trees 100]
        [--synthetic-rows 1000000] [--synthetic-features 50] [--synthetic-trees 50]
        [--synthetic-depth 10] [--mllib-synthetic-trees 5] [--extra-trees 100]
        [--quantile-trees 100] [--categorical-rows 50000] [--categorical-trees 50]
        [--skip exact missing constraints extra categorical pendigits synthetic mllib sklearn
                quantile]

Parts (each can be skipped):

exact      pendigits (../shared/data/pendigits) with DecisionTreeClassifier(maxDepth=64,
           seed=0, numWorkers=W), gini and entropy, against scikit-learn's
           DecisionTreeClassifier(random_state=0), compared node for node (feature, threshold,
           impurity, n_node_samples, weighted_n_node_samples, value, children); and
           scikit-learn's load_diabetes with DecisionTreeRegressor(maxBins=512) for
           squared_error, friedman_mse, poisson and absolute_error (leaf medians); on
           pendigits, ccp_alpha (the whole cost_complexity_pruning_path, and the tree pruned
           at an alpha of that path, node for node) and class_weight as a dict (node for
           node).
missing    exact's comparisons with missing values: pendigits with 10% of the entries of
           features 0-7 set to NaN (seeded), gini and entropy, and load_diabetes with 10% of
           every feature NaN, squared_error; the missing side (``missing_go_to_left``) too.
extra      ExtraTreesClassifier, ``extra-trees`` trees, sqrt features, full depth, on
           pendigits: test accuracy and fit time beside scikit-learn's ExtraTreesClassifier
           (n_jobs=W, random_state=0; the random streams differ, so accuracy is compared, not
           trees) and Spark MLlib's RandomForestClassifier (maxDepth=30, maxBins=128).
categorical  a 50-level categorical feature (``categorical-rows`` rows): test accuracy of
           sparkxml's trees and forests (``categorical-trees`` trees) with categorical splits,
           one-hot and ordinal encodings, and MLlib's with categorical metadata
           (benchmarks/forests_categorical.py).
pendigits  RandomForestClassifier, ``trees`` trees, sqrt features, full depth: test accuracy
           and fit time of scikit-learn (n_jobs=W, random_state=0), Spark MLlib
           (numTrees=trees, maxDepth=30, maxBins=128, featureSubsetStrategy='sqrt') and
           sparkxml (maxDepth=64, numWorkers=W; a warm-up fit first, then the median of
           ``repeats`` fits). Ratio sparkxml / MLlib.
synthetic  rows x features dense normal, binary target (benchmarks/gbt_synthetic.py's data),
           ``synthetic-trees`` trees of depth ``synthetic-depth``, sqrt features, 256 bins:
           fit time and peak memory of sparkxml (per worker: peak RSS of the task), scikit-learn
           (n_jobs=W, in a subprocess: its peak RSS) and MLlib (``mllib-synthetic-trees`` trees,
           extrapolated linearly to the tree count; the local JVM's peak RSS sampled every
           0.2 s). Test accuracy on 20,000 held-out rows.
quantile   quantile regression forests (accuracy only): a heteroscedastic generated problem
           (y = 4 x0 + 2 sin(6 x1) + (0.2 + 2 x0) e, 4 uniform features, 2000 training and
           2000 test rows) and load_diabetes (a seeded 70/30 split): pinball loss at 0.1 / 0.5
           / 0.9 and the coverage of [q0.1, q0.9] of RandomForestRegressor(quantiles=...,
           numTrees=``quantile-trees``, maxDepth=8, minInstancesPerNode=5, all features,
           maxBins=4096) beside quantile-forest's RandomForestQuantileRegressor (the same tree
           count, depth, min leaf, features, bootstrap=True, max_samples_leaf=None), each the
           mean over seeds 0, 1, 2 (the spread over seeds printed too).

Timings depend on the machine's load: read the ratios of runs made back to back.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, session  # noqa: E402
from forests_categorical import part_categorical  # noqa: E402
from gbt_synthetic import make_data  # noqa: E402  (the same data as the GBT benchmark)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("SPARKXML_DATA", os.path.join(HERE, "..", "..", "shared", "data"))
FIELDS = ("children_left", "children_right", "feature", "threshold", "impurity",
          "n_node_samples", "weighted_n_node_samples", "value")


def frame(spark, X, y, parts):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y.tolist())]
    df = spark.createDataFrame(rows, ["features", "label"]).repartition(parts).cache()
    df.count()
    return df


def accuracy(model, df):
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    return MulticlassClassificationEvaluator(metricName="accuracy").evaluate(
        model.transform(df))


def same_tree(ours: dict, sk) -> str:
    if ours["feature"].size != sk.node_count:
        return f"DIFFERENT node count {ours['feature'].size} vs {sk.node_count}"
    inner = sk.children_left >= 0  # scikit-learn leaves its leaves' missing flag unset
    if not np.array_equal(ours["missing_go_to_left"][inner], sk.missing_go_to_left[inner]):
        return "DIFFERENT missing_go_to_left"
    worst = 0.0
    for f in FIELDS:
        a, b = np.asarray(ours[f]), np.asarray(getattr(sk, f))
        if a.shape != b.shape or (a.dtype.kind in "iu" and not np.array_equal(a, b)):
            return f"DIFFERENT {f}"
        if a.dtype.kind == "f" and not np.array_equal(a, b):
            rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
            worst = max(worst, rel)
    return "identical" if worst == 0.0 else f"same structure, floats within {worst:.1e} rel."


def jvm_children():
    """PIDs of java processes started by this process (the local Spark JVM)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().split()
            if int(parts[3]) == os.getpid() and "java" in parts[1]:
                out.append(int(pid))
        except OSError:
            continue
    return out


class RssSampler:
    """Peak RSS of the given PIDs, sampled every 0.2 s while running."""

    def __init__(self, pids):
        self.pids, self.peak, self._stop = pids, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            total = 0
            for pid in self.pids:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


# ------------------------------------------------------------------------------ parts
def part_exact(spark, W, res=None):
    from sklearn.datasets import load_diabetes, load_svmlight_file
    from sklearn.tree import DecisionTreeClassifier as SkTree
    from sklearn.tree import DecisionTreeRegressor as SkReg

    from sparkxml import DecisionTreeClassifier, DecisionTreeRegressor

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    X, y = X.toarray(), y - 1
    df = frame(spark, X, y, W)
    print("\n== exactness: sparkxml DecisionTree* vs scikit-learn (node for node)")
    for crit in ("gini", "entropy"):
        t0 = time.perf_counter()
        m = DecisionTreeClassifier(criterion=crit, maxDepth=64, seed=0, numWorkers=W).fit(df)
        sec = time.perf_counter() - t0
        t0 = time.perf_counter()
        sk = SkTree(criterion=crit, random_state=0).fit(X, y)
        sk_sec = time.perf_counter() - t0
        print(f"pendigits {crit:8s}: {m.treeArrays(0)['feature'].size} nodes, "
              f"{same_tree(m.treeArrays(0), sk.tree_)}; fit {sec:.2f}s (sklearn {sk_sec:.3f}s)")
    d = load_diabetes()
    ddf = frame(spark, d.data, d.target, W)
    for crit in ("squared_error", "friedman_mse", "poisson", "absolute_error"):
        m = DecisionTreeRegressor(criterion=crit, maxDepth=64, maxBins=512, seed=0,
                                  numWorkers=W).fit(ddf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            sk = SkReg(criterion=crit, random_state=0).fit(d.data, d.target)
        same = same_tree(m.treeArrays(0), sk.tree_)
        print(f"diabetes {crit:14s}: {m.treeArrays(0)['feature'].size} nodes, {same}")
        _record(res, f"exact: diabetes {crit}", same)
    part_exact_options(spark, W, X, y, df, res)


def _record(res, case, same):
    if res is not None:
        res.add(case, "identical to scikit-learn", float(same == "identical"), "", note=same)


def part_exact_options(spark, W, X, y, df, res=None):
    """ccp_alpha and class_weight (a dict) on pendigits, against scikit-learn's."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    from sparkxml import DecisionTreeClassifier

    full = DecisionTreeClassifier(maxDepth=64, seed=0, numWorkers=W).fit(df)
    ours, sk = full.costComplexityPruningPath(), SkTree(random_state=0) \
        .cost_complexity_pruning_path(X, y)
    same = "identical" if all(np.array_equal(ours[k], getattr(sk, k)) for k in (
        "ccp_alphas", "impurities")) else "DIFFERENT"
    print(f"pendigits ccp_alpha path: {len(ours['ccp_alphas'])} alphas "
          f"(scikit-learn {len(sk.ccp_alphas)}), {same}")
    _record(res, "exact: pendigits cost_complexity_pruning_path", same)
    alpha = float(sk.ccp_alphas[len(sk.ccp_alphas) // 2])
    m = DecisionTreeClassifier(maxDepth=64, seed=0, numWorkers=W, ccpAlpha=alpha).fit(df)
    same = same_tree(m.treeArrays(0), SkTree(random_state=0, ccp_alpha=alpha).fit(X, y).tree_)
    print(f"pendigits ccp_alpha={alpha:.3g}: {m.treeArrays(0)['feature'].size} nodes, {same}")
    _record(res, "exact: pendigits ccp_alpha pruned tree", same)
    cw = {0: 3.0, 4: 2.0, 7: 5.0}  # integer weights: exact sums
    m = DecisionTreeClassifier(maxDepth=64, seed=0, numWorkers=W, classWeight=cw).fit(df)
    same = same_tree(m.treeArrays(0), SkTree(random_state=0, class_weight=cw).fit(X, y).tree_)
    print(f"pendigits class_weight={cw}: {m.treeArrays(0)['feature'].size} nodes, {same}")
    _record(res, "exact: pendigits class_weight dict", same)


def with_nan(X, frac, features, seed=0):
    rng = np.random.default_rng(seed)
    X = np.array(X, np.float64)
    for f in features:
        X[rng.random(X.shape[0]) < frac, f] = np.nan
    return X


def part_missing(spark, W, res=None):
    from sklearn.datasets import load_diabetes, load_svmlight_file
    from sklearn.tree import DecisionTreeClassifier as SkTree
    from sklearn.tree import DecisionTreeRegressor as SkReg

    from sparkxml import DecisionTreeClassifier, DecisionTreeRegressor

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    X, y = with_nan(X.toarray(), 0.1, range(8)), y - 1
    df = frame(spark, X, y, W)
    print("\n== missing values: sparkxml DecisionTree* vs scikit-learn (node for node)")
    for crit in ("gini", "entropy"):
        m = DecisionTreeClassifier(criterion=crit, maxDepth=64, seed=0, numWorkers=W).fit(df)
        sk = SkTree(criterion=crit, random_state=0).fit(X, y)
        same = same_tree(m.treeArrays(0), sk.tree_)
        print(f"pendigits 10% NaN {crit:8s}: {m.treeArrays(0)['feature'].size} nodes, {same}")
        if res is not None:
            res.add(f"missing values: pendigits {crit}", "identical to scikit-learn",
                    float(same == "identical"), "", note=same)
    d = load_diabetes()
    Xd = with_nan(d.data, 0.1, range(d.data.shape[1]))
    m = DecisionTreeRegressor(maxDepth=64, maxBins=512, seed=0,
                              numWorkers=W).fit(frame(spark, Xd, d.target, W))
    sk = SkReg(random_state=0).fit(Xd, d.target)
    same = same_tree(m.treeArrays(0), sk.tree_)
    print(f"diabetes 10% NaN squared_error: {m.treeArrays(0)['feature'].size} nodes, {same}")
    if res is not None:
        res.add("missing values: diabetes squared_error", "identical to scikit-learn",
                float(same == "identical"), "", note=same)


def part_constraints(spark, W, T, res=None):
    """monotonic_cst on diabetes (node for node) and class_weight="balanced_subsample" on
    pendigits: test accuracy beside scikit-learn's (the default bootstrap samples differ),
    and with ``rowIndexCol`` every tree against scikit-learn's forest, node for node."""
    from sklearn.datasets import load_diabetes, load_svmlight_file
    from sklearn.ensemble import RandomForestClassifier as SkRF
    from sklearn.tree import DecisionTreeRegressor as SkReg

    from sparkxml import DecisionTreeRegressor, RandomForestClassifier

    print("\n== monotonicConstraints / balanced_subsample")
    d = load_diabetes()
    cst = [1, 0, 1, 1, 0, 0, -1, 0, 1, 0]
    m = DecisionTreeRegressor(maxDepth=64, maxBins=512, seed=0, numWorkers=W,
                              monotonicConstraints=cst).fit(frame(spark, d.data, d.target, W))
    same = same_tree(m.treeArrays(0), SkReg(random_state=0, monotonic_cst=cst).fit(
        d.data, d.target).tree_)
    print(f"diabetes monotonic_cst {cst}: {m.treeArrays(0)['feature'].size} nodes, {same}")
    if res is not None:
        res.add("monotonic_cst: diabetes squared_error", "identical to scikit-learn",
                float(same == "identical"), "", note=same)
    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    Xt, yt = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits.t"), n_features=16)
    X, Xt, y, yt = X.toarray(), Xt.toarray(), y - 1, yt - 1
    m = RandomForestClassifier(numTrees=T, maxDepth=64, seed=0, numWorkers=W,
                               classWeight="balanced_subsample").fit(frame(spark, X, y, W))
    ours = float((m.predictor.predict(Xt) == yt).mean())
    sk = float((SkRF(T, class_weight="balanced_subsample", random_state=0).fit(X, y)
                .predict(Xt) == yt).mean())
    print(f"pendigits balanced_subsample {T} trees: test accuracy {ours:.4f} "
          f"(scikit-learn {sk:.4f})")
    if res is not None:
        res.add("balanced_subsample: pendigits test accuracy", "accuracy", ours, "",
                note=f"scikit-learn {sk:.4f}")
    # rowIndexCol: scikit-learn's forest replayed (its bootstrap, draws and summation order)
    from pyspark.ml.linalg import Vectors

    rows = [(i, Vectors.dense(r), float(v)) for i, (r, v) in enumerate(zip(X.tolist(),
                                                                           y.tolist()))]
    indexed = spark.createDataFrame(rows, ["id", "features", "label"]).repartition(W).cache()
    for crit in ("gini", "entropy"):
        t0 = time.perf_counter()
        m = RandomForestClassifier(numTrees=T, maxDepth=64, seed=0, numWorkers=W,
                                   criterion=crit, classWeight="balanced_subsample",
                                   rowIndexCol="id").fit(indexed)
        fit = time.perf_counter() - t0
        skf = SkRF(T, criterion=crit, class_weight="balanced_subsample",
                   random_state=0).fit(X, y)
        verdicts = [same_tree(m.treeArrays(t), e.tree_) for t, e in enumerate(skf.estimators_)]
        n_same = sum(v == "identical" for v in verdicts)
        nodes = sum(m.treeArrays(t)["feature"].size for t in range(T))
        print(f"pendigits balanced_subsample {crit}, rowIndexCol, {T} trees ({nodes} nodes): "
              f"{n_same}/{T} trees identical to scikit-learn's forest; fit {fit:.2f} s")
        if res is not None:
            res.add(f"balanced_subsample {crit}: pendigits, rowIndexCol", "identical trees",
                    n_same / T, "", note=f"{T} trees, {nodes} nodes; fit {fit:.2f} s")


def part_extra(spark, W, T, skip_mllib, res=None):
    from sklearn.datasets import load_svmlight_file
    from sklearn.ensemble import ExtraTreesClassifier as SkET

    from sparkxml import ExtraTreesClassifier

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    Xt, yt = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits.t"), n_features=16)
    X, Xt, y, yt = X.toarray(), Xt.toarray(), y - 1, yt - 1
    train, test = frame(spark, X, y, W), frame(spark, Xt, yt, W)
    print(f"\n== pendigits extra trees, {T} trees, sqrt features, full depth")
    rows = []
    t0 = time.perf_counter()
    sk = SkET(n_estimators=T, n_jobs=W, random_state=0).fit(X, y)
    rows.append(("scikit-learn ExtraTreesClassifier", (sk.predict(Xt) == yt).mean(),
                 time.perf_counter() - t0))
    est = ExtraTreesClassifier(numTrees=T, maxDepth=64, numWorkers=W, seed=0,
                               featureSubsetStrategy="sqrt")
    est.copy().setNumTrees(3).fit(train)  # warm-up: Python workers, numba kernels loaded
    t0 = time.perf_counter()
    model = est.fit(train)
    ours = time.perf_counter() - t0
    rows.append((f"sparkxml ExtraTreesClassifier, numWorkers={W}", accuracy(model, test), ours))
    if not skip_mllib:
        from pyspark.ml.classification import RandomForestClassifier as MLlibRF

        t0 = time.perf_counter()
        ml = MLlibRF(numTrees=T, maxDepth=30, maxBins=128, featureSubsetStrategy="sqrt",
                     seed=0).fit(train)
        rows.append(("Spark MLlib RandomForestClassifier (maxDepth 30, maxBins 128)",
                     accuracy(ml, test), time.perf_counter() - t0))
    print("\n| system | test accuracy | fit s |\n|---|---|---|")
    for name, acc, sec in rows:
        print(f"| {name} | {100 * acc:.2f} % | {sec:.2f} |")
        if res is not None:
            case = f"pendigits extra trees {T}: {name}"
            res.add(case, "test accuracy", 100 * acc, "%")
            res.add(case, "fit", sec, "s")


def part_pendigits(spark, W, T, repeats, skip_mllib, criterion, res=None):
    from sklearn.datasets import load_svmlight_file
    from sklearn.ensemble import RandomForestClassifier as SkRF

    from sparkxml import RandomForestClassifier

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    Xt, yt = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits.t"), n_features=16)
    X, Xt, y, yt = X.toarray(), Xt.toarray(), y - 1, yt - 1
    train, test = frame(spark, X, y, W), frame(spark, Xt, yt, W)
    print(f"\n== pendigits random forest, {T} trees, sqrt features, full depth, {criterion}")
    rows = []
    t0 = time.perf_counter()
    sk = SkRF(n_estimators=T, criterion=criterion, n_jobs=W, random_state=0).fit(X, y)
    sk_sec = time.perf_counter() - t0
    rows.append(("scikit-learn RandomForestClassifier", (sk.predict(Xt) == yt).mean(), sk_sec))
    est = RandomForestClassifier(numTrees=T, maxDepth=64, criterion=criterion, numWorkers=W,
                                 seed=0, featureSubsetStrategy="sqrt")
    est.copy().setNumTrees(3).fit(train)  # warm-up: Python workers, numba kernels loaded
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = est.fit(train)
        secs.append(time.perf_counter() - t0)
    info = model.trainingInfo
    ours = statistics.median(secs)
    rows.append((f"sparkxml RandomForestClassifier, numWorkers={W}", accuracy(model, test),
                 ours))
    print(f"sparkxml fits {', '.join('%.2f' % s for s in secs)}s; last: checks "
          f"{info['checksSeconds']:.2f}s, sketch {info['sketchSeconds']:.2f}s, barrier stage "
          f"{info['trainingSeconds']:.2f}s; nodes {model.totalNumNodes}")
    for i in info["workerInfo"]:
        print(f"  rank {i['rank']}: rows {i['n_train']}, load {i['load_seconds']:.2f}s, train "
              f"{i['train_seconds']:.2f}s, peer wait {i['peer_wait_seconds']:.2f}s, sent "
              f"{i['bytes_sent'] / 2**20:.0f} MiB, peak RSS {i['peak_rss_bytes'] / 2**20:.0f} "
              f"MiB, {i.get('forest_timing')}")
    if not skip_mllib:
        from pyspark.ml.classification import RandomForestClassifier as MLlibRF

        t0 = time.perf_counter()
        ml = MLlibRF(numTrees=T, maxDepth=30, maxBins=128, featureSubsetStrategy="sqrt",
                     impurity=criterion, seed=0).fit(train)
        ml_sec = time.perf_counter() - t0
        rows.append(("Spark MLlib RandomForestClassifier (maxDepth 30, maxBins 128)",
                     accuracy(ml, test), ml_sec))
    print("\n| system | test accuracy | fit s | sparkxml time / theirs |\n|---|---|---|---|")
    for name, acc, sec in rows:
        print(f"| {name} | {100 * acc:.2f} % | {sec:.2f} | {ours / sec:.3f} |")
        if res is not None:
            case = f"pendigits {T} trees {criterion}: {name}"
            res.add(case, "test accuracy", 100 * acc, "%")
            res.add(case, "fit", sec, "s", note=f"median of {repeats}" if "sparkxml" in name
                    else None)


def _sklearn_synthetic(n, d, T, depth, W):
    """Run scikit-learn in a subprocess: (fit seconds, peak RSS bytes, test accuracy)."""
    code = f"""
import resource, sys, time
sys.path.insert(0, {HERE!r})
from gbt_synthetic import make_data
from sklearn.ensemble import RandomForestClassifier
X, y = make_data({n}, {d}); Xt, yt = make_data(20000, {d}, seed=1)
t0 = time.perf_counter()
m = RandomForestClassifier(n_estimators={T}, max_depth={depth}, max_features="sqrt",
                           n_jobs={W}, random_state=0).fit(X, y)
sec = time.perf_counter() - t0
print(sec, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, (m.predict(Xt) == yt).mean())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), int(out[1]), float(out[2])


def part_synthetic(spark, W, n, d, T, depth, mllib_trees, skip_mllib, workdir,
                   skip_sklearn=False, res=None):
    import pandas as pd
    from pyspark.ml.feature import VectorAssembler

    from sparkxml import RandomForestClassifier

    print(f"\n== synthetic {n} x {d}, {T} trees, depth {depth}, sqrt features, 256 bins")
    X, y = make_data(n, d)
    Xt, yt = make_data(20_000, d, seed=1)
    path = os.path.join(workdir, f"forest_{n}x{d}.parquet")
    cols = [f"f{j}" for j in range(d)]
    if not os.path.exists(path):
        pdf = pd.DataFrame(X, columns=cols)
        pdf["label"] = y
        for i in range(0, n, 200_000):
            spark.createDataFrame(pdf.iloc[i:i + 200_000]).write.mode("append").parquet(path)
    va = VectorAssembler(inputCols=cols, outputCol="features")
    train = va.transform(spark.read.parquet(path)).select("features", "label") \
        .repartition(W).cache()
    train.count()
    test = frame(spark, Xt, yt, W)
    rows = []
    est = RandomForestClassifier(numTrees=T, maxDepth=depth, maxBins=256, numWorkers=W,
                                 seed=0, featureSubsetStrategy="sqrt")
    est.copy().setNumTrees(2).setMaxDepth(3).fit(train.limit(5000))  # warm-up
    t0 = time.perf_counter()
    model = est.fit(train)
    ours = time.perf_counter() - t0
    info = model.trainingInfo
    peak = max(i["peak_rss_bytes"] for i in info["workerInfo"])
    grow = max(i["peak_rss_bytes"] - i["rss_start_bytes"] for i in info["workerInfo"])
    rows.append((f"sparkxml RandomForestClassifier, numWorkers={W}", accuracy(model, test),
                 ours, f"{peak / 2**20:.0f} MiB per worker task (+{grow / 2**20:.0f} MiB "
                 f"during the task)"))
    print(f"sparkxml: {ours:.2f}s (checks {info['checksSeconds']:.2f}s, sketch "
          f"{info['sketchSeconds']:.2f}s, barrier stage {info['trainingSeconds']:.2f}s)")
    for i in info["workerInfo"]:
        print(f"  rank {i['rank']}: rows {i['n_train']}, binned {i['binned_bytes'] / 2**20:.0f}"
              f" MiB, load {i['load_seconds']:.2f}s, train {i['train_seconds']:.2f}s, sent "
              f"{i['bytes_sent'] / 2**20:.0f} MiB, peak RSS {i['peak_rss_bytes'] / 2**20:.0f} "
              f"MiB, {i.get('forest_timing')}")
    if not skip_sklearn:
        sk_sec, sk_rss, sk_acc = _sklearn_synthetic(n, d, T, depth, W)
        rows.append((f"scikit-learn RandomForestClassifier n_jobs={W}", sk_acc, sk_sec,
                     f"{sk_rss / 2**20:.0f} MiB (process peak)"))
    if not skip_mllib:
        from pyspark.ml.classification import RandomForestClassifier as MLlibRF

        with RssSampler(jvm_children()) as rss:
            t0 = time.perf_counter()
            ml = MLlibRF(numTrees=mllib_trees, maxDepth=depth, maxBins=256,
                         featureSubsetStrategy="sqrt", seed=0).fit(train)
            ml_sec = time.perf_counter() - t0
        rows.append((f"Spark MLlib RandomForestClassifier ({mllib_trees} trees x "
                     f"{T / mllib_trees:g})", accuracy(ml, test), ml_sec * T / mllib_trees,
                     f"{rss.peak / 2**20:.0f} MiB (local JVM, driver + executor)"))
    print("\n| system | test accuracy | fit s | sparkxml time / theirs | memory |\n"
          "|---|---|---|---|---|")
    for name, acc, sec, mem in rows:
        print(f"| {name} | {100 * acc:.2f} % | {sec:.1f} | {ours / sec:.3f} | {mem} |")
        if res is not None:
            case = f"synthetic {n}x{d}, {T} trees depth {depth}: {name}"
            res.add(case, "test accuracy", 100 * acc, "%")
            res.add(case, "fit", sec, "s", note=f"memory {mem}")


def _heteroscedastic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 4))
    return X, 4 * X[:, 0] + 2 * np.sin(6 * X[:, 1]) + (0.2 + 2 * X[:, 0]) * rng.normal(size=n)


def part_quantile(spark, W, T, res=None):
    from quantile_forest import RandomForestQuantileRegressor
    from sklearn.datasets import load_diabetes

    from sparkxml import RandomForestRegressor

    qs = [0.1, 0.5, 0.9]

    def scores(y, pred):  # pinball per quantile, then the coverage of [q0.1, q0.9]
        d = y[:, None] - pred
        pin = np.maximum(np.array(qs) * d, (np.array(qs) - 1) * d).mean(axis=0)
        return np.append(pin, np.mean((y >= pred[:, 0]) & (y <= pred[:, 2])))

    X, y = _heteroscedastic(2000, 0)
    Xt, yt = _heteroscedastic(2000, 1)
    d = load_diabetes()
    order = np.random.default_rng(0).permutation(d.target.size)
    cut = int(0.7 * order.size)
    cases = {"heteroscedastic": (X, y, Xt, yt),
             "diabetes": (d.data[order[:cut]], d.target[order[:cut]], d.data[order[cut:]],
                          d.target[order[cut:]])}
    print(f"\n== quantile forests: {T} trees, depth 8, min leaf 5, all features "
          f"(mean over seeds 0-2; pinball at {qs}, coverage of [q0.1, q0.9])")
    for name, (A, b, At, bt) in cases.items():
        df = frame(spark, A, b, W)
        ours, theirs = [], []
        for seed in range(3):
            m = RandomForestRegressor(numTrees=T, maxDepth=8, minInstancesPerNode=5,
                                      featureSubsetStrategy="all", maxBins=4096, seed=seed,
                                      numWorkers=W, quantiles=qs).fit(df)
            ours.append(scores(bt, m.predictQuantiles(At)))
            qf = RandomForestQuantileRegressor(
                n_estimators=T, max_depth=8, min_samples_leaf=5, max_features=1.0,
                bootstrap=True, max_samples_leaf=None, random_state=seed, n_jobs=W).fit(A, b)
            theirs.append(scores(bt, qf.predict(At, quantiles=qs)))
        o, t = np.mean(ours, axis=0), np.mean(theirs, axis=0)
        for k, what in enumerate([f"pinball {q}" for q in qs] + ["coverage 0.1-0.9"]):
            spread = (f"seeds {np.min(ours, axis=0)[k]:.4f}-{np.max(ours, axis=0)[k]:.4f} vs "
                      f"{np.min(theirs, axis=0)[k]:.4f}-{np.max(theirs, axis=0)[k]:.4f}")
            print(f"{name:15s} {what:17s}: sparkxml {o[k]:.4f}  quantile-forest {t[k]:.4f}  "
                  f"ratio {o[k] / t[k]:.4f}  ({spread})")
            if res is not None:
                res.add(f"quantile forest: {name} {what}", "sparkxml / quantile-forest",
                        float(o[k] / t[k]), "", note=f"sparkxml {o[k]:.4f}, quantile-forest "
                        f"{t[k]:.4f}, {T} trees, {spread}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--criterion", default="gini", choices=["gini", "entropy"])
    ap.add_argument("--synthetic-rows", type=int, default=1_000_000)
    ap.add_argument("--synthetic-features", type=int, default=50)
    ap.add_argument("--synthetic-trees", type=int, default=50)
    ap.add_argument("--synthetic-depth", type=int, default=10)
    ap.add_argument("--mllib-synthetic-trees", type=int, default=5)
    ap.add_argument("--extra-trees", type=int, default=100)
    ap.add_argument("--quantile-trees", type=int, default=100)
    ap.add_argument("--categorical-rows", type=int, default=50_000)
    ap.add_argument("--categorical-trees", type=int, default=50)
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["exact", "missing", "constraints", "extra", "categorical",
                             "pendigits", "synthetic", "mllib", "sklearn", "quantile"])
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "sparkxml-bench"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    res = Results("forests")
    spark = session(master=f"local[{args.workers}]", app="forest-benchmark",
                    conf={"spark.driver.memory": "8g",
                          "spark.sql.shuffle.partitions": str(args.workers)}, log_level=None)
    try:
        if "exact" not in args.skip:
            part_exact(spark, args.workers, res)
        if "missing" not in args.skip:
            part_missing(spark, args.workers, res)
        if "constraints" not in args.skip:
            part_constraints(spark, args.workers, args.extra_trees, res)
        if "extra" not in args.skip:
            part_extra(spark, args.workers, args.extra_trees, "mllib" in args.skip, res)
        if "categorical" not in args.skip:
            part_categorical(spark, args.workers, args.categorical_trees, args.categorical_rows,
                             "mllib" in args.skip, res, f", load {os.getloadavg()[0]:.2f}")
        if "pendigits" not in args.skip:
            part_pendigits(spark, args.workers, args.trees, args.repeats, "mllib" in args.skip,
                           args.criterion, res)
        if "quantile" not in args.skip:
            part_quantile(spark, args.workers, args.quantile_trees, res)
        if "synthetic" not in args.skip:
            part_synthetic(spark, args.workers, args.synthetic_rows, args.synthetic_features,
                           args.synthetic_trees, args.synthetic_depth,
                           args.mllib_synthetic_trees, "mllib" in args.skip, args.workdir,
                           "sklearn" in args.skip, res)
    finally:
        spark.stop()
    res.write()


if __name__ == "__main__":
    main()
