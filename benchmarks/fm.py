"""Factorization machines beside myFM and Spark MLlib, in one run.

    python benchmarks/fm.py [--a9a ../shared/data/a9a] [--workers 1 2] [--iters 200]
                            [--ratings PATH [--test-fraction 0.1] [--rank 10]]
                            [--generated] [--movielens DIR] [--skip-mllib] [--seed 0]
                            [--skip-ffm | --ffm-only] [--ffm-iters 15]
                            [--ffm-solver adagrad [als mcmc]] [--ffm-reg 0.001]
                            [--bpr [--skip-a9a] [--bpr-iters 30] [--bpr-negatives 1]]
                            [--relation [--relation-rows 1000000] [--relation-spark]]

a9a (LIBSVM's binarised UCI Adult, labels -1/+1 mapped to 0/1), rank 8:

* ``myFM`` 0.4 ``MyFMClassifier`` (Gibbs sampling, probit), ``--iters`` sweeps, its default of
  keeping all samples but the first 5, one thread;
* ``sparkxml FMClassifier`` -- defaults (solver "mcmc", the same sweeps and burn-in), Spark
  local[2] with ``numWorkers`` barrier tasks (``--workers``), and the ``als`` / ``adamw``
  solvers at their default settings;
* ``Spark MLlib FMClassifier`` -- factorSize 8, maxIter 100, its other defaults (adamW,
  stepSize 1.0, full batch), and stepSize 0.1;
* ``sparkxml GBFMClassifier`` on a9a's 14 attribute fields (defaults: 100 stages), with the
  chosen field pairs printed.

Ratings (``--ratings PATH``: ``user,item,rating[,timestamp]`` CSV/TSV with or without a
header, or MovieLens ``user::item::rating::timestamp``; ``--generated`` uses
``sparkxml.synthetic.make_ratings`` instead): a random ``--test-fraction`` split (seed), users
and items one-hot encoded into two fields by ``FieldEncoder`` (unseen ids in the test set get
no feature, for every engine); RMSE of ``myFM MyFMRegressor`` (rank ``--rank``, ``--iters``
sweeps, ``group_shapes`` = the two fields), ``sparkxml FMRegressor`` (mcmc, the same rank,
sweeps and per-field hyper-priors; ``thinning`` raised on large data so that the kept samples
stay under ~256 MB) and ``Spark MLlib FMRegressor`` (factorSize = rank, ``--mllib-iters``
iterations (100), stepSize 0.01, regParam 0.01).

MovieLens 100K with context (``--movielens DIR``: the ``ml-100k`` folder, kept outside the
repository: its terms forbid redistribution), the ``ua`` split (ua.base / ua.test, 10 test
ratings per user): six fields, user and item one-hot, the user's age band (<18, 18-24, 25-34,
35-44, 45-49, 50-55, 56+), sex and occupation, and the item's genres (multi-hot, 19). RMSE of
``myFM MyFMRegressor`` (rank 8, ``--iters`` sweeps, ``group_shapes`` = the fields), ``sparkxml
FMRegressor`` (mcmc, rank 8, the same sweeps, ``fieldStarts``), ``sparkxml GBFMRegressor``
(defaults: boosting selects the pairs, at most 100 stages of rank 8, then the joint MCMC fit of
the selected pairs, ``--iters`` sweeps; and ``jointFit="none"``, the boosted stages alone) and
``Spark MLlib FMRegressor`` (as for the ratings); the pairs GBFM chose are printed.

FFM part (``--skip-ffm`` leaves it out, ``--ffm-only`` runs only it): on a9a with its 14
attribute fields, test log loss and AUC of ``sparkxml FFMClassifier`` (libffm's defaults:
adagrad, k 4, eta 0.2, lambda 2e-5, instance normalisation, ``--ffm-iters`` epochs; with and
without the intercept and linear terms, the latter being libffm's model) for each
``--workers`` (the models are compared bit for bit), beside ``sparkxml FMClassifier`` (mcmc,
rank 8, ``--iters`` sweeps, the same 14 fields as its hyper-prior groups); on the ratings
(``--ratings`` / ``--generated``), test RMSE of ``FFMRegressor`` (the user and item fields;
for each ``--ffm-solver``: adagrad with its defaults and ``--ffm-iters`` epochs, als with
``regParam`` ``--ffm-reg`` and mcmc, both k 4 and ``--iters`` sweeps) beside ``FMRegressor``
(mcmc, rank ``--rank``).
Implicit feedback (``--bpr``): ``sparkxml FMRanker`` (BPR loss) beside ``Spark MLlib ALS``
(``implicitPrefs=True``, rank ``--rank``, its defaults otherwise: maxIter 10, regParam 0.1,
alpha 1.0) on the same split, every positive as a (user, item) pair with rating 1. Data: the
MovieLens 100K ``u.data`` ratings >= 4 as positives when ``--movielens DIR`` is given (kept
outside the repository), otherwise generated implicit data with planted rank-8 taste and item
popularity (``planted_implicit``). Per user, a random 20 % of its positives (seed) is held out.
NDCG@10 and recall@10 of ``recommendForAllUsers`` (``sparkxml.evaluation.
recommendation_metrics``, averaged over the test users) twice: over all items (both engines
exclude nothing by default) and with each user's training items removed from its list.

Relation blocks (``--relation``): ``benchmarks/fm_relation.py`` (kernel level, no Spark).

Fit time is the wall time of the ``fit`` call (sparkxml: checks job + barrier stage; MLlib:
its jobs), after a warm-up fit on a small slice that starts the Python workers and loads the
numba cache. Test metrics are computed here with scikit-learn for every engine.
"""
from __future__ import annotations

