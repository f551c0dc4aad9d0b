"""The fits of the standalone-cluster test (``test_core_standalone_cluster.py``), shared by
the ``spark-submit`` driver (``python _cluster_driver.py OUT``, run on the cluster) and
the test (the same fits on the test's ``local[2,4]`` session): tiny generated data, two
workers each."""
import os
import sys

import numpy as np


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


def estimators():
    """(name, estimator, frame key) of every family, two workers each."""
    from sparkxml import FastXML, FMRegressor, GBTRegressor, LinearSVC, RandomForestRegressor

    return [("gbt", GBTRegressor(maxIter=5, maxDepth=3, numWorkers=2, seed=1), "tab"),
            ("svc", LinearSVC(numBlocks=2, numWorkers=2, maxIter=20), "tab"),
            ("forest", RandomForestRegressor(numTrees=4, maxDepth=3, numWorkers=2, seed=1),
             "tab"),
            ("fm", FMRegressor(maxIter=10, factorSize=2, numWorkers=2, seed=1), "tab"),
            ("fastxml", FastXML(numTrees=2, maxLeaf=5, numWorkers=2, seed=1), "xml")]


def fit_all(spark, only=None):
    tab, xml = frames(spark)
    data = {"tab": tab, "xml": xml}
    return {name: est.fit(data[key]) for name, est, key in estimators()
            if only is None or name in only}


def main(out):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("sparkxml-cluster-test").getOrCreate()
    models = fit_all(spark)
    for name, model in models.items():
        model.write().overwrite().save(os.path.join(out, name))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
