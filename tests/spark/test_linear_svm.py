"""LinearSVC on local[2]: the Spark fit is the in-process CoCoA+ training bit for bit, the same
model for any numWorkers and input partitioning, multiclass accuracy on dna, pendigits (dense,
unscaled) against liblinear, the warning when maxIter stops a fit, standardization,
persistence, Pipeline, CrossValidator and bad input. Fits are few and shared through module
fixtures."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.ml.linalg import Vectors
from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import LinearSVC, LinearSVCModel
from sparkxml.datasets import from_csr
from sparkxml.linear import ConvergenceWarning
from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.formats import read_svmlight
from sparkxml_kernels.linear import solver

# the estimator of the shared fit: 3 blocks (CoCoA+ with polish), two workers, on liblinear's
# objective (no standardization)
EST = dict(numBlocks=3, numWorkers=2, seed=3, loss="squared_hinge", C=0.5, maxIter=30,
           solver="dcd", standardization=False)


def _svm(name, n=None, binary=True):
    y, _, ip, ix, v, d = read_svmlight(data_path(*name.split("/")),
                                       num_features=123 if binary else 180)
    X = sp.csr_matrix((v, ix, ip), shape=(len(y), d))
    if n:
        X, y = X[:n], y[:n]
    lab = (y > 0).astype(float) if binary else y - 1
    return X, lab


def _frame(spark, X, lab, parts=2):
    return from_csr(spark, X.indptr, X.indices, X.data, X.shape[1], columns={"label": lab},
                    numPartitions=parts)


@pytest.fixture(scope="module")
def a9a(spark):
    X, lab = _svm("a9a/a9a", n=3000)
    return X, lab, _frame(spark, X, lab).cache()


@pytest.fixture(scope="module")
def pipe(a9a):
    """One Pipeline fit of LinearSVC(**EST), shared by most tests."""
    return Pipeline(stages=[LinearSVC(**EST)]).fit(a9a[2])


def test_spark_fit_is_the_in_process_training(a9a, pipe):
    """The barrier stage trains exactly what solver.train trains on the same rows, keys and
    blocks in one process (same CoCoA+ rounds, polishes and floating-point sums)."""
    _, _, df = a9a
    model = pipe.stages[0]
    rows = df.select(F.xxhash64("features", F.col("label").cast("double")).alias("k"),
                     "features", "label").collect()
    keys = np.array([r.k for r in rows], np.int64)
    Xr = sp.vstack([sp.csr_matrix(r.features.toArray()) for r in rows]).tocsr()
    ld = solver.prepare(Xr.indptr, Xr.indices, Xr.data, np.array([r.label for r in rows]),
                        None, keys, np.mod(keys, 3), 0.5, True, 123)
    cfg = dict(loss="squared_hinge", multi_class="binary", n_classes=2, schedule="shark",
               tol=1e-3, max_iter=30, local_passes=solver.default_local_passes(3),
               num_blocks=3, seed=3)
    ref = solver.train(ld, cfg, LocalCollective())
    s = model.summary
    assert s.converged and ref.converged and ref.polishes > 0
    assert np.array_equal(model.coefficients.toArray(), ref.W[0, :123])
    assert model.intercept == ref.W[0, 123] != 0.0
    assert s.totalIterations == ref.rounds and s.gapHistory == ref.gap
    assert [len(i["blocks"]) for i in s.workerInfo] == [2, 1]  # blocks {0, 2} and {1}
    assert all(i["rows_in_key_order"] for i in s.workerInfo)
    other = solver.train(ld, dict(cfg, seed=4), LocalCollective())  # the seed matters
    assert not np.array_equal(other.W, ref.W)
    # outputs: rawPrediction [-m, m], prediction m > threshold
    out = model.transform(df).select("rawPrediction", "prediction", "features",
                                     "label").collect()
    w, b = model.coefficients.toArray(), model.intercept
    m = np.array([r[2].toArray() @ w + b for r in out])
    np.testing.assert_allclose(np.array([r[0].toArray() for r in out]),
                               np.column_stack([-m, m]), atol=1e-9)
    assert [r[1] for r in out] == list((m > 0).astype(float))
    assert np.mean((m > 0) == np.array([r[3] == 1 for r in out])) > 0.8
    assert model.copy().setThreshold(0.5).transform(df).filter("prediction = 1").count() == \
        int((m > 0.5).sum())


def test_same_model_for_any_num_workers_and_partitioning(a9a, pipe):
    _, _, df = a9a
    ref = pipe.stages[0]
    est = LinearSVC(**EST)
    one = est.copy({est.numWorkers: 1}).fit(df.repartition(5))
    shuffled = est.fit(df.orderBy(F.rand(7)).coalesce(1))
    for m in (one, shuffled):
        assert np.array_equal(m.coefficients.toArray(), ref.coefficients.toArray())
        assert m.intercept == ref.intercept
        assert m.summary.objectiveHistory == ref.summary.objectiveHistory
    assert len(one.summary.workerInfo) == 1


def test_multiclass_dna(spark):
    X, lab = _svm("dna/dna.scale", binary=False)
    Xt, labt = _svm("dna/dna.scale.t", binary=False)
    df = _frame(spark, X, lab)
    test = _frame(spark, Xt, labt)
    ev = MulticlassClassificationEvaluator(metricName="accuracy")
    ovr = LinearSVC(fitIntercept=False, loss="squared_hinge", numWorkers=1,
                    standardization=False).fit(df)
    assert ovr.numClasses == 3 and ovr.coefficientMatrix.numRows == 3
    assert len(ovr.summary.gapHistory[-1]) == 3 and ovr.summary.converged
    assert ev.evaluate(ovr.transform(test)) >= 0.944  # liblinear -s 1: 94.44 %
    cs = LinearSVC(fitIntercept=False, multiClass="crammer_singer", numWorkers=1,
                   standardization=False).fit(df)
    # liblinear -s 4 at its optimum (eps <= 1e-3) scores 92.66 %; 92.83 % is one of its
    # eps = 0.1 early stops (README)
    assert ev.evaluate(cs.transform(test)) >= 0.926
    assert cs.summary.converged
    with pytest.raises(ValueError, match="two classes"):
        cs.coefficients


def test_save_load_pipeline_and_load_model(a9a, pipe, tmp_path):
    _, _, df = a9a
    model = pipe.stages[0]
    path = str(tmp_path / "svm")
    model.write().save(path)
    model.write().overwrite().save(path)
    back = LinearSVCModel.load(path)
    assert back.getC() == 0.5 and back.summary.objectiveHistory == \
        model.summary.objectiveHistory
    a = model.transform(df).select("rawPrediction", "features").collect()
    assert back.transform(df).select("rawPrediction", "features").collect() == a
    served = sparkxml_kernels.load_model(path)
    Xc = np.array([r[1].toArray() for r in a])
    np.testing.assert_allclose(served.predict_raw(Xc), np.array([r[0] for r in a]), atol=1e-12)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    assert again.transform(df).select("prediction").collect() == \
        pipe.transform(df).select("prediction").collect()
    with pytest.raises(Exception, match="not a|no metadata|does not exist"):
        LinearSVCModel.load(str(tmp_path / "nothing"))


def test_cross_validator(a9a):
    _, _, df = a9a
    small = df.limit(600).cache()
    svc = LinearSVC(maxIter=5, numWorkers=1)
    grid = ParamGridBuilder().addGrid(svc.C, [0.01, 1.0]).build()
    cv = CrossValidator(estimator=svc, estimatorParamMaps=grid, numFolds=2, seed=1,
                        evaluator=MulticlassClassificationEvaluator(metricName="accuracy"))
    best = cv.fit(small)
    assert len(best.avgMetrics) == 2 and min(best.avgMetrics) > 0.7


def test_bad_input_is_named(spark, a9a, pipe):
    _, _, df = a9a
    d = 3

    def frame(rows):
        return spark.createDataFrame(rows, ["features", "label"])

    ok = [(Vectors.dense([1.0, 0.0, 2.0]), 1.0), (Vectors.dense([0.0, 1.0, 0.0]), 0.0)]
    # refused by the training tasks before any training (the first bad value named)
    with pytest.raises(ValueError, match=r"-1\.0"):
        LinearSVC().fit(frame(ok + [(Vectors.dense([1.0] * d), -1.0)]))
    with pytest.raises(ValueError, match=r"0\.5"):
        LinearSVC().fit(frame(ok + [(Vectors.dense([1.0] * d), 0.5)]))
    with pytest.raises(ValueError, match="empty"):
        LinearSVC().fit(frame(ok).limit(0))
    with pytest.raises(ValueError, match="empty"):  # (no count job: numBlocks is set)
        LinearSVC(numBlocks=1).fit(frame(ok).limit(0))
    wdf = spark.createDataFrame([(Vectors.dense([1.0, 0, 0]), 1.0, -2.0)],
                                ["features", "label", "w"])
    with pytest.raises(ValueError, match=r"weightCol.*-2\.0"):
        LinearSVC(weightCol="w").fit(wdf)
    with pytest.raises(ValueError, match="positive weight"):
        LinearSVC(weightCol="w", numBlocks=1).fit(wdf.withColumn("w", wdf["w"] * 0.0))
    with pytest.raises(ValueError, match=r"labelCol: column 'label' has labels up to 4 but "
                                         r"no row of class 2, 3"):
        LinearSVC(numBlocks=1).fit(frame(ok + [(Vectors.dense([1.0] * d), 4.0)]))
    with pytest.raises(ValueError, match="featuresCol: column 'features' holds vectors of "
                                         "size 0"):
        LinearSVC(numBlocks=1).fit(frame([(Vectors.dense([]), 1.0), (Vectors.dense([]), 0.0)]))
    with pytest.raises(ValueError, match=r"label 1000000000.*classes"):
        LinearSVC(numBlocks=1).fit(frame(ok + [(Vectors.dense([1.0] * d), 1e9)]))
    # refused by the params rules
    with pytest.raises(ValueError, match="param C=0.0"):
        LinearSVC(C=0.0).fit(frame(ok))
    with pytest.raises(ValueError, match="param loss"):
        LinearSVC(loss="log").fit(frame(ok))
    with pytest.raises(ValueError, match="param tol=-1.0"):  # (0: run maxIter rounds)
        LinearSVC(tol=-1.0).fit(frame(ok))
    with pytest.raises(ValueError, match="param solver"):
        LinearSVC(solver="lbfgs").fit(frame(ok))
    # found by the training tasks (the barrier stage reports them, no retry)
    with pytest.raises(ValueError, match="featuresCol.*nan"):
        LinearSVC(numWorkers=2, numBlocks=2).fit(
            frame(ok * 10 + [(Vectors.dense([float("nan"), 1, 1]), 1.0)]))
    with pytest.raises(ValueError, match="featuresCol.*inf"):
        LinearSVC().fit(frame(ok + [(Vectors.sparse(3, [1], [float("inf")]), 1.0)]))
    with pytest.raises(ValueError, match="different sizes"):
        LinearSVC(numBlocks=2, numWorkers=2).fit(
            frame([(Vectors.dense([1.0, 2.0]), 1.0)] * 20 + ok * 10))
    # numWorkers above the blocks: a warning, and the blocks' worth of tasks
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = LinearSVC(numWorkers=2, maxIter=2).fit(frame(ok))
    assert any("1 CoCoA+ block" in str(c.message) for c in caught)
    assert len(m.summary.workerInfo) == 1
    # transform and predict check the width against the model's
    model = pipe.stages[0]
    with pytest.raises(Exception, match="size 3, expected 123"):
        model.transform(frame(ok)).collect()
    with pytest.raises(ValueError, match="expects 123"):
        model.predict(Vectors.dense([1.0, 2.0]))


def _primal(W, b, X, lab, loss, C=1.0):
    """liblinear's primal (bias regularised) of one-vs-rest weights W (K, d), b (K,)."""
    tot = 0.0
    for k in range(W.shape[0]):
        z = np.maximum(0.0, 1.0 - np.where(lab == k, 1.0, -1.0) * (X @ W[k] + b[k]))
        tot += 0.5 * (W[k] @ W[k] + b[k] ** 2) + C * np.sum(z if loss == "hinge" else z * z)
    return tot