import argparse
import functools
import os
import time

import numpy as np
from _harness import Results, session
from fm_relation import add_arguments as add_relation_arguments
from fm_relation import bench_relation

HERE = os.path.dirname(os.path.abspath(__file__))
A9A = os.path.join(HERE, "..", "..", "shared", "data", "a9a")
A9A_FIELDS = [0, 5, 13, 18, 34, 39, 46, 60, 66, 71, 73, 75, 77, 82]
A9A_NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
             "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
             "hours-per-week", "native-country"]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def row(name, metric, fit, ref, res=None, what="metric", data=""):
    ratio = f"{fit / ref:.2f}" if ref else "-"
    if res is not None:  # recorded for docs/benchmarks.rst (benchmarks/_harness.py)
        res.add(f"{data}{name}", what, metric)
        res.add(f"{data}{name}", "fit", fit, "s")
    return f"| {name} | {metric:.4f} | {fit:.1f} | {ratio} |"


# --------------------------------------------------------------------------- a9a
def load_a9a(args, spark):
    """a9a's train and test rows (labels 0/1) as CSR and as cached DataFrames."""
    from sklearn.datasets import load_svmlight_file

    from sparkxml.datasets import from_csr

    Xtr, ytr = load_svmlight_file(os.path.join(args.a9a, "a9a"), n_features=123)
    Xte, yte = load_svmlight_file(os.path.join(args.a9a, "a9a.t"), n_features=123)
    ytr, yte = (ytr > 0).astype(float), (yte > 0).astype(float)
    train = from_csr(spark, Xtr.indptr, Xtr.indices, Xtr.data, 123,
                     columns={"label": ytr}).cache()
    test = from_csr(spark, Xte.indptr, Xte.indices, Xte.data, 123,
                    columns={"label": yte}).cache()
    train.count(), test.count()
    return Xtr, ytr, Xte, yte, train, test


def bench_a9a(args, spark, res=None):
    import myfm
    from pyspark.ml.classification import FMClassifier as MLlibFM
    from sklearn.metrics import roc_auc_score

    from sparkxml import FMClassifier, GBFMClassifier

    Xtr, ytr, Xte, yte, train, test = load_a9a(args, spark)
    rows = []
    add = functools.partial(row, res=res, what="test AUC", data="a9a rank 8: ")

    def auc_of(model):
        p = np.array([r[0][1] for r in model.transform(test).select("probability").collect()])
        return roc_auc_score(yte, p)

    ref, t_ref = timed(lambda: myfm.MyFMClassifier(rank=8, random_seed=args.seed).fit(
        Xtr, ytr.astype(int), n_iter=args.iters))
    auc_ref = roc_auc_score(yte, ref.predict_proba(Xte))
    rows.append(add(f"myFM MCMC ({args.iters} sweeps)", auc_ref, t_ref, t_ref))
    FMClassifier(maxIter=6, burnIn=1, numWorkers=max(args.workers)).fit(train.limit(500))
    fm_auc = None
    for nw in args.workers:
        m, t = timed(lambda: FMClassifier(maxIter=args.iters, numWorkers=nw,
                                          seed=args.seed).fit(train))
        a = auc_of(m)
        fm_auc = a if fm_auc is None else fm_auc
        rows.append(add(f"sparkxml FMClassifier mcmc, numWorkers={nw}", a, t, t_ref))
    for solver in ("als", "adamw"):
        m, t = timed(lambda: FMClassifier(solver=solver, maxIter=100 if solver == "als" else 20,
                                          numWorkers=args.workers[0]).fit(train))
        hist = m.summary.history
        sweeps = len(hist.get("objective") or hist.get("loss") or [])
        rows.append(add(f"sparkxml FMClassifier {solver} (defaults, {sweeps} "
                        f"{'epochs' if solver == 'adamw' else 'sweeps'})", auc_of(m), t, t_ref))
    m, t = timed(lambda: GBFMClassifier(fieldStarts=A9A_FIELDS,
                                        numWorkers=args.workers[0]).fit(train))
    gb_auc = auc_of(m)
    rows.append(add("sparkxml GBFMClassifier (14 fields, 100 stages)", gb_auc, t, t_ref))
    pairs = [(A9A_NAMES[s["fields"][0]], A9A_NAMES[s["fields"][1]]) for s in m.stages]
    if not args.skip_mllib:
        for step in (1.0, 0.1):
            m, t = timed(lambda: MLlibFM(factorSize=8, maxIter=100, stepSize=step,
                                         seed=args.seed).fit(train))
            rows.append(add(f"Spark MLlib FMClassifier (adamW, stepSize {step})", auc_of(m), t,
                            t_ref))
    print("\na9a, rank 8 (test AUC; fit s; fit / myFM)\n")
    print("| engine | test AUC | fit s | time / myFM |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nGBFM AUC - FM AUC = {gb_auc - fm_auc:+.4f}")
    print("GBFM field pairs, first 20 stages:", pairs[:20])
    uniq = sorted({tuple(sorted(p)) for p in pairs})
    print(f"distinct pairs over all {len(pairs)} stages ({len(uniq)}):", uniq)


