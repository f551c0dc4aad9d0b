"""How many Spark jobs a small fit runs, read back through the status store: a new job (or a
shuffle inside one) fails here, not only as a slower fit. Small one-worker fits of GBT,
LambdaMART, LinearSVC, trees and forests run two jobs, each of one stage (no shuffle): the
data checks (one observed-metrics job) and the training task, which computes the bin edges
itself; their models are the ones the sketch job's edges give. Replicated fits (FastXML,
Parabel) run three."""
import numpy as np
import pandas as pd
import pytest
from _data import data_path
from _jobs import job_ids
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql import types as T

import sparkxml.forest.base as forest_base
import sparkxml.gbt.fit as gbt_fit
import sparkxml.gbt.lambdamart as lambdamart
from sparkxml import (
    DecisionTreeRegressor,
    GBTClassifier,
    GBTRegressor,
    LambdaMART,
    LinearSVC,
    RandomForestClassifier,
)
from sparkxml._core.histogram_engine import (
    _CANONICAL_SKETCH_PARTS,
    _SKETCH_KEY,
    _SKETCH_PART,
    canonical_sketch_columns,
)

FCOLS = [f"f{i}" for i in range(1, 29)]


def _fit_jobs(spark, est, df):
    """(model, [(phase, stages run) per job]) of ``est.fit(df)``."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    before = job_ids(sc)
    model = est.fit(df)
    jobs = []
    for j in sorted(job_ids(sc) - before):
        data = store.job(j)
        desc = data.description().get() if data.description().isDefined() else "-"
        jobs.append((desc.rsplit(": ", 1)[-1], data.numCompletedStages()))
    return model, jobs


@pytest.fixture(scope="module")
def binary(spark):
    a = np.loadtxt(data_path("lightgbm_binary", "binary.train"))
    pdf = pd.DataFrame(a[:, 1:], columns=FCOLS)
    pdf.insert(0, "label", a[:, 0])
    df = VectorAssembler(inputCols=FCOLS, outputCol="features").transform(
        spark.createDataFrame(pdf)).cache()
    df.count()
    return df


def test_gbt_on_lightgbm_binary_is_two_jobs(spark, binary):
    """7,000 rows, 100 trees: the checks and the training, one stage each; two workers add
    the sketch job and the barrier stage's shuffle."""
    params = dict(maxIter=100, maxDepth=6, stepSize=0.1, seed=3)
    _, jobs = _fit_jobs(spark, GBTClassifier(numWorkers=1, **params), binary)
    assert jobs == [("checks", 1), ("train", 1)], jobs
    _, jobs = _fit_jobs(spark, GBTClassifier(numWorkers=2, maxIter=5, seed=3), binary)
    assert [p for p, _ in jobs] == ["checks", "sketch", "train", "train"], jobs


def test_gbt_on_vectors_without_size_metadata_is_two_jobs(spark, binary):
    """``array_to_vector`` leaves no size in the schema: the checks size the first rows of
    each partition (no job of their own) and the model is the one ``VectorAssembler``'s
    metadata gives; a vector of another size further down fails in the training task."""
    from pyspark.ml.functions import array_to_vector, vector_to_array
    from pyspark.sql import functions as F

    bare = binary.select("label", array_to_vector(vector_to_array("features")).alias(
        "features")).cache()
    bare.count()
    assert "ml_attr" not in bare.schema["features"].metadata
    est = GBTClassifier(numWorkers=1, maxIter=20, maxDepth=4, seed=3)
    model, jobs = _fit_jobs(spark, est, bare)
    assert jobs == [("checks", 1), ("train", 1)], jobs
    x, y = model.predictor.to_arrays(), est.fit(binary).predictor.to_arrays()
    assert "feature_names" not in x  # (VectorAssembler's metadata names the features)
    y.pop("feature_names")
    assert x.keys() == y.keys()
    for k in x:
        np.testing.assert_array_equal(x[k], y[k], err_msg=k)

    # row 500 of the frame's order has one feature fewer: past every partition's probed rows
    arr = vector_to_array("features")
    idx = F.monotonically_increasing_id()
    short = (bare.withColumn("i", idx)
             .withColumn("features", F.when(F.col("i") == F.lit(500),
                                            array_to_vector(F.slice(arr, 1, 27)))
                         .otherwise(F.col("features"))).drop("i"))
    with pytest.raises(Exception, match="has a vector of size 27, expected 28"):
        est.fit(short)