def test_pendigits_dense_unscaled_matches_liblinear(spark):
    """Dense rows of large, uneven norms (16 features in 0-100), one-vs-rest over 10 classes:
    the default fit (numWorkers=2 as a user would ask) reaches liblinear's objective and
    accuracy, on raw features (standardization=False: liblinear's problem) and with the
    default standardization (liblinear on the same standardised features)."""
    from sklearn.svm import LinearSVC as SkSVC

    def load(name):
        y, _, ip, ix, v, _ = read_svmlight(data_path("pendigits", name), num_features=16)
        return sp.csr_matrix((v, ix, ip), shape=(len(y), 16)), np.asarray(y) - 1.0

    X, lab = load("pendigits")
    Xt, labt = load("pendigits.t")
    df, test = _frame(spark, X, lab).cache(), _frame(spark, Xt, labt)
    ev = MulticlassClassificationEvaluator(metricName="accuracy")
    sd = np.asarray(X.todense()).std(axis=0, ddof=1)
    Xs = X @ sp.diags(np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0))
    for loss in ("hinge", "squared_hinge"):
        # liblinear: the primal solver at a tight tolerance for squared hinge; its dual
        # solver for hinge (the only one it has), which stops at max_iter here
        kw = dict(dual=False, tol=1e-8) if loss == "squared_hinge" else dict(max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = SkSVC(C=1.0, loss=loss, **kw).fit(X, lab)
            std = SkSVC(C=1.0, loss=loss, **kw).fit(Xs, lab)
        lib_acc = float(np.mean(raw.predict(Xt) == labt))
        lib_obj = _primal(raw.coef_, raw.intercept_, X, lab, loss)
        lib_std = _primal(std.coef_, std.intercept_, Xs, lab, loss)
        for standardization, X_, ref in ((False, X, lib_obj), (True, Xs, lib_std)):
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                m = LinearSVC(loss=loss, numWorkers=2, seed=0,
                              standardization=standardization).fit(df)
            s = m.summary
            assert s.converged and s.workerInfo[0]["solver"] == "newton"
            gap, primal = np.asarray(s.gapHistory[-1]), np.asarray(s.primalHistory[-1])
            assert np.all(gap <= 1e-3 * primal)
            W = m.coefficientMatrix.toArray()
            b = m.interceptVector.toArray()
            scale = sd if standardization else np.ones(16)  # the weights of the fitted problem
            obj = _primal(W * scale, b, X_, lab, loss)
            np.testing.assert_allclose(obj, sum(s.primalHistory[-1]), rtol=1e-9)
            # at or below liblinear's objective (its hinge stops early), within 1e-3
            assert obj <= ref * (1 + 1e-3) and (loss == "hinge" or obj >= ref * (1 - 1e-3))
            assert ev.evaluate(m.transform(test)) >= lib_acc - 0.005, (loss, standardization)


def test_ill_conditioned_gap_and_convergence_warning(spark):
    """Features whose scales span three orders of magnitude (and non-zero means): the default
    fit certifies its duality gap, where dual coordinate descent stalls; stopped by maxIter,
    a fit says so, naming the gap reached."""
    rng = np.random.default_rng(5)
    n, d = 3000, 12
    scale = np.logspace(0, 3, d)
    X = (rng.normal(size=(n, d)) + 2.0) * scale
    lab = ((X / scale - 2.0) @ rng.normal(size=d) + rng.normal(size=n) > 0) * 1.0
    assert np.ptp(np.log10(np.linalg.norm(X, axis=0))) >= 2.9
    df = _frame(spark, sp.csr_matrix(X), lab).cache()
    for loss in ("hinge", "squared_hinge"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            m = LinearSVC(loss=loss, standardization=False).fit(df)
        s = m.summary
        assert s.converged and 0.0 <= s.gapHistory[-1][0] <= 1e-3 * s.primalHistory[-1][0]
    with pytest.warns(ConvergenceWarning, match=r"maxIter=100 .*relative duality gap of "
                                                r"0\.9\d* > tol=0.001"):
        m = LinearSVC(solver="dcd", standardization=False).fit(df)
    assert not m.summary.converged