# --------------------------------------------------------------------------- FFM
def _same_model(a, b) -> bool:
    x, y = a.predictor.to_arrays(), b.predictor.to_arrays()
    return sorted(x) == sorted(y) and all(np.array_equal(x[k], y[k]) for k in x)


def bench_ffm_a9a(args, spark, res=None):
    """FFM beside FM on a9a's 14 attribute fields: test log loss and AUC."""
    from sklearn.metrics import log_loss, roc_auc_score

    from sparkxml import FFMClassifier, FMClassifier

    Xtr, ytr, Xte, yte, train, test = load_a9a(args, spark)
    lines = []

    def add(name, model, t):
        p = np.array([r[0][1] for r in model.transform(test).select("probability").collect()])
        ll, auc = log_loss(yte, np.clip(p, 1e-15, 1 - 1e-15)), roc_auc_score(yte, p)
        if res is not None:
            res.add(f"a9a 14 fields: {name}", "test log loss", ll)
            res.add(f"a9a 14 fields: {name}", "test AUC", auc)
            res.add(f"a9a 14 fields: {name}", "fit", t, "s")
        lines.append(f"| {name} | {ll:.4f} | {auc:.4f} | {t:.1f} |")

    FFMClassifier(fieldStarts=A9A_FIELDS, maxIter=1,
                  numWorkers=max(args.workers)).fit(train.limit(500))  # warm-up
    first = None
    for nw in args.workers:
        m, t = timed(lambda: FFMClassifier(fieldStarts=A9A_FIELDS, maxIter=args.ffm_iters,
                                           numWorkers=nw, seed=args.seed).fit(train))
        add(f"sparkxml FFMClassifier adagrad k 4, {args.ffm_iters} epochs, numWorkers={nw}",
            m, t)
        if first is None:
            first = m
        else:
            print(f"FFM numWorkers={nw} model == numWorkers={args.workers[0]} model, bit for "
                  f"bit: {_same_model(m, first)}")
    m, t = timed(lambda: FFMClassifier(fieldStarts=A9A_FIELDS, maxIter=args.ffm_iters,
                                       fitIntercept=False, fitLinear=False,
                                       numWorkers=args.workers[0], seed=args.seed).fit(train))
    add(f"sparkxml FFMClassifier as libffm (no w0, w), {args.ffm_iters} epochs", m, t)
    m, t = timed(lambda: FMClassifier(maxIter=args.iters, fieldStarts=A9A_FIELDS,
                                      numWorkers=args.workers[0], seed=args.seed).fit(train))
    add(f"sparkxml FMClassifier mcmc rank 8, {args.iters} sweeps, field priors", m, t)
    print("\na9a, 14 attribute fields: FFM beside FM (test log loss; test AUC; fit s)\n")
    print("| model | test log loss | test AUC | fit s |\n|---|---|---|---|")
    print("\n".join(lines))


