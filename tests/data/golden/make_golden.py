"""Write the golden model directories under tests/data/golden/ (one small model per model
kind, its input rows and the transform output it gave when saved).

The committed directories were written by sparkxml 0.1.0's own code, before the package was
laid out in family subpackages; tests/spark/test_golden_models.py loads each with the current
code and checks that it predicts what was saved. Rerun this only to add a model kind whose
format is new (an existing kind's directory must stay as it was written)::

    .venv/bin/python tests/data/golden/make_golden.py [KIND ...]
"""
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_COLS = ("prediction", "probability", "rawPrediction", "scores", "fields")


def _rows(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 3)
    y_reg = np.round(X[:, 0] * 2.0 - X[:, 1] + 0.3 * X[:, 2] * X[:, 3], 3)
    y_bin = (y_reg > 0).astype(float)
    return X, y_reg, y_bin


def _frame(spark, X, cols):
    from pyspark.ml.linalg import Vectors

    names = list(cols)
    rows = [(Vectors.dense([float(v) for v in X[i]]),) + tuple(cols[c][i] for c in names)
            for i in range(len(X))]
    return spark.createDataFrame(rows, ["features"] + names)


def _plain(v):
    if hasattr(v, "toArray"):
        return [float(x) for x in v.toArray()]
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float):
        return v
    return v


def build(spark, kind):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import MaxAbsScaler

    import sparkxml as sx

    X, y_reg, y_bin = _rows()
    reg = {"label": [float(v) for v in y_reg]}
    binc = {"label": [float(v) for v in y_bin]}
    if kind == "gbt_regressor":
        return sx.GBTRegressor(maxIter=4, maxDepth=2, numWorkers=1, seed=1), reg
    if kind == "gbt_classifier":
        return sx.GBTClassifier(maxIter=4, maxDepth=2, numWorkers=1, seed=1), binc
    if kind == "lambdamart":
        grade = np.clip(np.round(y_reg - y_reg.min()) % 4, 0, 3)
        return sx.LambdaMART(maxIter=4, maxDepth=2, numWorkers=1, seed=1), {
            "label": [float(v) for v in grade], "qid": [int(i // 10) for i in range(len(X))]}
    if kind == "linear_svc":
        return sx.LinearSVC(maxIter=20, numWorkers=1, seed=1), binc
    if kind == "fm_regressor":
        return sx.FMRegressor(factorSize=2, maxIter=12, burnIn=3, numWorkers=1, seed=1), reg
    if kind == "fm_classifier":
        return sx.FMClassifier(factorSize=2, maxIter=12, burnIn=3, numWorkers=1, seed=1), binc
    if kind == "gbfm_regressor":
        return sx.GBFMRegressor(factorSize=2, numStages=3, numWorkers=1, seed=1,
                                fieldStarts=[0, 2, 4]), reg
    if kind == "gbfm_classifier":
        return sx.GBFMClassifier(factorSize=2, numStages=3, numWorkers=1, seed=1,
                                 fieldStarts=[0, 2, 4]), binc
    if kind == "ffm_regressor":
        return sx.FFMRegressor(factorSize=2, maxIter=3, numWorkers=1, seed=1,
                               fieldStarts=[0, 2, 4]), reg
    if kind == "ffm_classifier":
        return sx.FFMClassifier(factorSize=2, maxIter=3, numWorkers=1, seed=1,
                                fieldStarts=[0, 2, 4]), binc
    if kind == "decision_tree_classifier":
        return sx.DecisionTreeClassifier(maxDepth=3, numWorkers=1, seed=1), binc
    if kind == "decision_tree_regressor":
        return sx.DecisionTreeRegressor(maxDepth=3, numWorkers=1, seed=1), reg
    if kind == "random_forest_classifier":
        return sx.RandomForestClassifier(numTrees=3, maxDepth=3, numWorkers=1, seed=1), binc
    if kind == "random_forest_regressor":
        return sx.RandomForestRegressor(numTrees=3, maxDepth=3, numWorkers=1, seed=1), reg
    if kind in ("fastxml", "pfastrexml"):
        labels = [[int(j) for j in range(6) if X[i, j % 5] > (0.2 if j < 5 else -0.5)] or [5]
                  for i in range(len(X))]
        cls = sx.FastXML if kind == "fastxml" else sx.PfastreXML
        return cls(numTrees=2, topK=3, numWorkers=1, seed=1), {"labels": labels}
    if kind == "pipeline_scaler_gbt":
        return Pipeline(stages=[MaxAbsScaler(inputCol="raw", outputCol="features"),
                                sx.GBTRegressor(maxIter=3, maxDepth=2, numWorkers=1,
                                                seed=1)]), reg
    raise ValueError(kind)


KINDS = ("gbt_regressor", "gbt_classifier", "lambdamart", "linear_svc", "fm_regressor",
         "fm_classifier", "gbfm_regressor", "gbfm_classifier", "decision_tree_classifier",
         "decision_tree_regressor", "random_forest_classifier", "random_forest_regressor",
         "fastxml", "pfastrexml", "field_encoder", "pipeline_scaler_gbt", "ffm_regressor",
         "ffm_classifier")


def write_kind(spark, kind):
    import sparkxml as sx

    X, _, _ = _rows()
    out = os.path.join(HERE, kind)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    if kind == "field_encoder":
        cols = {"user": [int(i % 7) for i in range(len(X))],
                "item": [f"i{int(i % 5)}" for i in range(len(X))]}
        df = spark.createDataFrame([(cols["user"][i], cols["item"][i]) for i in range(len(X))],
                                   ["user", "item"])
        model = sx.FieldEncoder(inputCols=["user", "item"]).fit(df)
        inputs = {"columns": cols}
        pred = model.transform(df)
    else:
        est, cols = build(spark, kind)
        df = _frame(spark, X, cols)
        if kind == "pipeline_scaler_gbt":
            df = df.withColumnRenamed("features", "raw")
        model = est.fit(df)
        inputs = {"features": X.tolist(), "columns": cols}
        pred = model.transform(df)
    model.write().save(os.path.join(out, "model"))
    present = [c for c in OUT_COLS if c in pred.columns]
    if kind == "field_encoder":
        present = [model.getOutputCol()]
    rows = pred.select(*present).collect()
    expected = {c: [_plain(r[c]) for r in rows] for c in present}
    with open(os.path.join(out, "rows.json"), "w") as f:
        json.dump({"kind": kind, "class": f"{type(model).__module__}.{type(model).__name__}",
                   "inputs": inputs, "expected": expected}, f)


def main(kinds):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    for kind in kinds or KINDS:
        write_kind(spark, kind)
        print("wrote", kind)


if __name__ == "__main__":
    main(sys.argv[1:])
