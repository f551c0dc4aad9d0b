"""Gradient-boosted trees end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/gbt_example.py [--data binary.train --test binary.test] [--workers 2]
    spark-submit examples/gbt_example.py --data hdfs-visible/binary.train ...

--data/--test take LightGBM's tab-separated files (label first, then the features); without
them the example generates a binary classification problem. It trains a GBTClassifier with
early stopping on a validation split, reports test AUC, saves the model, reloads it with Spark
and serves it without Spark through ``sparkxml_kernels.load_model``. Rounds are counted from 1
(``summary.bestIteration`` is a 0-based index: the best round is ``bestIteration + 1``); the
model goes to a temporary directory removed at the end.
"""
import argparse
import os
import tempfile

import numpy as np
import pandas as pd
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import GBTClassifier
from sparkxml.gbt.estimators import GBTClassificationModel
from sparkxml.session import get_session


def load_tsv(path):
    a = np.loadtxt(path)
    pdf = pd.DataFrame(a[:, 1:], columns=[f"f{i}" for i in range(1, a.shape[1])])
    pdf.insert(0, "label", a[:, 0])
    return pdf


def generated(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 20))
    y = ((np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * X[:, 3:8].sum(1)
          + 0.5 * rng.standard_normal(n)) > 0).astype(float)
    pdf = pd.DataFrame(X, columns=[f"f{i}" for i in range(1, 21)])
    pdf.insert(0, "label", y)
    return pdf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--test")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--trees", type=int, default=200)
    args = ap.parse_args()

    spark = get_session(app_name="gbt-example")
    train_pdf = load_tsv(args.data) if args.data else generated(20_000, 0)
    test_pdf = load_tsv(args.test) if args.test else generated(5_000, 1)
    features = [c for c in train_pdf.columns if c != "label"]
    assembler = VectorAssembler(inputCols=features, outputCol="features")
    train = (assembler.transform(spark.createDataFrame(train_pdf))
             .withColumn("is_valid", F.rand(seed=7) < 0.15))
    test = assembler.transform(spark.createDataFrame(test_pdf))

    gbt = GBTClassifier(maxIter=args.trees, maxDepth=6, stepSize=0.1, maxBins=256,
                        validationIndicatorCol="is_valid", earlyStoppingRounds=20,
                        evalMetric="auc", seed=1)
    if args.workers:
        gbt.setNumWorkers(args.workers)
    model = gbt.fit(train)
    s = model.summary
    print(f"trained {s.roundsRun} rounds, kept {s.numRounds} (best validation AUC "
          f"{s.bestScore:.4f} at round {s.bestIteration + 1}) in {s.trainingSeconds:.1f}s on "
          f"{len(s.workerInfo)} worker(s)")
    auc = BinaryClassificationEvaluator().evaluate(model.transform(test))
    print(f"test AUC {auc:.4f}")
    top = np.argsort(model.featureImportances.toArray())[::-1][:5]
    print("most important features:", [features[i] for i in top])

    with tempfile.TemporaryDirectory(prefix="sparkxml-example-") as tmp:
        path = os.path.join(tmp, "gbt-model")
        model.write().save(path)
        again = GBTClassificationModel.load(path)
        assert again.getNumTrees == model.getNumTrees
        predictor = sparkxml_kernels.load_model(path)  # no Spark needed from here on
        p = predictor.predict_proba(test_pdf[features])[:, 1]  # columns by name
    print(f"served without Spark: {len(p)} probabilities, first {np.round(p[:3], 4).tolist()}")
    spark.stop()


if __name__ == "__main__":
    main()