def bench_ffm_ratings(args, spark, train, test, enc, res=None, src=""):
    """FFM beside FM on the ratings' user and item fields: test RMSE."""
    from sparkxml import FFMRegressor, FMRegressor

    def rmse(model):
        out = model.transform(test).select("prediction", "rating").toPandas()
        return float(np.sqrt(np.mean((out["prediction"] - out["rating"]) ** 2)))

    lines = []
    ffm = {"adagrad": (f"adagrad k 4, {args.ffm_iters} epochs", {"maxIter": args.ffm_iters}),
           "als": (f"als k 4, regParam {args.ffm_reg}, {args.iters} sweeps",
                   {"maxIter": args.iters, "regParam": args.ffm_reg}),
           "mcmc": (f"mcmc k 4, {args.iters} sweeps", {"maxIter": args.iters})}
    runs = [(f"sparkxml FFMRegressor {ffm[s][0]}",
             FFMRegressor(labelCol="rating", fieldStarts=enc.fieldStarts, solver=s,
                          numWorkers=args.workers[0], seed=args.seed, **ffm[s][1]))
            for s in args.ffm_solver]
    for name, est in runs + [
            (f"sparkxml FMRegressor mcmc rank {args.rank}, {args.iters} sweeps",
             FMRegressor(labelCol="rating", factorSize=args.rank, maxIter=args.iters,
                         fieldStarts=enc.fieldStarts, numWorkers=args.workers[0],
                         seed=args.seed))]:
        m, t = timed(lambda: est.fit(train))
        r = rmse(m)
        if res is not None:
            res.add(f"ratings {src}: {name}", "test RMSE", r)
            res.add(f"ratings {src}: {name}", "fit", t, "s")
        lines.append(f"| {name} | {r:.4f} | {t:.1f} |")
    print(f"\nratings {src}: FFM beside FM on the user and item fields (test RMSE; fit s)\n")
    print("| model | test RMSE | fit s |\n|---|---|---|")
    print("\n".join(lines))


# --------------------------------------------------------------------------- ratings
def read_ratings(path):
    """(users, items, ratings) from CSV/TSV (header optional) or MovieLens '::' files."""
    import pandas as pd

    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    if "::" in first:
        df = pd.read_csv(path, sep=":", header=None, engine="c", dtype=str)
        df = df.iloc[:, [0, 2, 4]]
    else:
        sep = "\t" if "\t" in first else ("," if "," in first else r"\s+")
        head = first.replace("\t", ",").split(",")[:3] if sep != r"\s+" else first.split()[:3]
        try:
            float(head[2])
            header = None
        except (ValueError, IndexError):
            header = 0
        df = pd.read_csv(path, sep=sep, header=header, dtype=str,
                         engine="c" if sep != r"\s+" else "python").iloc[:, :3]
    df.columns = ["user", "item", "rating"]
    return (df["user"].to_numpy(str), df["item"].to_numpy(str),
            df["rating"].astype(float).to_numpy())


def bench_ratings(args, spark, res=None):
    import myfm
    import scipy.sparse as sp
    from pyspark.ml.regression import FMRegressor as MLlibFMR

    from sparkxml import FieldEncoder, FMRegressor

    if args.generated:
        from sparkxml.synthetic import make_ratings

        cols, r, _ = make_ratings(args.generated_rows, seed=args.seed)
        users, items = cols["user"].astype(str), cols["item"].astype(str)
        src = f"generated (make_ratings, {args.generated_rows} rows, noise 0.3)"
    else:
        users, items, r = read_ratings(args.ratings)
        src = args.ratings
    n = len(r)
    rng = np.random.default_rng(args.seed)
    is_test = rng.random(n) < args.test_fraction
    import pandas as pd

    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    df = spark.createDataFrame(pd.DataFrame({"user": users, "item": items, "rating": r,
                                             "test": is_test})).repartition(4).cache()
    df.count()
    tr, te = df.filter("not test"), df.filter("test")
    enc = FieldEncoder(inputCols=["user", "item"]).fit(tr)
    train = enc.transform(tr).select("features", "rating").cache()
    test = enc.transform(te).select("features", "rating").cache()
    train.count(), test.count()
    # the same one-hot matrices for myFM, from the encoder's vocabulary (unseen -> no feature)
    voc = enc.vocabulary

    def csr(mask):
        ip, ix, dv, _ = voc.encode([users[mask], items[mask]])
        return sp.csr_matrix((dv, ix, ip), shape=(int(mask.sum()), voc.n_features))

    if args.ffm_only:
        bench_ffm_ratings(args, spark, train, test, enc, res, src)
        return
    Xtr, Xte = csr(~is_test), csr(is_test)
    ytr, yte = r[~is_test], r[is_test]
    shapes = np.diff(voc.field_starts).tolist()
    # MCMC models keep their samples (float32): thin so that they stay under ~256 MB
    kept = args.iters - 5
    thinning = max(1, int(np.ceil(kept * voc.n_features * (args.rank + 1) * 4 / (256 << 20))))
    rows = []
    add = functools.partial(row, res=res, what="test RMSE", data=f"ratings {src}: ")

    def rmse_spark(model):
        out = model.transform(test).select("prediction", "rating").toPandas()
        return float(np.sqrt(np.mean((out["prediction"] - out["rating"]) ** 2)))

    ref, t_ref = timed(lambda: myfm.MyFMRegressor(rank=args.rank, random_seed=args.seed).fit(
        Xtr, ytr, n_iter=args.iters, group_shapes=shapes))
    rm_ref = float(np.sqrt(np.mean((ref.predict(Xte) - yte) ** 2)))
    rows.append(add(f"myFM MCMC (rank {args.rank}, {args.iters} sweeps)", rm_ref, t_ref, t_ref))
    FMRegressor(labelCol="rating", maxIter=6, burnIn=1,
                numWorkers=max(args.workers)).fit(train.limit(500))
    for nw in args.workers:
        m, t = timed(lambda: FMRegressor(labelCol="rating", factorSize=args.rank,
                                         maxIter=args.iters, fieldStarts=enc.fieldStarts,
                                         thinning=thinning, numWorkers=nw,
                                         seed=args.seed).fit(train))
        rows.append(add(f"sparkxml FMRegressor mcmc, numWorkers={nw}"
                        + (f", thinning {thinning}" if thinning > 1 else ""), rmse_spark(m), t,
                        t_ref))
    if not args.skip_mllib:
        m, t = timed(lambda: MLlibFMR(labelCol="rating", factorSize=args.rank,
                                      maxIter=args.mllib_iters, stepSize=0.01, regParam=0.01,
                                      seed=args.seed).fit(train))
        rows.append(add(f"Spark MLlib FMRegressor (adamW, {args.mllib_iters} iterations, "
                        f"stepSize 0.01, regParam 0.01)", rmse_spark(m), t, t_ref))
    print(f"\nratings: {src}: {int((~is_test).sum())} train / {int(is_test.sum())} test rows, "
          f"{shapes[0]} users, {shapes[1]} items (test RMSE; fit s; fit / myFM)\n")
    print("| engine | test RMSE | fit s | time / myFM |\n|---|---|---|---|")
    print("\n".join(rows))
    if not args.skip_ffm:
        bench_ffm_ratings(args, spark, train, test, enc, res, src)