def _models_equal(a, b):
    x, y = a.predictor.to_arrays(), b.predictor.to_arrays()
    assert x.keys() == y.keys()
    for k in x:
        np.testing.assert_array_equal(x[k], y[k], err_msg=k)


def test_edges_in_the_task_are_the_sketch_jobs(spark, monkeypatch):
    """Weights, a validation column, a categorical feature and three input partitions: the
    training task's own edges give the model of the sketch job's edges, bit for bit."""
    rng = np.random.default_rng(4)
    n = 1500
    pdf = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    pdf["cat"] = rng.integers(0, 6, n).astype(float)
    pdf["label"] = pdf["a"] + np.where(pdf["cat"] % 2 == 0, 1.0, -1.0) + 0.3 * rng.normal(size=n)
    pdf["w"] = rng.random(n) + 0.5
    pdf["valid"] = rng.random(n) < 0.2
    df = spark.createDataFrame(pdf).repartition(3).cache()
    df.count()
    est = GBTRegressor(featuresCols=["a", "b", "c", "cat"], categoricalCols=["cat"],
                       weightCol="w", validationIndicatorCol="valid", maxIter=15,
                       maxDepth=3, subsamplingRate=0.8, seed=2, numWorkers=1)
    fast, jobs = _fit_jobs(spark, est, df)
    assert jobs == [("checks", 1), ("train", 1)], jobs
    assert [i["n"] for i in fast.summary.sketchInfo] == \
        [int((~pdf_part["valid"]).sum()) for pdf_part in _partitions(df)]
    monkeypatch.setattr(gbt_fit, "sketch_in_task", lambda stats, n_workers: False)
    slow, jobs = _fit_jobs(spark, est, df)
    assert [p for p, _ in jobs] == ["checks", "sketch", "train"], jobs
    _models_equal(fast, slow)

    # bad input the task's summaries meet is the driver's ValueError, as from the sketch job
    monkeypatch.undo()
    bad = df.withColumn("cat", df["cat"] + 0.5)
    with pytest.raises(ValueError, match="categorical"):
        est.fit(bad)


def _partitions(df):
    from pyspark.sql import functions as F

    pdf = df.withColumn("__p", F.spark_partition_id()).toPandas()
    return [g for _, g in sorted(pdf.groupby("__p"))]


def test_lambdamart_and_linear_svc_small_fits_are_two_jobs(spark, monkeypatch):
    rng = np.random.default_rng(0)
    rows = []
    for q in range(40):
        for _ in range(rng.integers(4, 12)):
            x = rng.normal(size=4)
            rows.append((q, float(np.clip(np.floor(x[0] + 1.5), 0, 3)),
                         Vectors.dense(x.tolist())))
    schema = T.StructType([T.StructField("qid", T.LongType()),
                           T.StructField("label", T.DoubleType()),
                           T.StructField("features", VectorUDT())])
    df = spark.createDataFrame(rows, schema).repartition(2)
    df = df.cache()
    df.count()
    est = LambdaMART(maxIter=10, maxDepth=3, subsamplingRate=0.8, seed=1, numWorkers=1)
    fast, jobs = _fit_jobs(spark, est, df)
    assert jobs == [("checks", 1), ("train", 1)], jobs
    monkeypatch.setattr(lambdamart, "sketch_in_task", lambda stats, n_workers: False)
    slow, jobs = _fit_jobs(spark, est, df)
    assert [p for p, _ in jobs] == ["checks", "sketch", "train"], jobs
    _models_equal(fast, slow)

    svm = df.withColumn("label", (df["label"] > 1).cast("double"))
    _, jobs = _fit_jobs(spark, LinearSVC(maxIter=20, numWorkers=1), svm)
    assert jobs == [("checks", 1), ("train", 1)], jobs


