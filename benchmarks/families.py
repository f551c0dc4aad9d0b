"""Every family beside its anchor, in one run: fit time, the ratio sparkxml / anchor, and the
quality metric of both.

    .venv/bin/python benchmarks/families.py [--repeats 3] [--only gbt forest ...]
                                            [--fastxml-cpp DIR]

One local[2] Spark session; the data sets of ../shared/data. sparkxml's fits are warm (an
untimed fit of each estimator first starts the Python workers and loads the kernels) and are
the median of ``--repeats``; the single-machine anchors too; Spark MLlib's fits run once.
The ratio is sparkxml's fit time over the anchor's (below 1: sparkxml is faster). Cases:

* ``gbt``: GBTClassifier on lightgbm_binary (7,000 rows, 100 trees, depth 6, maxBins 256,
  numWorkers 1) beside XGBoost's native ``hist`` on one thread; test AUC.
* ``gbt_categorical``: the GBT engine (one thread, no Spark) on Adult's 14 attributes as
  categorical features, 31-leaf trees, beside LightGBM on one thread; test AUC.
* ``lambdamart``: LambdaMART on lightgbm_rank (100 trees, depth 6, numWorkers 1) beside
  LightGBM lambdarank on one thread (its defaults: 31-leaf trees); test NDCG@10.
* ``linear``: LinearSVC on a9a (hinge, C = 1, no intercept, numWorkers 1) beside Spark
  MLlib's LinearSVC (100 iterations, local[2]) and liblinear ``-s 3``; primal objective.
* ``forest``: RandomForestClassifier on pendigits (100 trees, numWorkers 1 with nthread 2:
  the two cores MLlib's local[2] gets) beside Spark MLlib's (100 trees, local[2]) and
  scikit-learn's (two jobs); test accuracy.
* ``fm``: FMClassifier on a9a (MCMC, rank 8, 200 sweeps, numWorkers 1) beside myFM; test AUC.
* ``labeltree``: Parabel on Bibtex (3 trees, numWorkers 2) beside omikuji (2 threads); P@1.
* ``fastxml``: FastXML on Bibtex (50 trees) beside the authors' C++ ``-T 2``, with
  ``--fastxml-cpp`` (their binaries; not part of the project); P@1. Two rows: numWorkers 2
  (two tasks of 25 trees, each with its copy of the rows), and numWorkers 1 with nthread 2
  (one task, two threads: the shape of the C++'s one process with two threads).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import numpy as np
from _harness import Results, load_average, session
from small_fits import _frame

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
FAMILIES = ("gbt", "gbt_categorical", "lambdamart", "linear", "forest", "fm", "labeltree",
            "fastxml")


def median_time(fn, repeats):
    """(median seconds of ``repeats`` calls of ``fn``, the last call's result)."""
    secs, out = [], None
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        out = fn()
        secs.append(time.perf_counter() - t)
    return statistics.median(secs), out


def once(fn):
    return median_time(fn, 1)


def _auc(y, p):
    from sparkxml_kernels.gbt.metrics import auc_exact

    return float(auc_exact(np.asarray(y, np.float64), np.asarray(p, np.float64)))


def _probabilities(model, df):
    return np.array([r[0][1] for r in model.transform(df).select("probability").collect()])


# ------------------------------------------------------------------------------ cases
def case_gbt(spark, args):
    import xgboost as xgb

    from sparkxml import GBTClassifier

    def load(name):
        a = np.loadtxt(os.path.join(DATA, "lightgbm_binary", name))
        return a[:, 1:], a[:, 0]

    X, y = load("binary.train")
    Xt, yt = load("binary.test")
    train, test = _frame(spark, X, y, assembled=True), _frame(spark, Xt, yt, assembled=True)
    est = GBTClassifier(maxIter=100, maxDepth=6, stepSize=0.1, maxBins=256, numWorkers=1)
    est.fit(train)
    ours, model = median_time(lambda: est.fit(train), args.repeats)
    params = dict(objective="binary:logistic", tree_method="hist", max_depth=6, eta=0.1,
                  max_bin=256, nthread=1)
    theirs, bst = median_time(lambda: xgb.train(params, xgb.DMatrix(X, label=y, nthread=1),
                                                100), args.repeats)
    yt_spark = np.array([r[0] for r in test.select("label").collect()])
    return [("XGBoost 3 hist, 1 thread", ours, theirs, "test AUC",
             _auc(yt_spark, _probabilities(model, test)), _auc(yt, bst.predict(xgb.DMatrix(Xt))))]


def case_gbt_categorical(spark, args):
    import gbt_categorical as gc

    codes, _, y = gc.load_a9a("a9a")
    codes_t, _, yt = gc.load_a9a("a9a.t")
    cats = list(range(codes.shape[1]))
    gc.sparkxml_fit(codes, y, cats, 2, 256)  # kernels loaded outside the timing
    ours, (pred, _) = median_time(lambda: gc.sparkxml_fit(codes, y, cats, 100, 256),
                                  args.repeats)
    theirs, (m, _) = median_time(lambda: gc.lightgbm_fit(codes, y, cats, 100, 1, 256),
                                 args.repeats)
    return [("LightGBM 4, 1 thread", ours, theirs, "test AUC",
             _auc(yt, pred.predict(codes_t)[:, 1]), _auc(yt, m.predict(codes_t)))]


def case_lambdamart(spark, args):
    from types import SimpleNamespace

    import lambdamart_rank as lr

    from sparkxml import LambdaMART
    from sparkxml.datasets import read_svmlight

    folder = os.path.join(DATA, "lightgbm_rank")
    train = read_svmlight(spark, os.path.join(folder, "rank.train"),
                          os.path.join(folder, "rank.train.query")).cache()
    test = read_svmlight(spark, os.path.join(folder, "rank.test"),
                         os.path.join(folder, "rank.test.query"), num_features=300).cache()
    train.count(), test.count()
    est = LambdaMART(maxIter=100, maxDepth=6, stepSize=0.1, numWorkers=1)
    est.fit(train)
    ours, model = median_time(lambda: est.fit(train), args.repeats)
    out = model.transform(test).select("qid", "label", "prediction").toPandas()
    ours_ndcg = lr.ndcgs(out["prediction"].to_numpy(), out["label"].to_numpy(),
                         out["qid"].to_numpy())[lr.KS.index(10)]
    tr, te = lr.load(folder)
    ns = SimpleNamespace(step=0.1, threads=1, iters=100, depth=6)
    runs = [lr.run_lightgbm(ns, tr, te) for _ in range(max(1, args.repeats))]
    theirs, p = statistics.median(fit for _, fit in runs), runs[-1][0]  # fits without predict
    theirs_ndcg = lr.ndcgs(p, te[0], te[1])[lr.KS.index(10)]
    return [("LightGBM 4 lambdarank, 1 thread", ours, theirs, "test NDCG@10", ours_ndcg,
             theirs_ndcg)]


def case_linear(spark, args):
    import linear_svm as ls
    from pyspark.ml.classification import LinearSVC as MLlibSVC

    from sparkxml import LinearSVC
    from sparkxml.datasets import from_csr

    X, y = ls.load(os.path.join(DATA, "a9a", "a9a"), 123)
    y01 = (y > 0).astype(int)
    tr = from_csr(spark, X.indptr, X.indices, X.data, 123, columns={"label": y01.astype(float)},
                  numPartitions=2).cache()
    tr.count()
    est = LinearSVC(fitIntercept=False, maxIter=100, standardization=False, numWorkers=1)
    est.fit(tr)
    ours, m = median_time(lambda: est.fit(tr), args.repeats)
    p_ours = ls.primal(X, y01, m.coefficients.toArray(), "hinge")
    mllib = MLlibSVC(regParam=1.0 / X.shape[0], maxIter=100, fitIntercept=False,
                     standardization=False, tol=1e-6)
    t_ml, mm = once(lambda: mllib.fit(tr))
    w_ll, t_ll = ls.liblinear_fit(X, y01, "-s 3 -c 1")
    return [("Spark MLlib LinearSVC, 100 iterations, local[2]", ours, t_ml, "primal (lower "
             "is better)", p_ours, ls.primal(X, y01, mm.coefficients.toArray(), "hinge")),
            ("liblinear -s 3, 1 thread", ours, t_ll, "primal (lower is better)", p_ours,
             ls.primal(X, y01, w_ll, "hinge"))]


def case_forest(spark, args):
    from forests import accuracy, frame
    from pyspark.ml.classification import RandomForestClassifier as MLlibRF
    from sklearn.datasets import load_svmlight_file
    from sklearn.ensemble import RandomForestClassifier as SkRF

    from sparkxml import RandomForestClassifier

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    Xt, yt = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits.t"), n_features=16)
    X, Xt, y, yt = X.toarray(), Xt.toarray(), y - 1, yt - 1
    train, test = frame(spark, X, y, 2), frame(spark, Xt, yt, 2)
    est = RandomForestClassifier(numTrees=100, maxDepth=64, numWorkers=1, nthread=2, seed=0,
                                 featureSubsetStrategy="sqrt")
    est.copy().setNumTrees(3).fit(train)
    ours, model = median_time(lambda: est.fit(train), args.repeats)
    acc = accuracy(model, test)
    t_ml, ml = once(lambda: MLlibRF(numTrees=100, maxDepth=30, maxBins=128,
                                    featureSubsetStrategy="sqrt", seed=0).fit(train))
    t_sk, sk = median_time(lambda: SkRF(n_estimators=100, n_jobs=2, random_state=0).fit(X, y),
                           args.repeats)
    return [("Spark MLlib RandomForestClassifier, local[2]", ours, t_ml, "test accuracy",
             acc, accuracy(ml, test)),
            ("scikit-learn RandomForestClassifier, 2 jobs", ours, t_sk, "test accuracy", acc,
             float((sk.predict(Xt) == yt).mean()))]


def case_fm(spark, args):
    from types import SimpleNamespace

    import fm as fmb
    import myfm

    from sparkxml import FMClassifier

    Xtr, ytr, Xte, yte, train, test = fmb.load_a9a(SimpleNamespace(a9a=os.path.join(DATA,
                                                                                  "a9a")), spark)
    FMClassifier(maxIter=6, burnIn=1, numWorkers=1).fit(train.limit(500))
    ours, m = median_time(lambda: FMClassifier(maxIter=200, numWorkers=1, seed=0).fit(train),
                          args.repeats)
    theirs, ref = median_time(lambda: myfm.MyFMClassifier(rank=8, random_seed=0).fit(
        Xtr, ytr.astype(int), n_iter=200), args.repeats)
    return [("myFM 0.4 MCMC, rank 8, 200 sweeps", ours, theirs, "test AUC",
             _auc(yte, _probabilities(m, test)), _auc(yte, ref.predict_proba(Xte)))]


@contextlib.contextmanager
def _quiet_stderr():
    """Native libraries' progress bars (omikuji draws one per example) off the output."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _bibtex(spark):
    from sparkxml.datasets import read_xc

    paths = [os.path.join(DATA, "bibtex", "xc_split", f"bibtex_{s}.txt")
             for s in ("train", "test")]
    train, test = (read_xc(spark, p).cache() for p in paths)
    train.count(), test.count()
    return paths, train, test


def _p_at_1(pred_lists, test):
    truth = [set(r[0]) for r in test.select("labels").collect()]
    return float(np.mean([len(p) > 0 and p[0] in t for p, t in zip(pred_lists, truth)]))


def case_labeltree(spark, args):
    import omikuji

    from sparkxml import Parabel

    (train_path, _), train, test = _bibtex(spark)
    Parabel(numTrees=1, numWorkers=2).fit(train)
    ours, model = median_time(lambda: Parabel(numWorkers=2).fit(train), args.repeats)
    p_ours = _p_at_1([r[0] for r in model.transform(test).select("prediction").collect()], test)
    hp = omikuji.Model.default_hyper_param()
    with _quiet_stderr():
        theirs, om = median_time(lambda: omikuji.Model.train_on_data(train_path, hp,
                                                                     n_threads=2), args.repeats)
    rows = test.select("features").collect()
    pred = [[lab for lab, _ in om.predict(list(zip(r[0].indices.tolist(),
                                                   r[0].values.tolist())), top_k=1)]
            for r in rows]
    return [("omikuji 0.5, 2 threads", ours, theirs, "test P@1", p_ours, _p_at_1(pred, test))]


def case_fastxml(spark, args):
    from fastxml_bibtex import run_cpp

    from sparkxml import FastXML

    if not args.fastxml_cpp:
        return [("the authors' C++ -T 2: not run (no --fastxml-cpp)", None, None, "test P@1",
                 None, None)]
    (train_path, test_path), train, test = _bibtex(spark)
    shapes = (("numWorkers 2", dict(numWorkers=2)),
              ("numWorkers 1, nthread 2", dict(numWorkers=1, nthread=2)))
    fits = []
    for name, kw in shapes:
        FastXML(numTrees=2, rowOrder="input", **kw).fit(train)
        ours, model = median_time(lambda kw=kw: FastXML(rowOrder="input", **kw).fit(train),
                                  args.repeats)
        pred = [r[0] for r in model.transform(test).select("prediction").collect()]
        fits.append((name, ours, _p_at_1(pred, test)))
    cpp = run_cpp(args.fastxml_cpp, train_path, test_path, repeats=args.repeats)
    p_cpp = _p_at_1(cpp["pred"], test)
    return [(f"the authors' C++, -T 2 (sparkxml {name})", ours, cpp["fit"], "test P@1", p_ours,
             p_cpp) for name, ours, p_ours in fits]


CASES = {"gbt": ("GBTClassifier, lightgbm_binary", case_gbt),
         "gbt_categorical": ("GBT engine, Adult categorical", case_gbt_categorical),
         "lambdamart": ("LambdaMART, lightgbm_rank", case_lambdamart),
         "linear": ("LinearSVC, a9a", case_linear),
         "forest": ("RandomForestClassifier, pendigits", case_forest),
         "fm": ("FMClassifier, a9a", case_fm),
         "labeltree": ("Parabel, Bibtex", case_labeltree),
         "fastxml": ("FastXML, Bibtex", case_fastxml)}


def _num(v, fmt):
    return "" if v is None else format(v, fmt)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=FAMILIES, default=list(FAMILIES))
    ap.add_argument("--fastxml-cpp", default=None,
                    help="directory of the authors' fastXML_train / fastXML_predict")
    args = ap.parse_args(argv)
    res = Results("families")
    spark = session(master="local[2]", app="families-bench",
                    conf={"spark.sql.shuffle.partitions": "4"})
    rows = []
    try:
        for key in args.only:
            name, fn = CASES[key]
            l0 = load_average()[0]
            for anchor, ours, theirs, metric, m_ours, m_theirs in fn(spark, args):
                ratio = None if ours is None else ours / theirs
                rows.append((name, anchor, ours, theirs, ratio, metric, m_ours, m_theirs, l0))
                if ours is not None:
                    case = f"{name}: beside {anchor}"
                    res.add(case, "sparkxml fit", ours, "s", note=f"median of {args.repeats}")
                    res.add(case, "anchor fit", theirs, "s")
                    res.add(case, "fit ratio sparkxml / anchor", ratio)
                    res.add(case, f"sparkxml {metric}", m_ours)
                    res.add(case, f"anchor {metric}", m_theirs)
                print(f"{name} | {anchor} | {_num(ours, '.3f')} s | {_num(theirs, '.3f')} s | "
                      f"{_num(ratio, '.3f')}", flush=True)
    finally:
        spark.stop()
    print(f"\n=== every family beside its anchor (load average {load_average()[0]:.2f} at the "
          f"end) ===\n")
    print("| family, data | anchor | sparkxml fit s | anchor fit s | sparkxml / anchor | "
          "metric | sparkxml | anchor | load before |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, anchor, ours, theirs, ratio, metric, m_ours, m_theirs, l0 in rows:
        print(f"| {name} | {anchor} | {_num(ours, '.3f')} | {_num(theirs, '.3f')} | "
              f"{_num(ratio, '.3f')} | {metric} | {_num(m_ours, '.4f')} | "
              f"{_num(m_theirs, '.4f')} | {l0:.2f} |")
    res.write()


if __name__ == "__main__":
    main()