MOVIELENS_FIELDS = ["user", "item", "age band", "sex", "occupation", "genre"]


def read_movielens(folder):
    """(train CSR, train ratings, test CSR, test ratings, field starts) of ml-100k's ua split
    with the user's age band, sex and occupation and the item's genres."""
    import pandas as pd
    import scipy.sparse as sp

    users = pd.read_csv(os.path.join(folder, "u.user"), sep="|", header=None,
                        names=["u", "age", "sex", "occ", "zip"])
    items = pd.read_csv(os.path.join(folder, "u.item"), sep="|", header=None,
                        encoding="latin-1")
    genres = items.iloc[:, 5:24].to_numpy(float)
    band = np.digitize(users["age"].to_numpy(), [18, 25, 35, 45, 50, 56])
    sex = (users["sex"] == "F").astype(int).to_numpy()
    occs = sorted(users["occ"].unique())
    occ = np.searchsorted(occs, users["occ"].to_numpy())
    sizes = [len(users), len(items), 7, 2, len(occs), genres.shape[1]]
    fs = np.concatenate([[0], np.cumsum(sizes)])[:-1]

    def encode(name):
        df = pd.read_csv(os.path.join(folder, name), sep="\t", header=None,
                         names=["u", "i", "r", "t"])
        u, i = df["u"].to_numpy() - 1, df["i"].to_numpy() - 1
        n = len(df)
        rows, cols = [], []
        for idx, off in ((u, fs[0]), (i, fs[1]), (band[u], fs[2]), (sex[u], fs[3]),
                         (occ[u], fs[4])):
            rows.append(np.arange(n))
            cols.append(idx + off)
        gr, gc = np.nonzero(genres[i])
        rows.append(gr)
        cols.append(gc + fs[5])
        r, c = np.concatenate(rows), np.concatenate(cols)
        X = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, int(sum(sizes))))
        X.sort_indices()
        return X, df["r"].to_numpy(float)

    Xtr, ytr = encode("ua.base")
    Xte, yte = encode("ua.test")
    return Xtr, ytr, Xte, yte, [int(x) for x in fs]


def movielens_frames(args, spark):
    """MovieLens 100K ua with context (``read_movielens``) and its train / test DataFrames
    (vector ``features``, ``rating``), cached and counted."""
    from sparkxml.datasets import from_csr

    Xtr, ytr, Xte, yte, fs = read_movielens(args.movielens)
    d = Xtr.shape[1]
    train = from_csr(spark, Xtr.indptr, Xtr.indices, Xtr.data, d,
                     columns={"rating": ytr}).cache()
    test = from_csr(spark, Xte.indptr, Xte.indices, Xte.data, d,
                    columns={"rating": yte}).cache()
    train.count(), test.count()
    return Xtr, ytr, Xte, yte, fs, train, test