def _tree_frame(spark, n=6000, seed=5):
    rng = np.random.default_rng(seed)
    pdf = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    pdf["cat"] = rng.integers(0, 5, n).astype(float)
    pdf["y"] = pdf["a"] - pdf["b"] ** 2 + (pdf["cat"] == 2) + 0.3 * rng.normal(size=n)
    pdf["label"] = (pdf["y"] > pdf["y"].median()).astype(float)
    pdf["w"] = rng.random(n) + 0.5
    df = spark.createDataFrame(pdf).repartition(3).cache()
    df.count()
    return df


def test_tree_and_forest_edges_in_the_task_are_the_sketch_jobs(spark, monkeypatch):
    """6,000 rows of continuous features, weights, a categorical feature, maxBins 16: every
    hashed partition's summary is lossy, so the edges depend on which rows each summary
    sees and in what order; the training task's own edges give the sketch job's model."""
    df = _tree_frame(spark)
    feats = dict(featuresCols=["a", "b", "c", "cat"], categoricalCols=["cat"], weightCol="w",
                 maxBins=16, seed=7, numWorkers=1)
    ests = [DecisionTreeRegressor(labelCol="y", maxDepth=6, **feats),
            RandomForestClassifier(numTrees=4, maxDepth=4, **feats)]
    fast = []
    for est in ests:
        model, jobs = _fit_jobs(spark, est, df)
        assert jobs == [("checks", 1), ("train", 1)], jobs
        fast.append(model)
    monkeypatch.setattr(forest_base, "sketch_in_task", lambda *a, **k: False)
    for est, model in zip(ests, fast):
        slow, jobs = _fit_jobs(spark, est, df)
        # the sketch job's shuffle of its hashed sample: a map job and a result job
        assert [p for p, _ in jobs] == ["checks", "sketch", "sketch", "train"], jobs
        _models_equal(model, slow)
    # more than maxBins distinct values in every summary: the sketch did drop values
    assert len(np.unique(fast[0].treeArrays()["threshold"])) > 4


def test_canonical_sketch_partition_is_sparks_hash_partitioning(spark):
    """The partition a one-task fit computes for each row is the one the sketch job's
    ``repartition`` sends it to."""
    df = _tree_frame(spark, n=2000)
    cols = ["a", "b", "c", "cat", "w"]
    for name, col in canonical_sketch_columns(cols, 7):
        df = df.withColumn(name, col)
    from pyspark.sql import functions as F

    pdf = (df.repartition(_CANONICAL_SKETCH_PARTS, F.col(_SKETCH_KEY))
           .select(F.spark_partition_id().alias("p"), _SKETCH_PART).toPandas())
    assert pdf["p"].nunique() == _CANONICAL_SKETCH_PARTS
    np.testing.assert_array_equal(pdf["p"], pdf[_SKETCH_PART])


def test_replicated_fits_are_three_jobs(spark):
    """FastXML and Parabel copy every row to each training task: the checks, the copies'
    shuffle (one row per task, ``explode`` of the group keys: no broadcast job for a join)
    and the training tasks; a small forest comes back without the chunked collect."""
    from sparkxml import FastXML, Parabel
    from sparkxml.datasets import from_csr
    from sparkxml.synthetic import make_multilabel

    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=600, n_features=300, n_labels=30, seed=2)
    df = from_csr(spark, xi, xj, xv, 300, labels=(yi, yj)).cache()
    df.count()
    for est in (FastXML(numTrees=4, numWorkers=2), Parabel(numTrees=2, numWorkers=2)):
        _, jobs = _fit_jobs(spark, est, df)
        assert jobs == [("checks", 1), ("train", 1), ("train", 1)], (type(est).__name__, jobs)
