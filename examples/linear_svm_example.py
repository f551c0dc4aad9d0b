"""Linear SVM end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/linear_svm_example.py [--data a9a --test a9a.t] [--workers 2]
    spark-submit examples/linear_svm_example.py --data hdfs-visible/train.svm ...

--data/--test take svmlight files (labels -1/+1 or 0/1 for two classes, 1..K or 0..K-1 for
more); without them the example generates a sparse binary problem. It trains a LinearSVC
(hinge loss, Shark's schedule), prints the objective, duality gap and test accuracy, saves the
model, reloads it with Spark and serves it without Spark through
``sparkxml_kernels.load_model``. Accuracy is a fraction in [0, 1]; the model goes to a
temporary directory removed at the end.
"""
import argparse
import os
import tempfile

import numpy as np
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import LinearSVC, LinearSVCModel
from sparkxml.datasets import from_csr, read_svmlight, to_csr
from sparkxml.session import get_session


def generated(spark, n, seed):
    rng = np.random.default_rng(seed)
    d, per_row = 2000, 20
    cols = np.sort(rng.integers(0, d, size=(n, per_row)), axis=1)
    indptr = np.arange(0, n * per_row + 1, per_row)
    data = np.ones(n * per_row)
    w = rng.normal(size=d)
    m = w[cols].sum(axis=1)
    y = (m + rng.normal(scale=m.std() / 2, size=n) > 0).astype(float)
    import scipy.sparse as sp

    X = sp.csr_matrix((data, cols.ravel(), indptr), shape=(n, d))
    X.sum_duplicates()
    return from_csr(spark, X.indptr, X.indices, X.data, d, columns={"label": y})


def labels_from_zero(df):
    """svmlight labels -1/+1 -> 0/1; 1..K -> 0..K-1 (LinearSVC wants 0..K-1)."""
    lo = df.agg(F.min("label")).first()[0]
    if lo == -1:
        return df.withColumn("label", (F.col("label") > 0).cast("double"))
    return df.withColumn("label", F.col("label") - F.lit(lo))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--test")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--C", type=float, default=1.0)
    a = ap.parse_args()
    spark = get_session()
    if a.data:
        train = labels_from_zero(read_svmlight(spark, a.data))
        d = train.first()["features"].size
        test = (labels_from_zero(read_svmlight(spark, a.test, num_features=d))
                if a.test else None)
    else:
        full = generated(spark, 20000, 0)
        train, test = full.randomSplit([0.8, 0.2], seed=1)
    if test is None:
        train, test = train.randomSplit([0.8, 0.2], seed=1)
    train = train.cache()

    model = LinearSVC(C=a.C, loss="hinge", schedule="shark", numWorkers=a.workers).fit(train)
    s = model.summary
    print(f"classes {model.numClasses}, features {model.numFeatures}, rounds "
          f"{s.totalIterations}, primal {s.objectiveHistory[-1]:.4f}, duality gap "
          f"{sum(s.gapHistory[-1]):.3g}, support vectors free/bounded "
          f"{s.numFreeSV}/{s.numBoundedSV}")
    acc = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(
        model.transform(test))
    print(f"test accuracy {acc:.4f}")

    with tempfile.TemporaryDirectory(prefix="sparkxml-example-") as tmp:
        path = os.path.join(tmp, "linear_svm")
        model.write().save(path)
        again = LinearSVCModel.load(path)
        assert again.transform(test).select("prediction").collect() == \
            model.transform(test).select("prediction").collect()
        indptr, indices, data, d = to_csr(test)
        served = sparkxml_kernels.load_model(path)  # no Spark needed from here on
        pred = served.predict((indptr, indices, data, d))
    print(f"saved, reloaded, served without Spark: {len(pred)} predictions")
    spark.stop()


if __name__ == "__main__":
    main()