def bench_movielens(args, spark, res=None):
    import myfm
    from pyspark.ml.regression import FMRegressor as MLlibFMR

    from sparkxml import FMRegressor, GBFMRegressor

    Xtr, ytr, Xte, yte, fs, train, test = movielens_frames(args, spark)
    d = Xtr.shape[1]
    rows = []
    add = functools.partial(row, res=res, what="test RMSE", data="MovieLens 100K ua context: ")

    def rmse_spark(model):
        out = model.transform(test).select("prediction", "rating").toPandas()
        return float(np.sqrt(np.mean((out["prediction"] - out["rating"]) ** 2)))

    shapes = np.diff(fs + [d]).tolist()
    ref, t_ref = timed(lambda: myfm.MyFMRegressor(rank=8, random_seed=args.seed).fit(
        Xtr, ytr, n_iter=args.iters, group_shapes=shapes))
    rows.append(add(f"myFM MCMC (rank 8, {args.iters} sweeps)",
                    float(np.sqrt(np.mean((ref.predict(Xte) - yte) ** 2))), t_ref, t_ref))
    nw = args.workers[0]
    FMRegressor(labelCol="rating", maxIter=6, burnIn=1, numWorkers=nw).fit(train.limit(500))
    m, t = timed(lambda: FMRegressor(labelCol="rating", factorSize=8, maxIter=args.iters,
                                     fieldStarts=fs, numWorkers=nw, seed=args.seed).fit(train))
    fm_rmse = rmse_spark(m)
    rows.append(add(f"sparkxml FMRegressor mcmc (rank 8), numWorkers={nw}", fm_rmse, t, t_ref))
    m, t = timed(lambda: GBFMRegressor(labelCol="rating", fieldStarts=fs, jointIter=args.iters,
                                       numWorkers=nw, seed=args.seed).fit(train))
    gb_rmse = rmse_spark(m)
    rows.append(add(f"sparkxml GBFMRegressor defaults (pairs selected by boosting, joint MCMC "
                    f"fit, {args.iters} sweeps), numWorkers={nw}", gb_rmse, t, t_ref))
    pairs = [(MOVIELENS_FIELDS[s["fields"][0]], MOVIELENS_FIELDS[s["fields"][1]])
             for s in m.stages]
    if not args.skip_mllib:
        m, t = timed(lambda: MLlibFMR(labelCol="rating", factorSize=8,
                                      maxIter=args.mllib_iters, stepSize=0.01, regParam=0.01,
                                      seed=args.seed).fit(train))
        rows.append(add(f"Spark MLlib FMRegressor (adamW, {args.mllib_iters} iterations, "
                        f"stepSize 0.01, regParam 0.01)", rmse_spark(m), t, t_ref))
    m, t = timed(lambda: GBFMRegressor(labelCol="rating", fieldStarts=fs, jointFit="none",
                                       numWorkers=nw, seed=args.seed).fit(train))
    rows.append(add(f"sparkxml GBFMRegressor jointFit none (100 boosted stages), "
                    f"numWorkers={nw}", rmse_spark(m), t, t_ref))
    print(f"\nMovieLens 100K ua with context: {Xtr.shape[0]} train / {Xte.shape[0]} test rows, "
          f"{d} features in 6 fields (test RMSE; fit s; fit / myFM)\n")
    print("| engine | test RMSE | fit s | time / myFM |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nGBFM RMSE {gb_rmse:.4f}, FM RMSE {fm_rmse:.4f}: GBFM - FM = "
          f"{gb_rmse - fm_rmse:+.4f} (GBFM <= FM: {gb_rmse <= fm_rmse})")
    print("GBFM field pairs (joint fit, in the order boosting first chose them):", pairs)


