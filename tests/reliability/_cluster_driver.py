"""The fits of the standalone-cluster tests, shared by the ``spark-submit`` driver (this file,
run on the cluster) and the tests (the same fits on the test's ``local[2,4]`` session): tiny
generated data, two workers each.

``python _cluster_driver.py OUT NAME,NAME``: the run of ``test_core_cluster_faults.py``: FastXML
fits in its default (replicated) mode without faults, then every family fits (FastXML in its
distributed mode) and is saved; before the fits of the NAMEs it logs ``ARM fit-<name>``
through the driver JVM's log4j, in order with the scheduler's lines (the test SIGKILLs an
executor when the fit's barrier stage is launched), and ``DONE fit-<name>`` after every fit;
then it predicts a large generated frame with all five models in one job twice, clean and
under ``ARM transform`` (the test SIGKILLs a worker once a task of that job has finished), and
saves both predictions. Times go to ``OUT/times.json``.
"""
import json
import os
import sys
import time

import numpy as np

MARKER_LOGGER = "sparkxml.clustertest"  # _cluster.MARKER_LOGGER
BIG_ROWS, BIG_PARTS = 24_000, 8


def frames(spark):
    from pyspark.ml.linalg import Vectors

    from sparkxml.synthetic import make_multilabel, rows_frame

    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(120, 4)), 3)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(float)
    tab = spark.createDataFrame([(Vectors.dense(x), float(v)) for x, v in zip(X.tolist(), y)],
                                ["features", "label"]).repartition(3)
    Xm, Ym = make_multilabel(n_rows=120, n_features=30, n_labels=8, seed=3)
    xml = rows_frame(spark, Xm, Ym, 0, 120, 30).repartition(3)
    return tab, xml


def estimators(fastxml_mode="auto"):
    """(name, estimator, frame key) of every family, two workers each. FastXML's "auto" is
    replicated training here (ordinary tasks); "distributed" runs its barrier stage."""
    from sparkxml import FastXML, FMRegressor, GBTRegressor, LinearSVC, RandomForestRegressor

    return [("gbt", GBTRegressor(maxIter=5, maxDepth=3, numWorkers=2, seed=1), "tab"),
            ("svc", LinearSVC(numBlocks=2, numWorkers=2, maxIter=20), "tab"),
            ("forest", RandomForestRegressor(numTrees=4, maxDepth=3, numWorkers=2, seed=1),
             "tab"),
            ("fm", FMRegressor(maxIter=10, factorSize=2, numWorkers=2, seed=1), "tab"),
            ("fastxml", FastXML(numTrees=2, maxLeaf=5, numWorkers=2, seed=1,
                                trainingMode=fastxml_mode), "xml")]


def fit_all(spark, only=None, fastxml_mode="auto"):
    tab, xml = frames(spark)
    data = {"tab": tab, "xml": xml}
    return {name: est.fit(data[key]) for name, est, key in estimators(fastxml_mode)
            if only is None or name in only}


def big_frame(spark):
    """BIG_ROWS generated rows in BIG_PARTS partitions (the same rows on any cluster: rand
    is seeded per partition): ``features`` (4 normals) for the tabular models, ``xfeatures``
    (30 binary values) for FastXML."""
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    tab = F.array(*[F.randn(100 + i) for i in range(4)])
    xml = F.array(*[F.when(F.rand(200 + i) < 0.3, 1.0).otherwise(0.0) for i in range(30)])
    return spark.range(0, BIG_ROWS, 1, BIG_PARTS).select(
        "id", array_to_vector(tab).alias("features"), array_to_vector(xml).alias("xfeatures"))


def predict_all(models, big):
    """One frame with every model's output columns (``<name>_<column>``), in row order."""
    df = big
    for name, model in models.items():
        if name == "fastxml":
            model = model.copy().setFeaturesCol("xfeatures")
        for p in ("predictionCol", "rawPredictionCol", "probabilityCol", "scoresCol",
                  "varianceCol", "leafPredictionCol"):
            if model.hasParam(p) and model.isDefined(p) and model.getOrDefault(p):
                model = model.copy({model.getParam(p): f"{name}_{model.getOrDefault(p)}"})
        df = model.transform(df)
    return df.drop("features", "xfeatures")


def wait_executors(spark, n, timeout_s=240):
    """Block until ``n`` executors are registered: a barrier job submitted with fewer slots
    waits 15 s per check (spark.scheduler.barrier.maxConcurrentTasksCheck.interval)."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout_s
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < n:  # the driver is one
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {n} executors after {timeout_s} s")
        time.sleep(0.2)


def assert_same_model(name, a, b):
    """The two models' predictor arrays are equal, bit for bit."""
    x, y = a._predictor_arrays(), b._predictor_arrays()
    assert x.keys() == y.keys(), name
    for k in x:
        np.testing.assert_array_equal(np.asarray(x[k]), np.asarray(y[k]), err_msg=f"{name}.{k}")


def main_faults(spark, out, fault_fits):
    import pyarrow.feather as feather

    from sparkxml._core.compat import to_arrow

    mark = spark._jvm.org.apache.logging.log4j.LogManager.getLogger(MARKER_LOGGER)
    times = {}
    wait_executors(spark, 2)
    tab, xml = frames(spark)
    data = {"tab": tab, "xml": xml}
    # FastXML's default mode trains in ordinary tasks (no barrier stage): fitted clean, first
    [(_, replicated, _)] = [e for e in estimators("auto") if e[0] == "fastxml"]
    t0 = time.perf_counter()
    replicated.fit(xml).write().save(os.path.join(out, "fastxml-replicated"))
    times["fit-fastxml-replicated"] = time.perf_counter() - t0
    models = {}
    for name, est, key in estimators("distributed"):
        wait_executors(spark, 2)
        if name in fault_fits:
            mark.info(f"ARM fit-{name}")
        t0 = time.perf_counter()
        models[name] = est.fit(data[key])
        times[f"fit-{name}"] = time.perf_counter() - t0
        mark.info(f"DONE fit-{name}")
        models[name].write().save(os.path.join(out, name))
    big = big_frame(spark)
    for kind in ("clean", "transform"):
        wait_executors(spark, 2)
        mark.info(f"ARM {kind}")
        t0 = time.perf_counter()
        table = to_arrow(predict_all(models, big))
        times[kind] = time.perf_counter() - t0
        mark.info(f"DONE {kind}")
        feather.write_feather(table, os.path.join(out, f"predictions-{kind}.arrow"))
    with open(os.path.join(out, "times.json"), "w") as f:
        json.dump(times, f)


def main(out, fault_fits):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("sparkxml-cluster-faults").getOrCreate()
    try:
        main_faults(spark, out, fault_fits.split(","))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