def bench_movielens_ordinal(args, spark, res=None):
    """MovieLens 100K ua with context, the ratings as ordinal classes 1..5: sparkxml
    FMRegressor(loss="ordinal") beside myFM's MyFMOrderedProbit (rank 8, ``--iters`` sweeps,
    the same six fields as hyper-prior groups); test RMSE of the expected rating and accuracy
    of the most probable rating."""
    import myfm

    from sparkxml import FMRegressor

    Xtr, ytr, Xte, yte, fs, train, test = movielens_frames(args, spark)
    d = Xtr.shape[1]
    stars = np.arange(1.0, 6.0)
    out = []

    def add(name, proba, expected, y, fit):
        rmse = float(np.sqrt(np.mean((expected - y) ** 2)))
        acc = float(np.mean(stars[np.argmax(proba, axis=1)] == y))
        case = f"MovieLens 100K ua context ordinal: {name}"
        if res is not None:
            res.add(case, "test RMSE of the expected rating", rmse)
            res.add(case, "test accuracy", acc)
            res.add(case, "fit", fit, "s")
        out.append(f"| {name} | {rmse:.4f} | {acc:.4f} | {fit:.1f} |")

    shapes = np.diff(fs + [d]).tolist()
    ref, t_ref = timed(lambda: myfm.MyFMOrderedProbit(rank=8, random_seed=args.seed).fit(
        Xtr, (ytr - 1).astype(int), n_iter=args.iters, group_shapes=shapes))
    p = ref.predict_proba(Xte)
    add(f"myFM MyFMOrderedProbit (rank 8, {args.iters} sweeps)", p, p @ stars, yte, t_ref)
    nw = args.workers[0]
    FMRegressor(labelCol="rating", loss="ordinal", maxIter=6, burnIn=1,
                numWorkers=nw).fit(train.limit(500))
    m, t = timed(lambda: FMRegressor(labelCol="rating", loss="ordinal", factorSize=8,
                                     maxIter=args.iters, fieldStarts=fs, numWorkers=nw,
                                     seed=args.seed).fit(train))
    # the test rows in their order: transform keeps each row's rating beside its outputs
    rows = m.transform(test).select("rating", "prediction", "probability").collect()
    yte_rows = np.array([r.rating for r in rows])
    if not np.array_equal(np.sort(yte_rows), np.sort(yte)):
        raise RuntimeError("the transformed test rows differ from the test set")
    proba = np.array([r.probability.toArray() for r in rows])
    add(f"sparkxml FMRegressor loss='ordinal' mcmc (rank 8), numWorkers={nw}", proba,
        np.array([r.prediction for r in rows]), yte_rows, t)
    print(f"\nMovieLens 100K ua with context, ordinal ratings 1..5: {Xtr.shape[0]} train / "
          f"{Xte.shape[0]} test rows, {d} features in 6 fields\n")
    print("| engine | test RMSE (expected rating) | test accuracy | fit s |\n|---|---|---|---|")
    print("\n".join(out))


# --------------------------------------------------------------------------- implicit (BPR)
def planted_implicit(n_users=2000, n_items=1000, rank=8, mean_items=40, seed=0):
    """(users, items) int64 positives: user u picks Poisson(mean_items) + 5 distinct items
    with probability ∝ exp(<P_u, Q_i> + popularity_i) (planted taste and a popularity skew)."""
    rng = np.random.default_rng(seed)
    P = rng.normal(0, 1.0, (n_users, rank)) / np.sqrt(rank) * 2.5
    Q = rng.normal(0, 1.0, (n_items, rank))
    pop = rng.normal(0, 1.0, n_items)
    users, items = [], []
    for u in range(n_users):
        logit = P[u] @ Q.T + pop
        p = np.exp(logit - logit.max())
        n = min(n_items, rng.poisson(mean_items) + 5)
        chosen = rng.choice(n_items, size=n, replace=False, p=p / p.sum())
        users.append(np.full(n, u))
        items.append(chosen)
    return np.concatenate(users), np.concatenate(items)


def read_movielens_positives(folder):
    """(users, items) of MovieLens 100K's u.data ratings >= 4."""
    import pandas as pd

    df = pd.read_csv(os.path.join(folder, "u.data"), sep="\t", header=None,
                     names=["u", "i", "r", "t"])
    df = df[df["r"] >= 4]
    return df["u"].to_numpy(np.int64), df["i"].to_numpy(np.int64)


def bench_bpr(args, spark, res=None):
    from pyspark.ml.recommendation import ALS
    from pyspark.sql import functions as F

    from sparkxml import FMRanker
    from sparkxml.evaluation import recommendation_metrics

    if args.movielens:
        users, items = read_movielens_positives(args.movielens)
        data = "MovieLens 100K ratings >= 4"
    else:
        users, items = planted_implicit(seed=args.seed)
        data = "generated implicit (planted rank 8, 2000 users x 1000 items)"
    rng = np.random.default_rng(args.seed)
    test_mask = rng.random(users.size) < 0.2
    rows = lambda m: [(int(u), int(i), 1.0) for u, i in zip(users[m], items[m])]  # noqa: E731
    schema = "user int, item int, rating float"
    train = spark.createDataFrame(rows(~test_mask), schema).cache()
    test = spark.createDataFrame(rows(test_mask), schema).cache()
    n_train, n_test = train.count(), test.count()
    seen = train.groupBy("user").agg(F.collect_set("item").alias("seen")).cache()
    max_seen = seen.select(F.max(F.size("seen"))).first()[0]

    def evaluate(recs_for):
        out = {}
        full = recs_for(10 + max_seen).cache()
        top = full.select("user", F.slice("recommendations", 1, 10).alias("recommendations"))
        out["all items"] = recommendation_metrics(top, test, k=10)
        unseen = (full.join(seen, "user", "left")
                  .select("user", F.slice(F.filter(
                      "recommendations",
                      lambda r: ~F.coalesce(F.array_contains("seen", r["item"]), F.lit(False))),
                      1, 10).alias("recommendations")))
        out["training items excluded"] = recommendation_metrics(unseen, test, k=10)
        full.unpersist()
        return out

    nw = args.workers[0]
    FMRanker(maxIter=1, numWorkers=nw).fit(train.limit(500))  # warm-up: workers, numba cache
    est = FMRanker(factorSize=args.rank, maxIter=args.bpr_iters, stepSize=args.bpr_step,
                   miniBatchFraction=0.02, numNegatives=args.bpr_negatives,
                   regParam=args.bpr_reg, numWorkers=nw, seed=args.seed)
    model, t_fm = timed(lambda: est.fit(train))
    fm = evaluate(model.recommendForAllUsers)
    als = ALS(rank=args.rank, implicitPrefs=True, userCol="user", itemCol="item",
              ratingCol="rating", seed=args.seed)
    amodel, t_als = timed(lambda: als.fit(train))
    al = evaluate(amodel.recommendForAllUsers)
    lines = []
    for name, got, t in ((f"sparkxml FMRanker BPR (rank {args.rank}, {args.bpr_iters} epochs, "
                          f"{args.bpr_negatives} negatives), numWorkers={nw}", fm, t_fm),
                         (f"Spark MLlib ALS implicitPrefs (rank {args.rank}, defaults)", al,
                          t_als)):
        for where, m in got.items():
            for metric in ("ndcgAtK", "recallAtK"):
                if res is not None:
                    res.add(f"{data} ({where}): {name}", f"{metric}@10", m[metric])
            lines.append(f"| {name} | {where} | {m['ndcgAtK']:.4f} | {m['recallAtK']:.4f} | "
                         f"{t:.1f} |")
        if res is not None:
            res.add(f"{data}: {name}", "fit", t, "s")
    print(f"\n{data}: {n_train} train / {n_test} test positives, random 20 % held out "
          f"(seed {args.seed})\n")
    print("| engine | ranking over | NDCG@10 | recall@10 | fit s |\n|---|---|---|---|---|")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a9a", default=A9A)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ratings")
    ap.add_argument("--movielens", help="the ml-100k folder (ua split, u.user, u.item)")
    ap.add_argument("--generated", action="store_true")
    ap.add_argument("--generated-rows", type=int, default=100000)
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--rank", type=int, default=10)
    ap.add_argument("--skip-a9a", action="store_true")
    ap.add_argument("--skip-mllib", action="store_true")
    ap.add_argument("--mllib-iters", type=int, default=100)
    ap.add_argument("--skip-ffm", action="store_true")
    ap.add_argument("--ffm-only", action="store_true", help="only the FFM part")
    ap.add_argument("--ffm-iters", type=int, default=15, help="FFM epochs (libffm's -t)")
    ap.add_argument("--ffm-solver", nargs="+", default=["adagrad"],
                    choices=["adagrad", "als", "mcmc"],
                    help="FFMRegressor solvers on the ratings (als, mcmc: --iters sweeps)")
    ap.add_argument("--ffm-reg", type=float, default=0.001,
                    help="FFMRegressor regParam for solver als (FMRegressor's default)")
    ap.add_argument("--bpr", action="store_true", help="implicit feedback: FMRanker vs ALS")
    ap.add_argument("--bpr-iters", type=int, default=30)
    ap.add_argument("--bpr-step", type=float, default=0.01)
    ap.add_argument("--bpr-reg", type=float, default=1e-4)
    ap.add_argument("--bpr-negatives", type=int, default=1)
    ap.add_argument("--ordinal-only", action="store_true",
                    help="only the MovieLens ordinal rows (needs --movielens)")
    add_relation_arguments(ap)
    args = ap.parse_args()
    if args.relation:  # kernel level, no Spark session (benchmarks/fm_relation.py)
        bench_relation(args)
        return
    res = Results("fm")
    spark = session(master=f"local[{max(2, max(args.workers))}]", app="fm-bench",
                    conf={"spark.driver.memory": "4g", "spark.driver.maxResultSize": "2g",
                          "spark.sql.shuffle.partitions": "4"})
    try:
        if args.ordinal_only:  # the ordinal rows alone
            bench_movielens_ordinal(args, spark, res)
            res.write()
            return
        if not args.skip_a9a and not args.ffm_only:
            bench_a9a(args, spark, res)
        if not args.skip_a9a and not args.skip_ffm:
            bench_ffm_a9a(args, spark, res)
        if args.ratings or args.generated:
            bench_ratings(args, spark, res)
        if args.movielens and not args.bpr:
            bench_movielens(args, spark, res)
        if args.bpr:
            bench_bpr(args, spark, res)
    finally:
        spark.stop()
    res.write()


if __name__ == "__main__":
    main()
